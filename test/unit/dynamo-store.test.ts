import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { DynamoClockStore } from '../../functions/adapters/dynamo/clock-store.js';
import { DynamoOccupancyIndex, EverySecondOccupancy } from '../../functions/adapters/dynamo/occupancy-index.js';
import { DynamoRequestCounter } from '../../functions/adapters/dynamo/request-counter.js';
import {
  CALLBACK_COUNTER_PREFIX,
  CLOCK_KEY,
  KEY_EXPRESSIONS,
  markerKey,
  markerPartition,
  markerSortKey,
  minutePlanKey,
  OCCUPANCY_SLOTS,
  occupancyKey,
  taskKey,
  taskPartitionKey,
  taskSecondRange,
  taskToItem,
} from '../../functions/adapters/dynamo/table-schema.js';
import { DynamoTaskStore } from '../../functions/adapters/dynamo/task-store.js';
import { AWS_LIMITS } from '../../functions/contract/aws-limits.js';
import { FUNCTIONS } from '../../functions/contract/topology.js';
import { taskAddress } from '../../functions/core/kernel/ids.js';
import { StoreBusyError } from '../../functions/core/kernel/task.js';
import { LeasedRequestCounter } from '../../functions/core/tenants/request-leases.js';
import { SUBMIT_PEAK_TO_AVERAGE } from '../../lib/construct/plan/quotas.js';
import { aTask, cancelRequest } from './fakes.js';

const TABLE = 'timer-table';
const BUCKET_COUNT = 1000;
const SECOND = 1_780_000_000;
const NOW_MS = SECOND * 1000 + 300;

const ddbMock = mockClient(DynamoDBDocumentClient);
const client = DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' }));
const taskStore = new DynamoTaskStore({ client, tableName: TABLE, bucketCount: BUCKET_COUNT });

const conditionFailed = () => Object.assign(new Error('x'), { name: 'ConditionalCheckFailedException' });
const addressOf = (task: ReturnType<typeof aTask>) =>
  taskAddress(task.id, { fireAtMs: task.fireAtMs, shard: 2 }, BUCKET_COUNT);

describe('Class: DynamoTaskStore', () => {
  beforeEach(() => {
    ddbMock.reset();
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  describe('Method: claimDelivery', () => {
    it('takes the lease with a conditional update that only a PENDING or lapsed task passes', async () => {
      // Prepare
      const task = aTask(SECOND * 1000, 2);
      ddbMock
        .on(UpdateCommand)
        .resolves({ Attributes: taskToItem({ ...task, status: 'DELIVERING', attempts: 1 }, addressOf(task)) });

      // Act
      const claimed = await taskStore.claimDelivery(addressOf(task), NOW_MS, NOW_MS + 60_000, 'lease-1');

      // Assess
      expect(claimed).toEqual({ ...task, status: 'DELIVERING', attempts: 1 });
      const input = ddbMock.commandCalls(UpdateCommand)[0]?.args[0].input;
      expect(input).toMatchObject({
        TableName: TABLE,
        Key: taskKey(addressOf(task)),
        ConditionExpression: '#status = :pending OR (#status = :delivering AND leaseUntilMs < :now)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':pending': 'PENDING', ':delivering': 'DELIVERING', ':now': NOW_MS },
        ReturnValues: 'ALL_NEW',
      });
      expect(input?.ExpressionAttributeValues?.[':lease']).toBe(NOW_MS + 60_000);
      expect(input?.UpdateExpression).toContain('ADD attempts :one');
    });

    it("returns nothing when the condition fails on another attempt's lease", async () => {
      // Prepare
      const task = aTask(SECOND * 1000, 2);
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).resolves({
        Item: {
          ...taskToItem(task, addressOf(task)),
          status: 'DELIVERING',
          leaseUntilMs: NOW_MS + 30_000,
          attemptId: 'other',
        },
      });

      // Act
      const claimed = await taskStore.claimDelivery(addressOf(task), NOW_MS, NOW_MS + 60_000, 'lease-2');

      // Assess
      expect(claimed).toBeUndefined();
    });

    it('lets any other error through', async () => {
      // Prepare
      const task = aTask(SECOND * 1000, 2);
      ddbMock.on(UpdateCommand).rejects(Object.assign(new Error('slow down'), { name: 'ThrottlingException' }));

      // Act
      const claiming = taskStore.claimDelivery(addressOf(task), NOW_MS, NOW_MS + 60_000, 'lease-3');

      // Assess
      await expect(claiming).rejects.toThrow('slow down');
    });
  });

  describe('Method: listDue', () => {
    it('reads every page with consistent reads, within the one second', async () => {
      // Prepare
      const pageEnd = { pk: taskPartitionKey(SECOND % BUCKET_COUNT, 2), sk: 'cursor' };
      ddbMock
        .on(QueryCommand)
        .resolvesOnce({ Items: [{ id: 'A', dueAtMs: SECOND * 1000 }], LastEvaluatedKey: pageEnd })
        .resolvesOnce({ Items: [{ id: 'B', dueAtMs: SECOND * 1000 + 999 }] });

      // Act
      const due = await taskStore.listDue(SECOND, 2);

      // Assess
      expect(due).toEqual([
        { id: 'A', fireAtMs: SECOND * 1000 },
        { id: 'B', fireAtMs: SECOND * 1000 + 999 },
      ]);
      const inputs = ddbMock.commandCalls(QueryCommand).map((call) => call.args[0].input);
      expect(inputs).toHaveLength(2);
      expect(inputs[0]?.ExclusiveStartKey).toBeUndefined();
      expect(inputs[1]?.ExclusiveStartKey).toEqual(pageEnd);
      for (const input of inputs) {
        expect(input.ConsistentRead).toBe(true);
        expect(input.ExpressionAttributeValues).toEqual({
          ':pk': taskPartitionKey(SECOND % BUCKET_COUNT, 2),
          ':from': taskSecondRange(SECOND).from,
          ':to': taskSecondRange(SECOND).to,
          ':pending': 'PENDING',
        });
      }
    });
  });

  describe('Method: createMany', () => {
    it('writes chunks of 25 at once and retries the items DynamoDB left unprocessed', async () => {
      // Prepare
      vi.useFakeTimers();
      const entries = Array.from({ length: 30 }, (_, index) => {
        const task = aTask(SECOND * 1000 + index, 2);
        return { task, address: addressOf(task) };
      });
      const leftOver = {
        PutRequest: { Item: taskToItem(entries[7]?.task ?? aTask(0), addressOf(entries[7]?.task ?? aTask(0))) },
      };
      ddbMock
        .on(BatchWriteCommand)
        .resolvesOnce({ UnprocessedItems: { [TABLE]: [leftOver] } })
        .resolves({ UnprocessedItems: {} });

      // Act
      const writing = taskStore.createMany(entries);
      await vi.runAllTimersAsync();
      await writing;

      // Assess: both chunks went out before the retry of the first one's leftover.
      const requests = ddbMock.commandCalls(BatchWriteCommand).map((call) => call.args[0].input.RequestItems?.[TABLE]);
      expect(requests.map((chunk) => chunk?.length)).toEqual([25, 5, 1]);
      expect(requests[2]).toEqual([leftOver]);
    });

    it("gives up with StoreBusyError well inside the api's timeout when items stay unprocessed", async () => {
      // Prepare
      vi.useFakeTimers();
      const startedAtMs = Date.now();
      const task = aTask(SECOND * 1000, 2);
      const leftOver = { PutRequest: { Item: taskToItem(task, addressOf(task)) } };
      ddbMock.on(BatchWriteCommand).resolves({ UnprocessedItems: { [TABLE]: [leftOver] } });

      // Act
      const writing = taskStore.createMany([{ task, address: addressOf(task) }]);
      const failure = expect(writing).rejects.toThrow(
        new StoreBusyError('1 task writes stayed unprocessed after 6 retries'),
      );
      await vi.runAllTimersAsync();

      // Assess: the backoffs leave most of the api's timeout for the calls themselves.
      await failure;
      await expect(writing).rejects.toBeInstanceOf(StoreBusyError);
      expect(Date.now() - startedAtMs).toBeLessThanOrEqual(FUNCTIONS.api.timeoutSeconds * 1000 * 0.4);
      expect(ddbMock.commandCalls(BatchWriteCommand)).toHaveLength(7);
    });
  });

  describe('Method: create', () => {
    it('never overwrites an existing item', async () => {
      // Prepare
      const task = aTask(SECOND * 1000, 2, { bizId: 'o-1' });
      ddbMock.on(PutCommand).resolves({});

      // Act
      await taskStore.create(task, addressOf(task));

      // Assess
      expect(ddbMock.commandCalls(PutCommand)[0]?.args[0].input).toEqual({
        TableName: TABLE,
        Item: taskToItem(task, addressOf(task)),
        ConditionExpression: KEY_EXPRESSIONS.itemAbsent,
      });
    });
  });

  describe('Method: cancel', () => {
    it('cancels a PENDING task with one conditional update', async () => {
      // Prepare
      const task = aTask(SECOND * 1000, 2);
      ddbMock.on(UpdateCommand).resolves({ Attributes: taskToItem(task, addressOf(task)) });

      // Act
      const outcome = await taskStore.cancel(addressOf(task), cancelRequest(task.tenantId, NOW_MS, SECOND + 86_400));

      // Assess: the old image says the task was waiting for its first, unleased, attempt.
      expect(outcome).toEqual({ cancelled: true, unleased: true });
      expect(ddbMock.commandCalls(UpdateCommand)[0]?.args[0].input.ExpressionAttributeValues).toMatchObject({
        ':cancelled': 'CANCELLED',
        ':now': NOW_MS,
        ':expiresAt': SECOND + 86_400,
      });
      expect(ddbMock.commandCalls(GetCommand)).toHaveLength(0);
    });

    it('reports a DELIVERED task as already final', async () => {
      // Prepare
      const task = aTask(SECOND * 1000, 2, { status: 'DELIVERED', attempts: 1 });
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).resolves({ Item: taskToItem(task, addressOf(task)) });

      // Act
      const outcome = await taskStore.cancel(addressOf(task), cancelRequest(task.tenantId, NOW_MS, SECOND + 86_400));

      // Assess
      expect(outcome).toEqual({ cancelled: false, reason: 'already-final', status: 'DELIVERED' });
    });

    it('reports a DELIVERING task with a live lease as in delivery', async () => {
      // Prepare
      const task = aTask(SECOND * 1000, 2, { status: 'DELIVERING', attempts: 1 });
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock
        .on(GetCommand)
        .resolves({ Item: { ...taskToItem(task, addressOf(task)), leaseUntilMs: NOW_MS + 30_000 } });

      // Act
      const outcome = await taskStore.cancel(addressOf(task), cancelRequest(task.tenantId, NOW_MS, SECOND + 86_400));

      // Assess
      expect(outcome).toEqual({ cancelled: false, reason: 'in-delivery', status: 'DELIVERING' });
      // A live lease will not lapse within a retry, so the store answers at once.
      expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(1);
    });

    it("answers another tenant's task as not found, and the update's condition names the tenant", async () => {
      // Prepare
      const task = aTask(SECOND * 1000, 2);
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).resolves({ Item: taskToItem(task, addressOf(task)) });

      // Act
      const outcome = await taskStore.cancel(addressOf(task), cancelRequest('globex', NOW_MS, SECOND + 86_400));

      // Assess
      expect(outcome).toEqual({ cancelled: false, reason: 'not-found' });
      const input = ddbMock.commandCalls(UpdateCommand)[0]?.args[0].input;
      expect(input?.ConditionExpression).toContain('tenantId = :tenant');
      expect(input?.ExpressionAttributeValues).toMatchObject({ ':tenant': 'globex' });
    });

    it('reports a task that does not exist as not found', async () => {
      // Prepare
      const task = aTask(SECOND * 1000, 2);
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).resolves({});

      // Act
      const outcome = await taskStore.cancel(addressOf(task), cancelRequest(task.tenantId, NOW_MS, SECOND + 86_400));

      // Assess
      expect(outcome).toEqual({ cancelled: false, reason: 'not-found' });
    });

    it('tries again when the lease was released between the update and the read', async () => {
      // Prepare
      const task = aTask(SECOND * 1000, 2);
      const released = { ...taskToItem(task, addressOf(task)), attempts: 1 };
      ddbMock.on(UpdateCommand).rejectsOnce(conditionFailed()).resolves({ Attributes: released });
      ddbMock.on(GetCommand).resolves({ Item: released });

      // Act
      const outcome = await taskStore.cancel(addressOf(task), cancelRequest(task.tenantId, NOW_MS, SECOND + 86_400));

      // Assess
      expect(outcome).toEqual({ cancelled: true, unleased: false });
      expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(2);
    });
  });

  describe('Method: finishDelivery', () => {
    it('records the outcome only while this attempt still holds the lease', async () => {
      // Prepare: a later attempt has taken the lease over.
      const task = aTask(SECOND * 1000, 2);
      ddbMock.on(UpdateCommand).rejects(conditionFailed());
      ddbMock.on(GetCommand).resolves({
        Item: {
          ...taskToItem(task, addressOf(task)),
          status: 'DELIVERING',
          attempts: 4,
          leaseUntilMs: NOW_MS + 30_000,
        },
      });

      // Act
      const finished = await taskStore.finishDelivery(addressOf(task), 3, {
        status: 'PENDING',
        history: [],
        lastError: 'HTTP 500',
        retryAtMs: SECOND * 1000 + 2000,
      });

      // Assess
      expect(finished).toBe(false);
      const input = ddbMock.commandCalls(UpdateCommand)[0]?.args[0].input;
      expect(input?.ConditionExpression).toBe('#status = :delivering AND #attempts = :attempt');
      expect(input?.ExpressionAttributeValues).toMatchObject({ ':attempt': 3, ':status': 'PENDING' });
      expect(input?.UpdateExpression).toContain('REMOVE leaseUntilMs');
    });
  });
});

describe('Class: DynamoClockStore', () => {
  const clockStore = new DynamoClockStore({ client, tableName: TABLE });

  beforeEach(() => {
    ddbMock.reset();
  });

  it('advances the cursor past the claimed seconds only from the value it read', async () => {
    // Prepare
    ddbMock.on(UpdateCommand).rejects(conditionFailed());

    // Act
    const advanced = await clockStore.advance(SECOND, SECOND + 59);

    // Assess
    expect(advanced).toBe(false);
    expect(ddbMock.commandCalls(UpdateCommand)[0]?.args[0].input).toMatchObject({
      Key: CLOCK_KEY,
      ConditionExpression: '#cursor = :from',
      ExpressionAttributeValues: { ':from': SECOND, ':next': SECOND + 60 },
    });
  });

  it('records a scanned range in one marker with the counts of its busy seconds', async () => {
    // Prepare
    ddbMock.on(PutCommand).resolves({});

    // Act
    await clockStore.markScanned({ from: SECOND, through: SECOND + 59 }, new Map([[SECOND + 7, 3]]), 99);

    // Assess
    expect(ddbMock.commandCalls(PutCommand).map((put) => put.args[0].input.Item)).toEqual([
      {
        ...markerKey('SCANNED', SECOND),
        through: SECOND + 59,
        busy: { [SECOND + 7]: 3 },
        expiresAt: 99,
      },
    ]);
  });

  it('finds scan markers across an hour boundary, including a range that began before the seconds asked for', async () => {
    // Prepare: a minute-long range ending just inside the hour, and a one-second marker after it.
    const hourEnd = Math.ceil(SECOND / 3600) * 3600;
    ddbMock
      .on(QueryCommand, { ExpressionAttributeValues: { ':pk': markerPartition('SCANNED', hourEnd - 1) } })
      .resolves({
        Items: [{ sk: markerSortKey(hourEnd - 60), through: hourEnd - 1, busy: { [hourEnd - 2]: 4 } }],
      })
      .on(QueryCommand, { ExpressionAttributeValues: { ':pk': markerPartition('SCANNED', hourEnd) } })
      .resolves({
        Items: [{ sk: markerSortKey(hourEnd + 1), through: hourEnd + 1, busy: { [hourEnd + 1]: 7 } }],
      });

    // Act
    const seconds = await clockStore.scannedSeconds(hourEnd - 2, hourEnd + 2);

    // Assess
    expect(seconds).toEqual(
      new Map([
        [hourEnd - 2, 4],
        [hourEnd - 1, 0],
        [hourEnd + 1, 7],
      ]),
    );
    expect(ddbMock.commandCalls(QueryCommand)[0]?.args[0].input.ExpressionAttributeValues?.[':from']).toBe(
      markerSortKey(hourEnd - 61),
    );
  });
});

describe('Class: DynamoOccupancyIndex', () => {
  beforeEach(() => {
    ddbMock.reset();
  });

  const minute = Math.floor(SECOND / 60);
  const minuteKey = occupancyKey(minute, 0);

  it('adds seconds to their minute in one update each, returning those new to a planned minute', async () => {
    // Prepare: the minute was planned when it held only SECOND.
    const index = new DynamoOccupancyIndex({ client, tableName: TABLE, firstSlot: 0 });
    ddbMock.on(UpdateCommand).resolves({ Attributes: { ...minuteKey, planned: true, seconds: new Set([SECOND]) } });

    // Act
    const unticked = await index.occupy([SECOND, SECOND + 1, SECOND + 1]);

    // Assess
    expect(unticked).toEqual([SECOND + 1]);
    expect(ddbMock.commandCalls(UpdateCommand).map((call) => call.args[0].input)).toEqual([
      expect.objectContaining({
        Key: minuteKey,
        UpdateExpression: 'ADD #seconds :seconds SET expiresAt = :expiresAt',
        ExpressionAttributeValues: expect.objectContaining({ ':seconds': new Set([SECOND, SECOND + 1]) }),
        ReturnValues: 'ALL_OLD',
      }),
    ]);
  });

  it('has slots enough that single submits at the peak of a billion a day keep each under 3/4 of a partition', () => {
    // An instance records a second once, and a single submit brings one: at most one index write
    // per submit, whatever the fleet, spread evenly over the slots.
    const peakSubmitsPerSecond = (1e9 / 86_400) * SUBMIT_PEAK_TO_AVERAGE;

    // Assess
    expect(peakSubmitsPerSecond / OCCUPANCY_SLOTS).toBeLessThan(
      0.75 * AWS_LIMITS.dynamodb.partitionWriteUnitsPerSecond,
    );
  });

  it("writes the slots in turn, so one instance's writes spread over every slot of a minute", async () => {
    // Prepare
    const index = new DynamoOccupancyIndex({ client, tableName: TABLE, firstSlot: OCCUPANCY_SLOTS - 2 });
    ddbMock.on(UpdateCommand).resolves({});

    // Act: three minutes, one write each.
    for (const offset of [0, 60, 120]) await index.occupy([SECOND + offset]);

    // Assess
    const slots = ddbMock.commandCalls(UpdateCommand).map((call) => String(call.args[0].input.Key?.pk).split('#')[2]);
    expect(slots).toEqual([String(OCCUPANCY_SLOTS - 2), String(OCCUPANCY_SLOTS - 1), '0']);
  });

  it('writes a second once per instance, and a caller sharing it waits until that write is durable', async () => {
    // Prepare: the first write is slow.
    const index = new DynamoOccupancyIndex({ client, tableName: TABLE, firstSlot: 0 });
    let finishWrite: (value: unknown) => void = () => undefined;
    ddbMock.on(UpdateCommand).callsFake(() => new Promise((resolve) => (finishWrite = resolve)));

    // Act
    const first = index.occupy([SECOND]);
    let secondDone = false;
    const second = index.occupy([SECOND]).then(() => (secondDone = true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    const doneBeforeWrite = secondDone;
    finishWrite({});
    await Promise.all([first, second]);

    // Assess
    expect(doneBeforeWrite).toBe(false);
    expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(1);
  });

  it('writes one minute at most every 50 ms, the seconds new to it meanwhile going together', async () => {
    // Prepare: 20 submits, 10 ms apart, each with a second new to the same minute.
    const index = new DynamoOccupancyIndex({ client, tableName: TABLE, firstSlot: 0 });
    ddbMock.on(UpdateCommand).resolves({ Attributes: { ...minuteKey, planned: true, seconds: new Set([SECOND]) } });
    const minuteStart = minute * 60;

    // Act: on fake timers, so a busy machine cannot stretch the 10 ms steps into fewer, larger batches.
    vi.useFakeTimers({ toFake: ['setTimeout', 'Date'] });
    const occupying: Array<Promise<number[]>> = [];
    try {
      for (let n = 0; n < 20; n++) {
        occupying.push(index.occupy([minuteStart + 1 + n]));
        await vi.advanceTimersByTimeAsync(10);
      }
      await vi.advanceTimersByTimeAsync(100);
    } finally {
      vi.useRealTimers();
    }
    const unticked = await Promise.all(occupying);

    // Assess: about 200 ms of seconds in at most five writes, none lost; each caller ticks only its own second.
    const writes = ddbMock.commandCalls(UpdateCommand).map((call) => call.args[0].input.ExpressionAttributeValues);
    expect(writes.length).toBeLessThanOrEqual(5);
    const written = writes.flatMap((values) => [...(values?.[':seconds'] as Set<number>)]);
    expect(written.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, n) => minuteStart + 1 + n));
    expect(unticked).toEqual(Array.from({ length: 20 }, (_, n) => [minuteStart + 1 + n]));
  });

  it('writes a second again after a failed write, so a failure is never remembered as done', async () => {
    // Prepare
    const index = new DynamoOccupancyIndex({ client, tableName: TABLE, firstSlot: 0 });
    ddbMock.on(UpdateCommand).rejectsOnce(new Error('throttled')).resolves({});

    // Act
    await expect(index.occupy([SECOND])).rejects.toThrow('throttled');
    await index.occupy([SECOND]);

    // Assess
    expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(2);
  });

  it('plans a minute once, handing back its seconds in order', async () => {
    // Prepare
    const index = new DynamoOccupancyIndex({ client, tableName: TABLE, firstSlot: 0 });
    ddbMock
      .on(UpdateCommand)
      .resolvesOnce({ Attributes: { seconds: new Set([SECOND + 9, SECOND + 2]) } })
      .resolves({ Attributes: { planned: true, seconds: new Set([SECOND + 9, SECOND + 2]) } });

    // Act
    const first = await index.plan(minute);
    const again = await index.plan(minute);

    // Assess
    expect(first).toEqual([SECOND + 2, SECOND + 9]);
    expect(again).toBeUndefined();
    expect(ddbMock.commandCalls(UpdateCommand)[0]?.args[0].input).toMatchObject({
      Key: minuteKey,
      ReturnValues: 'ALL_OLD',
    });
  });

  it('reads the occupied seconds of a range with consistent reads, keeping only those inside it', async () => {
    // Prepare
    const index = new DynamoOccupancyIndex({ client, tableName: TABLE, firstSlot: 0 });
    ddbMock.on(BatchGetCommand).resolves({
      Responses: {
        [TABLE]: [
          { ...minuteKey, seconds: new Set([SECOND - 1, SECOND + 3]) },
          { ...occupancyKey(minute + 1, 4), seconds: new Set([SECOND + 30, SECOND + 90]) },
        ],
      },
    });

    // Act
    const seconds = await index.occupied(SECOND, SECOND + 59);

    // Assess: every slot of both minutes the range touches, in one consistent read.
    expect(seconds).toEqual(new Set([SECOND + 3, SECOND + 30]));
    const [read] = ddbMock.commandCalls(BatchGetCommand).map((call) => call.args[0].input.RequestItems?.[TABLE]);
    expect(read?.ConsistentRead).toBe(true);
    expect(read?.Keys).toHaveLength(2 * OCCUPANCY_SLOTS);
  });
});

describe('Class: EverySecondOccupancy', () => {
  beforeEach(() => {
    ddbMock.reset();
  });

  const minute = Math.floor(SECOND / 60);
  const index = new EverySecondOccupancy({ client, tableName: TABLE });

  it('plans a minute with one update returning the old item, and hands back all 60 of its seconds', async () => {
    // Prepare: nobody planned the minute yet.
    ddbMock.on(UpdateCommand).resolves({});

    // Act
    const seconds = await index.plan(minute);

    // Assess
    expect(seconds).toEqual(Array.from({ length: 60 }, (_, offset) => minute * 60 + offset));
    expect(ddbMock.commandCalls(UpdateCommand).map((call) => call.args[0].input)).toEqual([
      expect.objectContaining({
        TableName: TABLE,
        Key: minutePlanKey(minute),
        UpdateExpression: 'SET planned = :planned, expiresAt = :expiresAt',
        ReturnValues: 'ALL_OLD',
      }),
    ]);
  });

  it('hands back nothing for a minute planned before, so a duplicate ticker run sends no tick', async () => {
    // Prepare
    ddbMock.on(UpdateCommand).resolves({ Attributes: { ...minutePlanKey(minute), planned: true } });

    // Act
    const seconds = await index.plan(minute);

    // Assess
    expect(seconds).toBeUndefined();
  });

  it('lets a failed plan throw, so the next ticker run plans the minute again', async () => {
    // Prepare
    ddbMock.on(UpdateCommand).rejects(new Error('throttled'));

    // Act & Assess
    await expect(index.plan(minute)).rejects.toThrow('throttled');
  });

  it('records nothing at submit and owes no tick for any second, every second being ticked anyway', async () => {
    // Act
    const unticked = await index.occupy([SECOND, SECOND + 1, SECOND + 3600]);

    // Assess
    expect(unticked).toEqual([]);
    expect(ddbMock.calls()).toHaveLength(0);
  });

  it('takes every second of a range as occupied without reading the table', async () => {
    // Act
    const seconds = await index.occupied(SECOND - 2, SECOND + 61);
    const none = await index.occupied(SECOND, SECOND - 1);

    // Assess
    expect(seconds).toEqual(new Set(Array.from({ length: 64 }, (_, offset) => SECOND - 2 + offset)));
    expect(none).toEqual(new Set());
    expect(ddbMock.calls()).toHaveLength(0);
  });
});

describe('Class: DynamoRequestCounter', () => {
  it("counts a tenant's requests and a bizType's callbacks, a share at a time, under the keys deployed tables hold", async () => {
    // Prepare: leases start at share 3 (requests) and share 6 (callbacks).
    ddbMock.reset();
    ddbMock.on(UpdateCommand).resolves({});
    const requests = new LeasedRequestCounter(new DynamoRequestCounter({ client, tableName: TABLE }), 3);
    const callbacks = new LeasedRequestCounter(
      new DynamoRequestCounter({ client, tableName: TABLE, keyPrefix: CALLBACK_COUNTER_PREFIX }),
      6,
    );

    // Act
    await requests.admit({ tenantId: 'acme' }, SECOND, 100);
    await callbacks.admit({ tenantId: 'acme', bizType: 'order-close' }, SECOND, 100);

    // Assess
    expect(ddbMock.commandCalls(UpdateCommand).map((call) => call.args[0].input.Key)).toEqual([
      { pk: 'RATE#acme#3', sk: '1780000000' },
      { pk: 'CALLBACKS#acme#order-close#6', sk: '1780000000' },
    ]);
  });
});
