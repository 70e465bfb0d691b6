import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';

import type { BizTypeSettings, BizTypeStore } from '../../core/submit/biz-types.js';
import { partitionItems, type TableOptions, unlessConditionFails } from './dynamo-helpers.js';
import {
  bizTypeFromItem,
  type BizTypeItem,
  bizTypeKey,
  bizTypesPartition,
  bizTypeToItem,
  KEY_EXPRESSIONS,
} from './table-schema.js';

/** A tenant's bizType settings, one item each in the tenant's bizType partition. */
export class DynamoBizTypeStore implements BizTypeStore {
  constructor(private readonly options: TableOptions) {}

  async put(settings: BizTypeSettings): Promise<void> {
    await this.options.client.send(
      new PutCommand({ TableName: this.options.tableName, Item: bizTypeToItem(settings) }),
    );
  }

  async get(tenantId: string, bizType: string): Promise<BizTypeSettings | undefined> {
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: bizTypeKey(tenantId, bizType), ConsistentRead: true }),
    );
    return result.Item ? bizTypeFromItem(result.Item as BizTypeItem) : undefined;
  }

  async list(tenantId: string): Promise<BizTypeSettings[]> {
    return (await partitionItems<BizTypeItem>(this.options, bizTypesPartition(tenantId))).map(bizTypeFromItem);
  }

  delete(tenantId: string, bizType: string): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: bizTypeKey(tenantId, bizType),
          ConditionExpression: KEY_EXPRESSIONS.itemPresent,
        }),
      ),
    );
  }
}
