import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';

import { TABLE } from '../contract/topology.js';
import type { BizTypeSettings, BizTypeStore } from '../core/biz-types.js';
import { allItems, unlessConditionFails } from './dynamo-store.js';
import { recordOf, type TenantStoreOptions } from './dynamo-tenants.js';

/** A tenant's bizTypes share one partition: they are few, and listing them is one Query. */
const partitionOf = (tenantId: string) => `${TABLE.bizTypePartitionPrefix}${tenantId}`;

const settingsOf = (item: Record<string, unknown>) => recordOf<BizTypeSettings>(item);

export class DynamoBizTypeStore implements BizTypeStore {
  constructor(private readonly options: TenantStoreOptions) {}

  async put(settings: BizTypeSettings): Promise<void> {
    await this.options.client.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: { pk: partitionOf(settings.tenantId), sk: settings.bizType, ...settings },
      }),
    );
  }

  async get(tenantId: string, bizType: string): Promise<BizTypeSettings | undefined> {
    const result = await this.options.client.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: partitionOf(tenantId), sk: bizType },
        ConsistentRead: true,
      }),
    );
    return result.Item ? settingsOf(result.Item) : undefined;
  }

  async list(tenantId: string): Promise<BizTypeSettings[]> {
    const items = await allItems((startKey) =>
      this.options.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': partitionOf(tenantId) },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      ),
    );
    return items.map(settingsOf);
  }

  delete(tenantId: string, bizType: string): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: { pk: partitionOf(tenantId), sk: bizType },
          ConditionExpression: 'attribute_exists(pk)',
        }),
      ),
    );
  }
}
