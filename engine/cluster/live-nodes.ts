// The nodes of a cluster that are alive, and what each holds: a JetStream key-value bucket
// (`<stream>_NODES`) where every node puts its entry (address, shards) each heartbeat. The bucket
// keeps entries for `ttlMs` after their last put (the servers' clock), so a node that stops beating
// drops out without anyone deciding it is dead. Every node reads the bucket each heartbeat; a
// request for a knowledge base whose shard this node does not hold goes to a node listed here.
// A node reads the bucket from the start but puts its own entry only once it serves (announce()):
// a node still loading its models would answer 503 to what is forwarded to it.
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { EngineLog } from '../options';
import { connectNats, whenJetStreamAnswers, within, type NatsAuth } from '../log/nats';

export interface NodeEntry {
  nodeId: string;
  /** Where other nodes reach it over HTTP (NODE_ADVERTISE_URL). */
  url: string;
  /** The shards it holds. */
  shards: number[];
}

export interface LiveNodesOptions {
  servers: string[];
  /** Credentials and TLS for the NATS connection (absent: none). */
  auth?: NatsAuth;
  /** Bucket name: `<stream>_NODES`. */
  bucket: string;
  replicas: number;
  self: NodeEntry;
  /** How often a node puts its entry and reads the others (default 1 s). */
  heartbeatMs?: number;
  /** How long an entry outlives its last put (default 10 heartbeats: a node slow to beat on a loaded machine stays listed; a dead one listed meanwhile refuses connections, and requests go to the next holder). */
  ttlMs?: number;
  log?: EngineLog;
}

export class LiveNodes {
  private known: NodeEntry[] = [];
  private timer: ReturnType<typeof setInterval> | undefined;
  private beating = false;
  private closed = false;
  private announced = false;
  /** The last heartbeat failed (said once, not every second while NATS is away). */
  private failing = false;

  private constructor(
    private readonly options: LiveNodesOptions,
    private readonly nc: NatsConnection,
    private readonly kv: KV,
  ) {}

  static async open(options: LiveNodesOptions): Promise<LiveNodes> {
    const nc = await connectNats(options.servers, options.auth);
    try {
      const heartbeatMs = options.heartbeatMs ?? 1000;
      const kv = await whenJetStreamAnswers(`bucket ${options.bucket}`, () =>
        new Kvm(jetstream(nc)).create(options.bucket, { ttl: options.ttlMs ?? 10 * heartbeatMs, replicas: options.replicas, history: 1 }),
      );
      const nodes = new LiveNodes(options, nc, kv);
      await nodes.beat();
      nodes.timer = setInterval(() => void nodes.beat(), heartbeatMs);
      return nodes;
    } catch (err) {
      await nc.close();
      throw err;
    }
  }

  /** From now on this node's entry is put each heartbeat (it serves requests). */
  announce(): void {
    if (this.announced) return;
    this.announced = true;
    void this.beat();
  }

  /** Put this node's entry (once announced), then read everyone's. */
  private async beat(): Promise<void> {
    if (this.beating || this.closed) return;
    this.beating = true;
    try {
      const { self } = this.options;
      if (this.announced) await within(2000, this.kv.put(self.nodeId, JSON.stringify(self)));
      const keys: string[] = [];
      for await (const key of await within(2000, this.kv.keys())) keys.push(key);
      const entries = await Promise.all(keys.map((key) => within(2000, this.kv.get(key))));
      this.known = entries.flatMap((e) => (e && e.operation === 'PUT' ? [e.json<NodeEntry>()] : []));
      if (this.failing) this.options.log?.('info', 'live nodes refreshed again', { nodes: this.known.length });
      this.failing = false;
    } catch (err) {
      // NATS out of reach: keep the last view; forwarding to a dead node fails over to the next.
      if (!this.failing) this.options.log?.('warn', 'could not refresh the live nodes; keeping the last view', { error: String(err) });
      this.failing = true;
    } finally {
      this.beating = false;
    }
  }

  /** Other live nodes holding `shard`, in a rotating order (reads spread over them). */
  holding(shard: number): NodeEntry[] {
    const others = this.known.filter((n) => n.nodeId !== this.options.self.nodeId && n.shards.includes(shard));
    if (others.length < 2) return others;
    const start = Math.floor(Math.random() * others.length);
    return [...others.slice(start), ...others.slice(0, start)];
  }

  /** Every live node, this one included. */
  all(): NodeEntry[] {
    return [...this.known];
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    // Leave at once rather than after the TTL: requests stop coming here.
    await within(2000, this.kv.delete(this.options.self.nodeId)).catch(() => {});
    await this.nc.close();
  }
}
