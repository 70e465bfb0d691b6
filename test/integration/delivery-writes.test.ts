/**
 * What a delivered task costs in DynamoDB write units on the success path, measured on dynalite
 * from the capacity each write reports (ReturnConsumedCapacity): its create, as a single submit
 * (PutItem) and as a batch submit (BatchWriteItem) store it, then its delivery through the
 * callback's own record handling, whose batch records its deliveries in one receipt. Table writes
 * only: a task with a bizId or bizType adds an index write each, which dynalite does not report.
 * `npm run bench:requests` measures the whole pipeline.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';

import { DynamoTaskStore } from '../../functions/adapters/dynamo/task-store.js';
import { deliverRecords } from '../../functions/callback/records.js';
import type { DeliveryPorts } from '../../functions/core/deliver/deliver.js';
import { parseTaskId, type TaskAddress, taskAddress } from '../../functions/core/kernel/ids.js';
import { withReceipts } from '../../functions/core/kernel/receipts.js';
import type { Task } from '../../functions/core/kernel/task.js';
import { encodeDeliveryBody } from '../../functions/core/kernel/task-kernel.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';
import {
  aTask,
  DELIVERY_SETTINGS,
  FakeDeliveryQueue,
  fakeOccurrencePorts,
  FakeRequestCounter,
  fakeTenantDirectory,
  ManualClock,
} from '../unit/fakes.js';

const emulators = emulatorsFixture();

const TASKS = 100;

/** Write units the client's writes reported, since it was made. */
interface Metered {
  readonly client: DynamoDBDocumentClient;
  writeUnits(): number;
}

/** A document client that asks every write for its consumed capacity and adds it up. */
function meteredClient(): Metered {
  const { dynamo } = emulators.clients();
  let units = 0;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const writes = ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem'];
      const command = String(context.commandName ?? '').replace(/Command$/, '');
      if (!writes.includes(command)) return next(args);
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      for (const entry of [consumed ?? []].flat() as Array<{ CapacityUnits?: number }>)
        units += entry.CapacityUnits ?? 0;
      return result;
    },
    { step: 'initialize', name: 'meterWriteUnits' },
  );
  return { client: dynamo, writeUnits: () => units };
}

const silentLogger = {
  createChild: () => silentLogger,
  setCorrelationId: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
} as unknown as Logger;
const noMetrics = { addMetric: () => undefined } as unknown as Metrics;

/** Tasks as the bench submits them: a webhook target and a small order payload, due in one second over its shards. */
function dueTasks(dueAtMs: number): Array<{ task: Task; address: TaskAddress }> {
  return Array.from({ length: TASKS }, (_, index) => {
    const task = aTask(dueAtMs + index * 7, index % DELIVERY_SETTINGS.shardCount, {
      target: { type: 'http', url: 'https://orders.example.com/hooks/timer' },
      payloadJson: JSON.stringify({ orderId: `order-${index}`, amountCents: 1999 }),
    });
    const location = parseTaskId(task.id, DELIVERY_SETTINGS.shardCount);
    if (!location) throw new Error(`${task.id} is not a task id`);
    return { task, address: taskAddress(task.id, location, DELIVERY_SETTINGS.bucketCount) };
  });
}

/** Delivers the tasks through the callback's record handling, every target answering 2xx, in batches of `batch`. */
async function deliver(
  taskStore: DynamoTaskStore,
  tasks: readonly Task[],
  nowMs: number,
  batch: number,
): Promise<number> {
  const clock = new ManualClock(nowMs);
  let called = 0;
  const delivery: DeliveryPorts = {
    ...DELIVERY_SETTINGS,
    taskStore,
    occurrences: fakeOccurrencePorts(taskStore, clock),
    targets: {
      dispatch: async () => {
        called++;
        return { ok: true };
      },
    },
    tenants: fakeTenantDirectory(),
    deadLetters: { send: async () => undefined },
    callbackCounter: new FakeRequestCounter(),
    clock,
  };
  for (let start = 0; start < tasks.length; start += batch) {
    const records = tasks.slice(start, start + batch).map(
      (task) =>
        ({
          messageId: `m-${task.id}`,
          body: encodeDeliveryBody({ id: task.id }),
          attributes: { ApproximateReceiveCount: '1' },
        }) as unknown as SQSRecord,
    );
    const { batchItemFailures } = await deliverRecords(
      { delivery, deliveryQueue: new FakeDeliveryQueue(), logger: silentLogger, metrics: noMetrics },
      records,
    );
    expect(batchItemFailures).toEqual([]);
  }
  return called;
}

describe('Cost: DynamoDB write units per delivered task, on the success path', () => {
  // The delivery mapping gathers up to 100 messages per invocation; 10 is a sparse second's batch.
  it.each([
    ['a single submit (PutItem each)', 100, 'single'],
    ['a batch submit (BatchWriteItem)', 100, 'batch'],
    ['a single submit (PutItem each)', 10, 'single'],
    ['a batch submit (BatchWriteItem)', 10, 'batch'],
  ] as const)(
    'costs at most 1.1 write units for %s delivered in batches of %i: its create, and its share of a receipt',
    async (_name, batch, submit) => {
      // Prepare
      const dueAtMs = Date.UTC(2026, 5, 1, 8, 0, 0);
      const entries = dueTasks(dueAtMs);
      const metered = meteredClient();
      const taskStore = new DynamoTaskStore({
        client: metered.client,
        tableName: emulators.tableName,
        bucketCount: DELIVERY_SETTINGS.bucketCount,
        retentionDays: DELIVERY_SETTINGS.retentionDays,
      });

      // Act
      if (submit === 'single') for (const { task, address } of entries) await taskStore.create(task, address);
      else await taskStore.createMany(entries);
      const createUnits = metered.writeUnits();
      const called = await deliver(
        taskStore,
        entries.map(({ task }) => task),
        dueAtMs + 1000,
        batch,
      );
      const deliveryUnits = metered.writeUnits() - createUnits;

      // Assess
      expect(called).toBe(TASKS);
      const stored = (await taskStore.getMany(entries.map(({ address }) => address))).flatMap((task) =>
        task ? [task] : [],
      );
      const shown = await withReceipts(taskStore, stored, dueAtMs + 2000);
      expect(shown.map((task) => task.status)).toEqual(entries.map(() => 'DELIVERED'));
      const perTask = { create: createUnits / TASKS, delivery: deliveryUnits / TASKS };
      console.log(`write units per delivered task, ${submit} submit, batches of ${batch}:`, perTask);
      expect(perTask.create + perTask.delivery).toBeLessThanOrEqual(1.1);
    },
  );
});
