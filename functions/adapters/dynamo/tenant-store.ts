import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';

import type { ApiKeyRecord, Keyring, ReadOptions, Tenant, TenantStore } from '../../core/tenants/tenants.js';
import { partitionItems, type TableOptions, unlessConditionFails } from './dynamo-helpers.js';
import {
  apiKeyFromItem,
  type ApiKeyItem,
  apiKeyKey,
  apiKeysPartition,
  apiKeyToItem,
  KEY_EXPRESSIONS,
  KEYRING_KEY,
  keyringFromItem,
  type KeyringItem,
  keyringToItem,
  tenantFromItem,
  type TenantItem,
  tenantKey,
  TENANTS_PARTITION,
  tenantToItem,
} from './table-schema.js';

/** Tenants in one partition and each tenant's API keys in one of its own, so either list is one Query. */
export class DynamoTenantStore implements TenantStore {
  constructor(private readonly options: TableOptions) {}

  createTenant(tenant: Tenant): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: tenantToItem(tenant),
          ConditionExpression: KEY_EXPRESSIONS.itemAbsent,
        }),
      ),
    );
  }

  async getTenant(id: string, { consistent = true }: ReadOptions = {}): Promise<Tenant | undefined> {
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: tenantKey(id), ConsistentRead: consistent }),
    );
    return result.Item ? tenantFromItem(result.Item as TenantItem) : undefined;
  }

  async listTenants(): Promise<Tenant[]> {
    return (await partitionItems<TenantItem>(this.options, TENANTS_PARTITION)).map(tenantFromItem);
  }

  updateTenant(tenant: Tenant): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: tenantToItem(tenant),
          ConditionExpression: 'version = :previous',
          ExpressionAttributeValues: { ':previous': tenant.version - 1 },
        }),
      ),
    );
  }

  async putApiKey(record: ApiKeyRecord): Promise<void> {
    await this.options.client.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: apiKeyToItem(record),
        ConditionExpression: KEY_EXPRESSIONS.itemAbsent,
      }),
    );
  }

  async getApiKey(
    tenantId: string,
    keyId: string,
    { consistent = true }: ReadOptions = {},
  ): Promise<ApiKeyRecord | undefined> {
    const result = await this.options.client.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: apiKeyKey(tenantId, keyId),
        ConsistentRead: consistent,
      }),
    );
    return result.Item ? apiKeyFromItem(result.Item as ApiKeyItem) : undefined;
  }

  async listApiKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    return (await partitionItems<ApiKeyItem>(this.options, apiKeysPartition(tenantId))).map(apiKeyFromItem);
  }

  revokeApiKey(tenantId: string, keyId: string, nowMs: number): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: apiKeyKey(tenantId, keyId),
          // A second revoke keeps the first revocation time.
          UpdateExpression: 'SET revokedAtMs = if_not_exists(revokedAtMs, :now)',
          ConditionExpression: KEY_EXPRESSIONS.itemPresent,
          ExpressionAttributeValues: { ':now': nowMs },
        }),
      ),
    );
  }

  async getKeyring(): Promise<Keyring | undefined> {
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: KEYRING_KEY, ConsistentRead: true }),
    );
    return result.Item ? keyringFromItem(result.Item as KeyringItem) : undefined;
  }

  createKeyring(keyring: Keyring): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: keyringToItem(keyring),
          ConditionExpression: KEY_EXPRESSIONS.itemAbsent,
        }),
      ),
    );
  }
}
