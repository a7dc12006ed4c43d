// The server's Prometheus /metrics, read back for progress and counts.

/** Prometheus text → map of `name{labels}` → value. */
export async function scrapeMetrics(base: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    out.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return out;
}

/** scrapeMetrics, or undefined when the server does not answer (gone, or not listening yet). */
export const tryScrapeMetrics = (base: string): Promise<Map<string, number> | undefined> => scrapeMetrics(base).catch(() => undefined);

/** Sum of a metric over its label sets. */
export function metricSum(metrics: Map<string, number>, name: string): number {
  let sum = 0;
  for (const [k, v] of metrics) if (k === name || k.startsWith(`${name}{`)) sum += v;
  return sum;
}
