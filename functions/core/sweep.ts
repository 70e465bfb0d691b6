import { secondOf } from './clock';
import type { ScanPorts } from './scan';
import { scanSecond } from './scan';
import type { Watermark } from './task';

export interface SweepSettings {
  /** The most seconds one pass examines, so a long outage is caught up over several runs. */
  readonly maxSecondsPerRun: number;
  /**
   * Seconds due within this long before now may still be in a live scan, so they are left
   * alone. While scanners drain a backlog, a second just behind the cursor can be older than
   * this and still in flight; re-scanning it then only sends duplicates, which leases absorb.
   */
  readonly graceSeconds: number;
  /**
   * A task that no callback has claimed this long after its due time has lost its message
   * (or its message keeps crashing the callback) and is enqueued again.
   */
  readonly overdueGraceSeconds: number;
  /** A run stops after this long and leaves the rest to the next run. */
  readonly budgetMs: number;
}

export interface SweepReport {
  /** Claimed seconds that were never finished, re-scanned now. */
  readonly rescanned: number[];
  /** Tasks enqueued by those re-scans. */
  readonly enqueued: number;
  /** Tasks never attempted long after their due time, enqueued again. */
  readonly overdue: number;
  /** Now minus the cursor: how far the scanners are behind real time (negative while they run ahead). */
  readonly lagSeconds: number;
  /** Now minus the sweep watermark: how far back seconds are not yet known to be finished. */
  readonly unsweptSeconds: number;
}

/**
 * Walks seconds after a watermark, handling those that need it, and raises the watermark
 * only over seconds it has fully handled. However long a failure lasts, no second is left
 * behind; one that keeps failing holds the watermark, and the lag shows.
 */
async function walkSeconds(
  ports: ScanPorts,
  mark: Watermark,
  range: { after: number; to: number; deadlineMs: number },
  needsWork: (from: number, to: number) => Promise<(second: number) => boolean>,
  work: (second: number) => Promise<void>,
): Promise<number> {
  let handledThrough = range.after;
  if (range.to <= range.after) return handledThrough;
  const pending = await needsWork(range.after + 1, range.to);
  try {
    for (let second = range.after + 1; second <= range.to; second++) {
      if (pending(second)) {
        if (ports.clock.now() > range.deadlineMs) break;
        await work(second);
      }
      handledThrough = second;
    }
  } finally {
    if (handledThrough > range.after) await ports.clockStore.raiseWatermark(mark, handledThrough);
  }
  return handledThrough;
}

/**
 * The safety net behind the scanners, run every minute. First it re-scans seconds that
 * were claimed but never recorded as finished (a scanner that crashed, timed out or failed
 * to enqueue). Then, over seconds that had work, it looks for tasks no callback has ever
 * claimed long after their due time, whose message was lost, dead-lettered by SQS or keeps
 * crashing the callback, and enqueues them again. Both only ever send duplicates of
 * work that may already be in flight, which the callback's lease turns into no-ops.
 */
export async function sweep(ports: ScanPorts, settings: SweepSettings): Promise<SweepReport> {
  const startedAtMs = ports.clock.now();
  const nowSecond = secondOf(startedAtMs);
  const state = await ports.clockStore.read();
  if (!state) return { rescanned: [], enqueued: 0, overdue: 0, lagSeconds: 0, unsweptSeconds: 0 };
  const deadlineMs = startedAtMs + settings.budgetMs;
  const neverSwept = state.startedAt - 1;

  const rescanned: number[] = [];
  let enqueued = 0;
  const sweptAfter = (await ports.clockStore.watermark('swept')) ?? neverSwept;
  const sweptThrough = await walkSeconds(
    ports,
    'swept',
    {
      after: sweptAfter,
      to: Math.min(state.cursor - 1, nowSecond - settings.graceSeconds, sweptAfter + settings.maxSecondsPerRun),
      deadlineMs,
    },
    async (from, to) => {
      const finished = await ports.clockStore.scannedSeconds(from, to);
      return (second) => !finished.has(second);
    },
    async (second) => {
      enqueued += (await scanSecond(ports, second)).enqueued;
      rescanned.push(second);
    },
  );

  let overdue = 0;
  const checkedAfter = (await ports.clockStore.watermark('overdueChecked')) ?? neverSwept;
  await walkSeconds(
    ports,
    'overdueChecked',
    {
      after: checkedAfter,
      // Only seconds known to be finished: before that, their tasks may not have been sent yet.
      to: Math.min(sweptThrough, nowSecond - settings.overdueGraceSeconds, checkedAfter + settings.maxSecondsPerRun),
      deadlineMs,
    },
    async (from, to) => {
      const [scanned, rechecks] = await Promise.all([
        ports.clockStore.scannedSeconds(from, to),
        ports.clockStore.recheckSeconds(from, to),
      ]);
      // A second whose scan sent nothing and that the api did not flag has nothing to lose.
      return (second) => (scanned.get(second) ?? 0) > 0 || rechecks.has(second);
    },
    async (second) => {
      const shards = Array.from({ length: ports.shardCount }, (_, shard) => shard);
      const lost = (
        await Promise.all(shards.map((shard) => ports.taskStore.listDue(second, shard, { neverAttempted: true })))
      ).flat();
      if (lost.length === 0) return;
      await ports.deliveryQueue.send(lost.map((task) => ({ id: task.id, delaySeconds: 0 })));
      overdue += lost.length;
    },
  );

  return { rescanned, enqueued, overdue, lagSeconds: nowSecond - state.cursor, unsweptSeconds: nowSecond - sweptThrough };
}
