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
  scheduleFromItem,
  type ScheduleItem,
  scheduleKey,
  schedulesPartition,
  scheduleToItem,
} from './table-schema.js';

/** A tenant's schedules, one item each in the tenant's schedule partition. */
export class DynamoScheduleStore implements ScheduleStore {
  constructor(private readonly options: TableOptions) {}

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
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: scheduleKey(tenantId, id), ConsistentRead: true }),
    );
    return result.Item ? scheduleFromItem(result.Item as ScheduleItem) : undefined;
  }

  async page(tenantId: string, limit: number, afterId?: string): Promise<SchedulePage> {
    const result = await this.options.client.send(
      new QueryCommand({
        TableName: this.options.tableName,
        KeyConditionExpression: KEY_EXPRESSIONS.partition,
        ExpressionAttributeValues: { ':pk': schedulesPartition(tenantId) },
        ConsistentRead: true,
        Limit: limit,
        ExclusiveStartKey: afterId === undefined ? undefined : scheduleKey(tenantId, afterId),
      }),
    );
    return {
      schedules: ((result.Items ?? []) as ScheduleItem[]).map(scheduleFromItem),
      more: result.LastEvaluatedKey !== undefined,
    };
  }

  async count(tenantId: string): Promise<number> {
    let count = 0;
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.options.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: KEY_EXPRESSIONS.partition,
          ExpressionAttributeValues: { ':pk': schedulesPartition(tenantId) },
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
    return unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: scheduleToItem(schedule),
          ConditionExpression: `${KEY_EXPRESSIONS.itemPresent} AND revision = :revision AND ${chain}`,
          ExpressionAttributeNames: { '#next': 'next' },
          ExpressionAttributeValues: {
            ':revision': readAt.revision,
            ...(readAt.nextTaskId !== undefined && { ':next': readAt.nextTaskId }),
          },
        }),
      ),
    );
  }

  advance(tenantId: string, id: string, revision: string, fromTaskId: string, next?: NextOccurrence): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: scheduleKey(tenantId, id),
          UpdateExpression: next ? 'SET #next = :next, advancedFrom = :from' : 'SET advancedFrom = :from REMOVE #next',
          ConditionExpression: `${KEY_EXPRESSIONS.itemPresent} AND revision = :revision AND #next.taskId = :from`,
          ExpressionAttributeNames: { '#next': 'next' },
          ExpressionAttributeValues: {
            ':revision': revision,
            ':from': fromTaskId,
            ...(next && { ':next': nextOccurrenceToItem(next) }),
          },
        }),
      ),
    );
  }

  async delete(tenantId: string, id: string): Promise<Schedule | undefined> {
    const result = await this.options.client.send(
      new DeleteCommand({ TableName: this.options.tableName, Key: scheduleKey(tenantId, id), ReturnValues: 'ALL_OLD' }),
    );
    return result.Attributes ? scheduleFromItem(result.Attributes as ScheduleItem) : undefined;
  }
}
