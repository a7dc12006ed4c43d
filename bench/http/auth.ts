// The organization and API key the HTTP benchmarks' servers are started with, and the headers of
// their requests. Apart from options.ts, so modules that read no command line (load.ts, shared by
// bench/scale.ts) can import them.
export const ORG = 'org_bench';
export const KEY = 'bench-key';
export const headers = { 'x-service-organization-id': ORG, 'x-service-api-key': KEY, 'content-type': 'application/json' };
