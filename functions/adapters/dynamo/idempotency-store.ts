import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';

import type { IdempotencyRecord, IdempotencyStore } from '../../core/kernel/task.js';
import { type TableOptions, unlessConditionFails } from './dynamo-helpers.js';
import {
  idempotencyFromItem,
  type IdempotencyItem,
  idempotencyKey,
  idempotencyToItem,
  KEY_EXPRESSIONS,
} from './table-schema.js';

/**
 * Idempotency keys, one item each, claimed with a conditional put: of any number of
 * concurrent submits with one key, exactly one gets to create the task.
 */
export class DynamoIdempotencyStore implements IdempotencyStore {
  constructor(private readonly options: TableOptions) {}

  async claim(
    record: IdempotencyRecord,
    expiresAtSeconds: number,
  ): Promise<{ claimed: boolean; holder: IdempotencyRecord }> {
    const key = idempotencyKey(record.scope, record.tenantId, record.key);
    const claimed = await unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: idempotencyToItem(record, expiresAtSeconds),
          ConditionExpression: KEY_EXPRESSIONS.itemAbsent,
        }),
      ),
    );
    if (claimed) return { claimed, holder: record };
    const held = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: key, ConsistentRead: true }),
    );
    if (!held.Item) throw new Error(`idempotency key ${record.key} is taken but its record could not be read`);
    return { claimed, holder: idempotencyFromItem(record, held.Item as IdempotencyItem) };
  }
}
