// Reading a LogRange (log.ts) from any thread: the snapshot worker reads the sealed segment files
// itself, checksums checked frame by frame, or the JetStream stream through its own connection (a
// memory log's range carries its records).
import type { LogEntry, LogRange } from './log';
import { scanFrames } from './frame';
import { readJetStreamRange } from './jetstream-log';

export async function readLogRange(range: LogRange, visit: (entry: LogEntry) => void): Promise<void> {
  if (range.kind === 'jetstream') return readJetStreamRange(range, visit);
  if (range.kind === 'memory') {
    for (const e of range.entries) if (e.seq > range.afterSeq && e.seq <= range.throughSeq) visit(e);
    return;
  }
  for (const file of range.files) {
    const scan = scanFrames(new Uint8Array(await Bun.file(file).arrayBuffer()));
    // Sealed segments were cut back to their intact prefix when the log opened.
    for (const f of scan.frames) if (f.seq > range.afterSeq && f.seq <= range.throughSeq) visit({ seq: f.seq, payload: f.payload });
  }
}
