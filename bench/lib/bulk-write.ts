// The bulk load of the HTTP benchmarks: documents posted by several concurrent writers, as a client
// should: a 429 is retried after its Retry-After (a few writers outrun the per-organization rate
// limit), so every document is written once.

export interface BulkWrite {
  /** Documents acknowledged so far (live). */
  readonly acked: number;
  /** Answers by status, 429s included (live). */
  readonly status: Record<number, number>;
  /** Resolves with performance.now() when the last document is acknowledged. */
  readonly done: Promise<number>;
}

export function bulkWrite(
  base: string,
  kbId: string,
  headers: Record<string, string>,
  docs: readonly { id: string; text: string }[],
  writers: number,
): BulkWrite {
  const state = { acked: 0, status: {} as Record<number, number> };
  let next = 0;
  const done = Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < docs.length) {
        const doc = docs[next++]!;
        for (;;) {
          const res = await fetch(`${base}/api/v1/knowledge-bases/${kbId}/contents`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ text: doc.text, metadata: { sciId: doc.id } }),
          });
          await res.arrayBuffer();
          state.status[res.status] = (state.status[res.status] ?? 0) + 1;
          if (res.status !== 429) break;
          await Bun.sleep(1000 * Number(res.headers.get('retry-after') ?? 1));
        }
        state.acked++;
      }
    }),
  ).then(() => performance.now());
  return {
    get acked() {
      return state.acked;
    },
    status: state.status,
    done,
  };
}
