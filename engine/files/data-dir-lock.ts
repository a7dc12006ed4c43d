// One engine per data directory: a second server started on the same DATA_DIR would append to the
// same write-ahead log and rewrite the same vector files, corrupting both. The engine holds
// DATA_DIR/LOCK (its process id and host) while open; a lock left by a process that is gone (a
// crash, kill -9) is taken over. Bun has no flock, so liveness is checked by process id on this
// host: a lock written on another host (a volume moved to a new machine or container) cannot be
// checked and is taken over with a warning rather than keeping the service down forever.
import { mkdirSync, openSync, readFileSync, unlinkSync, writeFileSync, closeSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { EngineLog } from '../options';

interface LockOwner {
  pid: number;
  host: string;
  since: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(path: string): LockOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(path, 'utf8')) as LockOwner;
    return typeof owner.pid === 'number' && typeof owner.host === 'string' ? owner : undefined;
  } catch {
    return undefined;
  }
}

/** Take the data directory's lock; the returned function gives it back. Throws when a live process on this host holds it. */
export function lockDataDir(dir: string, say?: EngineLog): () => void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'LOCK');
  const me: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  const text = `${JSON.stringify(me)}\n`;
  try {
    const fd = openSync(path, 'wx', 0o600);
    try {
      writeSync(fd, text);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const owner = readOwner(path);
    // The same process id is this process (an engine it opened before and dropped, or a container
    // restarted with the same pid): never another live server.
    if (owner && owner.host === me.host && owner.pid !== process.pid && alive(owner.pid)) {
      throw new Error(
        `The data directory ${dir} is in use by process ${owner.pid} (since ${owner.since}): one server per DATA_DIR. Stop that process first, or remove ${path} if it is not a kb-search server.`,
      );
    }
    if (owner && owner.host !== me.host) {
      say?.('warn', 'taking over a data directory lock written on another host', { dir, host: owner.host, pid: owner.pid, since: owner.since });
    }
    writeFileSync(path, text, { mode: 0o600 });
  }
  return () => {
    // Only our own lock: a process that took it over (after we were presumed gone) keeps it.
    if (readOwner(path)?.pid === me.pid && readOwner(path)?.since === me.since) {
      try {
        unlinkSync(path);
      } catch {
        // Already gone.
      }
    }
  };
}
