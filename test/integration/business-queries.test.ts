import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';

import { DynamoBizTypeStore } from '../../functions/adapters/dynamo/biz-type-store.js';
import { DynamoRequestCounter } from '../../functions/adapters/dynamo/request-counter.js';
import { taskNameTexts } from '../../functions/adapters/dynamo/table-schema.js';
import { DynamoTaskIndex } from '../../functions/adapters/dynamo/task-index.js';
import { DynamoTenantStore } from '../../functions/adapters/dynamo/tenant-store.js';
import { type ApiPorts, route } from '../../functions/api/routes.js';
import { DEFAULT_SETTINGS } from '../../functions/contract/topology.js';
import { systemClock } from '../../functions/core/kernel/task.js';
import { cachedBizTypeDirectory } from '../../functions/core/submit/biz-types.js';
import { encodeCursor } from '../../functions/core/submit/task-listing.js';
import { issueApiKey, keyringOf, newTenant } from '../../functions/core/tenants/tenants.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';
import { testTargetRules } from '../support/target-rules.js';

const BUCKETS = 1000;
const SHARDS = 4;
const TARGET = { type: 'http', url: 'https://hooks.example.com/timer' };

const emulators = emulatorsFixture();
let api: ApiPorts;
const keys: Record<string, string> = {};

beforeAll(async () => {
  const { dynamo, tableName } = emulators;
  const tenantStore = new DynamoTenantStore({ client: dynamo, tableName });
  const bizTypeStore = new DynamoBizTypeStore({ client: dynamo, tableName });
  for (const id of ['acme', 'rival']) {
    await tenantStore.createTenant(newTenant(id, Date.now(), { rateLimitPerSecond: 10_000 }));
    const { apiKey } = await issueApiKey(tenantStore, id, Date.now());
    keys[id] = apiKey;
  }
  api = {
    ...emulators.stores({ bucketCount: BUCKETS }),
    taskIndex: new DynamoTaskIndex({ client: dynamo, tableName, bucketCount: BUCKETS }),
    deliveryQueue: { send: async () => undefined },
    tickQueue: { send: async () => undefined },
    lookaheadSeconds: 2,
    tenants: {
      tenant: (id) => tenantStore.getTenant(id),
      apiKey: (tenantId, keyId) => tenantStore.getApiKey(tenantId, keyId),
      keyring: () => keyringOf(tenantStore, Date.now()),
    },
    requestCounter: new DynamoRequestCounter({ client: dynamo, tableName }),
    bizTypes: cachedBizTypeDirectory(bizTypeStore, systemClock, 0),
    clock: systemClock,
    bucketCount: BUCKETS,
    shardCount: SHARDS,
    nameTexts: taskNameTexts,
    retentionDays: 30,
    allowInsecureTargets: false,
    horizonDays: DEFAULT_SETTINGS.maxHorizonDays,
    targetRules: testTargetRules(false),
  };
});

async function call(
  tenant: string,
  routeKey: string,
  parts: { query?: Record<string, string>; id?: string; body?: unknown } = {},
) {
  const response = await route(api, {
    routeKey,
    headers: { authorization: `Bearer ${keys[tenant]}` },
    ...(parts.query && { queryStringParameters: parts.query }),
    ...(parts.id && { pathParameters: { id: parts.id } }),
    ...(parts.body !== undefined && { body: JSON.stringify(parts.body) }),
  } as unknown as APIGatewayProxyEventV2);
  return { status: response.statusCode, json: JSON.parse(response.body) };
}

async function submit(tenant: string, count: number, fields: Record<string, string>): Promise<string[]> {
  const tasks = Array.from({ length: count }, (_, index) => ({ delaySeconds: 600 + index, target: TARGET, ...fields }));
  const response = await call(tenant, 'POST /v1/tasks/batch', { body: { tasks } });
  expect(response.status).toBe(201);
  return response.json.results.map((result: { task: { id: string } }) => result.task.id);
}

/** Every page of a listing, following nextCursor; also returns how many pages it took. */
async function listAll(tenant: string, query: Record<string, string>) {
  const ids: string[] = [];
  let pages = 0;
  let cursor: string | undefined;
  do {
    const response = await call(tenant, 'GET /v1/tasks', { query: { ...query, ...(cursor && { cursor }) } });
    expect(response.status).toBe(200);
    expect(response.json.tasks.length).toBeLessThanOrEqual(Number(query.limit ?? 50));
    ids.push(...response.json.tasks.map((task: { id: string }) => task.id));
    cursor = response.json.nextCursor;
    pages++;
  } while (cursor && pages < 100);
  return { ids, pages };
}

describe('Route: GET /v1/tasks on dynalite', () => {
  it("lists every task of a bizType over many pages, and never another tenant's", async () => {
    // Prepare: both tenants use the same bizType name.
    const mine = await submit('acme', 23, { bizType: 'order-timeout' });
    await submit('rival', 9, { bizType: 'order-timeout' });

    // Act
    const { ids, pages } = await listAll('acme', { bizType: 'order-timeout', limit: '5' });

    // Assess
    expect(pages).toBeGreaterThanOrEqual(5);
    expect(ids.sort()).toEqual([...mine].sort());
  });

  it('lists the tasks of one bizId in due order', async () => {
    // Prepare
    const mine = await submit('acme', 3, { bizId: 'order-42' });
    await submit('rival', 2, { bizId: 'order-42' });

    // Act
    const { ids } = await listAll('acme', { bizId: 'order-42' });

    // Assess
    expect(ids).toEqual(mine);
  });

  it('filters by status, reading past the tasks the filter leaves out', async () => {
    // Prepare
    const ids = await submit('acme', 7, { bizType: 'coupon-reminder' });
    const cancelled = ids.filter((_, index) => index % 3 === 0);
    for (const id of cancelled) expect((await call('acme', 'DELETE /v1/tasks/{id}', { id })).status).toBe(200);

    // Act
    const listed = await listAll('acme', { bizType: 'coupon-reminder', status: 'CANCELLED', limit: '2' });
    const pending = await listAll('acme', { bizType: 'coupon-reminder', status: 'PENDING' });

    // Assess
    expect(listed.ids.sort()).toEqual([...cancelled].sort());
    expect(pending.ids).toHaveLength(ids.length - cancelled.length);
  });

  it("keeps a cursor naming another tenant's task inside the caller's own partition", async () => {
    // Prepare: a well-formed cursor positioned at the rival's task.
    const [rivalTask] = await submit('rival', 1, { bizType: 'auction-start' });
    const mine = await submit('acme', 2, { bizType: 'auction-start' });
    const shard = Number.parseInt(String(rivalTask?.slice(10, 12)), 32);
    const forged = encodeCursor({ shard, afterId: String(rivalTask) });

    // Act
    const response = await call('acme', 'GET /v1/tasks', { query: { bizType: 'auction-start', cursor: forged } });

    // Assess
    expect(response.status).toBe(200);
    const listed = response.json.tasks.map((task: { id: string }) => task.id);
    expect(listed).not.toContain(rivalTask);
    expect(mine).toEqual(expect.arrayContaining(listed));
  });

  it.each([
    ['not base64 JSON', '%%%'],
    ['a shard out of range', encodeCursor({ shard: SHARDS })],
    ['a position that is not a task id', Buffer.from(JSON.stringify({ s: 0, a: 'B#1#0' })).toString('base64url')],
    [
      'a raw DynamoDB key',
      Buffer.from(JSON.stringify({ bizTypeKey: 'rival#x#0', pk: 'B#1#0', sk: '1#x' })).toString('base64url'),
    ],
  ])('refuses a forged cursor (%s) with a 400 naming the cursor field', async (_case, cursor) => {
    // Act
    const response = await call('acme', 'GET /v1/tasks', { query: { bizType: 'order-timeout', cursor } });

    // Assess
    expect(response.status).toBe(400);
    expect(response.json.errors.map((error: { path: string }) => error.path)).toEqual(['cursor']);
  });

  it('refuses a listing with neither bizId nor bizType, and a limit over 100, naming the fields', async () => {
    // Act
    const response = await call('acme', 'GET /v1/tasks', { query: { status: 'FAILED', limit: '101' } });

    // Assess
    expect(response.status).toBe(400);
    expect(response.json.errors.map((error: { path: string }) => error.path).sort()).toEqual(['bizType', 'limit']);
  });
});
