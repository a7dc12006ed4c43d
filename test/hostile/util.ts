import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { STATUS_OF } from '../../src/errors';
import { expectNoLeak } from '../api/util';
import { KEY, ORG, type RunningServer } from '../helpers/server';

export const API = '/api/v1';

export type Auth = { org?: string; key?: string } | null;
export const MINE: Auth = { org: ORG, key: KEY };

// --- request counting -------------------------------------------------------------------------

const counter = ((globalThis as { __hostileRequests?: { total: number } }).__hostileRequests ??= { total: 0 });

/** Requests sent since the module (or the first hostile file) was loaded. */
export function requestsSent(): number {
  return counter.total;
}

/** Prints this file's request count and the running total of the suite. */
export function reportRequests(file: string, startedAt: number): void {
  console.log(`[hostile] ${file}: ${counter.total - startedAt} HTTP requests (suite total so far: ${counter.total})`);
}

// --- HTTP ------------------------------------------------------------------------------------

export interface Answer {
  status: number;
  /** Parsed JSON, or the raw text when it is not JSON. */
  body: any;
  raw: string;
  headers: Headers;
  ms: number;
}

export function authHeaders(auth: Auth): Record<string, string> {
  const h: Record<string, string> = {};
  if (auth?.org !== undefined) h['x-service-organization-id'] = auth.org;
  if (auth?.key !== undefined) h['x-service-api-key'] = auth.key;
  return h;
}

function parse(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/**
 * One request. A string or byte body is sent as is (Content-Type application/json unless given),
 * anything else is JSON.stringify'd; FormData is sent as multipart.
 */
export async function call(
  server: RunningServer,
  method: string,
  path: string,
  body?: unknown,
  auth: Auth = MINE,
  extraHeaders: Record<string, string> = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...authHeaders(auth), ...extraHeaders };
  let payload: RequestInit['body'];
  if (body instanceof FormData) payload = body;
  else if (typeof body === 'string' || body instanceof Uint8Array || body instanceof ReadableStream) {
    payload = body as RequestInit['body'];
    headers['content-type'] ??= 'application/json';
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] ??= 'application/json';
  }
  counter.total++;
  const started = performance.now();
  const res = await fetch(`${server.url}${path}`, { method, headers, body: payload });
  const raw = await res.text();
  return { status: res.status, body: parse(raw), raw, headers: res.headers, ms: performance.now() - started };
}

export interface UploadOptions {
  name?: string;
  bytes?: Uint8Array | string;
  /** The raw `metadata` field (omitted when undefined). */
  metadata?: string;
  auth?: Auth;
  wait?: boolean;
}

/** A multipart upload to POST …/contents/file (FormData, so fetch sets the length and boundary). */
export function upload(server: RunningServer, kb: string, options: UploadOptions = {}): Promise<Answer> {
  const form = new FormData();
  form.append('file', new Blob([options.bytes ?? 'hostile upload about falcons'], { type: 'application/octet-stream' }), options.name ?? 'note.txt');
  if (options.metadata !== undefined) form.append('metadata', options.metadata);
  const wait = options.wait ?? true;
  return call(server, 'POST', `${API}/knowledge-bases/${kb}/contents/file${wait ? '?wait=true' : ''}`, form, options.auth === undefined ? MINE : options.auth);
}

// --- the envelope ----------------------------------------------------------------------------

const CODE_STATUS = STATUS_OF as Record<string, number>;

/**
 * Every answer of the app: JSON with a boolean `success`, never a 5xx; errors in the envelope of
 * decisions.md with a code that belongs to the status and no stack, path or library internals.
 * `what` names the request in failure messages.
 */
export function expectEnvelope(res: Answer, what: string): void {
  const where = `${what} → ${res.status} ${res.raw.slice(0, 300)}`;
  if (res.status >= 500) throw new Error(`5xx: ${where}`);
  if (!(res.headers.get('content-type') ?? '').includes('application/json'))
    throw new Error(`not JSON (content-type ${res.headers.get('content-type')}): ${where}`);
  if (typeof res.body !== 'object' || res.body === null || typeof res.body.success !== 'boolean') throw new Error(`no envelope: ${where}`);
  if (res.status < 400) {
    if (res.body.success !== true) throw new Error(`2xx without success: true: ${where}`);
    return;
  }
  const err = res.body.error;
  if (res.body.success !== false || typeof err !== 'object' || err === null) throw new Error(`error without the envelope: ${where}`);
  if (typeof err.code !== 'string' || !/^[A-Z][A-Z_]*$/.test(err.code)) throw new Error(`bad error code: ${where}`);
  if (CODE_STATUS[err.code] !== res.status) throw new Error(`code ${err.code} does not belong to status ${res.status}: ${where}`);
  if (typeof err.message !== 'string' || err.message.length === 0) throw new Error(`error without a message: ${where}`);
  if (err.details !== undefined) {
    if (!Array.isArray(err.details)) throw new Error(`details is not an array: ${where}`);
    for (const d of err.details) if (typeof d?.path !== 'string' || typeof d?.message !== 'string') throw new Error(`bad detail: ${where}`);
  }
  expectNoLeak(res.raw);
}

/** An error answer with this status and (one of) these codes. */
export function expectErrorAnswer(res: Answer, status: number, codes: string | string[], what: string): void {
  expectEnvelope(res, what);
  const allowed = Array.isArray(codes) ? codes : [codes];
  if (res.status !== status || !allowed.includes(res.body.error?.code)) {
    throw new Error(`expected ${status} ${allowed.join('|')}: ${what} → ${res.status} ${res.raw.slice(0, 300)}`);
  }
}

// --- state -----------------------------------------------------------------------------------

/**
 * What an organization can observe: its knowledge bases (list with total, each KB with its
 * configuration), each KB's contents list with total, and a fixed full-text search in each KB.
 * Taken before and after rejected requests, it must not change.
 */
export async function fingerprint(server: RunningServer, auth: Auth = MINE, query = 'falcon'): Promise<string> {
  const kbs = await call(server, 'GET', `${API}/knowledge-bases?limit=100`, undefined, auth);
  if (kbs.status !== 200) throw new Error(`fingerprint: list KBs → ${kbs.status} ${kbs.raw}`);
  const parts: unknown[] = [{ kbs: kbs.body.data, total: kbs.body.total }];
  for (const kb of kbs.body.data as { id: string }[]) {
    const [list, search] = await Promise.all([
      call(server, 'GET', `${API}/knowledge-bases/${kb.id}/contents?limit=100`, undefined, auth),
      call(server, 'POST', `${API}/knowledge-bases/${kb.id}/search/full-text`, { query, limit: 100 }, auth),
    ]);
    if (list.status !== 200 || search.status !== 200)
      throw new Error(`fingerprint of ${kb.id}: ${list.status} ${list.raw.slice(0, 200)} / ${search.status} ${search.raw.slice(0, 200)}`);
    parts.push({ kb: kb.id, contents: list.body.data, total: list.body.total, search: search.body.data });
  }
  return JSON.stringify(parts);
}

/** Fails with a readable diff hint when two fingerprints differ. */
export function expectSameState(before: string, after: string, what: string): void {
  if (before === after) return;
  let at = 0;
  while (at < before.length && before[at] === after[at]) at++;
  throw new Error(
    `state changed after ${what}: first difference at ${at}:\n before …${before.slice(Math.max(0, at - 120), at + 200)}\n after  …${after.slice(Math.max(0, at - 120), at + 200)}`,
  );
}

// --- raw sockets -----------------------------------------------------------------------------

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Parsed JSON body, or undefined. */
  json: any;
  raw: string;
}

/**
 * Writes `request` (the exact bytes of an HTTP/1.1 request) to the server and reads the answer
 * until the server closes the connection or the declared Content-Length arrived.
 */
export function rawRequest(server: RunningServer, request: string, timeoutMs = 10_000): Promise<RawAnswer> {
  const { hostname, port } = new URL(server.url);
  counter.total++;
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const raw = Buffer.concat(chunks).toString('utf8');
      const head = raw.indexOf('\r\n\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(raw)?.[1] ?? 0);
      const headers: Record<string, string> = {};
      for (const line of raw
        .slice(0, head < 0 ? raw.length : head)
        .split('\r\n')
        .slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const body = head < 0 ? '' : raw.slice(head + 4);
      let json: unknown;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {}
      resolve({ status, headers, body, json, raw });
    };
    const complete = () => {
      const all = Buffer.concat(chunks);
      const head = all.indexOf('\r\n\r\n');
      if (head < 0) return false;
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(all.subarray(0, head).toString('latin1'));
      return length !== null && all.length - head - 4 >= Number(length[1]);
    };
    const timer = setTimeout(
      () => (chunks.length > 0 ? finish() : ((settled = true), socket.destroy(), reject(new Error(`no answer to ${JSON.stringify(request.slice(0, 120))}`)))),
      timeoutMs,
    );
    socket.on('connect', () => socket.write(Buffer.from(request, 'latin1')));
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (complete()) finish();
    });
    socket.on('end', finish);
    socket.on('close', finish);
    socket.on('error', (err) => (chunks.length > 0 ? finish() : settled ? undefined : ((settled = true), clearTimeout(timer), reject(err))));
  });
}

/** The envelope check for a raw answer (same rules as expectEnvelope). */
export function expectRawEnvelope(res: RawAnswer, what: string): void {
  const headers = new Headers(res.headers);
  expectEnvelope({ status: res.status, body: res.json ?? res.body, raw: res.body, headers, ms: 0 }, what);
}

// --- memory ----------------------------------------------------------------------------------

export const MiB = 1024 * 1024;

export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  if (!kb) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb[1]) * 1024;
}

/** Samples a process's resident memory every `everyMs` until stopped; keeps the peak. */
export class RssSampler {
  readonly baseline: number;
  peak: number;
  samples = 0;
  private timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly pid: number,
    everyMs = 25,
  ) {
    this.baseline = rssOf(pid);
    this.peak = this.baseline;
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  private sample(): void {
    try {
      this.peak = Math.max(this.peak, rssOf(this.pid));
      this.samples++;
    } catch {} // the process is gone: the test notices by itself
  }

  stop(): { baseline: number; peak: number; growth: number } {
    clearInterval(this.timer);
    this.sample();
    return { baseline: this.baseline, peak: this.peak, growth: this.peak - this.baseline };
  }
}

/**
 * Sends requests to `server` one after another until `stop` resolves: each must answer 200. Returns
 * how many were sent and the slowest one's time.
 */
export async function heartbeat(
  server: RunningServer,
  kb: string,
  stop: Promise<unknown>,
  everyMs = 50,
  onBeat?: (count: number) => void,
): Promise<{ count: number; maxMs: number; failures: string[] }> {
  let done = false;
  void stop.finally(() => (done = true));
  let count = 0;
  let maxMs = 0;
  const failures: string[] = [];
  while (!done) {
    const which = count % 3;
    const res =
      which === 0
        ? await call(server, 'GET', '/health', undefined, null)
        : which === 1
          ? await call(server, 'GET', `${API}/knowledge-bases/${kb}`)
          : await call(server, 'POST', `${API}/knowledge-bases/${kb}/search/full-text`, { query: 'falcon' });
    count++;
    onBeat?.(count);
    maxMs = Math.max(maxMs, res.ms);
    if (res.status !== 200) failures.push(`${res.status} ${res.raw.slice(0, 200)}`);
    await Bun.sleep(everyMs);
  }
  return { count, maxMs, failures };
}

/** Prints the server's "unhandled error" log lines (the stacks behind any 500), for the report. */
export function printServerErrors(server: RunningServer | undefined, label: string): void {
  const lines = server?.output.filter((l) => l.includes('unhandled error') || l.includes('"level":50') || l.includes('"level":60')) ?? [];
  for (const line of lines.slice(0, 20)) console.log(`[hostile] ${label} server error log: ${line.slice(0, 1500)}`);
}
