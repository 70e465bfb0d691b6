/**
 * Local mode as a process of its own, for `npm run bench`: the timer gets its own event loop
 * (and so a core of its own), apart from the load generator and the webhook receiver. It
 * attributes on-CPU time to each function by async context, measures the emulators' processes
 * apart, counts AWS requests by type and by partition key, and answers the bench over IPC. The
 * functions log at INFO and print their metrics (EMF) to stdout, as in Lambda, so the bench can
 * count the bytes CloudWatch Logs would ingest.
 */
import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSEvent } from 'aws-lambda';

import { allItems } from '../functions/adapters/dynamo/dynamo-helpers.js';
import {
  isTaskPartition,
  keyOf,
  partitionKind,
  partitionOf,
  type TableKey,
  type TaskItem,
} from '../functions/adapters/dynamo/table-schema.js';
import { type FunctionName, MAX_EARLY_WAIT_MS, type TimerSettings } from '../functions/contract/topology.js';
import { MAX_SHARDS, parseTaskId } from '../functions/core/kernel/ids.js';
import { decodeDeliveryBody } from '../functions/core/kernel/task-kernel.js';
import { issueApiKey, newTenant } from '../functions/core/tenants/tenants.js';
import { readUnits as unitsOfRead } from '../lib/local/limits/dynamodb-capacity.js';
import { type AwsRequest, LOCAL_TABLE_NAME, startLocalTimer } from '../lib/local/runtime.js';
import { itemBytes, type KeyActivity, STORAGE_OVERHEAD_BYTES } from './stats.js';

export type TimerRequest =
  | { type: 'snapshot' }
  | { type: 'reset' }
  | { type: 'storage' }
  | { type: 'stop' }
  | { type: 'tenants'; count: number };

export interface TimerSnapshot {
  readonly requests: Record<string, number>;
  readonly cpuMs: Partial<Record<FunctionName, number>>;
  readonly invocations: Partial<Record<FunctionName, number>>;
  /**
   * Milliseconds the callback's invocations had to live only to wait for their records' due
   * times (a message surfaces early and the callback sleeps out the rest): billed, though idle.
   */
  readonly callbackWaitMs: number;
  /** Write and read units by partition key and wall-clock second, since the last reset. */
  readonly keys: Array<[string, Array<[number, { writes: number; reads: number }]>]>;
  readonly writeUnits: number;
  readonly readUnits: number;
  /** Read units the Queries of task partitions spent, by partition key: what scanning a second costs. */
  readonly taskQueryReadUnits: Record<string, number>;
  readonly peakRssBytes: number;
  /** The whole process's CPU time: the functions and the local runtime that drives them. */
  readonly processCpuMs: number;
  /** The emulators' processes' CPU time, apart: what stands in for DynamoDB and SQS. */
  readonly emulatorCpuMs: { readonly dynalite: number; readonly fauxqs: number };
}

export interface TimerStorage {
  /** Items by kind (the partition key's prefix) with their billed bytes. */
  readonly byKind: Record<string, { items: number; bytes: number }>;
  /** Task items by status. */
  readonly statuses: Record<string, number>;
  /** The bench's keys (from the payload) of the tasks still waiting or in delivery. */
  readonly pendingKeys: string[];
}

export type TimerMessage =
  | { type: 'ready'; apiUrl: string; apiKey: string }
  | { type: 'snapshot'; snapshot: TimerSnapshot }
  | { type: 'storage'; storage: TimerStorage }
  | { type: 'tenants'; apiKeys: string[] };

const send = (message: TimerMessage) => process.send?.(message);

const context = new AsyncLocalStorage<FunctionName>();
const cpuMs = new Map<FunctionName, number>();
const invocations = new Map<FunctionName, number>();
/** Open slices of on-CPU time, innermost last: async callbacks can run nested. */
const slices: Array<{ fn: FunctionName; startedAt: number } | undefined> = [];
const addCpu = (fn: FunctionName, ms: number) => cpuMs.set(fn, (cpuMs.get(fn) ?? 0) + ms);
let callbackWaitMs = 0;

/**
 * How long a callback invocation waits before its last record may go: the latest fire time (or
 * `notBeforeMs`) among its records less now. Records that surfaced too early to be held are sent
 * back, not waited for, so they add nothing.
 */
function waitOf(event: unknown): number {
  const nowMs = Date.now();
  let latestMs = nowMs;
  for (const record of (event as SQSEvent).Records) {
    const message = decodeDeliveryBody(record.body);
    if (!message) continue;
    const goesAtMs = Math.max(parseTaskId(message.id, MAX_SHARDS)?.fireAtMs ?? 0, message.notBeforeMs ?? 0);
    if (goesAtMs - nowMs <= MAX_EARLY_WAIT_MS) latestMs = Math.max(latestMs, goesAtMs);
  }
  return latestMs - nowMs;
}

const attributeCpu = process.env.BENCH_ATTRIBUTE_CPU !== 'false';
const hook = createHook({
  before() {
    const fn = context.getStore();
    slices.push(fn && { fn, startedAt: performance.now() });
  },
  after() {
    const slice = slices.pop();
    if (slice) addCpu(slice.fn, performance.now() - slice.startedAt);
  },
});
if (attributeCpu) hook.enable();

let keys: KeyActivity = new Map();
let writeUnits = 0;
let readUnits = 0;
const taskQueryReadUnits = new Map<string, number>();
/** Size of the task items seen written, to price the updates and queries that touch them. */
let taskItemBytes = 400;

function addUnits(key: string, kind: 'writes' | 'reads', units: number): void {
  const second = Math.floor(Date.now() / 1000);
  const seconds = keys.get(key) ?? new Map<number, { writes: number; reads: number }>();
  const entry = seconds.get(second) ?? { writes: 0, reads: 0 };
  entry[kind] += units;
  seconds.set(second, entry);
  keys.set(key, seconds);
  if (kind === 'writes') writeUnits += units;
  else readUnits += units;
}

const writeUnitsOf = (item: Record<string, unknown>) => Math.max(1, Math.ceil(itemBytes(item) / 1024));
/** A read of one item by its key: by the item's size, or the minimum when there was none. */
const itemReadUnits = (item: Record<string, unknown> | undefined, consistent: boolean) =>
  unitsOfRead(item ? itemBytes(item) : 0, consistent);

/**
 * Capacity units by DynamoDB's rules: a write is its item's size in KB, rounded up (an update
 * is priced at a task item's size); a strongly consistent read is 4 KB of the items it
 * examined, rounded up, at least one, and an eventually consistent one half that. Each key of a
 * BatchGetItem is a read of its own.
 */
function recordRequest(request: AwsRequest): void {
  const { input, output } = request;
  switch (request.name) {
    case 'DynamoDB.PutItem': {
      const item = input.Item as Record<string, unknown>;
      if (isTaskPartition(partitionOf(item))) taskItemBytes = itemBytes(item);
      return addUnits(partitionOf(item), 'writes', writeUnitsOf(item));
    }
    case 'DynamoDB.BatchWriteItem':
      for (const requests of Object.values(
        input.RequestItems as Record<string, Array<{ PutRequest?: { Item: Record<string, unknown> } }>>,
      )) {
        for (const { PutRequest } of requests) {
          if (!PutRequest) continue;
          if (isTaskPartition(partitionOf(PutRequest.Item))) taskItemBytes = itemBytes(PutRequest.Item);
          addUnits(partitionOf(PutRequest.Item), 'writes', writeUnitsOf(PutRequest.Item));
        }
      }
      return;
    case 'DynamoDB.UpdateItem': {
      const key = partitionOf(input.Key as Record<string, unknown>);
      return addUnits(key, 'writes', isTaskPartition(key) ? Math.ceil(taskItemBytes / 1024) : 1);
    }
    case 'DynamoDB.GetItem': {
      const units = itemReadUnits(output?.Item as Record<string, unknown> | undefined, input.ConsistentRead === true);
      return addUnits(partitionOf(input.Key as Record<string, unknown>), 'reads', units);
    }
    case 'DynamoDB.BatchGetItem': {
      // Each key is its own read: an item found by its size, one not found at the minimum.
      const requested = input.RequestItems as Record<
        string,
        { Keys: Array<Record<string, unknown>>; ConsistentRead?: boolean }
      >;
      const responses = (output?.Responses ?? {}) as Record<string, Array<Record<string, unknown>>>;
      for (const [table, { Keys, ConsistentRead }] of Object.entries(requested)) {
        const found = new Map((responses[table] ?? []).map((item) => [JSON.stringify(keyOf(item as TableKey)), item]));
        for (const key of Keys) {
          const item = found.get(JSON.stringify(keyOf(key as TableKey)));
          addUnits(partitionOf(key), 'reads', itemReadUnits(item, ConsistentRead === true));
        }
      }
      return;
    }
    case 'DynamoDB.Query': {
      const key = String((input.ExpressionAttributeValues as Record<string, unknown>)[':pk']);
      const examined = Number(output?.ScannedCount ?? 0) * (isTaskPartition(key) ? taskItemBytes : 200);
      const units = Math.max(1, Math.ceil(examined / 4096));
      if (isTaskPartition(key)) taskQueryReadUnits.set(key, (taskQueryReadUnits.get(key) ?? 0) + units);
      return addUnits(key, 'reads', units);
    }
  }
}

let peakRssBytes = 0;
const sampleMemory = () => {
  peakRssBytes = Math.max(peakRssBytes, process.memoryUsage().rss);
};
setInterval(sampleMemory, 250).unref();

const settings = JSON.parse(process.env.BENCH_TIMER_SETTINGS ?? '{}') as Partial<TimerSettings>;
const timer = await startLocalTimer({
  port: 0,
  logLevel: 'INFO',
  publishMetrics: true,
  settings,
  onRequest: recordRequest,
  wrapHandler: (fn, handler) => (event, lambdaContext) => {
    invocations.set(fn, (invocations.get(fn) ?? 0) + 1);
    if (fn === 'callback') callbackWaitMs += waitOf(event);
    const startedAt = performance.now();
    try {
      return context.run(fn, () => handler(event, lambdaContext));
    } finally {
      addCpu(fn, performance.now() - startedAt);
    }
  },
});

async function storage(): Promise<TimerStorage> {
  const items = await allItems((startKey) =>
    timer.dynamo.send(new ScanCommand({ TableName: LOCAL_TABLE_NAME, ExclusiveStartKey: startKey })),
  );
  const byKind: Record<string, { items: number; bytes: number }> = {};
  const statuses: Record<string, number> = {};
  const pendingKeys: string[] = [];
  for (const item of items) {
    const pk = partitionOf(item);
    const kind = partitionKind(pk);
    const entry = (byKind[kind] ??= { items: 0, bytes: 0 });
    entry.items += 1;
    entry.bytes += itemBytes(item) + STORAGE_OVERHEAD_BYTES;
    if (!isTaskPartition(pk)) continue;
    const task = item as unknown as TaskItem;
    statuses[task.status] = (statuses[task.status] ?? 0) + 1;
    if (task.status === 'PENDING' || task.status === 'DELIVERING') {
      pendingKeys.push(String((JSON.parse(task.payload) as { key?: string } | null)?.key));
    }
  }
  return { byKind, statuses, pendingKeys };
}

/** Makes `count` tenants, each with an API key, written straight to the table: set-up, not load. */
async function newTenants(count: number): Promise<string[]> {
  const apiKeys: string[] = [];
  const batch = 50;
  for (let first = 0; first < count; first += batch) {
    const ids = Array.from({ length: Math.min(batch, count - first) }, (_, index) => `bench-${first + index}`);
    apiKeys.push(
      ...(await Promise.all(
        ids.map(async (id) => {
          await timer.tenantStore.createTenant(newTenant(id, Date.now()));
          return (await issueApiKey(timer.tenantStore, id, Date.now())).apiKey;
        }),
      )),
    );
  }
  return apiKeys;
}

async function answer(message: TimerRequest) {
  switch (message.type) {
    case 'snapshot':
      sampleMemory();
      return send({
        type: 'snapshot',
        snapshot: {
          requests: timer.requestCounts(),
          cpuMs: Object.fromEntries(cpuMs),
          invocations: Object.fromEntries(invocations),
          callbackWaitMs,
          keys: [...keys].map(([key, seconds]) => [key, [...seconds]]),
          writeUnits,
          readUnits,
          taskQueryReadUnits: Object.fromEntries(taskQueryReadUnits),
          peakRssBytes,
          processCpuMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
          emulatorCpuMs: await timer.emulatorCpuMs(),
        },
      });
    case 'reset':
      keys = new Map();
      peakRssBytes = 0;
      return;
    case 'storage':
      return send({ type: 'storage', storage: await storage() });
    case 'tenants':
      return send({ type: 'tenants', apiKeys: await newTenants(message.count) });
    case 'stop':
      await timer.stop();
      process.exit(0);
  }
}

// Fire and forget: a failure here is the child's crash, which the bench's parent reports.
process.on('message', (message: TimerRequest) => void answer(message));

send({ type: 'ready', apiUrl: timer.apiUrl, apiKey: timer.apiKey });
