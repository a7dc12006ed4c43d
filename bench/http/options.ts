// bench/http.ts: command-line options and the settings derived from them.
import { parseArgs } from 'node:util';
import { parseCount } from '../lib/format';

const { values: args } = parseArgs({
  options: {
    chunks: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    'ingest-connections': { type: 'string' },
    wrk: { type: 'string', default: 'auto' },
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
  strict: true,
});
export { args };
export const quick = args.quick;
export const targetChunks = parseCount(args.chunks ?? (quick ? '3k' : '50k'));
// autocannon counts whole seconds.
export const durationS = Math.max(1, Math.round(Number(args.duration ?? (quick ? 1 : 2))));
export const connectionsList = (args.connections ?? '1,16,64').split(',').map(Number);
export const ingestConnections = Number(args['ingest-connections'] ?? 16);
export const wrkPath = args.wrk === 'off' ? null : Bun.which('wrk');
if (args.wrk === 'on' && !wrkPath) throw new Error('--wrk on: wrk is not on PATH (apt-get install wrk)');
export { headers, KEY, ORG } from './auth';
export const CHUNKING = { size: 2000, overlap: 200 };
// Paired target rounds: an engine pass of at least TARGET_ENGINE_MS, then TARGET_HTTP_S of HTTP load.
export const TARGET_ROUNDS = quick ? 1 : 7;
export const TARGET_ENGINE_MS = quick ? 500 : 1500;
export const TARGET_HTTP_S = quick ? 1 : 3;
