// A child process's output, read line by line for its whole life (so it never blocks on a full
// pipe): lines are kept (up to `keep`) and the server's {"msg":"listening","port":…} line gives
// its port. Shared by the test servers, the binary test and the benchmarks.

export interface FollowedOutput {
  /** Lines of stdout and stderr in arrival order (the first `keep`). */
  lines: string[];
  /** Resolves with the port of the server's "listening" line (never, if it is not logged). */
  port: Promise<number>;
}

export function followOutput(
  proc: { stdout: ReadableStream<Uint8Array>; stderr: ReadableStream<Uint8Array> },
  keep = 5000,
  /** Every line, as it arrives (for callers that log or filter it themselves). */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void,
): FollowedOutput {
  const lines: string[] = [];
  let resolvePort!: (port: number) => void;
  const port = new Promise<number>((resolve) => (resolvePort = resolve));
  const read = async (stream: ReadableStream<Uint8Array>, name: 'stdout' | 'stderr') => {
    const decoder = new TextDecoder();
    let buf = '';
    for await (const part of stream) {
      buf += decoder.decode(part, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (lines.length < keep) lines.push(line);
        onLine?.(line, name);
        if (line.includes('"listening"')) {
          try {
            const rec = JSON.parse(line) as { msg?: string; port?: number };
            if (rec.msg === 'listening' && rec.port) resolvePort(rec.port);
          } catch {}
        }
      }
    }
  };
  void read(proc.stdout, 'stdout');
  void read(proc.stderr, 'stderr');
  return { lines, port };
}

/** The port from `output`, or an error carrying the output when the process exits or time runs out. */
export function portOf(output: FollowedOutput, exited: Promise<number>, timeoutMs: number, what = 'server'): Promise<number> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    output.port,
    exited.then((code) => Promise.reject(new Error(`${what} exited with ${code}:\n${output.lines.join('\n')}`))),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not start:\n${output.lines.join('\n')}`)), timeoutMs);
    }),
  ]).finally(() => clearTimeout(timer));
}
