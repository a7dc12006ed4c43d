// An OpenAI-compatible embedding endpoint for tests (the engine's HTTP provider calls it): each
// input text's vector from a function of the text, answered in order.

/** Serve `embed` on a free local port (stop it with `.stop(true)`). */
export function serveEmbeddings(embed: (text: string) => number[]) {
  return Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const { input } = (await req.json()) as { input: string[] };
      return Response.json({ data: input.map((text, index) => ({ index, embedding: embed(text) })) });
    },
  });
}

/** Unit vectors from a text's words hashed into `dims` dimensions: texts sharing words stay close. */
export function wordHashVector(text: string, dims: number): number[] {
  const v = new Float64Array(dims);
  for (const word of text.toLowerCase().split(/\W+/).filter(Boolean)) {
    let h = 2166136261;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 16777619);
    v[(h >>> 0) % dims]! += 1;
    v[(h >>> 8) % dims]! += 0.5;
  }
  const n = Math.hypot(...v) || 1;
  return Array.from(v, (x) => x / n);
}

/** `dims` values in [−0.5, 0.5) from the text's characters hashed: deterministic, distinct texts far apart. */
export function charHashVector(text: string, dims: number): number[] {
  let h = 2166136261;
  return Array.from({ length: dims }, (_, i) => {
    h = Math.imul(h ^ (text.charCodeAt(i % text.length) + i), 16777619);
    return (h >>> 0) / 2 ** 32 - 0.5;
  });
}
