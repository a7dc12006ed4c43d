// fsync a file or a directory by path (a directory's fsync makes its entries durable).
import { closeSync, fsyncSync, openSync } from 'node:fs';

export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
