// What a restart from item dumps does not read on its way to a state: the whole of the files it
// links (vector rows, texts) and of the dumps, checked in the snapshot worker while the main thread
// loads the dumps (the engine opens once they pass: Engine.open awaits StartingPoint.checks); then
// the record files (the next snapshot continues or compacts them, so damage there must not go
// unnoticed), checked after it opened (Snapshotter.recordsChecked).
import { readFramesSync } from '../engine';
import { crc32File } from './format';

export interface VerifyRequest {
  /** Record files: against the manifest's CRC32 when it has one, else frame by frame. */
  records: { path: string; bytes: number; crc32?: number }[];
  /** Dumps and linked files: their first `bytes` against the CRC32. */
  linked: { path: string; bytes: number; crc32: number }[];
}

/** `path`: the file that failed. */
export type VerifyResult = { ok: true } | { ok: false; damaged: 'records' | 'linked'; path: string; reason: string };

export function verifyFiles(req: VerifyRequest): VerifyResult {
  for (const f of req.records) {
    if (f.crc32 !== undefined) {
      if (crc32File(f.path, f.bytes) !== f.crc32) return { ok: false, damaged: 'records', path: f.path, reason: `${f.path} fails its checksum` };
      continue;
    }
    const scan = readFramesSync(f.path, () => {});
    if (!scan.ok) return { ok: false, damaged: 'records', path: f.path, reason: `${f.path} fails its frame checksums (${scan.reason})` };
  }
  for (const f of req.linked)
    if (crc32File(f.path, f.bytes) !== f.crc32) return { ok: false, damaged: 'linked', path: f.path, reason: `${f.path} fails its checksum` };
  return { ok: true };
}
