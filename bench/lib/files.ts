// Sizes on disk.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Bytes of every file under `dir` (0 when it does not exist), each file once however many links it has. */
export function dirBytes(dir: string, seen = new Set<string>()): number {
  if (!existsSync(dir)) return 0;
  let total = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) total += dirBytes(p, seen);
    else if (!seen.has(`${st.dev}:${st.ino}`)) {
      // A file hard-linked into several snapshots takes its bytes once.
      seen.add(`${st.dev}:${st.ino}`);
      total += st.size;
    }
  }
  return total;
}
