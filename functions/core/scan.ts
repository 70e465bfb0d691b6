import { claimSeconds, secondOf } from './clock.js';
import type {
  Clock,
  ClockStore,
  DeliveryMessage,
  DeliveryQueue,
  DueTask,
  OccupancyIndex,
  SecondRange,
  TaskStore,
} from './task.js';
import { DAY_SECONDS } from './task.js';

/** Seconds the SQS DelaySeconds attribute can hold. */
export const MAX_DELAY_SECONDS = 900;
/** How long a second's scan marker, or a recheck flag, is kept: the sweeper looks no further back than this. */
export const MARKER_RETENTION_SECONDS = 3 * DAY_SECONDS;

/**
 * Whole seconds a message should stay invisible so it surfaces just before its due
 * time; the callback waits out the sub-second rest, so this rounds down, never up.
 */
export function delaySecondsUntil(dueAtMs: number, nowMs: number): number {
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.floor((dueAtMs - nowMs) / 1000)));
}

export function toDeliveryMessages(tasks: readonly DueTask[], nowMs: number): DeliveryMessage[] {
  return tasks.map((task) => ({ id: task.id, delaySeconds: delaySecondsUntil(task.dueAtMs, nowMs) }));
}

export interface ScanPorts {
  readonly taskStore: TaskStore;
  readonly clockStore: ClockStore;
  readonly occupancy: OccupancyIndex;
  readonly deliveryQueue: DeliveryQueue;
  readonly clock: Clock;
  readonly shardCount: number;
}

/** Enqueues every PENDING task of one second, reading its shards in parallel; returns how many. */
export async function enqueueSecond(ports: ScanPorts, second: number): Promise<number> {
  const shards = Array.from({ length: ports.shardCount }, (_, shard) => shard);
  const due = (await Promise.all(shards.map((shard) => ports.taskStore.listDue(second, shard)))).flat();
  if (due.length > 0) await ports.deliveryQueue.send(toDeliveryMessages(due, ports.clock.now()));
  return due.length;
}

/**
 * Scans claimed seconds: enqueues the tasks of those the occupancy index names, then records
 * the range as finished. The index must be read after the claim, never before. The api
 * records a second in the index before it writes the task, and reads the cursor after; so a
 * second missing from the index here got its entry after this claim, and that api call,
 * seeing the cursor past the second, enqueues the task itself (invariant 5). Read before the
 * claim, the index could miss an entry written in between, and neither side would send it.
 * `occupied` may be passed by a caller that read the index after the claim itself. If
 * anything throws, no marker is written and the sweeper scans the seconds again.
 */
export async function scanRange(
  ports: ScanPorts,
  range: SecondRange,
  occupied?: ReadonlySet<number>,
): Promise<Map<number, number>> {
  const busy = occupied ?? (await ports.occupancy.occupied(range.from, range.through));
  const enqueuedBySecond = new Map<number, number>();
  for (const second of [...busy].sort((a, b) => a - b)) {
    const enqueued = await enqueueSecond(ports, second);
    if (enqueued > 0) enqueuedBySecond.set(second, enqueued);
  }
  await ports.clockStore.markScanned(range, enqueuedBySecond, range.through + MARKER_RETENTION_SECONDS);
  return enqueuedBySecond;
}

export interface ScannerRun {
  /** Seconds claimed, the empty ones included. */
  readonly claimed: number;
  /** Tasks enqueued by each second that had any. */
  readonly enqueuedBySecond: Map<number, number>;
  readonly enqueued: number;
}

/**
 * Claims and scans seconds up to the second `throughAt` names (asked again after each claim,
 * as time moves on) until caught up or past the deadline. One claim takes at most a minute of
 * seconds, so a crash strands no more than that for the sweeper, and concurrent runs share a
 * backlog out a minute at a time.
 */
export async function claimAndScan(ports: ScanPorts, throughAt: () => number, deadlineMs: number): Promise<ScannerRun> {
  let claimed = 0;
  const enqueuedBySecond = new Map<number, number>();
  while (ports.clock.now() < deadlineMs) {
    const claim = await claimSeconds({ ...ports, through: throughAt() });
    if (!claim.claimed) break;
    claimed += claim.through - claim.from + 1;
    for (const [second, enqueued] of await scanRange(ports, claim)) enqueuedBySecond.set(second, enqueued);
    // Caught up: stop without paying for a clock read to learn that.
    if (claim.through >= throughAt()) break;
  }
  const enqueued = [...enqueuedBySecond.values()].reduce((sum, count) => sum + count, 0);
  return { claimed, enqueuedBySecond, enqueued };
}

/** What one tick starts: claims and scans every second due within the lookahead, within the time budget. */
export function runScanner(
  ports: ScanPorts & { readonly lookaheadSeconds: number },
  budgetMs: number,
): Promise<ScannerRun> {
  return claimAndScan(ports, () => secondOf(ports.clock.now()) + ports.lookaheadSeconds, ports.clock.now() + budgetMs);
}
