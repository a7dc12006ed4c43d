// bench/snapshot.ts, part 2's instrument: an open-loop write stream, an event-loop monitor and a
// timer on the engine's background graph steps, around one snapshot call.
import { loadavg } from 'node:os';
import type { Engine, VectorIndex } from '../../engine';
import type { SnapshotInfo, Snapshotter } from '../../snapshots';
import { summarize } from '../lib/stats';
import { mib, round2 } from './units';

export interface Dist {
  n: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

function dist(values: number[]): Dist {
  const l = summarize(values);
  return {
    n: l.samples,
    p50: round2(l.p50),
    p99: round2(l.p99),
    max: round2(values.length ? values.reduce((a, b) => Math.max(a, b)) : NaN),
    mean: round2(l.mean),
  };
}

export interface WindowStats {
  name: string;
  /** Window bounds, ms relative to the snapshot call. */
  fromMs: number;
  toMs: number;
  /** Acknowledgement latency from the intended send time (open loop: sender delays count). */
  ackFromSchedule: Dist;
  /** Acknowledgement latency from the addContent call to its resolved promise. */
  ack: Dist;
  loopMaxGapMs: number;
  loopGapsOver20ms: number;
  loopGapsOver50ms: number;
  loopGapsOver100ms: number;
  /** The engine's background HNSW steps on the main thread (budget 5 ms each while busy, 20 ms while idle). */
  graphSteps: number;
  graphStepMaxMs: number;
  graphStepsOver50ms: number;
  /** Loop gaps over 50 ms that overlap a graph step over 50 ms. */
  loopGapsOver50msInGraphStep: number;
}

export interface StallResult {
  label: string;
  rate: number;
  snapshotMs: number;
  snapshot: { seq: number; stats: SnapshotInfo['manifest']['stats']; files: { name: string; bytes: number }[] };
  windows: WindowStats[];
  worstLoopGapsDuringSnapshot: { endedAtMs: number; gapMs: number }[];
  slowestAcksDuringSnapshot: { intendedAtMs: number; latencyMs: number }[];
  writes: number;
  writeErrors: number;
  rssMiBBeforeSnapshot: number;
  peakRssMiBDuringSnapshot: number;
  /** RSS at the end of the after window (does the snapshot worker give its memory back?). */
  rssMiBAfter: number;
  /** 1-minute load average before and after the snapshot. */
  load1: { before: number; after: number };
}

/**
 * An open-loop write stream, an event-loop monitor and a timer on the engine's background graph
 * steps, around one snapshot call.
 */
export class StallProbe {
  errors: string[] = [];

  constructor(
    private readonly engine: Engine,
    private readonly snapshots: Snapshotter,
    private readonly vectors: VectorIndex,
    private readonly org: string,
    private readonly kbId: string,
    private readonly rate: number,
    private readonly nextText: () => string,
  ) {}

  async around(label: string, baselineMs: number, afterMs: number): Promise<StallResult> {
    const { engine, vectors } = this;
    // The engine calls vectors.buildStep(10) from its graph timer; time each call (instance only).
    const steps: { from: number; to: number }[] = [];
    const original = vectors.buildStep;
    vectors.buildStep = function (this: VectorIndex, budgetMs: number, batch?: number): boolean {
      const from = performance.now();
      try {
        return original.call(this, budgetMs, batch);
      } finally {
        steps.push({ from, to: performance.now() });
      }
    };

    const gaps: { at: number; gap: number }[] = [];
    let lastTick = performance.now();
    const monitor = setInterval(() => {
      const now = performance.now();
      gaps.push({ at: now, gap: now - lastTick });
      lastTick = now;
    }, 1);
    const rssSamples: { at: number; rss: number }[] = [];
    const rssTimer = setInterval(() => rssSamples.push({ at: performance.now(), rss: process.memoryUsage().rss }), 100);

    const writes: { intended: number; sent: number; acked?: number }[] = [];
    const streamStart = performance.now();
    let issued = 0;
    let inflight = 0;
    let streamOn = true;
    const sender = setInterval(() => {
      if (!streamOn) return;
      const due = Math.floor(((performance.now() - streamStart) * this.rate) / 1000);
      while (issued < due && inflight < 5000) {
        const w: (typeof writes)[number] = { intended: streamStart + (issued * 1000) / this.rate, sent: performance.now() };
        writes.push(w);
        issued++;
        inflight++;
        engine
          .addContent(this.org, this.kbId, { text: this.nextText() })
          .then(
            () => {
              w.acked = performance.now();
            },
            (err) => {
              this.errors.push(String(err));
            },
          )
          .finally(() => inflight--);
      }
    }, 2);

    try {
      await Bun.sleep(baselineMs);
      const rssBefore = process.memoryUsage().rss;
      const loadBefore = round2(loadavg()[0]!);
      const snapStart = performance.now();
      const snap = await this.snapshots.snapshot();
      const snapEnd = performance.now();
      await Bun.sleep(afterMs);
      const rssAfter = process.memoryUsage().rss;
      streamOn = false;
      const streamEnd = performance.now();
      clearInterval(sender);
      while (inflight > 0) await Bun.sleep(10);

      const windowOf = (name: string, from: number, to: number): WindowStats => {
        const ws = writes.filter((w) => w.intended >= from && w.intended < to && w.acked !== undefined);
        const gs = gaps.filter((g) => g.at >= from && g.at < to);
        const ss = steps.filter((x) => x.to >= from && x.from < to);
        const longSteps = ss.filter((x) => x.to - x.from > 50);
        const bigGaps = gs.filter((g) => g.gap > 50);
        return {
          name,
          fromMs: Math.round(from - snapStart),
          toMs: Math.round(to - snapStart),
          ackFromSchedule: dist(ws.map((w) => w.acked! - w.intended)),
          ack: dist(ws.map((w) => w.acked! - w.sent)),
          loopMaxGapMs: round2(Math.max(0, ...gs.map((g) => g.gap))),
          loopGapsOver20ms: gs.filter((g) => g.gap > 20).length,
          loopGapsOver50ms: bigGaps.length,
          loopGapsOver100ms: gs.filter((g) => g.gap > 100).length,
          graphSteps: ss.length,
          graphStepMaxMs: round2(Math.max(0, ...ss.map((x) => x.to - x.from))),
          graphStepsOver50ms: longSteps.length,
          loopGapsOver50msInGraphStep: bigGaps.filter((g) => longSteps.some((x) => x.from < g.at && x.to > g.at - g.gap)).length,
        };
      };
      const rssDuring = rssSamples.filter((x) => x.at >= snapStart && x.at <= snapEnd).map((x) => x.rss);
      return {
        label,
        rate: this.rate,
        snapshotMs: Math.round(snapEnd - snapStart),
        snapshot: { seq: snap.seq, stats: snap.manifest.stats, files: snap.manifest.files.map((f) => ({ name: f.name, bytes: f.bytes })) },
        windows: [windowOf('before', streamStart + 500, snapStart), windowOf('during', snapStart, snapEnd), windowOf('after', snapEnd, streamEnd)],
        worstLoopGapsDuringSnapshot: gaps
          .filter((g) => g.at >= snapStart && g.at <= snapEnd)
          .sort((a, b) => b.gap - a.gap)
          .slice(0, 5)
          .map((g) => ({ endedAtMs: Math.round(g.at - snapStart), gapMs: round2(g.gap) })),
        slowestAcksDuringSnapshot: writes
          .filter((w) => w.acked !== undefined && w.intended >= snapStart && w.intended <= snapEnd)
          .sort((a, b) => b.acked! - b.intended - (a.acked! - a.intended))
          .slice(0, 5)
          .map((w) => ({ intendedAtMs: Math.round(w.intended - snapStart), latencyMs: round2(w.acked! - w.intended) })),
        writes: writes.length,
        writeErrors: this.errors.length,
        rssMiBBeforeSnapshot: mib(rssBefore),
        peakRssMiBDuringSnapshot: mib(Math.max(rssBefore, ...rssDuring)),
        load1: { before: loadBefore, after: round2(loadavg()[0]!) },
        rssMiBAfter: mib(rssAfter),
      };
    } finally {
      streamOn = false;
      clearInterval(sender);
      clearInterval(monitor);
      clearInterval(rssTimer);
      vectors.buildStep = original;
    }
  }

  describe(st: StallResult): string {
    const [before, during] = st.windows;
    return (
      `  ${st.label}: snapshot seq ${st.snapshot.seq} (${st.snapshot.stats.chunks} chunks) took ${st.snapshotMs} ms with ${st.writes} writes streamed; ` +
      `acks max ${before!.ackFromSchedule.max} ms before vs ${during!.ackFromSchedule.max} ms during; loop gap max ${before!.loopMaxGapMs} vs ${during!.loopMaxGapMs} ms\n` +
      `    worst loop gaps during: ${st.worstLoopGapsDuringSnapshot.map((g) => `${g.gapMs} ms @${g.endedAtMs}`).join(', ')}\n` +
      `    slowest acks during: ${st.slowestAcksDuringSnapshot.map((a) => `${a.latencyMs} ms @${a.intendedAtMs}`).join(', ')}\n` +
      `    RSS ${st.rssMiBBeforeSnapshot} MiB before, peak ${st.peakRssMiBDuringSnapshot} MiB during, ${st.rssMiBAfter} MiB after; load average ${st.load1.before} before, ${st.load1.after} after`
    );
  }
}
