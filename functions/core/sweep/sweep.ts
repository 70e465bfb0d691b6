import { QUEUES } from '../../contract/topology.js';
import { MARKER_RETENTION_SECONDS, secondOf } from '../kernel/clock.js';
import type { Watermark } from '../kernel/task.js';
import { deliveryMessageFor } from '../kernel/task-kernel.js';
import type { ScanPorts } from '../scan/scan.js';
import { claimAndScan, scanRange } from '../scan/scan.js';

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
   * (or its message keeps crashing the callback) and is enqueued again, as is one stranded
   * by then in a retry or a lease that no message will bring back.
   */
  readonly overdueGraceSeconds: number;
  /**
   * Seconds with tasks that no tick-driven scanner has claimed this long after they were due
   * are claimed and scanned by the sweeper: their tick was lost, or never sent.
   */
  readonly catchUpGraceSeconds: number;
  /** A run stops after this long and leaves the rest to the next run. */
  readonly budgetMs: number;
}

export interface SweepReport {
  /** Tasks in seconds no scanner had claimed catchUpGraceSeconds after they were due, enqueued by the catch-up. */
  readonly caughtUp: number;
  /** Claimed seconds that were never finished, re-scanned now. */
  readonly rescanned: number[];
  /** Tasks enqueued by those re-scans. */
  readonly enqueued: number;
  /** Tasks never attempted long after their due time, or stranded in a retry or a lapsed lease, enqueued again. */
  readonly overdue: number;
  /**
   * How far the scanners are behind: now minus the oldest second with tasks that the catch-up
   * had to claim, or, when it found none, now minus the cursor but at most zero (an idle
   * clock's cursor trails real time by design; one running ahead shows the lookahead).
   */
  readonly lagSeconds: number;
  /** Now minus the sweep watermark: how far back seconds are not yet known to be finished. */
  readonly unsweptSeconds: number;
  /** How far the overdue check trails `overdueGraceSeconds` behind now: near zero when it keeps up. */
  readonly overdueCheckLagSeconds: number;
  /** Failures that stopped a pass early; its watermark holds there and the next run resumes. */
  readonly errors: unknown[];
}

/**
 * Walks seconds after a watermark, doing the work each one calls for (a list of seconds to
 * handle, usually itself or nothing), and raises the watermark only over seconds whose work
 * is done. However long a failure lasts, no second is left behind; one that keeps failing
 * holds the watermark, and the lag shows. Each run does the work of at least one second
 * before it heeds the deadline: when the stores are slow enough that merely reading what to
 * do spends the budget, a pass that stopped at once would never move again.
 */
async function walkSeconds(
  ports: ScanPorts,
  mark: Watermark,
  range: { after: number; to: number; deadlineMs: number },
  workFor: (from: number, to: number) => Promise<(second: number) => readonly number[]>,
  work: (second: number) => Promise<void>,
): Promise<{ through: number; error?: unknown }> {
  let through = range.after;
  if (range.to <= range.after) return { through };
  try {
    const workAt = await workFor(range.after + 1, range.to);
    let worked = false;
    for (let second = range.after + 1; second <= range.to; second++) {
      const targets = workAt(second);
      if (targets.length > 0 && worked && ports.clock.now() > range.deadlineMs) break;
      for (const target of targets) await work(target);
      worked ||= targets.length > 0;
      through = second;
    }
  } catch (error) {
    return { through: await raised(ports, mark, range.after, through), error };
  }
  return { through: await raised(ports, mark, range.after, through) };
}

/** Records progress; if even that fails, the next run simply redoes the work from the old mark. */
async function raised(ports: ScanPorts, mark: Watermark, after: number, through: number): Promise<number> {
  if (through <= after) return after;
  try {
    await ports.clockStore.raiseWatermark(mark, through);
    return through;
  } catch {
    return after;
  }
}

/**
 * The safety net behind the scanners, run every minute. First it catches up the cursor over
 * seconds no tick-driven scanner claimed in time: ticks come only for seconds with tasks, so
 * an idle clock's cursor waits for this pass, and a second whose tick was lost is scanned
 * here, late but not lost. Then it re-scans claimed seconds that have tasks and were never
 * recorded as finished (a scanner that crashed, timed out or failed to enqueue). Then, over
 * seconds that had work, it looks for tasks no callback has ever claimed long after their due
 * time (less those a receipt names: see receipts.ts), whose message was lost, dead-lettered by SQS or keeps crashing the callback, and for
 * tasks whose retry time or lease ran out with no message left to bring them back, and enqueues
 * them again. It looks at each second once, `overdueGraceSeconds` after it: a retry stranded
 * later than that is not found here. All of it only ever sends duplicates of work that may already be in
 * flight, which the callback's lease turns into no-ops.
 */
export async function sweep(ports: ScanPorts, settings: SweepSettings): Promise<SweepReport> {
  const startedAtMs = ports.clock.now();
  const nowSecond = secondOf(startedAtMs);
  const state = await ports.clockStore.read();
  if (!state) {
    return {
      caughtUp: 0,
      rescanned: [],
      enqueued: 0,
      overdue: 0,
      lagSeconds: 0,
      unsweptSeconds: 0,
      overdueCheckLagSeconds: 0,
      errors: [],
    };
  }
  // The catch-up, usually a claim or two of empty seconds, gets a fifth of the budget; the
  // other passes two fifths each, so a pass with a long queue of work cannot starve the others.
  const catchUpBudgetMs = settings.budgetMs / 5;
  const passBudgetMs = (settings.budgetMs - catchUpBudgetMs) / 2;
  // Without a watermark (a first sweep, or one added to a long-running clock) a pass starts at
  // the clock's start, but never before the oldest marker that can still exist: older seconds
  // would all look unfinished and be re-scanned for nothing, holding the overdue pass back.
  const neverSwept = Math.max(state.startedAt, nowSecond - MARKER_RETENTION_SECONDS) - 1;

  let caughtUp = 0;
  // Until the catch-up says otherwise, assume the worst it could have found.
  let lagSeconds = nowSecond - state.cursor;
  let catchUpError: unknown;
  try {
    const run = await claimAndScan(
      ports,
      () => nowSecond - settings.catchUpGraceSeconds,
      startedAtMs + catchUpBudgetMs,
    );
    caughtUp = run.enqueued;
    const oldestMissed = Math.min(...run.enqueuedBySecond.keys());
    lagSeconds = Number.isFinite(oldestMissed) ? nowSecond - oldestMissed : Math.min(0, lagSeconds);
  } catch (error) {
    catchUpError = error;
  }

  const rescanned: number[] = [];
  let enqueued = 0;
  const sweptAfter = (await ports.clockStore.watermark('swept')) ?? neverSwept;
  const unfinished = await walkSeconds(
    ports,
    'swept',
    {
      after: sweptAfter,
      to: Math.min(state.cursor - 1, nowSecond - settings.graceSeconds, sweptAfter + settings.maxSecondsPerRun),
      deadlineMs: ports.clock.now() + passBudgetMs,
    },
    async (from, to) => {
      // Read after the seconds were claimed, the index names every second a task can be waiting in (see scanRange).
      const [finished, occupied] = await Promise.all([
        ports.clockStore.scannedSeconds(from, to),
        ports.occupancy.occupied(from, to),
      ]);
      return (second) => (finished.has(second) || !occupied.has(second) ? [] : [second]);
    },
    async (second) => {
      const scan = await scanRange(ports, { from: second, through: second }, { occupied: new Set([second]) });
      enqueued += scan.enqueuedBySecond.get(second) ?? 0;
      rescanned.push(second);
    },
  );

  let overdue = 0;
  const overdueChecked = new Set<number>();
  const checkedAfter = (await ports.clockStore.watermark('overdueChecked')) ?? neverSwept;
  const overduePass = await walkSeconds(
    ports,
    'overdueChecked',
    {
      after: checkedAfter,
      // Only seconds known to be finished: before that, their tasks may not have been sent yet.
      to: Math.min(
        unfinished.through,
        nowSecond - settings.overdueGraceSeconds,
        checkedAfter + settings.maxSecondsPerRun,
      ),
      deadlineMs: ports.clock.now() + passBudgetMs,
    },
    async (from, to) => {
      const [occupied, flags] = await Promise.all([
        ports.occupancy.occupied(from, to),
        ports.clockStore.rechecksFlagged(from, to),
      ]);
      // Every second with tasks, including those whose only tasks the api enqueued itself after
      // the scan; the api's flags name late arrivals, due at any earlier second, that it stored
      // but could not enqueue.
      return (second) => [...(occupied.has(second) ? [second] : []), ...(flags.get(second) ?? [])];
    },
    async (second) => {
      // A flag can name a second this run already checked as occupied; its tasks went out then.
      if (overdueChecked.has(second)) return;
      overdueChecked.add(second);
      const shards = Array.from({ length: ports.shardCount }, (_, shard) => shard);
      const nowMs = ports.clock.now();
      // A task whose retry or lease ran out a visibility timeout ago has no message left coming:
      // one that is merely slow comes back within that, and a duplicate is absorbed by the lease.
      const strandedBeforeMs = nowMs - QUEUES.delivery.visibilityTimeoutSeconds * 1000;
      const stranded = (
        await Promise.all(shards.map((shard) => ports.taskStore.listDue(second, shard, { strandedBeforeMs })))
      ).flat();
      if (stranded.length === 0) return;
      // A task delivered by a receipt is still PENDING and never attempted on its item: every
      // delivered task of the second would be listed, and sent again, without this. Receipts that
      // cannot be read are taken as none: a task sent again looks for its receipt before it calls
      // (a late first attempt), and one left unsent would wait for the next pass.
      const receipted = await ports.taskStore.receiptsOf(second).catch(() => new Map<string, number>());
      const lost = stranded.filter((task) => !receipted.has(task.id));
      if (lost.length === 0) return;
      await ports.deliveryQueue.send(lost.map((task) => deliveryMessageFor(task, nowMs)));
      overdue += lost.length;
    },
  );

  return {
    caughtUp,
    rescanned,
    enqueued,
    overdue,
    lagSeconds,
    unsweptSeconds: nowSecond - unfinished.through,
    overdueCheckLagSeconds: Math.max(0, nowSecond - settings.overdueGraceSeconds - overduePass.through),
    errors: [catchUpError, unfinished.error, overduePass.error].filter((error) => error !== undefined),
  };
}
