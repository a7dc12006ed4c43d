// The record log as a NATS JetStream stream (cluster mode): file storage replicated by JetStream's
// own Raft (replicas 3 on a 3-server cluster), so a record is durable once the stream's quorum has
// acknowledged it, and the sequence number of the acknowledgement is the record's place in the one
// order every node applies. Each append carries a message id (Nats-Msg-Id): a publish retried
// after a lost acknowledgement is stored once. Nothing outside engine/log/ knows the stream exists.
import { jetstream, jetstreamManager, DeliverPolicy, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { newId } from '../ids';
import type { LogEntry, LogRange, RecordLog } from './log';

export interface JetStreamLogOptions {
  servers: string[];
  /** Stream name; its one subject is `<stream>.records`. */
  stream: string;
  /** Copies JetStream keeps of each record (3 on a 3-server cluster; 1 for a single server). */
  replicas: number;
  /** How long a retried publish is recognized as a duplicate. */
  duplicateWindowMs?: number;
  /** Attempts of one append before it fails (a leader election takes a few seconds). */
  publishAttempts?: number;
}

export type JetStreamRange = Extract<LogRange, { kind: 'jetstream' }>;

const subjectOf = (stream: string) => `${stream}.records`;

/** Records (afterSeq, throughSeq] of a stream, in order, through an ordered consumer. */
export async function readStream(nc: NatsConnection, stream: string, afterSeq: number, throughSeq: number, visit: (entry: LogEntry) => void): Promise<void> {
  if (throughSeq <= afterSeq) return;
  const js = jetstream(nc);
  const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterSeq + 1 });
  const messages = await consumer.consume({ max_messages: 512 });
  try {
    for await (const m of messages) {
      if (m.seq > throughSeq) break;
      visit({ seq: m.seq, payload: m.data });
      if (m.seq >= throughSeq) break;
    }
  } finally {
    await messages.close();
  }
}

/** Reading a JetStreamRange from any thread (the snapshot worker): its own connection. */
export async function readJetStreamRange(range: JetStreamRange, visit: (entry: LogEntry) => void): Promise<void> {
  const nc = await connect({ servers: range.servers });
  try {
    await readStream(nc, range.stream, range.afterSeq, range.throughSeq, visit);
  } finally {
    await nc.close();
  }
}

export class JetStreamLog implements RecordLog {
  private last = 0;
  private firstSeq = 1;

  private constructor(
    private readonly options: JetStreamLogOptions,
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
  ) {}

  /** Connects, creates the stream when absent, and replays every record to `replay`. */
  static async open(options: JetStreamLogOptions, replay: (entry: LogEntry) => void, afterSeq = 0): Promise<JetStreamLog> {
    const nc = await connect({ servers: options.servers, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
    const jsm = await jetstreamManager(nc);
    const log = new JetStreamLog(options, nc, jetstream(nc), jsm);
    try {
      await jsm.streams.info(options.stream);
    } catch {
      await jsm.streams.add({
        name: options.stream,
        subjects: [subjectOf(options.stream)],
        storage: StorageType.File,
        num_replicas: options.replicas,
        duplicate_window: nanos(options.duplicateWindowMs ?? 120_000),
      });
    }
    const state = (await jsm.streams.info(options.stream)).state;
    log.last = state.last_seq;
    log.firstSeq = state.first_seq;
    await readStream(nc, options.stream, afterSeq, log.last, replay);
    return log;
  }

  get lastSequence(): number {
    return this.last;
  }

  async append(payload: Uint8Array): Promise<number> {
    const msgID = newId('rec');
    const attempts = this.options.publishAttempts ?? 20;
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        // The same id on every attempt: a record whose acknowledgement was lost is stored once.
        const ack = await this.js.publish(subjectOf(this.options.stream), payload, { msgID, timeout: 5000 });
        if (ack.seq > this.last) this.last = ack.seq;
        return ack.seq;
      } catch (err) {
        lastError = err;
        await Bun.sleep(Math.min(2000, 100 * attempt));
      }
    }
    throw new Error(`the record could not be logged in JetStream after ${attempts} attempts: ${String(lastError)}`);
  }

  /** A record is durable once acknowledged (the stream's quorum stored it). */
  async sync(): Promise<void> {}

  async read(afterSeq: number, visit: (entry: LogEntry) => void): Promise<void> {
    const state = (await this.jsm.streams.info(this.options.stream)).state;
    await readStream(this.nc, this.options.stream, afterSeq, state.last_seq, visit);
  }

  /** The stream has no parts to seal: everything acknowledged is readable at once. */
  async roll(): Promise<number> {
    return this.last;
  }

  range(afterSeq: number, throughSeq: number): LogRange {
    return { kind: 'jetstream', servers: this.options.servers, stream: this.options.stream, afterSeq, throughSeq };
  }

  /** Purges records below `seq`; resolves with how many were removed. */
  async truncateBefore(seq: number): Promise<number> {
    if (seq <= this.firstSeq) return 0;
    const { purged } = await this.jsm.streams.purge(this.options.stream, { seq });
    this.firstSeq = seq;
    return purged;
  }

  async sizeBytes(): Promise<number> {
    return (await this.jsm.streams.info(this.options.stream)).state.bytes;
  }

  async close(): Promise<void> {
    await this.nc.close();
  }
}
