// The record log as a NATS JetStream stream (cluster mode): file storage replicated by JetStream's
// own Raft (replicas 3 on a 3-server cluster), so a record is durable once the stream's quorum has
// acknowledged it, and the sequence number of the acknowledgement is the record's place in the one
// order every node applies. Each append carries a message id (Nats-Msg-Id): a publish retried
// after a lost acknowledgement is stored once. Nothing outside engine/log/ knows the stream exists.
import { jetstream, DeliverPolicy, StorageType, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { connectNats, ensureStream, isWrongLastSequence, publishRetried, whenJetStreamAnswers, type NatsAuth } from './nats';
import { newId } from '../ids';
import { EngineError } from '../errors';
import type { LogEntry, LogRange, RecordLog } from './log';

export interface JetStreamLogOptions {
  servers: string[];
  /** Credentials and TLS for the NATS connection (absent: none). */
  auth?: NatsAuth;
  /** Stream name; its one subject is `<stream>.records`. */
  stream: string;
  /** Copies JetStream keeps of each record (3 on a 3-server cluster; 1 for a single server). */
  replicas: number;
  /** How long a retried publish is recognized as a duplicate. */
  duplicateWindowMs?: number;
  /** Attempts of one append before it fails (a leader election takes a few seconds). */
  publishAttempts?: number;
  /** Following stopped on an error (a record `visit` could not take): nothing later can be applied. */
  onStopped?: (err: unknown) => void;
  /**
   * The cluster's shard count, fixed when the stream is made (in its description): a node
   * configured with another count would apply records to the wrong shards, so it refuses to start.
   */
  shards?: number;
}

const describeShards = (count: number) => `kb-search log; shards=${count}`;
/** The shard count a stream was made with (streams made before shards existed: 1). */
const shardsOfStream = (description: string | undefined) => Number(/shards=(\d+)/.exec(description ?? '')?.[1] ?? 1);

export type JetStreamRange = Extract<LogRange, { kind: 'jetstream' }>;

/** `<stream>.records`, or `<stream>.records.<partition>` (a shard, or `kb`); one stream, one order. */
const subjectOf = (stream: string, partition?: string) => (partition ? `${stream}.records.${partition}` : `${stream}.records`);

type StreamMessages = Awaited<ReturnType<Awaited<ReturnType<JetStreamClient['consumers']['get']>>['consume']>>;

/**
 * A consumer that delivers nothing for this long while records are known to be waiting is given
 * up, and a new one made after the last record taken.
 */
const SILENT_CONSUMER_MS = 3000;

/**
 * The stream's records from `startSeq` on, through an ordered consumer (short pulls with idle
 * heartbeats). The consumer lives on one server; when that server dies, the client's own recovery
 * can keep re-pulling from a consumer that is gone, or (after a reconnect whose checks failed)
 * stop watching heartbeats and wait silently. So the messages end after two missed heartbeats, and
 * callers also give up a consumer that stays silent while records wait (SILENT_CONSUMER_MS); they
 * make a new one after the last record they took.
 */
async function consumeFrom(js: JetStreamClient, stream: string, startSeq: number): Promise<StreamMessages> {
  const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: startSeq });
  const messages = await consumer.consume({ max_messages: 512, expires: 2000 });
  void (async () => {
    for await (const status of messages.status()) {
      if (status.type === 'heartbeats_missed' && status.count >= 2) {
        await messages.close();
        return;
      }
    }
  })().catch(() => {});
  return messages;
}

/**
 * A record as a LogEntry. The payload is copied into a plain Uint8Array: the client hands out Node
 * Buffers viewing its receive buffer (and Buffer.slice makes another view, not a copy).
 */
const entryOf = (m: JsMsg): LogEntry => ({ seq: m.seq, payload: new Uint8Array(m.data) });

/**
 * Records (afterSeq, throughSeq] of a stream, in order. Rejects when no record arrives for
 * `stallMs` (the servers it reads through lack them, or are gone).
 */
export async function readStream(
  nc: NatsConnection,
  stream: string,
  afterSeq: number,
  throughSeq: number,
  visit: (entry: LogEntry) => void,
  stallMs = 15_000,
): Promise<void> {
  const js = jetstream(nc);
  let last = afterSeq;
  let progressed = Date.now(); // the last record taken
  let active = Date.now(); // the last record taken or consumer made
  let messages: StreamMessages | undefined;
  const watchdog = setInterval(() => {
    if (Date.now() - active < Math.min(SILENT_CONSUMER_MS, stallMs)) return;
    active = Date.now();
    void messages?.close();
  }, 250);
  try {
    while (last < throughSeq && Date.now() - progressed < stallMs) {
      try {
        messages = await consumeFrom(js, stream, last + 1);
        active = Date.now();
        for await (const m of messages) {
          if (m.seq <= last) continue;
          progressed = active = Date.now();
          last = m.seq;
          if (m.seq > throughSeq) break;
          visit(entryOf(m));
          if (m.seq >= throughSeq) break;
        }
      } catch {
        // The consumer could not be made (no JetStream leader yet): again shortly, until the stall.
        await Bun.sleep(250);
      } finally {
        await messages?.close();
      }
    }
  } finally {
    clearInterval(watchdog);
  }
  if (last < throughSeq) throw new Error(`reading ${stream} stalled after record ${last} of ${throughSeq}`);
}

/** Reading a JetStreamRange from any thread (the snapshot worker): its own connection. */
export async function readJetStreamRange(range: JetStreamRange, visit: (entry: LogEntry) => void): Promise<void> {
  const nc = await connectNats(range.servers, range.auth);
  try {
    await readStream(nc, range.stream, range.afterSeq, range.throughSeq, visit);
  } finally {
    await nc.close();
  }
}

/** The stream no longer holds the records right after where this node would start (they were purged). */
export class LogGapError extends Error {}

/** A record larger than the NATS servers accept in one message (their `max_payload`). */
export class RecordTooLargeError extends EngineError<'RECORD_TOO_LARGE'> {
  constructor(bytes: number, limit: number) {
    super('RECORD_TOO_LARGE', `a record of ${bytes} bytes is larger than the NATS servers accept (max_payload ${limit})`, { bytes, limit });
  }
}

export class JetStreamLog implements RecordLog {
  /** The newest record handed to `visit` (every record up to it has been, in order). */
  private followed = 0;
  private firstSeq = 1;
  private readonly waiting: { seq: number; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private failure: unknown;
  private messages: StreamMessages | undefined;
  private following: Promise<void> = Promise.resolve();
  private closing = false;
  /** When the last record was followed or the current consumer made. */
  private active = Date.now();
  private watchdog: ReturnType<typeof setInterval> | undefined;
  private checking = false;

  private constructor(
    private readonly options: JetStreamLogOptions,
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
  ) {}

  /**
   * Connects, creates the stream when absent, and follows it: every record after `afterSeq` goes
   * to `visit` in stream order — those already there before this resolves, then each new one as
   * it arrives (whichever node appended it), until close(). Rejects when the records right after
   * `afterSeq` were purged (start from a newer snapshot).
   */
  static async open(options: JetStreamLogOptions, visit: (entry: LogEntry) => void, afterSeq = 0): Promise<JetStreamLog> {
    const nc = await connectNats(options.servers, options.auth);
    let jsm: JetStreamManager;
    let state: Awaited<ReturnType<JetStreamManager['streams']['info']>>['state'];
    try {
      jsm = await ensureStream(nc, {
        name: options.stream,
        subjects: [subjectOf(options.stream), subjectOf(options.stream, '>')],
        storage: StorageType.File,
        num_replicas: options.replicas,
        duplicate_window: nanos(options.duplicateWindowMs ?? 120_000),
        description: describeShards(options.shards ?? 1),
      });
      const info = await whenJetStreamAnswers(`stream ${options.stream}`, () => jsm.streams.info(options.stream));
      state = info.state;
      const made = shardsOfStream(info.config.description);
      if (made !== (options.shards ?? 1)) {
        throw new Error(`the stream ${options.stream} was made for ${made} shard(s); this node is configured with CLUSTER_SHARDS=${options.shards ?? 1}`);
      }
    } catch (err) {
      await nc.close();
      throw err;
    }
    const log = new JetStreamLog(options, nc, jetstream(nc), jsm);
    log.firstSeq = state.first_seq;
    log.followed = afterSeq;
    if (state.messages > 0 && state.first_seq > afterSeq + 1) {
      await nc.close();
      throw new LogGapError(`the log's records ${afterSeq + 1}…${state.first_seq - 1} were purged: start from a snapshot covering them`);
    }
    log.following = log.follow(visit);
    log.watchdog = setInterval(() => void log.restartIfSilent(), 500);
    try {
      await log.whenFollowed(state.last_seq);
    } catch (err) {
      await log.close();
      throw err;
    }
    return log;
  }

  /**
   * Hand every record after `followed` to `visit`, for as long as the log is open. When the
   * consumer ends (its server died, NATS was out of reach) a new one starts after the last record
   * followed.
   */
  private async follow(visit: (entry: LogEntry) => void): Promise<void> {
    while (!this.closing) {
      try {
        this.messages = await consumeFrom(this.js, this.options.stream, this.followed + 1);
        this.active = Date.now();
        if (this.closing) await this.messages.close();
        for await (const m of this.messages) {
          if (m.seq <= this.followed) continue;
          if (m.seq > this.followed + 1 && this.followed >= this.firstSeq - 1) {
            return this.stop(new Error(`the log's records ${this.followed + 1}…${m.seq - 1} are gone (purged): this node must start from a newer snapshot`));
          }
          try {
            visit(entryOf(m));
          } catch (err) {
            // A record that cannot be applied stops this node (the others go on): nothing after
            // it could be applied in order.
            return this.stop(err);
          }
          this.followed = m.seq;
          this.active = Date.now();
          this.release();
        }
      } catch {
        // NATS out of reach or the consumer lost: start over after the last record followed.
      }
      if (!this.closing) await Bun.sleep(250);
    }
  }

  /**
   * Give up a consumer that has delivered nothing for SILENT_CONSUMER_MS while records wait: an
   * append waits for a later record, or the stream holds one. Idle, this asks the stream once per
   * SILENT_CONSUMER_MS.
   */
  private async restartIfSilent(): Promise<void> {
    if (this.closing || this.failure || this.checking || Date.now() - this.active < SILENT_CONSUMER_MS) return;
    this.checking = true;
    try {
      const awaited = this.waiting.reduce((max, w) => Math.max(max, w.seq), 0);
      const newest = awaited > this.followed ? awaited : await this.streamLastSequence();
      if (newest > this.followed && Date.now() - this.active >= SILENT_CONSUMER_MS) void this.messages?.close();
    } catch {
      // NATS out of reach: the follow loop is reconnecting anyway.
    } finally {
      this.active = Date.now();
      this.checking = false;
    }
  }

  private stop(err: unknown): void {
    this.failure = err;
    for (const w of this.waiting.splice(0)) w.reject(err);
    this.options.onStopped?.(err);
  }

  private release(): void {
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const w = this.waiting[i]!;
      if (w.seq <= this.followed) {
        this.waiting.splice(i, 1);
        w.resolve();
      }
    }
  }

  /** Resolves once every record up to `seq` has been handed to `visit`. */
  whenFollowed(seq: number): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (seq <= this.followed) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiting.push({ seq, resolve, reject }));
  }

  /**
   * Resolves true once every record up to `seq` has been handed to `visit`, false after
   * `timeoutMs` (or when following stopped); a position never reached leaves nothing behind.
   */
  waitFollowed(seq: number, timeoutMs: number): Promise<boolean> {
    if (this.failure) return Promise.resolve(false);
    if (seq <= this.followed) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { seq, resolve: () => (clearTimeout(timer), resolve(true)), reject: () => (clearTimeout(timer), resolve(false)) };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(false);
      }, timeoutMs);
      this.waiting.push(waiter);
    });
  }

  /** Sequence number of the newest record in the stream (from its leader). */
  async streamLastSequence(): Promise<number> {
    return (await this.jsm.streams.info(this.options.stream)).state.last_seq;
  }

  /** The newest record followed (applied, for the engine). */
  get lastSequence(): number {
    return this.followed;
  }

  /**
   * Append a record; resolves with its sequence number once the stream's quorum has stored it
   * and this log has handed it (and every record before it) to `visit`: read-your-writes.
   */
  async append(payload: Uint8Array, partition?: string, expectLastSeq?: number): Promise<number> {
    if (this.failure) throw this.failure;
    const limit = this.nc.info?.max_payload ?? Infinity;
    if (payload.length > limit) throw new RecordTooLargeError(payload.length, limit);
    const { seq } = await publishRetried(
      this.js,
      subjectOf(this.options.stream, partition),
      payload,
      newId('rec'),
      this.options.publishAttempts,
      expectLastSeq,
    );
    await this.whenFollowed(seq);
    return seq;
  }

  /** Whether an append failed because `expectLastSeq` was no longer the stream's end. */
  static isConflict(err: unknown): boolean {
    return isWrongLastSequence(err);
  }

  /** A record is durable once acknowledged (the stream's quorum stored it). */
  async sync(): Promise<void> {}

  async read(afterSeq: number, visit: (entry: LogEntry) => void): Promise<void> {
    const state = (await this.jsm.streams.info(this.options.stream)).state;
    await readStream(this.nc, this.options.stream, afterSeq, state.last_seq, visit);
  }

  /** The stream has no parts to seal: everything followed is readable at once. */
  async roll(): Promise<number> {
    return this.followed;
  }

  range(afterSeq: number, throughSeq: number): LogRange {
    return { kind: 'jetstream', servers: this.options.servers, auth: this.options.auth, stream: this.options.stream, afterSeq, throughSeq };
  }

  /** Purges records below `seq`; resolves with how many were removed. */
  async truncateBefore(seq: number): Promise<number> {
    if (seq <= this.firstSeq) return 0;
    const { purged } = await this.jsm.streams.purge(this.options.stream, { seq });
    this.firstSeq = seq;
    return purged;
  }

  private knownBytes = 0;
  private knownRange = { first: 1, last: 0 };

  /**
   * The stream's size; while NATS is out of reach, the last size read. After `afterSeq`: its share
   * of the stream's messages (the stream tells no bytes by sequence).
   */
  async sizeBytes(afterSeq = 0): Promise<number> {
    try {
      const { state } = await this.jsm.streams.info(this.options.stream);
      this.knownBytes = state.bytes;
      this.knownRange = { first: state.first_seq, last: state.last_seq };
    } catch {}
    const { first, last } = this.knownRange;
    if (afterSeq < first || last < first) return this.knownBytes;
    return Math.round((this.knownBytes * Math.max(0, last - afterSeq)) / (last - first + 1));
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.watchdog);
    await this.messages?.close();
    await this.following;
    await this.nc.close();
  }
}
