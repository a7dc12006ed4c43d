// Sizes on disk.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Bytes of every file under `dir` (0 when it does not exist). */
export function dirBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  let total = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    total += st.isDirectory() ? dirBytes(p) : st.size;
  }
  return total;
}
