// Background lanes give way: a worker thread doing bulk work lowers its own scheduling priority, so
// the request thread and the query lane preempt it and searches stay fast during a bulk load.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/** Nice value of the document lane: well below requests, still a fair share when nothing else runs. */
export const BACKGROUND_NICENESS = 10;

/**
 * Lower the calling thread's priority (Linux: setpriority on its thread id, which threads it starts
 * later inherit, such as ONNX Runtime's). Returns whether it took effect; elsewhere, or where it is
 * not permitted, the thread keeps its priority.
 */
export function lowerThreadPriority(niceness: number): boolean {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, niceness);
    return true;
  } catch {
    return false;
  }
}
