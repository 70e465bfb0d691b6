import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';

import type { ApiKeyRecord, Keyring, ReadOptions, Tenant, TenantStore } from '../../core/tenants/tenants.js';
import { batchGetAll, partitionItems, type TableOptions, unlessConditionFails } from './dynamo-helpers.js';
import {
  apiKeyFromItem,
  type ApiKeyItem,
  apiKeyKey,
  apiKeysPartition,
  apiKeyToItem,
  isWholeTenantRecord,
  KEY_EXPRESSIONS,
  KEYRING_KEY,
  keyringFromItem,
  type KeyringItem,
  keyringToItem,
  tenantFromItem,
  type TenantItem,
  tenantKey,
  tenantListingEntry,
  type TenantListingItem,
  tenantListingKey,
  TENANTS_PARTITION,
  tenantToItem,
} from './table-schema.js';

/**
 * Each tenant in a partition of its own, listed in one more (see TENANTS_PARTITION), and each
 * tenant's API keys in one of their own, so either list is one Query. The service uses no
 * transactions (dynalite, under local mode and the tests, has none), so a create's two writes are
 * ordered instead: the listing entry first, so no stored tenant goes unlisted; an entry whose
 * record never came lists nothing, and a retried create writes the record.
 */
export class DynamoTenantStore implements TenantStore {
  constructor(private readonly options: TableOptions) {}

  async createTenant(tenant: Tenant): Promise<boolean> {
    // Never over a whole record stored before the own-partition layout: that tenant exists.
    const listed = await unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: tenantListingEntry(tenant.id),
          ConditionExpression: 'attribute_not_exists(signingSecrets)',
        }),
      ),
    );
    if (!listed) return false;
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
    const own = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: tenantKey(id), ConsistentRead: consistent }),
    );
    if (own.Item) return tenantFromItem(own.Item as TenantItem);
    const entry = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: tenantListingKey(id), ConsistentRead: consistent }),
    );
    const listed = entry.Item as TenantListingItem | undefined;
    return listed && isWholeTenantRecord(listed) ? tenantFromItem(listed) : undefined;
  }

  async listTenants(): Promise<Tenant[]> {
    const entries = await partitionItems<TenantListingItem>(this.options, TENANTS_PARTITION);
    const own = new Map(
      (
        await batchGetAll<TenantItem>(
          this.options,
          entries.map((entry) => tenantKey(entry.sk)),
          true,
        )
      ).map((item) => [item.id, item]),
    );
    return entries.flatMap((entry) => {
      const record = own.get(entry.sk) ?? (isWholeTenantRecord(entry) ? entry : undefined);
      return record ? [tenantFromItem(record)] : [];
    });
  }

  /**
   * Conditional on the version read, wherever it was read from: a tenant without a record of its
   * own (stored before that layout) gets one, unless a racing change made one first.
   */
  async updateTenant(tenant: Tenant): Promise<boolean> {
    const previous = tenant.version - 1;
    if ((await this.getTenant(tenant.id))?.version !== previous) return false;
    return unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: tenantToItem(tenant),
          ConditionExpression: `${KEY_EXPRESSIONS.itemAbsent} OR version = :previous`,
          ExpressionAttributeValues: { ':previous': previous },
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
