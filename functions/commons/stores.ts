import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

import { DynamoBizTypeStore } from '../adapters/dynamo/biz-type-store.js';
import { DynamoClockStore } from '../adapters/dynamo/clock-store.js';
import { DynamoIdempotencyStore } from '../adapters/dynamo/idempotency-store.js';
import { DynamoOccupancyIndex, EverySecondOccupancy } from '../adapters/dynamo/occupancy-index.js';
import { DynamoRequestCounter } from '../adapters/dynamo/request-counter.js';
import { DynamoScheduleStore } from '../adapters/dynamo/schedule-store.js';
import { CALLBACK_COUNTER_PREFIX, taskNameTexts } from '../adapters/dynamo/table-schema.js';
import { DynamoTaskIndex } from '../adapters/dynamo/task-index.js';
import { DynamoTaskStore } from '../adapters/dynamo/task-store.js';
import { DynamoTenantStore } from '../adapters/dynamo/tenant-store.js';
import { type OccupancyIndex, systemClock } from '../core/kernel/task.js';
import { BIZ_TYPE_CACHE_TTL_MS, cachedBizTypeDirectory } from '../core/submit/biz-types.js';
import { LeasedRequestCounter } from '../core/tenants/request-leases.js';
import { cachedTenantDirectory, TENANT_CACHE_TTL_MS } from '../core/tenants/tenants.js';
import type { OccupancyConfig, TableConfig } from './config.js';

/**
 * The stores over the task table, with its bucket and shard counts: what every function but
 * the ticker needs (the occupancy index, which only some need, is `occupancyIndex`). Tenants are read through a cache, once per TENANT_CACHE_TTL_MS, and
 * bizType settings (for submits) once per BIZ_TYPE_CACHE_TTL_MS. Functions that create tasks (the
 * api, the callback's occurrences) give `retentionDays`, the TTL a task gets at create.
 */
export function tableStores(
  { tableName, bucketCount, shardCount }: TableConfig,
  dynamo: DynamoDBDocumentClient,
  retentionDays?: number,
) {
  const bizTypeStore = new DynamoBizTypeStore({ client: dynamo, tableName });
  return {
    bucketCount,
    shardCount,
    nameTexts: taskNameTexts,
    taskStore: new DynamoTaskStore({
      client: dynamo,
      tableName,
      bucketCount,
      ...(retentionDays !== undefined && { retentionDays }),
    }),
    taskIndex: new DynamoTaskIndex({ client: dynamo, tableName, bucketCount }),
    clockStore: new DynamoClockStore({ client: dynamo, tableName }),
    idempotencyStore: new DynamoIdempotencyStore({ client: dynamo, tableName }),
    tenants: cachedTenantDirectory(
      new DynamoTenantStore({ client: dynamo, tableName }),
      systemClock,
      TENANT_CACHE_TTL_MS,
    ),
    requestCounter: new LeasedRequestCounter(new DynamoRequestCounter({ client: dynamo, tableName })),
    bizTypeStore,
    scheduleStore: new DynamoScheduleStore({ client: dynamo, tableName }),
    bizTypes: cachedBizTypeDirectory(bizTypeStore, systemClock, BIZ_TYPE_CACHE_TTL_MS),
    callbackCounter: new LeasedRequestCounter(
      new DynamoRequestCounter({ client: dynamo, tableName, keyPrefix: CALLBACK_COUNTER_PREFIX }),
    ),
  };
}

/**
 * The occupancy index the deployment keeps: the seconds with tasks, recorded at submit, or in
 * dense mode (`tickEverySecond`) none, every second being ticked and scanned instead.
 */
export function occupancyIndex(
  {
    table,
    tickEverySecond,
  }: { readonly table: Pick<TableConfig, 'tableName'> } & Pick<OccupancyConfig, 'tickEverySecond'>,
  dynamo: DynamoDBDocumentClient,
): OccupancyIndex {
  const options = { client: dynamo, tableName: table.tableName };
  return tickEverySecond ? new EverySecondOccupancy(options) : new DynamoOccupancyIndex(options);
}
