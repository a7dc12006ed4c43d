// Which methods a path answers to, read from the routes the app registered: for 405 answers with
// an Allow header, and for CORS preflights. Never an authentication decision (those are made on
// what the router matched).

interface RoutePattern {
  pattern: RegExp;
  method: string;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** "/api/v1/knowledge-bases/:id" → a regular expression matching one value per parameter segment. */
function patternOf(path: string): RegExp {
  const source = path
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : escape(seg)))
    .join('/');
  return new RegExp(`^${source}$`);
}

export class RouteMethods {
  private readonly routes: RoutePattern[];

  constructor(routes: readonly { method: string; path: string }[]) {
    this.routes = routes.filter((r) => r.method !== 'ALL').map((r) => ({ pattern: patternOf(r.path), method: r.method.toUpperCase() }));
  }

  /** The methods `path` answers to, HEAD wherever GET is, in a stable order; empty for an unknown path. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const r of this.routes) if (r.pattern.test(path)) methods.add(r.method);
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  }
}
