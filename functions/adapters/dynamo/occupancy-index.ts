import { UpdateCommand } from '@aws-sdk/lib-dynamodb';

import { minuteOf } from '../../core/clock.js';
import { MARKER_RETENTION_SECONDS } from '../../core/scan.js';
import type { OccupancyIndex } from '../../core/task.js';
import { markersBetween, type TableOptions } from './dynamo-helpers.js';
import { type OccupancyItem, occupancyKey } from './table-schema.js';

/** Seconds one instance remembers having recorded; past this it forgets the oldest tenth. */
const REMEMBERED_SECONDS = 100_000;

/**
 * The occupancy index: one item per minute (filed by the minute's first second, an hour per
 * partition) holding the set of its seconds that have tasks, and whether the ticker has planned
 * it. Both the api's ADD and the ticker's plan are single-item updates that return the item as
 * it was, so they are ordered: either the plan saw a second, or its writer learns the minute
 * was planned without it and sends the tick itself.
 */
export class DynamoOccupancyIndex implements OccupancyIndex {
  /**
   * Seconds this instance has recorded, or is recording, each with the write that records it:
   * a hot second then costs one index write per instance, not one per batch, and a caller
   * sharing a second still waits until that write is durable.
   */
  private readonly recorded = new Map<number, Promise<unknown>>();

  constructor(private readonly options: TableOptions) {}

  async occupy(seconds: readonly number[]): Promise<number[]> {
    const distinct = [...new Set(seconds)];
    const pending = distinct.flatMap((second) => this.recorded.get(second) ?? []);
    const byMinute = new Map<number, number[]>();
    for (const second of distinct.filter((second) => !this.recorded.has(second))) {
      byMinute.set(minuteOf(second), [...(byMinute.get(minuteOf(second)) ?? []), second]);
    }
    const writes = [...byMinute].map(([minute, fresh]) => {
      const write = this.record(minute, fresh);
      for (const second of fresh) this.recorded.set(second, write);
      write.catch(() => {
        for (const second of fresh) this.recorded.delete(second);
      });
      return write;
    });
    const [unticked] = await Promise.all([Promise.all(writes), Promise.all(pending)]);
    this.forgetOldest();
    return unticked.flat();
  }

  async plan(minute: number): Promise<number[] | undefined> {
    const result = await this.options.client.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: occupancyKey(minute),
        UpdateExpression: 'SET planned = :planned, expiresAt = :expiresAt',
        ExpressionAttributeValues: { ':planned': true, ':expiresAt': this.expiry(minute) },
        ReturnValues: 'ALL_OLD',
      }),
    );
    const before = result.Attributes as OccupancyItem | undefined;
    if (before?.planned) return undefined;
    return [...(before?.seconds ?? [])].sort((a, b) => a - b);
  }

  async occupied(from: number, to: number): Promise<Set<number>> {
    const items = await markersBetween<OccupancyItem>(this.options, 'OCCUPIED', minuteOf(from) * 60, to);
    const seconds = new Set<number>();
    for (const item of items) {
      for (const second of item.seconds ?? []) {
        if (second >= from && second <= to) seconds.add(second);
      }
    }
    return seconds;
  }

  /** Adds seconds to a minute's set; returns those that were new to a minute already planned. */
  private async record(minute: number, seconds: readonly number[]): Promise<number[]> {
    const result = await this.options.client.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: occupancyKey(minute),
        UpdateExpression: 'ADD #seconds :seconds SET expiresAt = :expiresAt',
        ExpressionAttributeNames: { '#seconds': 'seconds' },
        ExpressionAttributeValues: { ':seconds': new Set(seconds), ':expiresAt': this.expiry(minute) },
        ReturnValues: 'ALL_OLD',
      }),
    );
    const before = result.Attributes as OccupancyItem | undefined;
    if (!before?.planned) return [];
    return seconds.filter((second) => !before.seconds?.has(second));
  }

  /** The sweeper may read a minute's entry until its scan markers expire. */
  private expiry(minute: number): number {
    return (minute + 1) * 60 + MARKER_RETENTION_SECONDS;
  }

  private forgetOldest(): void {
    if (this.recorded.size <= REMEMBERED_SECONDS) return;
    const oldest = [...this.recorded.keys()].sort((a, b) => a - b).slice(0, REMEMBERED_SECONDS / 10);
    for (const second of oldest) this.recorded.delete(second);
  }
}
