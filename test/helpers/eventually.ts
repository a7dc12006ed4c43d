// Waiting on other processes (replication lag, indexing, a node coming back): poll until the
// check holds, or fail with what was last seen.
export async function eventually<T>(what: string, probe: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  do {
    last = await probe();
    if (check(last)) return last;
    await Bun.sleep(50);
  } while (Date.now() < deadline);
  throw new Error(`${what}: not after ${timeoutMs} ms (last: ${JSON.stringify(last).slice(0, 300)})`);
}
