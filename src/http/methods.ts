// The app's route templates, read from the routes it registered: which methods a path answers to
// (405 answers with an Allow header, CORS preflights) and which template a request falls under
// (labels of logs and metrics, so their number is that of the routes, whatever paths clients
// send). Never an authentication decision: those are made on what the router matched.

interface RoutePattern {
  pattern: RegExp;
  method: string;
  path: string;
  /** Parameter segments: of two templates matching a path, the more specific (fewer) wins, as in the router. */
  params: number;
}

/** The label of every path no route answers. */
export const UNMATCHED = '(unmatched)';

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** "/api/v1/knowledge-bases/:id" → a regular expression matching one value per parameter segment. */
function patternOf(path: string): RegExp {
  const source = path
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : escapeRegExp(seg)))
    .join('/');
  return new RegExp(`^${source}$`);
}

export class RouteTable {
  private readonly routes: RoutePattern[];

  constructor(routes: readonly { method: string; path: string }[]) {
    this.routes = routes
      .filter((r) => r.method !== 'ALL')
      .map((r) => ({
        pattern: patternOf(r.path),
        method: r.method.toUpperCase(),
        path: r.path,
        params: r.path.split('/').filter((s) => s.startsWith(':') || s === '*').length,
      }))
      .sort((a, b) => a.params - b.params);
  }

  /** The methods `path` answers to, HEAD wherever GET is, in a stable order; empty for an unknown path. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const r of this.routes) if (r.pattern.test(path)) methods.add(r.method);
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  }

  /**
   * The template a request falls under: the most specific route of its method matching the path,
   * else of any method (a 405), else UNMATCHED.
   */
  template(method: string, path: string): string {
    const wanted = method === 'HEAD' ? 'GET' : method;
    let other: string | undefined;
    for (const r of this.routes) {
      if (!r.pattern.test(path)) continue;
      if (r.method === wanted) return r.path;
      other ??= r.path;
    }
    return other ?? UNMATCHED;
  }
}
