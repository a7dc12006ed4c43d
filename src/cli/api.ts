// The CLI's HTTP calls: the organization's headers on every request, the envelope unwrapped, and
// failures turned into one readable sentence (CliError), never a stack trace.

export class CliError extends Error {
  constructor(
    message: string,
    /** Process exit code: 1 for failures, 2 for usage errors. */
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export interface Connection {
  url: string;
  org: string;
  key: string;
}

interface Envelope<T> {
  success: boolean;
  data?: T;
  total?: number;
  error?: { code: string; message: string; details?: { path: string; message: string }[] };
}

export class Api {
  constructor(private readonly connection: Connection) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { 'x-service-organization-id': this.connection.org, 'x-service-api-key': this.connection.key, ...extra };
  }

  /** One request; the envelope's `data` (and `total` for lists), or a CliError with the server's message. */
  async call<T>(method: string, path: string, body?: unknown): Promise<{ data: T; total?: number }> {
    const init: RequestInit = { method, headers: this.headers(body === undefined ? {} : { 'content-type': 'application/json' }) };
    if (body !== undefined) init.body = JSON.stringify(body);
    return this.send<T>(path, init);
  }

  /** A file upload (multipart: the file and its metadata as JSON). */
  upload<T>(kbId: string, fileName: string, bytes: Uint8Array, metadata: Record<string, unknown>): Promise<{ data: T }> {
    const form = new FormData();
    form.append('file', new File([bytes], fileName));
    form.append('metadata', JSON.stringify(metadata));
    return this.send<T>(`/api/v1/knowledge-bases/${encodeURIComponent(kbId)}/contents/file`, { method: 'POST', headers: this.headers(), body: form });
  }

  /** A request of its own (a body other than JSON); merged with the organization's headers. */
  async send<T>(path: string, init: RequestInit): Promise<{ data: T; total?: number }> {
    init = { ...init, headers: this.headers((init.headers ?? {}) as Record<string, string>) };
    let res: Response;
    try {
      res = await fetch(`${this.connection.url.replace(/\/$/, '')}${path}`, init);
    } catch (err) {
      throw new CliError(
        `cannot reach the server at ${this.connection.url} (${err instanceof Error ? err.message : String(err)}); is it running? (--url or KB_URL)`,
      );
    }
    const text = await res.text();
    let envelope: Envelope<T>;
    try {
      envelope = JSON.parse(text) as Envelope<T>;
    } catch {
      throw new CliError(`the server at ${this.connection.url} answered ${res.status} with something other than JSON`);
    }
    if (!res.ok || !envelope.success) {
      const error = envelope.error;
      const details = error?.details?.map((d) => `\n  ${d.path}: ${d.message}`).join('') ?? '';
      throw new CliError(`${error?.message ?? `HTTP ${res.status}`}${error?.code ? ` (${error.code})` : ''}${details}`);
    }
    return { data: envelope.data as T, total: envelope.total };
  }
}

/** Every page of a list route, 100 items a page. */
export async function* allPages<T>(api: Api, path: string): AsyncGenerator<T> {
  for (let page = 1; ; page++) {
    const { data, total } = await api.call<T[]>('GET', `${path}${path.includes('?') ? '&' : '?'}page=${page}&limit=100`);
    yield* data;
    if (data.length < 100 || (total !== undefined && page * 100 >= total)) return;
  }
}
