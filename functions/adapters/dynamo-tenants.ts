import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';

import type { ApiKeyRecord, RequestCounter, Tenant, TenantStore } from '../core/tenants.js';
import { allItems, unlessConditionFails } from './dynamo-store.js';

/**
 * Tenants share one partition, so listing them is one Query; they are few and read
 * through a cache, so the partition stays cool. A tenant's keys share a partition of
 * their own, listed the same way.
 */
const TENANTS_PK = 'TENANTS';
const keysPk = (tenantId: string) => `APIKEYS#${tenantId}`;
/** Request counts per tenant and second live two minutes, long enough for any clock skew between api instances. */
const RATE_COUNTER_TTL_SECONDS = 120;

type Item = Record<string, unknown>;

function tenantItem(tenant: Tenant): Item {
  return { pk: TENANTS_PK, sk: tenant.id, ...tenant };
}

/** An item without its table keys: what was stored beside them. */
export function recordOf<T>(item: Item): T {
  const { pk: _pk, sk: _sk, ...record } = item;
  return record as unknown as T;
}

const tenantOf = (item: Item) => recordOf<Tenant>(item);
const keyOf = (item: Item) => recordOf<ApiKeyRecord>(item);

/** Where a store keeps its items: a client and the one table. */
export interface TenantStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
}

export class DynamoTenantStore implements TenantStore {
  constructor(private readonly options: TenantStoreOptions) {}

  createTenant(tenant: Tenant): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: tenantItem(tenant),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  async getTenant(id: string): Promise<Tenant | undefined> {
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: { pk: TENANTS_PK, sk: id }, ConsistentRead: true }),
    );
    return result.Item ? tenantOf(result.Item) : undefined;
  }

  async listTenants(): Promise<Tenant[]> {
    return (await this.query(TENANTS_PK)).map(tenantOf);
  }

  updateTenant(tenant: Tenant): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: tenantItem(tenant),
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
        Item: { pk: keysPk(record.tenantId), sk: record.keyId, ...record },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  async getApiKey(tenantId: string, keyId: string): Promise<ApiKeyRecord | undefined> {
    const result = await this.options.client.send(
      new GetCommand({
        TableName: this.options.tableName,
        Key: { pk: keysPk(tenantId), sk: keyId },
        ConsistentRead: true,
      }),
    );
    return result.Item ? keyOf(result.Item) : undefined;
  }

  async listApiKeys(tenantId: string): Promise<ApiKeyRecord[]> {
    return (await this.query(keysPk(tenantId))).map(keyOf);
  }

  revokeApiKey(tenantId: string, keyId: string, nowMs: number): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: { pk: keysPk(tenantId), sk: keyId },
          // A second revoke keeps the first revocation time.
          UpdateExpression: 'SET revokedAtMs = if_not_exists(revokedAtMs, :now)',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':now': nowMs },
        }),
      ),
    );
  }

  private query(pk: string): Promise<Item[]> {
    return allItems((startKey) =>
      this.options.client.send(
        new QueryCommand({
          TableName: this.options.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      ),
    );
  }
}

/** Callbacks per tenant, bizType and second: `CALLBACKS#<tenant>#<bizType>`. */
export const CALLBACK_COUNTER_PREFIX = 'CALLBACKS#';

export interface RequestCounterOptions extends TenantStoreOptions {
  /**
   * What is counted, as the start of the counter's partition key.
   * @default 'RATE#' (api requests per tenant)
   */
  readonly keyPrefix?: string;
}

/**
 * A fixed one-second window per subject: one conditional ADD per request, shared by every
 * instance, so the limit holds however many instances run. The key is the subject and
 * second, so one subject's requests land on one partition key, whose 1,000 writes a second
 * bound any sensible limit.
 */
export class DynamoRequestCounter implements RequestCounter {
  constructor(private readonly options: RequestCounterOptions) {}

  admit(subject: string, second: number, limit: number): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: { pk: `${this.options.keyPrefix ?? 'RATE#'}${subject}`, sk: String(second) },
          UpdateExpression: 'ADD requests :one SET expiresAt = :expiresAt',
          ConditionExpression: 'attribute_not_exists(requests) OR requests < :limit',
          ExpressionAttributeValues: { ':one': 1, ':limit': limit, ':expiresAt': second + RATE_COUNTER_TTL_SECONDS },
        }),
      ),
    );
  }
}
