// What the JetStream log and the JetStream job queue share: how a node connects to NATS, makes sure
// its stream exists, and publishes so that a retry after a lost acknowledgement is stored once.
import { readFileSync } from 'node:fs';
import {
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type PubAck,
  type StreamConfig,
} from '@nats-io/jetstream';
import {
  AuthorizationError,
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  TimeoutError,
  type NatsConnection,
  type NodeConnectionOptions,
} from '@nats-io/transport-node';

/**
 * How a node proves who it is to the NATS servers and how the connection is secured (README,
 * "Running a cluster"). Plain data (a snapshot worker thread connects with it too): file paths are
 * read when connecting. At most one way of authenticating: a creds file, a user and password, a
 * token, or an nkey seed. Absent: no credentials, and TLS only if the servers ask for it.
 */
export interface NatsAuth {
  /** A `.creds` file: the user's JWT and nkey seed (as `nsc` writes it). */
  credsFile?: string;
  user?: string;
  password?: string;
  token?: string;
  /** An nkey user seed (`SU…`) for a server that lists the user's public nkey. */
  nkeySeed?: string;
  /**
   * TLS, required when present (as it is when a server URL is `tls://…`): the servers'
   * certificates verified with `caFile` (PEM; the system's CAs when absent), and a client
   * certificate and key for servers that verify clients (mutual TLS).
   */
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
}

/** The client's connection options for `servers` and `auth`: every NATS connection of a node is made with these. */
export function natsConnectionOptions(servers: string[], auth: NatsAuth = {}): NodeConnectionOptions {
  const options: NodeConnectionOptions = { servers, maxReconnectAttempts: -1, reconnectTimeWait: 250 };
  if (auth.credsFile !== undefined) {
    const credsFile = auth.credsFile;
    // Read at each authentication: a creds file replaced on disk (a new JWT) holds from the next reconnect.
    options.authenticator = credsAuthenticator(() => readFileSync(credsFile));
  } else if (auth.nkeySeed !== undefined) {
    options.authenticator = nkeyAuthenticator(new TextEncoder().encode(auth.nkeySeed));
  } else if (auth.token !== undefined) {
    options.token = auth.token;
  } else if (auth.user !== undefined) {
    options.user = auth.user;
    options.pass = auth.password;
  }
  // The client reads `tls://` as a host and port like any other URL: TLS is asked for here.
  if (auth.tls || servers.some((s) => /^tls:\/\//i.test(s.trim()))) {
    const { caFile, certFile, keyFile } = auth.tls ?? {};
    options.tls = { ...(caFile && { caFile }), ...(certFile && { certFile }), ...(keyFile && { keyFile }) };
  }
  return options;
}

/** Why a first connection failed, in words an operator can act on. */
function connectFailure(err: unknown, options: NodeConnectionOptions): string {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof AuthorizationError || /authori[sz]ation violation/i.test(message)) {
    return `the server refused this node's credentials (${message}): check the NATS credentials it is configured with`;
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME/.test(code)) {
    return `the server's TLS certificate was not accepted (${code}: ${message}): give the CA that signed it`;
  }
  if (/tls/i.test(message)) return `TLS failed (${message})`;
  if (err instanceof TimeoutError && options.tls) {
    // A server verifying client certificates closes a connection whose certificate it refused: the
    // client does not see that close and waits out its timeout.
    return `no answer (${message}): the servers are out of reach, or refused this node's TLS client certificate (none given, or one their CA did not sign)`;
  }
  return message;
}

/** A NATS call that does not answer within `ms` (NATS out of reach) rejects instead of waiting. */
export const within = <T>(ms: number, promise: Promise<T>): Promise<T> =>
  Promise.race([promise, Bun.sleep(ms).then(() => Promise.reject(new Error(`NATS did not answer within ${ms} ms`)))]);

/** A connection that reconnects for as long as the node runs (NATS servers restart, leaders move). */
export async function connectNats(servers: string[], auth?: NatsAuth): Promise<NatsConnection> {
  const options = natsConnectionOptions(servers, auth);
  try {
    return await connect(options);
  } catch (err) {
    throw new Error(`cannot connect to NATS at ${servers.join(', ')}: ${connectFailure(err, options)}`, { cause: err });
  }
}

/**
 * `ask` tried again for `waitMs` while JetStream does not answer: servers starting together
 * have no leader yet, a stream just made (or one whose leader died) elects one, and meanwhile
 * requests time out. A node started with its NATS servers waits instead of failing.
 */
export async function whenJetStreamAnswers<T>(what: string, ask: () => Promise<T>, waitMs = 30_000): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await ask();
    } catch (err) {
      if (Date.now() >= deadline) throw new Error(`JetStream did not answer (${what}) within ${waitMs} ms: ${String(err)}`, { cause: err });
      await Bun.sleep(Math.min(1000, 100 * attempt));
    }
  }
}

/** The JetStream manager, once JetStream answers, and the stream, made when absent. */
export async function ensureStream(nc: NatsConnection, config: Partial<StreamConfig> & { name: string }, waitMs = 30_000): Promise<JetStreamManager> {
  return whenJetStreamAnswers(
    `stream ${config.name}`,
    async () => {
      const jsm = await jetstreamManager(nc);
      try {
        await jsm.streams.info(config.name);
      } catch (err) {
        if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
        await jsm.streams.add(config);
      }
      return jsm;
    },
    waitMs,
  );
}

/**
 * Publish with one message id on every attempt (JetStream stores it once within the stream's
 * duplicate window), tried again while a leader is being elected or NATS is out of reach.
 * With `expectLastSeq`, stored only if the stream still ends there (else the stream's answer,
 * isWrongLastSequence, is thrown at once: it will not change by asking again).
 */
export async function publishRetried(
  js: JetStreamClient,
  subject: string,
  payload: Uint8Array | string,
  msgID: string,
  attempts = 20,
  expectLastSeq?: number,
): Promise<PubAck> {
  const expect = expectLastSeq === undefined ? undefined : { lastSequence: expectLastSeq };
  for (let attempt = 1; ; attempt++) {
    try {
      return await js.publish(subject, payload, { msgID, timeout: 2000, expect });
    } catch (err) {
      if (isWrongLastSequence(err)) throw err;
      if (attempt >= attempts) throw new Error(`not stored in JetStream after ${attempts} attempts: ${String(err)}`);
      await Bun.sleep(Math.min(2000, 100 * attempt));
    }
  }
}

/** The stream refused a conditional publish: another record came after the position expected. */
export function isWrongLastSequence(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence;
}
