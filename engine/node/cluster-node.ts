// One node of a cluster: the log is a JetStream stream every node follows (records of every node
// are applied alike, in stream order, as they arrive), indexing jobs wait in a shared JetStream
// work queue for whichever node has room, and the live nodes say which node holds which shards.
import type { ClusterOptions, ReplicationStatus } from '../options';
import { LiveNodes } from '../cluster/live-nodes';
import { JetStreamJobs, laneOf, type IndexingJob, type JobRoom } from '../ingest/jetstream-jobs';
import { unbuiltItems, unfinishedItems } from '../ingest/queue';
import { decodePayload } from '../log/codec';
import { JetStreamLog } from '../log/jetstream-log';
import { within } from '../log/nats';
import type { LogRecord } from '../records';
import { LogConflict, type Entry, type JobKey, type Node, type NodeContext, type Route } from './node';

/** How old the count of an organization's waiting items may be when a job's lane is chosen. */
const ORG_WAITING_MS = 100;

export interface ClusterNodeOptions extends ClusterOptions {
  /** How many jobs this node can take (its workers' batches, less what it holds). */
  room: JobRoom;
}

export class ClusterNode implements Node {
  private sweepTimer: ReturnType<typeof setInterval> | undefined;
  /** Items pending at the last sweep (key → version). */
  private pendingAtLastSweep = new Map<string, number>();
  /** Jobs pulled that wait for this node to apply the record of their version. */
  private awaitingLog = 0;
  /** Items waiting per organization, as last counted (waitingOfOrg). */
  private orgWaiting = { at: -Infinity, counts: new Map<string, number>() };

  private constructor(
    readonly log: JetStreamLog,
    private readonly jobs: JetStreamJobs,
    private readonly liveNodes: LiveNodes,
    private readonly ctx: NodeContext,
    private readonly options: ClusterNodeOptions,
    private readonly counted: { records: number },
  ) {}

  /** Follow the stream after `afterSeq` (the starting snapshot's position), open the job queue and the live nodes. */
  static async open(options: ClusterNodeOptions, ctx: NodeContext, afterSeq?: number): Promise<ClusterNode> {
    const counted = { records: 0, opening: true };
    const log = await JetStreamLog.open(
      {
        servers: options.servers,
        auth: options.natsAuth,
        stream: options.stream,
        replicas: options.replicas,
        shards: ctx.shards.count,
        onStopped: (err) => ctx.fatal('the replicated log stopped', err),
      },
      ({ payload }) => {
        const { record, attachment } = decodePayload<LogRecord>(payload);
        if (!ctx.apply(record, attachment)) return;
        // Delivered by the stream: stored by its quorum, so durable.
        ctx.settled(record);
        if (counted.opening) counted.records++;
      },
      afterSeq,
    );
    counted.opening = false;
    const jobs = await JetStreamJobs.open({
      servers: options.servers,
      auth: options.natsAuth,
      stream: `${options.stream}_JOBS`,
      replicas: options.replicas,
      ackWaitMs: options.jobAckWaitMs,
      shards: ctx.shards,
    });
    const liveNodes = await LiveNodes.open({
      servers: options.servers,
      auth: options.natsAuth,
      bucket: `${options.stream}_NODES`,
      replicas: options.replicas,
      self: { nodeId: options.nodeId ?? 'node', url: options.advertiseUrl ?? '', shards: [...ctx.shards.held] },
      heartbeatMs: options.heartbeatMs,
      log: ctx.say,
    });
    return new ClusterNode(log, jobs, liveNodes, ctx, options, counted);
  }

  get recovered(): number {
    return this.counted.records;
  }

  get appliedSeq(): number {
    return this.log.lastSequence;
  }

  /** Applied when the stream delivers it back (in stream order, with every other node's records). */
  append({ payload, partition }: Entry, expectSeq?: number): Promise<number> {
    return this.log.append(payload, partition, expectSeq).catch((err) => {
      if (!JetStreamLog.isConflict(err)) throw err;
      // The stream says where it ends ("wrong last sequence: 1234"): catching up needs no question.
      const end = /(\d+)\s*$/.exec(String((err as Error).message))?.[1];
      throw new LogConflict(end === undefined ? undefined : Number(end));
    });
  }

  /** Up to `seq`, or to the stream's end (asked again while NATS elects a leader, as appends are retried). */
  async catchUp(seq?: number): Promise<void> {
    for (let attempt = 1; seq === undefined; attempt++) {
      try {
        seq = await this.log.streamLastSequence();
      } catch (err) {
        if (attempt >= 20) throw err;
        await Bun.sleep(Math.min(2000, 100 * attempt));
      }
    }
    await this.log.whenFollowed(seq);
  }

  /**
   * Queue the item's newest version for whichever node has room, in its lane: prompt unless its
   * knowledge base, or its organization, has a backlog.
   */
  async queueJob({ kbId, id, configId }: JobKey): Promise<void> {
    const kb = this.ctx.state.kbs.get(kbId);
    const item = kb?.contents.get(id);
    if (!kb || !item) return;
    const building = configId !== undefined;
    // A build's jobs are not the organization's writes (and its items are not counted as waiting).
    const waiting = building ? 0 : Math.max(kb.tally.waitingItems, this.waitingOfOrg(kb.record.orgId));
    // Everything applied so far includes the record that made this version.
    await this.jobs.publish(
      { kbId, id, version: item.current.version, seq: this.log.lastSequence, ...(configId ? { configId } : {}) },
      laneOf(waiting, building),
    );
  }

  /**
   * Items waiting in the organization's knowledge bases (of the shards held here), counted over
   * every knowledge base at most every ORG_WAITING_MS (a bulk load queues a job per item), and in
   * the meantime each job queued here counts one more: an organization writing fast to many small
   * knowledge bases has a backlog at once. Items done meanwhile count until the next count: a lane
   * needs no exact number, and erring towards the backlog lane costs a newcomer at most that long.
   */
  private waitingOfOrg(orgId: string): number {
    const now = performance.now();
    if (now - this.orgWaiting.at >= ORG_WAITING_MS) {
      const counts = new Map<string, number>();
      for (const kb of this.ctx.state.kbs.values()) {
        const n = kb.tally.waitingItems;
        if (n > 0) counts.set(kb.record.orgId, (counts.get(kb.record.orgId) ?? 0) + n);
      }
      this.orgWaiting = { at: now, counts };
    }
    const waiting = (this.orgWaiting.counts.get(orgId) ?? 0) + 1;
    this.orgWaiting.counts.set(orgId, waiting);
    return waiting;
  }

  /** Jobs again for every unfinished item and build (a job stored within two minutes is not stored twice). */
  requeueUnfinished(): number {
    const jobs: JobKey[] = [
      ...[...unfinishedItems(this.ctx.state.kbs)].map(({ kbId, item }) => ({ kbId, id: item.id, version: item.current.version })),
      ...[...unbuiltItems(this.ctx.state.kbs)].map(({ kbId, item, configId }) => ({ kbId, id: item.id, version: item.current.version, configId })),
    ];
    void (async () => {
      for (const job of jobs) await this.queueJob(job);
    })().catch((err) => this.ctx.say('warn', 'could not queue unfinished items again', { error: String(err) }));
    return jobs.length;
  }

  /** Serve: other nodes may forward requests here from now on; take jobs; look for lost ones. */
  start(): void {
    if (this.sweepTimer) return;
    this.liveNodes.announce();
    this.jobs.start({ capacity: this.options.room.capacity, free: () => this.options.room.free() - this.awaitingLog }, (job, settle) =>
      this.takeJob(job, settle),
    );
    let sweeping = false;
    this.sweepTimer = setInterval(() => {
      if (sweeping) return;
      sweeping = true;
      this.sweepLostJobs()
        .catch((err) => this.ctx.say('warn', 'could not look for lost indexing jobs', { error: String(err) }))
        .finally(() => (sweeping = false));
    }, this.options.jobSweepMs ?? 30_000);
    this.sweepTimer.unref?.();
  }

  /**
   * Take a job pulled from the shared queue once its version is applied here. Unbounded, a node
   * whose log stopped moving would hold every job it pulled for ever (its keep-alive says it is
   * working), and the cluster's items would stay pending: after a while the job goes back.
   */
  private takeJob(job: IndexingJob, settle: (outcome: 'done' | 'failed') => void): void {
    this.awaitingLog++;
    this.log
      .waitFollowed(job.seq, this.options.jobFollowWaitMs ?? 30_000)
      .then((followed) => {
        this.awaitingLog--;
        if (!followed) {
          this.ctx.say('warn', 'an indexing job waited for a record this node has not applied; handed back', {
            kbId: job.kbId,
            id: job.id,
            seq: job.seq,
            appliedSeq: this.log.lastSequence,
          });
          return settle('failed');
        }
        const kb = this.ctx.state.kbs.get(job.kbId);
        const item = kb?.contents.get(job.id);
        const set = kb?.indexSet(job.configId);
        const status = item && set && kb!.statusIn(set, item);
        if (!item || !set || item.current.version !== job.version || status === 'ready' || status === 'failed') return settle('done');
        this.ctx.ingestion.enqueue(job.kbId, job.id, job.version, settle, job.configId);
      })
      .catch((err) => {
        this.ctx.say('warn', 'could not take an indexing job; handed back', { kbId: job.kbId, id: job.id, error: String(err) });
        settle('failed');
      });
  }

  /**
   * An item logged by a node that died before queuing its job would stay pending for ever. Items
   * pending at two sweeps in a row with no job in the queue get one, once this node has applied
   * the stream as far as it reached when the job was found missing (so a job acknowledged
   * meanwhile has its result applied here first).
   */
  private async sweepLostJobs(): Promise<void> {
    const { kbs } = this.ctx.state;
    const pendingNow = new Map<string, number>();
    const suspects: JobKey[] = [];
    // Pending for the active configuration, or for one being built.
    const pending = [...unfinishedItems(kbs)].filter(({ item }) => item.status === 'pending').map((p) => ({ ...p, configId: undefined as string | undefined }));
    for (const { kbId, item, configId } of [...pending, ...unbuiltItems(kbs)]) {
      const key = `${kbId}/${item.id}/${configId ?? ''}`;
      pendingNow.set(key, item.current.version);
      if (this.pendingAtLastSweep.get(key) === item.current.version && suspects.length < 1000)
        suspects.push({ kbId, id: item.id, version: item.current.version, configId });
    }
    this.pendingAtLastSweep = pendingNow;
    const missing = [];
    for (const s of suspects) if (!(await this.jobs.has(s.kbId, s.id))) missing.push(s);
    if (missing.length === 0) return;
    await this.catchUp();
    let queued = 0;
    for (const m of missing) {
      const kb = kbs.get(m.kbId);
      const item = kb?.contents.get(m.id);
      const set = kb?.indexSet(m.configId);
      if (!item || !set || kb!.statusIn(set, item) !== 'pending' || item.current.version !== m.version) continue;
      await this.queueJob(m);
      queued++;
    }
    if (queued > 0) this.ctx.say('info', 'queued indexing jobs found missing', { queued });
  }

  whenApplied(seq: number, timeoutMs: number): Promise<boolean> {
    return this.log.waitFollowed(seq, timeoutMs);
  }

  /** Applies the stream as far as it reaches now (asked of its leader); false after `timeoutMs` or when NATS does not answer. */
  async whenCurrent(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const end = await within(timeoutMs, this.log.streamLastSequence()).catch(() => undefined);
    return end !== undefined && this.log.waitFollowed(end, Math.max(0, deadline - Date.now()));
  }

  routeOf(kbId: string): Route {
    const { shards } = this.ctx;
    if (shards.holds(kbId)) return { here: true };
    const shard = shards.shardOf(kbId);
    return { here: false, shard, nodes: this.liveNodes.holding(shard) };
  }

  /**
   * The stream is shared: purged only when snapshots are in a store every node can start from,
   * and with a margin for nodes a little behind; a node whose own snapshot is older than what is
   * left starts from the store's newest snapshot (LogGapError at open).
   */
  async truncateLog(seq: number): Promise<number> {
    const { purge, purgeFloor, purgeMarginRecords } = this.options;
    if (!purge) return 0;
    const floor = purgeFloor ? Math.min(seq, await purgeFloor()) : seq;
    const below = floor + 1 - (purgeMarginRecords ?? 10_000);
    return below > 1 ? this.log.truncateBefore(below) : 0;
  }

  /** Rejects when NATS does not answer within `timeoutMs`. */
  async replication(timeoutMs: number): Promise<ReplicationStatus> {
    const [streamSeq, jobsWaiting] = await within(timeoutMs, Promise.all([this.log.streamLastSequence(), this.jobs.depth()]));
    const appliedSeq = this.log.lastSequence;
    return {
      appliedSeq,
      streamSeq,
      lag: Math.max(0, streamSeq - appliedSeq),
      jobsWaiting,
      jobsHere: this.ctx.ingestion.depth,
      shards: this.ctx.shards.toJSON(),
      liveNodes: this.liveNodes.all(),
    };
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    await this.liveNodes.close();
    await this.jobs.close();
    await this.log.close();
  }
}
