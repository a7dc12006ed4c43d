// Memory readings: this process's heap after a full collection, and any process's resident set.
import { readFileSync } from 'node:fs';

/**
 * Heap and RSS after a full GC. Back to the event loop first, so no stale pointer on the stack
 * (JavaScriptCore scans it conservatively) keeps garbage alive through the collection.
 */
export async function settledMemory(): Promise<{ heap: number; rss: number }> {
  await Bun.sleep(0);
  Bun.gc(true);
  const m = process.memoryUsage();
  return { heap: m.heapUsed, rss: m.rss };
}

/** A `Vm…: N kB` line of /proc/<pid>/status in bytes; undefined once the process is gone. */
export function procStatusBytes(pid: number | 'self', key: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Resident set of a process, bytes (NaN when unknown). */
export const rssOf = (pid: number | 'self'): number => procStatusBytes(pid, 'VmRSS') ?? NaN;
