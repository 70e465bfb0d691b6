import { claimSeconds, MARKER_RETENTION_SECONDS, scanThrough } from '../kernel/clock.js';
import type {
  Clock,
  ClockStore,
  DeliveryQueue,
  DueTask,
  OccupancyIndex,
  SecondRange,
  TaskStore,
} from '../kernel/task.js';
import { deliveryMessageFor } from '../kernel/task-kernel.js';

export interface ScanPorts {
  readonly taskStore: TaskStore;
  readonly clockStore: ClockStore;
  readonly occupancy: OccupancyIndex;
  readonly deliveryQueue: DeliveryQueue;
  readonly clock: Clock;
  readonly shardCount: number;
}

/**
 * Messages handed to the delivery queue at a time: about a hundred SendMessageBatch calls, a few
 * tenths of a second. Between chunks a scan heeds its deadline and recomputes the delays, so a
 * message sent late in a busy second is not delayed by what the clock said when the second began.
 */
export const SEND_CHUNK_MESSAGES = 1000;

export interface SecondScan {
  /** PENDING tasks the second's shards held. */
  readonly found: number;
  /** Of those, how many were sent: fewer when the deadline stopped the scan part way. */
  readonly sent: number;
}

/**
 * Shard Queries one scan has in flight at once. A claim that catches up many seconds would
 * otherwise send 80 at once for each, a wave the table takes in its stride but every other
 * caller of a local emulator waits behind; 16 at a time read a second's 80 shards in five
 * rounds of a few milliseconds each.
 */
export const SHARD_QUERIES_IN_FLIGHT = 16;

/** The PENDING tasks of every shard of one second, reading SHARD_QUERIES_IN_FLIGHT shards at a time. */
async function listDueByShard(ports: ScanPorts, second: number): Promise<DueTask[]> {
  const due: DueTask[] = [];
  let nextShard = 0;
  const reader = async () => {
    while (nextShard < ports.shardCount) due.push(...(await ports.taskStore.listDue(second, nextShard++)));
  };
  await Promise.all(Array.from({ length: Math.min(SHARD_QUERIES_IN_FLIGHT, ports.shardCount) }, reader));
  return due;
}

/**
 * Enqueues the PENDING tasks of one second, reading its shards SHARD_QUERIES_IN_FLIGHT at a
 * time, earliest due first: sorted, each callback batch spans the least time, and the callback
 * waits out less of it. A very busy second is sent a chunk at a time, and past `deadlineMs` the
 * rest is left (the first chunk always goes, so a scan that starts late still moves).
 */
export async function enqueueSecond(ports: ScanPorts, second: number, deadlineMs = Infinity): Promise<SecondScan> {
  const due = (await listDueByShard(ports, second)).sort((a, b) => a.fireAtMs - b.fireAtMs);
  for (let start = 0; start < due.length; start += SEND_CHUNK_MESSAGES) {
    if (start > 0 && ports.clock.now() > deadlineMs) return { found: due.length, sent: start };
    const nowMs = ports.clock.now();
    await ports.deliveryQueue.send(
      due.slice(start, start + SEND_CHUNK_MESSAGES).map((task) => deliveryMessageFor(task, nowMs)),
    );
  }
  return { found: due.length, sent: due.length };
}

export interface RangeScan {
  /** Tasks sent by each second that sent any, a second the deadline cut short included. */
  readonly enqueuedBySecond: Map<number, number>;
  /** The last second of the range recorded as finished; before `from` when none was. */
  readonly finishedThrough: number;
}

/**
 * Scans claimed seconds: enqueues the tasks of those the occupancy index names, then records
 * the seconds finished. The index must be read after the claim, never before. The api
 * records a second in the index before it writes the task, and reads the cursor after; so a
 * second missing from the index here got its entry after this claim, and that api call,
 * seeing the cursor past the second, enqueues the task itself (invariant 5). Read before the
 * claim, the index could miss an entry written in between, and neither side would send it.
 * `occupied` may be passed by a caller that read the index after the claim itself.
 *
 * Past `deadlineMs` (checked between seconds and between chunks of a busy one, after the
 * first chunk) the scan stops and records only the seconds before the one in hand: the rest
 * stay claimed but unfinished, which is what the sweeper re-scans. A second cut short is sent
 * again from its start, and the callback's lease absorbs the duplicates. If anything throws,
 * no marker is written and the sweeper scans the seconds again.
 */
export async function scanRange(
  ports: ScanPorts,
  range: SecondRange,
  options: { readonly occupied?: ReadonlySet<number>; readonly deadlineMs?: number } = {},
): Promise<RangeScan> {
  const busy = options.occupied ?? (await ports.occupancy.occupied(range.from, range.through));
  const enqueuedBySecond = new Map<number, number>();
  let finishedThrough = range.through;
  const deadlineMs = options.deadlineMs ?? Infinity;
  for (const second of [...busy].sort((a, b) => a - b)) {
    // Only once something was sent: a scan that began past its deadline must still move.
    if (enqueuedBySecond.size > 0 && ports.clock.now() > deadlineMs) {
      finishedThrough = second - 1;
      break;
    }
    const { found, sent } = await enqueueSecond(ports, second, deadlineMs);
    if (sent > 0) enqueuedBySecond.set(second, sent);
    if (sent < found) {
      finishedThrough = second - 1;
      break;
    }
  }
  if (finishedThrough >= range.from) {
    const finished = new Map([...enqueuedBySecond].filter(([second]) => second <= finishedThrough));
    await ports.clockStore.markScanned(
      { from: range.from, through: finishedThrough },
      finished,
      finishedThrough + MARKER_RETENTION_SECONDS,
    );
  }
  return { enqueuedBySecond, finishedThrough };
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
    const scan = await scanRange(ports, claim, { deadlineMs });
    for (const [second, enqueued] of scan.enqueuedBySecond) enqueuedBySecond.set(second, enqueued);
    // Out of time inside the claim: its unfinished seconds are left to the sweeper.
    if (scan.finishedThrough < claim.through) break;
    // Caught up: stop without paying for a clock read to learn that.
    if (claim.through >= throughAt()) break;
  }
  const enqueued = [...enqueuedBySecond.values()].reduce((sum, count) => sum + count, 0);
  return { claimed, enqueuedBySecond, enqueued };
}

/** What one tick starts: claims and scans every second due within the lookahead (and the skew bound), within the time budget. */
export function runScanner(
  ports: ScanPorts & { readonly lookaheadSeconds: number },
  budgetMs: number,
): Promise<ScannerRun> {
  return claimAndScan(
    ports,
    () => scanThrough(ports.clock.now(), ports.lookaheadSeconds),
    ports.clock.now() + budgetMs,
  );
}
