import { BatchGetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';

import { TABLE } from '../../contract/topology.js';
import { MAX_SHARDS, parseTaskId, type TaskKey, taskKey } from '../../core/ids.js';
import { StoreBusyError, type Task, type TaskIndex, type TaskIndexName } from '../../core/task.js';
import { backOff, UNPROCESSED_RETRIES } from './dynamo-helpers.js';
import { taskFromItem, taskIdOfSortKey, type TaskItem } from './table-schema.js';
import type { DynamoStoreOptions } from './task-store.js';

const BATCH_GET_LIMIT = 100;

/** The business-query indexes (keys only) and the task reads that turn their keys into tasks. */
export class DynamoTaskIndex implements TaskIndex {
  constructor(private readonly options: DynamoStoreOptions) {}

  async page(
    index: TaskIndexName,
    partition: string,
    limit: number,
    afterId?: string,
  ): Promise<{ ids: string[]; more: boolean }> {
    const spec = TABLE.indexes[index];
    const after = afterId === undefined ? undefined : parseTaskId(afterId, MAX_SHARDS);
    const result = await this.options.client.send(
      new QueryCommand({
        TableName: this.options.tableName,
        IndexName: spec.name,
        KeyConditionExpression: '#partition = :partition',
        ExpressionAttributeNames: { '#partition': spec.partitionKey },
        ExpressionAttributeValues: { ':partition': partition },
        Limit: limit,
        // An index's start key is the index key plus the table key; all of it follows from the partition and the id.
        ...(afterId !== undefined &&
          after && {
            ExclusiveStartKey: { [spec.partitionKey]: partition, ...taskKey(afterId, after, this.options.bucketCount) },
          }),
      }),
    );
    return {
      ids: ((result.Items ?? []) as TaskKey[]).map((item) => taskIdOfSortKey(item.sk)),
      more: result.LastEvaluatedKey !== undefined,
    };
  }

  async getMany(keys: readonly TaskKey[]): Promise<Task[]> {
    const { client, tableName } = this.options;
    const found = new Map<string, Task>();
    for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
      let pending: Array<Record<string, unknown>> = keys
        .slice(start, start + BATCH_GET_LIMIT)
        .map((key) => ({ ...key }));
      for (let retry = 0; pending.length > 0; retry++) {
        if (retry > UNPROCESSED_RETRIES)
          throw new StoreBusyError(
            `${pending.length} task reads stayed unprocessed after ${UNPROCESSED_RETRIES} retries`,
          );
        if (retry > 0) await backOff(retry);
        const result = await client.send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending } } }));
        for (const item of (result.Responses?.[tableName] ?? []) as TaskItem[]) found.set(item.sk, taskFromItem(item));
        pending = result.UnprocessedKeys?.[tableName]?.Keys ?? [];
      }
    }
    return keys.flatMap((key) => found.get(key.sk) ?? []);
  }
}
