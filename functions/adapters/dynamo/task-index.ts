import { QueryCommand } from '@aws-sdk/lib-dynamodb';

import { TABLE } from '../../contract/topology.js';
import { MAX_SHARDS, parseTaskId, type TaskAddress, taskAddress } from '../../core/kernel/ids.js';
import type { IndexPartition, Task, TaskIndex } from '../../core/kernel/task.js';
import { batchGetAll } from './dynamo-helpers.js';
import {
  indexPartitionKey,
  type TableKey,
  taskFromItem,
  taskIdOfSortKey,
  type TaskItem,
  taskKey,
} from './table-schema.js';
import type { DynamoStoreOptions } from './task-store.js';

/** The business-query indexes (keys only) and the task reads that turn their keys into tasks. */
export class DynamoTaskIndex implements TaskIndex {
  constructor(private readonly options: DynamoStoreOptions) {}

  async page(at: IndexPartition, limit: number, afterId?: string): Promise<{ ids: string[]; more: boolean }> {
    const spec = TABLE.indexes[at.index];
    const partition = indexPartitionKey(at);
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
            ExclusiveStartKey: {
              [spec.partitionKey]: partition,
              ...taskKey(taskAddress(afterId, after, this.options.bucketCount)),
            },
          }),
      }),
    );
    return {
      ids: ((result.Items ?? []) as TableKey[]).map((item) => taskIdOfSortKey(item.sk)),
      more: result.LastEvaluatedKey !== undefined,
    };
  }

  async getMany(addresses: readonly TaskAddress[]): Promise<Task[]> {
    const keys = addresses.map(taskKey);
    const found = new Map<string, Task>();
    for (const item of await batchGetAll<TaskItem>(this.options, keys, false)) found.set(item.sk, taskFromItem(item));
    return keys.flatMap((key) => found.get(key.sk) ?? []);
  }
}
