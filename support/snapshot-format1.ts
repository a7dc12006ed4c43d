// Rewrites a snapshot as snapshot format 1 wrote it (every record JSON, as in the write-ahead log;
// no term dictionary), to test and measure the upgrade path: a data directory of an older version
// must still open.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeFrame, encodePayload, PayloadDecoder, readFramesSync, sha256File } from '../engine';
import { MANIFEST_FILE, RECORDS_FILE, type SnapshotManifest } from '../snapshots';

export async function rewriteAsFormat1(dir: string): Promise<void> {
  const path = join(dir, RECORDS_FILE);
  const decoder = new PayloadDecoder();
  const frames: Uint8Array[] = [];
  const read = readFramesSync(path, (seq, payload) => {
    const decoded = decoder.decode<object>(payload);
    if (decoded) frames.push(encodeFrame(seq, encodePayload(decoded.record, decoded.attachment.length > 0 ? decoded.attachment : undefined)));
  });
  if (!read.ok) throw new Error(read.reason);
  const bytes = Buffer.concat(frames);
  writeFileSync(path, bytes);
  const manifest = JSON.parse(readFileSync(join(dir, MANIFEST_FILE), 'utf8')) as SnapshotManifest;
  const file = manifest.files.find((f) => f.name === RECORDS_FILE)!;
  file.bytes = bytes.length;
  file.sha256 = await sha256File(path);
  delete file.crc32;
  // Format 1 had no dumps, and no files linked beside them.
  const derived = new Set([
    ...(manifest.indexes ?? []).flatMap((d) => (d.vectors ? [d.file, d.vectors] : [d.file])),
    ...(manifest.items ? [...manifest.items.files.map((f) => f.file), manifest.items.texts] : []),
  ]);
  for (const name of derived) rmSync(join(dir, name), { force: true });
  manifest.files = manifest.files.filter((f) => !derived.has(f.name));
  delete manifest.indexes;
  delete manifest.items;
  manifest.format = 1;
  writeFileSync(join(dir, MANIFEST_FILE), JSON.stringify(manifest, null, 2));
}
