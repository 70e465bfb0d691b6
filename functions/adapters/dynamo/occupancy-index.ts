import { randomInt } from 'node:crypto';

import { UpdateCommand } from '@aws-sdk/lib-dynamodb';

import { minuteOf } from '../../core/kernel/clock.js';
import { MARKER_RETENTION_SECONDS } from '../../core/kernel/clock.js';
import type { OccupancyIndex } from '../../core/kernel/task.js';
import { batchGetAll, type TableOptions } from './dynamo-helpers.js';
import { minutePlanKey, OCCUPANCY_SLOTS, type OccupancyItem, occupancyKey } from './table-schema.js';

/** The sweeper may read a minute's entry until its scan markers expire. */
function minuteExpiry(minute: number): number {
  return (minute + 1) * 60 + MARKER_RETENTION_SECONDS;
}

/** Seconds one instance remembers having recorded; past this it forgets the oldest tenth. */
const REMEMBERED_SECONDS = 100_000;

/**
 * One instance writes a minute's item at most this often. Seconds new to the minute meanwhile
 * wait, at most this long, and go in the next write together: a cold instance seeing tasks
 * due in many seconds of one minute, or a steady stream of them, then writes that item at
 * most 20 times a second, not once per new second.
 */
const MINUTE_WRITE_SPACING_MS = 50;

/** Lanes kept for minutes this instance wrote; past this, lanes idle for a spacing are dropped. */
const REMEMBERED_LANES = 1_000;

interface MinuteLane {
  /** Settles when the lane's last write has; the next write starts after it. */
  tail: Promise<unknown>;
  lastStartMs: number;
  /** The write not started yet, which seconds new to the minute still join. */
  next?: { readonly seconds: number[]; written: Promise<number[]> };
}

export interface OccupancyIndexOptions extends TableOptions {
  /** The slot this instance's first write goes to; @default one chosen at random (see OCCUPANCY_SLOTS). */
  readonly firstSlot?: number;
}

/**
 * The occupancy index: OCCUPANCY_SLOTS items per minute (each a partition of its own), each
 * holding the seconds with tasks that its writers recorded, and whether the ticker has planned
 * the minute. An instance writes the slots in turn; the ticker plans every slot, and readers read
 * them all. The api's ADD and the ticker's plan of a slot are single-item updates that return
 * the item as it was, so they are ordered: either the plan saw a second, or its writer learns
 * the minute was planned without it and sends the tick itself.
 */
export class DynamoOccupancyIndex implements OccupancyIndex {
  /**
   * Seconds this instance has recorded, or is recording, each with the write that records it:
   * a hot second then costs one index write per instance, not one per batch, and a caller
   * sharing a second still waits until that write is durable.
   */
  private readonly recorded = new Map<number, Promise<number[]>>();
  private readonly lanes = new Map<number, MinuteLane>();

  /** The slot the next write goes to: each write takes the next, so one instance's writes spread over all of them. */
  private nextSlot: number;

  constructor(private readonly options: OccupancyIndexOptions) {
    this.nextSlot = options.firstSlot ?? randomInt(OCCUPANCY_SLOTS);
  }

  async occupy(seconds: readonly number[]): Promise<number[]> {
    const distinct = [...new Set(seconds)];
    const pending = distinct.flatMap((second) => this.recorded.get(second) ?? []);
    const byMinute = new Map<number, number[]>();
    for (const second of distinct.filter((second) => !this.recorded.has(second))) {
      byMinute.set(minuteOf(second), [...(byMinute.get(minuteOf(second)) ?? []), second]);
    }
    const writes = [...byMinute].map(([minute, fresh]) => {
      const write = this.inLane(minute, fresh);
      for (const second of fresh) this.recorded.set(second, write);
      write.catch(() => {
        for (const second of fresh) this.recorded.delete(second);
      });
      // A write may carry other callers' seconds; each caller ticks only its own.
      return write.then((unticked) => unticked.filter((second) => fresh.includes(second)));
    });
    const [unticked] = await Promise.all([Promise.all(writes), Promise.all(pending)]);
    this.forgetOldest();
    return unticked.flat();
  }

  /** Adds `seconds` to the minute's next write, starting one if none waits (see MINUTE_WRITE_SPACING_MS). */
  private inLane(minute: number, seconds: readonly number[]): Promise<number[]> {
    const lane = this.lanes.get(minute) ?? { tail: Promise.resolve(), lastStartMs: Number.NEGATIVE_INFINITY };
    this.lanes.set(minute, lane);
    if (lane.next) {
      lane.next.seconds.push(...seconds);
      return lane.next.written;
    }
    const next: NonNullable<MinuteLane['next']> = { seconds: [...seconds], written: Promise.resolve([]) };
    lane.next = next;
    next.written = lane.tail.then(async () => {
      const wait = lane.lastStartMs + MINUTE_WRITE_SPACING_MS - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      lane.next = undefined;
      lane.lastStartMs = Date.now();
      return this.record(minute, next.seconds);
    });
    lane.tail = next.written.catch(() => undefined);
    return next.written;
  }

  /**
   * Plans every slot of the minute. A slot planned before (by a duplicate run) was ticked by
   * that run. A slot whose update failed stays unplanned, and the next run, which plans this
   * minute again as its current one, ticks it: late, never lost.
   */
  async plan(minute: number): Promise<number[] | undefined> {
    const slots = Array.from({ length: OCCUPANCY_SLOTS }, (_, slot) => slot);
    const results = await Promise.allSettled(
      slots.map((slot) =>
        this.options.client.send(
          new UpdateCommand({
            TableName: this.options.tableName,
            Key: occupancyKey(minute, slot),
            UpdateExpression: 'SET planned = :planned, expiresAt = :expiresAt',
            ExpressionAttributeValues: { ':planned': true, ':expiresAt': minuteExpiry(minute) },
            ReturnValues: 'ALL_OLD',
          }),
        ),
      ),
    );
    const planned = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const failure = results.find((result) => result.status === 'rejected');
    if (planned.length === 0 && failure) throw failure.reason;
    const fresh = planned
      .map((result) => result.Attributes as OccupancyItem | undefined)
      .filter((item) => !item?.planned);
    if (fresh.length === 0) return undefined;
    return [...new Set(fresh.flatMap((item) => [...(item?.seconds ?? [])]))].sort((a, b) => a - b);
  }

  async occupied(from: number, to: number): Promise<Set<number>> {
    const keys = [];
    for (let minute = minuteOf(from); minute <= minuteOf(to); minute++) {
      for (let slot = 0; slot < OCCUPANCY_SLOTS; slot++) keys.push(occupancyKey(minute, slot));
    }
    const seconds = new Set<number>();
    for (const item of await batchGetAll<OccupancyItem>(this.options, keys, true)) {
      for (const second of item.seconds ?? []) {
        if (second >= from && second <= to) seconds.add(second);
      }
    }
    return seconds;
  }

  /** Adds seconds to a minute's set; returns those that were new to a minute already planned. */
  private async record(minute: number, seconds: readonly number[]): Promise<number[]> {
    const slot = this.nextSlot;
    this.nextSlot = (slot + 1) % OCCUPANCY_SLOTS;
    const result = await this.options.client.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: occupancyKey(minute, slot),
        UpdateExpression: 'ADD #seconds :seconds SET expiresAt = :expiresAt',
        ExpressionAttributeNames: { '#seconds': 'seconds' },
        ExpressionAttributeValues: { ':seconds': new Set(seconds), ':expiresAt': minuteExpiry(minute) },
        ReturnValues: 'ALL_OLD',
      }),
    );
    const before = result.Attributes as OccupancyItem | undefined;
    if (!before?.planned) return [];
    return seconds.filter((second) => !before.seconds?.has(second));
  }

  private forgetOldest(): void {
    if (this.lanes.size > REMEMBERED_LANES) {
      const idleSince = Date.now() - MINUTE_WRITE_SPACING_MS;
      for (const [minute, lane] of this.lanes) {
        if (!lane.next && lane.lastStartMs < idleSince) this.lanes.delete(minute);
      }
    }
    if (this.recorded.size <= REMEMBERED_SECONDS) return;
    const oldest = [...this.recorded.keys()].sort((a, b) => a - b).slice(0, REMEMBERED_SECONDS / 10);
    for (const second of oldest) this.recorded.delete(second);
  }
}

/**
 * Dense mode's index: every second is taken as occupied, so nothing is recorded at submit and
 * every second of a planned minute gets a tick. It pays where the index would cost close to a
 * write per submit (due times spread over many seconds, most of them busy anyway) and costs a
 * tick and a scan of every shard for each second, busy or not.
 *
 * No interleaving leaves a task unticked: every run of the ticker plans its own minute and the
 * next, ticking each of their seconds whenever the task was written. Seconds of a minute no run
 * planned, or whose tick was lost, are the sweeper's catch-up, late but not lost, as in sparse
 * mode; a task written after its second's scan is a late arrival, which the api enqueues itself
 * (invariant 5).
 */
export class EverySecondOccupancy implements OccupancyIndex {
  constructor(private readonly options: TableOptions) {}

  /** Nothing to record: the tick every second of a planned minute gets covers the callers' seconds too. */
  async occupy(_seconds: readonly number[]): Promise<number[]> {
    return [];
  }

  /** One update that returns the item as it was: of duplicate runs, only the first finds the minute unplanned. */
  async plan(minute: number): Promise<number[] | undefined> {
    const result = await this.options.client.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: minutePlanKey(minute),
        UpdateExpression: 'SET planned = :planned, expiresAt = :expiresAt',
        ExpressionAttributeValues: { ':planned': true, ':expiresAt': minuteExpiry(minute) },
        ReturnValues: 'ALL_OLD',
      }),
    );
    if ((result.Attributes as OccupancyItem | undefined)?.planned) return undefined;
    return secondsBetween(minute * 60, minute * 60 + 59);
  }

  async occupied(from: number, to: number): Promise<Set<number>> {
    return new Set(secondsBetween(from, to));
  }
}

function secondsBetween(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from + 1) }, (_, offset) => from + offset);
}
