import { claimNextSecond, secondOf } from './clock';
import type { Clock, ClockStore, DeliveryMessage, DeliveryQueue, DueTask, TaskStore } from './task';
import { DAY_SECONDS } from './task';

/** Seconds the SQS DelaySeconds attribute can hold. */
const MAX_DELAY_SECONDS = 900;
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
  readonly deliveryQueue: DeliveryQueue;
  readonly clock: Clock;
  readonly shardCount: number;
}

/**
 * Enqueues every PENDING task of one second, then records the second as finished.
 * Shards are read in parallel. If anything throws, no marker is written and the
 * sweeper scans the second again: re-sending is safe, skipping is not.
 */
export async function scanSecond(ports: ScanPorts, second: number): Promise<{ enqueued: number }> {
  const { taskStore, clockStore, deliveryQueue, clock, shardCount } = ports;
  const shards = Array.from({ length: shardCount }, (_, shard) => shard);
  const due = (await Promise.all(shards.map((shard) => taskStore.listDue(second, shard)))).flat();
  if (due.length > 0) await deliveryQueue.send(toDeliveryMessages(due, clock.now()));
  await clockStore.markScanned(second, due.length, second + MARKER_RETENTION_SECONDS);
  return { enqueued: due.length };
}

export interface ScannerRun {
  readonly seconds: number[];
  /** Tasks enqueued for each of `seconds`, in the same order. */
  readonly enqueuedPerSecond: number[];
  readonly enqueued: number;
}

/**
 * Claims and scans seconds until the cursor is past now + lookahead or the time
 * budget is spent. Claiming one second at a time keeps any crash's damage to one
 * second; parallelism across a backlog comes from concurrent invocations.
 */
export async function runScanner(
  ports: ScanPorts & { readonly lookaheadSeconds: number },
  budgetMs: number,
): Promise<ScannerRun> {
  const startedAt = ports.clock.now();
  const seconds: number[] = [];
  const enqueuedPerSecond: number[] = [];
  while (ports.clock.now() - startedAt < budgetMs) {
    const claim = await claimNextSecond(ports);
    if (!claim.claimed) break;
    seconds.push(claim.second);
    enqueuedPerSecond.push((await scanSecond(ports, claim.second)).enqueued);
    // The next second is not claimable yet: stop without paying for a clock read to learn that.
    if (claim.second + 1 > secondOf(ports.clock.now()) + ports.lookaheadSeconds) break;
  }
  return { seconds, enqueuedPerSecond, enqueued: enqueuedPerSecond.reduce((sum, count) => sum + count, 0) };
}
