// Snapshot policy: snapshot every SNAPSHOT_INTERVAL_MIN minutes (when something was written) or
// once the log written since the newest snapshot passes SNAPSHOT_LOG_MB and SNAPSHOT_LOG_GROWTH
// times that snapshot's size, once writes pause (SNAPSHOT_IDLE_S, after a burst: as Elasticsearch
// flushes an inactive shard), and on graceful shutdown; copy each snapshot to the
// configured store (S3/MinIO) and keep the newest SNAPSHOT_KEEP there and locally. The log is
// truncated only up to a snapshot that is both confirmed in the store and still kept locally, so
// a restart can always fall back one snapshot. Store failures never stop the service: they are
// retried with exponential backoff and reported in logs, /ready and metrics.
import { rm } from 'node:fs/promises';
import { backoffDelay, type Engine } from '../engine';
import { fallbackOf, listSnapshotDirs, sharesRecords, type SnapshotManifest } from './format';
import type { Snapshotter } from './snapshotter';
import type { SnapshotStore } from './store';

/** Structured logging as pino does it (object first, message second). */
export interface SnapshotLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export interface SnapshotPolicy {
  intervalMs: number;
  logBytes: number;
  /**
   * The log since the newest snapshot must also reach this share of the bytes the next snapshot
   * writes (Snapshotter.nextWriteBytes; on a remote store, every file): with a fixed step a bulk
   * load rewrote the state over and over (quadratic in its size); a share makes the rewrites a
   * bounded multiple of the log.
   */
  logGrowth: number;
  /**
   * Snapshots taken while serving hold dumps of the engine's state (a restart from one replays no
   * record) only while the node holds at most this many chunks: the dumps are taken on the main
   * thread, which answers nothing meanwhile (0.55–0.74 s at a million chunks on 2 shared cores; they are
   * written after, off it). A larger node dumps at graceful shutdown and once writes pause
   * (`idleMs`) only; a restart after a crash replays the newest snapshot's records up to the
   * latest such one instead (85 s at a million chunks, against about 3).
   */
  dumpChunks: number;
  /**
   * At graceful shutdown no snapshot is taken while the log written since the newest one is under
   * this many bytes, that snapshot holds dumps of the state (a restart loads them and replays only
   * that log, as after a crash) and is kept on the local disk only (a remote store gets every
   * change at shutdown), and its graphs lack at most `shutdownGraphLag` of the vectors: a stop
   * after a few writes need not rewrite the whole state (1.9–4.4 s at a million chunks). 0: always.
   */
  shutdownLogBytes?: number;
  /**
   * A snapshot is taken once nothing was written for this long, when the log since the newest
   * snapshot is at least `shutdownLogBytes` (less is left to the log at a stop anyway), or that
   * snapshot holds no dumps, and every graph holds its vectors: after a bulk load a stop or a crash
   * then finds a snapshot of it instead of gigabytes of log. It holds dumps whatever the size
   * (`dumpChunks` bounds the pause of snapshots taken while writes flow; this one holds up searches
   * alone, once a burst of writes ends: 0.3–2 s at a million chunks). 0: never.
   */
  idleMs?: number;
  /** Vectors the newest snapshot's graphs may lack for that (a restart inserts them in the background, searching them exactly meanwhile); default SHUTDOWN_GRAPH_LAG. */
  shutdownGraphLag?: number;
  keep: number;
  checkMs: number;
  /** Longest wait between retries after failures. */
  maxBackoffMs: number;
}

export interface SnapshotStatus {
  store: string;
  lastSeq?: number;
  lastSuccessAt?: string;
  lastDurationMs?: number;
  /** Newest snapshot known to be in the store. */
  confirmedSeq?: number;
  failures: number;
  consecutiveFailures: number;
  lastError?: string;
  nextRetryAt?: string;
}

/** SnapshotPolicy.shutdownGraphLag's default: a few seconds of graph building after the start, each semantic search meanwhile scoring them exactly (about 2 ms). */
export const SHUTDOWN_GRAPH_LAG = 5000;

export class SnapshotManager {
  readonly status: SnapshotStatus;
  private timer: ReturnType<typeof setInterval> | undefined;
  private running: Promise<void> | undefined;
  private lastAttempt = Date.now();
  private retryAt = 0;
  private seqAtLastSnapshot = 0;
  /** The newest sequence number the checks saw, and since when: how long writes have paused. */
  private seenSeq = -1;
  private seenSince = Date.now();

  constructor(
    private readonly engine: Engine,
    private readonly snapshots: Snapshotter,
    private readonly store: SnapshotStore,
    private readonly policy: SnapshotPolicy,
    private readonly logger: SnapshotLogger,
  ) {
    this.status = { store: store.name, failures: 0, consecutiveFailures: 0 };
    const latest = snapshots.latest;
    if (latest) {
      this.status.lastSeq = latest.seq;
      this.seqAtLastSnapshot = latest.seq;
      if (store.isLocal) this.status.confirmedSeq = latest.seq;
    }
  }

  /** Find out whether the newest local snapshot is already in the store, then check periodically. */
  async start(): Promise<void> {
    const latest = this.snapshots.latest;
    if (latest && !this.store.isLocal) {
      try {
        if ((await this.store.list()).some((s) => s.seq === latest.seq)) this.status.confirmedSeq = latest.seq;
      } catch (err) {
        this.logger.warn({ store: this.store.name, err: err instanceof Error ? err.message : String(err) }, 'snapshot store unreachable at start-up');
      }
    }
    this.timer = setInterval(() => void this.tick(), this.policy.checkMs);
    this.timer.unref?.();
    // What the last shutdown left to prune (snapshotOnce), in the background as a run of its own,
    // once the newest snapshot's records are known intact: the one before it is the way back if not.
    // (Damaged, the server exits: src/server.ts.)
    this.running ??= this.snapshots.recordsChecked
      .then(
        () => this.prune(),
        () => 0,
      )
      .then(
        (removed) => removed > 0 && this.logger.info({ logSegmentsRemoved: removed }, 'old snapshots and log pruned'),
        (err) => this.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'could not prune old snapshots; the next snapshot tries again'),
      )
      .then(() => {
        this.running = undefined;
      });
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    const now = Date.now();
    if (this.retryAt > 0) {
      if (now >= this.retryAt) await this.run('retry');
      return;
    }
    const written = this.engine.lastSequence > this.seqAtLastSnapshot;
    if (this.engine.lastSequence !== this.seenSeq) {
      this.seenSeq = this.engine.lastSequence;
      this.seenSince = now;
    }
    // Only what was written since the newest snapshot: the log also keeps the part the snapshot
    // before it needs (a fallback), which counted made every check after the first two snapshots
    // of a bulk load take another. The log may be out of reach for a moment (cluster mode: NATS):
    // decide at the next check.
    const logBytes = await this.engine.logBytes(this.seqAtLastSnapshot).catch(() => undefined);
    if (logBytes === undefined) return;
    if (logBytes >= this.logThreshold() && written) await this.run('log size');
    else if (written && now - this.lastAttempt >= this.policy.intervalMs) await this.run('interval');
    else if (this.idle(now, logBytes, written)) {
      // Nothing new to snapshot: a record that changes nothing gives the snapshot with dumps a
      // sequence number of its own, after the one without them (as at shutdown).
      if (!written) await this.engine.markLog();
      await this.run('idle');
    }
  }

  /**
   * Whether writes paused long enough for a snapshot (SnapshotPolicy.idleMs): after enough of them,
   * or when the newest snapshot holds no dumps (one taken while writes flowed past dumpChunks, which
   * a restart would replay record by record), even with nothing written since.
   */
  private idle(now: number, logBytes: number, written: boolean): boolean {
    const { idleMs = 0, shutdownLogBytes = 0 } = this.policy;
    if (idleMs <= 0 || now - this.seenSince < idleMs) return false;
    if (this.engine.vectorsOutsideGraphs() !== 0) return false;
    return this.newestLacksDumps() || (this.engine.dumpsState && written && logBytes >= shutdownLogBytes);
  }

  /** The newest snapshot holds no dumps (taken past dumpChunks while writes flowed) that this engine could give. */
  private newestLacksDumps(): boolean {
    const latest = this.snapshots.latest;
    return latest !== undefined && latest.seq === this.seqAtLastSnapshot && latest.manifest.items === undefined && this.engine.dumpsState;
  }

  /**
   * Log bytes since the newest snapshot that call for the next one: a share of what the next one
   * writes. On local disk a snapshot that continues the newest writes only its dumps, so a bulk
   * load snapshots every few tenths of growth and a stop right after it writes little; a remote
   * store is sent every file of each snapshot.
   */
  logThreshold(): number {
    let written = 0;
    if (this.store.isLocal) written = this.snapshots.nextWriteBytes();
    else for (const f of this.snapshots.latest?.manifest.files ?? []) written += f.bytes;
    return Math.max(this.policy.logBytes, this.policy.logGrowth * written);
  }

  /** Take a snapshot now, copy it to the store, prune, truncate the log. Never throws. */
  run(reason: string): Promise<void> {
    this.running ??= this.snapshotOnce(reason).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async snapshotOnce(reason: string): Promise<void> {
    const started = performance.now();
    this.lastAttempt = Date.now();
    try {
      const shutdown = reason === 'shutdown';
      // Dumps make a restart replay nothing; past dumpChunks only where the pause of taking them
      // holds up no write (SnapshotPolicy.idleMs).
      const dumps = shutdown || reason === 'idle' || this.engine.stats().chunks <= this.policy.dumpChunks;
      const snap = await this.snapshots.snapshot({ reuseGraphs: shutdown, dumps });
      this.status.lastSeq = snap.seq;
      this.seqAtLastSnapshot = snap.seq;
      if (this.status.confirmedSeq !== snap.seq) {
        await this.store.upload(snap.dir, snap.manifest);
        this.status.confirmedSeq = snap.seq;
      }
      this.status.lastSuccessAt = new Date().toISOString();
      this.status.lastDurationMs = Math.round(performance.now() - started);
      this.status.consecutiveFailures = 0;
      this.status.lastError = undefined;
      this.status.nextRetryAt = undefined;
      this.retryAt = 0;
      // At shutdown old snapshots stay for the next start to remove: removing one written whole
      // (gigabytes) took about a second at 1M chunks, which a stop need not wait for. The log is
      // truncated all the same (in a cluster, the stream purged below the snapshots kept).
      const truncated = await this.prune({ remove: reason !== 'shutdown' });
      this.logger.info(
        {
          reason,
          seq: snap.seq,
          store: this.store.name,
          ms: this.status.lastDurationMs,
          phases: snap.phases,
          stats: snap.manifest.stats,
          dumps: dumpsWritten(snap.manifest),
          logSegmentsRemoved: truncated,
        },
        'snapshot written',
      );
    } catch (err) {
      this.status.failures++;
      this.status.consecutiveFailures++;
      this.status.lastError = err instanceof Error ? err.message : String(err);
      // From 1 s, doubling; never past 2^16 s, whatever maxBackoffMs says.
      const backoff = backoffDelay(this.status.consecutiveFailures, { baseMs: 1000, maxMs: Math.min(this.policy.maxBackoffMs, 1000 * 2 ** 16) });
      this.retryAt = Date.now() + backoff;
      this.status.nextRetryAt = new Date(this.retryAt).toISOString();
      this.logger.error(
        { reason, store: this.store.name, err: this.status.lastError, retryInMs: backoff, failures: this.status.consecutiveFailures },
        'snapshot failed; the log is kept and the snapshot retried',
      );
    }
  }

  /**
   * Keep the newest `keep` snapshots locally and in the store (`remove: false`: the others are
   * left for later); drop the log the oldest kept one covers. The newest may share its compacted
   * records with snapshots it continues: then the newest one sharing none is kept as well, with the
   * log after it, so that damage to a shared file leaves a snapshot to fall back to; while there is
   * none, the log is not truncated.
   */
  private async prune({ remove = true }: { remove?: boolean } = {}): Promise<number> {
    const local = await listSnapshotDirs(this.snapshots.dir);
    const keptLocal = local.slice(0, this.policy.keep);
    const sharing = local.slice(1).some((s) => sharesRecords(local[0]!.dir, s.dir));
    const fallbackDir = sharing ? fallbackOf(this.snapshots.dir, local[0]!.dir) : undefined;
    const fallback = local.find((s) => s.dir === fallbackDir);
    if (fallback && !keptLocal.includes(fallback)) keptLocal.push(fallback);
    if (remove) for (const old of local) if (!keptLocal.includes(old)) await rm(old.dir, { recursive: true, force: true });
    if (remove && !this.store.isLocal) {
      const remote = await this.store.list();
      for (const old of remote.slice(this.policy.keep)) await this.store.delete(old.seq);
    }
    const oldestKept = sharing && !fallback ? undefined : keptLocal.at(-1)?.seq;
    const confirmed = this.store.isLocal ? oldestKept : this.status.confirmedSeq;
    if (oldestKept === undefined || confirmed === undefined) return 0;
    return this.engine.truncateLog(Math.min(oldestKept, confirmed));
  }

  /** No more snapshots: the periodic check ends and one running finishes. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Final snapshot on graceful shutdown (bounded by `timeoutMs`). */
  async shutdown(timeoutMs: number): Promise<void> {
    const waitStarted = performance.now();
    const waiting = this.running !== undefined;
    await this.stop();
    if (waiting) this.logger.info({ ms: Math.round(performance.now() - waitStarted) }, 'shutdown waited for the snapshot already running');
    if (this.engine.lastSequence <= this.seqAtLastSnapshot && this.status.confirmedSeq === this.status.lastSeq) {
      // Nothing new, but the newest snapshot was taken without dumps (a node past dumpChunks): a
      // restart from it would replay every record. A record that changes nothing lets the snapshot
      // at shutdown, with them, follow it.
      if (!this.newestLacksDumps()) return;
      await this.engine.markLog();
    }
    const since = await this.smallTail();
    if (since !== undefined) {
      this.logger.info({ seq: this.seqAtLastSnapshot, logBytes: since }, 'no snapshot at shutdown: a restart loads the newest and replays the log since');
      return;
    }
    await Promise.race([this.run('shutdown'), Bun.sleep(timeoutMs)]);
  }

  /** The log bytes since the newest snapshot when a shutdown may leave them to the log (SnapshotPolicy.shutdownLogBytes); else undefined. */
  private async smallTail(): Promise<number | undefined> {
    const latest = this.snapshots.latest;
    const most = this.policy.shutdownLogBytes ?? 0;
    if (most <= 0 || !this.store.isLocal || !latest || latest.seq !== this.seqAtLastSnapshot) return undefined;
    if (latest.manifest.items === undefined || !this.engine.dumpsState) return undefined;
    const inGraphs = new Map(latest.manifest.graphs.map((g) => [g.kbId, g.vectors]));
    if (this.engine.vectorsOutsideGraphs(inGraphs) > (this.policy.shutdownGraphLag ?? SHUTDOWN_GRAPH_LAG)) return undefined;
    const since = await this.engine.logBytes(latest.seq).catch(() => undefined);
    return since !== undefined && since < most ? since : undefined;
  }
}

/**
 * What a snapshot's dumps were (for its log line): how many index and item dumps whole and as
 * deltas, and the bytes written (a delta's base is a link).
 */
function dumpsWritten(manifest: SnapshotManifest): { full: number; deltas: number; items?: { full: number; deltas: number }; bytes: number } | undefined {
  if (!manifest.indexes?.length) return undefined;
  const bytes = (name: string) => manifest.files.find((f) => f.name === name)?.bytes ?? 0;
  const deltas = manifest.indexes.filter((d) => d.base !== undefined).length;
  const items = manifest.items?.files;
  const itemDeltas = items?.filter((f) => f.base !== undefined).length ?? 0;
  const written = [...manifest.indexes.map((d) => d.file), ...(items?.map((f) => f.file) ?? [])];
  return {
    full: manifest.indexes.length - deltas,
    deltas,
    ...(items ? { items: { full: items.length - itemDeltas, deltas: itemDeltas } } : {}),
    bytes: written.reduce((n, name) => n + bytes(name), 0),
  };
}
