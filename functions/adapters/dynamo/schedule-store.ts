import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';

import type {
  ChainPosition,
  NextOccurrence,
  Schedule,
  SchedulePage,
  ScheduleStore,
} from '../../core/schedules/schedules.js';
import { type TableOptions, unlessConditionFails } from './dynamo-helpers.js';
import {
  KEY_EXPRESSIONS,
  nextOccurrenceToItem,
  SCHEDULE_PARTITIONS,
  scheduleFromItem,
  type ScheduleItem,
  scheduleKey,
  SCHEDULES_LEGACY,
  schedulesPartition,
  scheduleToItem,
  type TableKey,
} from './table-schema.js';

/**
 * A tenant's schedules, one item each in the share of the tenant's schedule partitions its id
 * hashes to (table-schema.ts, SCHEDULE_SHARES). A schedule stored before the shares is found in
 * the tenant's one old partition: a read or conditional write that finds nothing in the share
 * tries there, so only such a schedule, or one that is not there at all, costs a second request.
 */
export class DynamoScheduleStore implements ScheduleStore {
  constructor(private readonly options: TableOptions) {}

  /**
   * Makes `request` at the schedule's key in its share, and again at its old key when the first
   * found nothing there: no item read or deleted, or a write's condition on the item failed.
   */
  private async inShareOrLegacy<Found>(
    tenantId: string,
    id: string,
    request: (key: TableKey) => Promise<Found>,
  ): Promise<Found> {
    return (await request(scheduleKey(tenantId, id))) || request(scheduleKey(tenantId, id, SCHEDULES_LEGACY));
  }

  create(schedule: Schedule): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: scheduleToItem(schedule),
          ConditionExpression: KEY_EXPRESSIONS.itemAbsent,
        }),
      ),
    );
  }

  async get(tenantId: string, id: string): Promise<Schedule | undefined> {
    const read = async (key: TableKey) =>
      (
        await this.options.client.send(
          new GetCommand({ TableName: this.options.tableName, Key: key, ConsistentRead: true }),
        )
      ).Item as ScheduleItem | undefined;
    const item = await this.inShareOrLegacy(tenantId, id, read);
    return item ? scheduleFromItem(item) : undefined;
  }

  /**
   * Reads up to `limit` after `afterId` from every partition of the tenant's schedules and keeps
   * the first `limit` by id: listings are rare, and a page is then in id order however the
   * schedules are spread.
   */
  async page(tenantId: string, limit: number, afterId?: string): Promise<SchedulePage> {
    const pages = await Promise.all(
      SCHEDULE_PARTITIONS.map((share) =>
        this.options.client.send(
          new QueryCommand({
            TableName: this.options.tableName,
            KeyConditionExpression:
              afterId === undefined ? KEY_EXPRESSIONS.partition : KEY_EXPRESSIONS.partitionSortAfter,
            ExpressionAttributeValues: {
              ':pk': schedulesPartition(tenantId, share),
              ...(afterId !== undefined && { ':after': afterId }),
            },
            ConsistentRead: true,
            Limit: limit,
          }),
        ),
      ),
    );
    const items = pages
      .flatMap((page) => (page.Items ?? []) as ScheduleItem[])
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return {
      schedules: items.slice(0, limit).map(scheduleFromItem),
      more: items.length > limit || pages.some((page) => page.LastEvaluatedKey !== undefined),
    };
  }

  async count(tenantId: string): Promise<number> {
    const counts = await Promise.all(
      SCHEDULE_PARTITIONS.map((share) => this.countIn(schedulesPartition(tenantId, share))),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  }

  private async countIn(partition: string): Promise<number> {
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.options.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: KEY_EXPRESSIONS.partition,
          ExpressionAttributeValues: { ':pk': partition },
          Select: 'COUNT',
          ExclusiveStartKey: startKey,
        }),
      );
      count += page.Count ?? 0;
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return count;
  }

  replace(schedule: Schedule, readAt: ChainPosition): Promise<boolean> {
    const chain = readAt.nextTaskId === undefined ? 'attribute_not_exists(#next)' : '#next.taskId = :next';
    return this.inShareOrLegacy(schedule.tenantId, schedule.id, (key) =>
      unlessConditionFails(
        this.options.client.send(
          new PutCommand({
            TableName: this.options.tableName,
            Item: { ...scheduleToItem(schedule), ...key },
            ConditionExpression: `${KEY_EXPRESSIONS.itemPresent} AND revision = :revision AND ${chain}`,
            ExpressionAttributeNames: { '#next': 'next' },
            ExpressionAttributeValues: {
              ':revision': readAt.revision,
              ...(readAt.nextTaskId !== undefined && { ':next': readAt.nextTaskId }),
            },
          }),
        ),
      ),
    );
  }

  advance(tenantId: string, id: string, revision: string, fromTaskId: string, next?: NextOccurrence): Promise<boolean> {
    return this.inShareOrLegacy(tenantId, id, (key) =>
      unlessConditionFails(
        this.options.client.send(
          new UpdateCommand({
            TableName: this.options.tableName,
            Key: key,
            UpdateExpression: next
              ? 'SET #next = :next, advancedFrom = :from'
              : 'SET advancedFrom = :from REMOVE #next',
            ConditionExpression: `${KEY_EXPRESSIONS.itemPresent} AND revision = :revision AND #next.taskId = :from`,
            ExpressionAttributeNames: { '#next': 'next' },
            ExpressionAttributeValues: {
              ':revision': revision,
              ':from': fromTaskId,
              ...(next && { ':next': nextOccurrenceToItem(next) }),
            },
          }),
        ),
      ),
    );
  }

  async delete(tenantId: string, id: string): Promise<Schedule | undefined> {
    const remove = async (key: TableKey) =>
      (
        await this.options.client.send(
          new DeleteCommand({ TableName: this.options.tableName, Key: key, ReturnValues: 'ALL_OLD' }),
        )
      ).Attributes as ScheduleItem | undefined;
    const item = await this.inShareOrLegacy(tenantId, id, remove);
    return item ? scheduleFromItem(item) : undefined;
  }
}
