// Indexing jobs in cluster mode: a JetStream work-queue stream shared by every node, so each content
// version is chunked and embedded once in the cluster, not once per node. A job is published when
// its content version is logged (with a message id per version: published again, it is stored
// once); any node with room pulls it, indexes it, logs the result, then acknowledges it. A node that
// dies mid-job never acknowledges: JetStream hands the job to another node after the ack wait.
// While a job runs, its node tells JetStream it is still working, so long jobs are not handed out
// twice. With shards (engine/shards.ts), jobs go to one subject per shard, each with its own
// durable consumer, and a node pulls only from the shards it holds (the others lack the content).
//
// A work queue is first in, first out, and a node pulls only a few batches ahead, so its own fair
// queue (fair-queue.ts) sees no further: another tenant's single write would wait behind a whole
// backlog. Each shard has two lanes: a write whose knowledge base and organization have few items
// waiting goes to the prompt lane, the others (and re-embedding builds) to the backlog lane, and a
// node pulls both, keeping room for prompt jobs while it pulls backlog ones. The backlog lane keeps
// the subjects and consumer of the single queue before lanes: jobs queued before an upgrade are taken.
import {
  AckPolicy,
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type Consumer,
  type JetStreamClient,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { connectNats, ensureStream, publishRetried, whenJetStreamAnswers, type NatsAuth } from '../log/nats';
import { ShardSet } from '../shards';

export interface IndexingJob {
  kbId: string;
  id: string;
  version: number;
  /** Log sequence number of the record that made this version (the job waits until it is applied). */
  seq: number;
  /** For the configuration being built (re-embedding); absent: the active one. */
  configId?: string;
}

export interface JetStreamJobsOptions {
  servers: string[];
  /** Credentials and TLS for the NATS connection (absent: none). */
  auth?: NatsAuth;
  /** Stream name; job subjects are `<stream>.s<shard>.<kbId>.<contentId>` (backlog lane) and `<stream>.prompt.s<shard>.…`. */
  stream: string;
  /** The shards this node indexes (default: all of one). */
  shards?: ShardSet;
  replicas: number;
  /** A job not acknowledged (nor reported as in progress) for this long goes to another node. */
  ackWaitMs?: number;
}

/** Which lane a job waits in: prompt (its knowledge base and organization have few items waiting) or backlog. */
export type JobLane = 'prompt' | 'backlog';
const LANES: readonly JobLane[] = ['prompt', 'backlog'];

/** With at most this many items waiting (one batch) in its knowledge base and its organization, a job goes to the prompt lane. */
export const PROMPT_LANE_ITEMS = 16;

/** The lane of a job: builds (re-embedding) are background work; a write is prompt unless its knowledge base or organization has a backlog. */
export function laneOf(waitingItems: number, building: boolean): JobLane {
  return !building && waitingItems <= PROMPT_LANE_ITEMS ? 'prompt' : 'backlog';
}

/** How many jobs a node can take: what it holds at most, and how many more now. */
export interface JobRoom {
  capacity: number;
  free(): number;
}

/** The durable consumer every node holding the shard pulls the lane from. */
const consumerOf = (shard: number, lane: JobLane) => (lane === 'backlog' ? `indexers-s${shard}` : `indexers-prompt-s${shard}`);
/** The lane's subjects in the shard, below the stream's name. */
const laneSubject = (shard: number, lane: JobLane) => (lane === 'backlog' ? `s${shard}` : `prompt.s${shard}`);

export class JetStreamJobs {
  private closed = false;
  private pulling: Promise<void>[] = [];
  /** Jobs pulled and not yet over, with what keeps them ours. */
  private readonly held = new Map<JsMsg, ReturnType<typeof setInterval>>();

  private constructor(
    private readonly options: JetStreamJobsOptions,
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly shards: ShardSet,
  ) {}

  static async open(options: JetStreamJobsOptions): Promise<JetStreamJobs> {
    const shards = options.shards ?? ShardSet.all();
    const nc = await connectNats(options.servers, options.auth);
    try {
      const jsm = await ensureStream(nc, {
        name: options.stream,
        subjects: [`${options.stream}.>`],
        retention: RetentionPolicy.Workqueue,
        storage: StorageType.File,
        num_replicas: options.replicas,
        duplicate_window: nanos(120_000),
      });
      for (const shard of shards.held) {
        for (const lane of LANES) {
          await whenJetStreamAnswers(`consumer ${consumerOf(shard, lane)}`, async () => {
            try {
              await jsm.consumers.info(options.stream, consumerOf(shard, lane));
            } catch (err) {
              if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound)) throw err;
              await jsm.consumers.add(options.stream, {
                durable_name: consumerOf(shard, lane),
                filter_subject: `${options.stream}.${laneSubject(shard, lane)}.>`,
                ack_policy: AckPolicy.Explicit,
                ack_wait: nanos(options.ackWaitMs ?? 30_000),
                max_deliver: -1,
              });
            }
          });
        }
      }
    } catch (err) {
      await nc.close();
      throw err;
    }
    return new JetStreamJobs(options, nc, jetstream(nc), shards);
  }

  private subjectOf(kbId: string, id: string, lane: JobLane): string {
    return `${this.options.stream}.${laneSubject(this.shards.shardOf(kbId), lane)}.${kbId}.${id}`;
  }

  /**
   * Publish a job to a lane (stored once per content version within two minutes, whichever lane:
   * the message id is the same).
   */
  async publish(job: IndexingJob, lane: JobLane): Promise<void> {
    const subject = this.subjectOf(job.kbId, job.id, lane);
    await publishRetried(this.js, subject, JSON.stringify(job), `${job.kbId}.${job.id}.${job.version}${job.configId ? `.${job.configId}` : ''}`);
  }

  /** Whether a job for the item is queued or held by a node (not yet acknowledged). */
  async has(kbId: string, id: string): Promise<boolean> {
    const jsm = await jetstreamManager(this.nc, { checkAPI: false });
    // null when the subject holds no message (acknowledged jobs are removed from a work queue).
    for (const lane of LANES) if ((await jsm.streams.getMessage(this.options.stream, { last_by_subj: this.subjectOf(kbId, id, lane) })) !== null) return true;
    return false;
  }

  /** Jobs waiting in the cluster for the shards this node holds (not yet pulled by any node). */
  async depth(): Promise<number> {
    const jsm = await jetstreamManager(this.nc, { checkAPI: false });
    const consumers = this.shards.held.flatMap((shard) => LANES.map((lane) => consumerOf(shard, lane)));
    const pending = await Promise.all(consumers.map(async (name) => (await jsm.consumers.info(this.options.stream, name)).num_pending));
    return pending.reduce((a, b) => a + b, 0);
  }

  /**
   * Pull jobs while the room has some free; each goes to `take` with `settle`, to be called once
   * it is over: 'done' acknowledges it, 'failed' hands it back for another try. Backlog jobs leave
   * a quarter of the room free for prompt ones, so a prompt job is pulled the moment it is queued.
   */
  start(room: JobRoom, take: (job: IndexingJob, settle: (outcome: 'done' | 'failed') => void) => void): void {
    const reserve = Math.ceil(room.capacity / 4);
    const prompt = () => room.free();
    const backlog = () => room.free() - reserve;
    this.pulling = this.shards.held.flatMap((shard) => [
      this.pull(consumerOf(shard, 'prompt'), prompt, take),
      this.pull(consumerOf(shard, 'backlog'), backlog, take),
    ]);
  }

  private async pull(name: string, room: () => number, take: (job: IndexingJob, settle: (outcome: 'done' | 'failed') => void) => void): Promise<void> {
    let consumer: Consumer | undefined;
    const keepAliveMs = Math.max(1000, (this.options.ackWaitMs ?? 30_000) / 3);
    while (!this.closed) {
      const n = room();
      if (n <= 0) {
        await Bun.sleep(50);
        continue;
      }
      try {
        consumer ??= await this.js.consumers.get(this.options.stream, name);
        const batch = await consumer.fetch({ max_messages: n, expires: 1000 });
        for await (const m of batch) {
          if (this.closed) {
            m.nak();
            continue;
          }
          this.held.set(
            m,
            setInterval(() => m.working(), keepAliveMs),
          );
          let over = false;
          take(m.json<IndexingJob>(), (outcome) => {
            if (over) return;
            over = true;
            clearInterval(this.held.get(m));
            this.held.delete(m);
            if (outcome === 'done') m.ack();
            else m.nak(1000);
          });
        }
      } catch {
        // The servers are changing leaders or unreachable: the client reconnects; look the consumer
        // up again shortly.
        consumer = undefined;
        if (!this.closed) await Bun.sleep(250);
      }
    }
  }

  /** Stop pulling; jobs still held go back to the queue at once for other nodes. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.pulling);
    for (const [m, timer] of this.held) {
      clearInterval(timer);
      m.nak();
    }
    this.held.clear();
    await this.nc.drain().catch(() => this.nc.close());
  }
}
