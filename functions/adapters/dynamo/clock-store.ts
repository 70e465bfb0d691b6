import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';

import { MAX_CLAIM_SECONDS } from '../../core/kernel/clock.js';
import type { ClockState, ClockStore, SecondRange, Watermark } from '../../core/kernel/task.js';
import { markersBetween, type TableOptions, unlessConditionFails } from './dynamo-helpers.js';
import {
  CLOCK_KEY,
  clockFromItem,
  type ClockItem,
  clockToItem,
  KEY_EXPRESSIONS,
  recheckFlaggedAt,
  type RecheckFlagItem,
  recheckFlagItem,
  scanMarkerFrom,
  type ScanMarkerItem,
  scanMarkerItem,
  SWEEP_KEY,
  type SweepItem,
} from './table-schema.js';

/** The scan cursor and per-second progress markers, in the same table as the tasks. */
export class DynamoClockStore implements ClockStore {
  constructor(private readonly options: TableOptions) {}

  async read(): Promise<ClockState | undefined> {
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: CLOCK_KEY, ConsistentRead: true }),
    );
    return result.Item ? clockFromItem(result.Item as ClockItem) : undefined;
  }

  async start(second: number): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: clockToItem({ cursor: second, startedAt: second }),
          ConditionExpression: KEY_EXPRESSIONS.itemAbsent,
        }),
      ),
    );
  }

  async advance(from: number, through: number): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: CLOCK_KEY,
          UpdateExpression: 'SET #cursor = :next',
          ConditionExpression: '#cursor = :from',
          ExpressionAttributeNames: { '#cursor': 'cursor' },
          ExpressionAttributeValues: { ':from': from, ':next': through + 1 },
        }),
      ),
    );
  }

  async markScanned(
    range: SecondRange,
    enqueuedBySecond: ReadonlyMap<number, number>,
    expiresAtSeconds: number,
  ): Promise<void> {
    await this.options.client.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: scanMarkerItem(range.from, range.through, enqueuedBySecond, expiresAtSeconds),
      }),
    );
  }

  async scannedSeconds(from: number, to: number): Promise<Map<number, number>> {
    // A marker is filed under its range's first second, which may lie up to a claim's length before `from`.
    const items = await markersBetween<ScanMarkerItem>(this.options, 'SCANNED', from - MAX_CLAIM_SECONDS + 1, to);
    const seconds = new Map<number, number>();
    for (const item of items) {
      const last = Math.min(to, item.through);
      for (let second = Math.max(from, scanMarkerFrom(item)); second <= last; second++) {
        seconds.set(second, item.busy?.[second] ?? 0);
      }
    }
    return seconds;
  }

  async markForRecheck(dueSeconds: readonly number[], flaggedAt: number, expiresAtSeconds: number): Promise<void> {
    await Promise.all(
      [...new Set(dueSeconds)].map((dueSecond) =>
        this.options.client.send(
          new PutCommand({
            TableName: this.options.tableName,
            Item: recheckFlagItem(flaggedAt, dueSecond, expiresAtSeconds),
          }),
        ),
      ),
    );
  }

  async rechecksFlagged(from: number, to: number): Promise<Map<number, number[]>> {
    const flags = new Map<number, number[]>();
    for (const item of await markersBetween<RecheckFlagItem>(this.options, 'RECHECK', from, to)) {
      const flaggedAt = recheckFlaggedAt(item);
      flags.set(flaggedAt, [...(flags.get(flaggedAt) ?? []), item.dueSecond]);
    }
    return flags;
  }

  async watermark(name: Watermark): Promise<number | undefined> {
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: SWEEP_KEY, ConsistentRead: true }),
    );
    return (result.Item as SweepItem | undefined)?.[name];
  }

  async raiseWatermark(name: Watermark, second: number): Promise<void> {
    await unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: SWEEP_KEY,
          UpdateExpression: 'SET #mark = :second',
          ConditionExpression: 'attribute_not_exists(#mark) OR #mark < :second',
          ExpressionAttributeNames: { '#mark': name },
          ExpressionAttributeValues: { ':second': second },
        }),
      ),
    );
  }
}
