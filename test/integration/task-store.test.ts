import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';

import { taskKey } from '../../functions/adapters/dynamo/table-schema.js';
import { DynamoTaskStore } from '../../functions/adapters/dynamo/task-store.js';
import { newTaskId, type TaskAddress, taskAddress } from '../../functions/core/kernel/ids.js';
import type { Task } from '../../functions/core/kernel/task.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';
import { cancelRequest } from '../unit/fakes.js';

const emulators = emulatorsFixture();

const BUCKETS = 1000;

function task(dueAtMs: number, shard: number): { task: Task; address: TaskAddress } {
  const id = newTaskId({ fireAtMs: dueAtMs, shard });
  return {
    task: {
      id,
      tenantId: 'acme',
      status: 'PENDING',
      dueAtMs,
      fireAtMs: dueAtMs,
      createdAtMs: dueAtMs - 60_000,
      target: { type: 'http', url: 'https://example.com/hook' },
      payloadJson: '{"n":1}',
      attempts: 0,
    },
    address: taskAddress(id, { fireAtMs: dueAtMs, shard }, BUCKETS),
  };
}

/** A task store that keeps ended tasks `retentionDays`: the only one whose creates set a TTL. */
const storeKeepingTasks = (retentionDays: number) =>
  new DynamoTaskStore({
    client: emulators.dynamo,
    tableName: emulators.tableName,
    bucketCount: BUCKETS,
    retentionDays,
  });

describe('Store: DynamoTaskStore on dynalite', () => {
  it('gives a task its TTL when it is created, retentionDays after its fire time, alone or in a batch', async () => {
    // Prepare: a task delivered by a receipt is never written again, so only the create can set it.
    const taskStore = storeKeepingTasks(30);
    const fireAtMs = 1_700_000_123_456;
    const alone = task(fireAtMs, 1);
    const batched = [task(fireAtMs, 2), task(fireAtMs + 5000, 2)];

    // Act
    await taskStore.create(alone.task, alone.address);
    await taskStore.createMany(batched);

    // Assess
    const ttlOf = async (address: TaskAddress) =>
      (await emulators.dynamo.send(new GetCommand({ TableName: emulators.tableName, Key: taskKey(address) }))).Item
        ?.expiresAt;
    const expected = (ms: number) => Math.floor(ms / 1000) + 30 * 86_400;
    expect(await ttlOf(alone.address)).toBe(expected(fireAtMs));
    expect(await Promise.all(batched.map(({ address }) => ttlOf(address)))).toEqual([
      expected(fireAtMs),
      expected(fireAtMs + 5000),
    ]);
  });

  it('moves the TTL of a task whose attempt failed past its retry, so a long backoff never outlives the item', async () => {
    // Prepare: a one-day retention, and a retry due two days after the task fired.
    const taskStore = storeKeepingTasks(1);
    const fireAtMs = 1_700_000_123_456;
    const first = task(fireAtMs, 1);
    const leased = task(fireAtMs, 2);
    const retryAtMs = fireAtMs + 2 * 86_400_000;
    const expiresAtSeconds = Math.floor(retryAtMs / 1000) + 86_400;
    const failure = { status: 'PENDING', lastError: 'HTTP 503', history: [], retryAtMs, expiresAtSeconds } as const;
    await taskStore.createMany([first, leased]);
    await taskStore.claimDelivery(leased.address, fireAtMs, fireAtMs + 60_000, 'attempt-1');

    // Act
    await taskStore.finishFirstAttempt(first.address, failure, fireAtMs + 60_000, 'attempt-0');
    await taskStore.finishDelivery(leased.address, 1, failure);

    // Assess
    const ttlOf = async (address: TaskAddress) =>
      (await emulators.dynamo.send(new GetCommand({ TableName: emulators.tableName, Key: taskKey(address) }))).Item
        ?.expiresAt;
    expect([await ttlOf(first.address), await ttlOf(leased.address)]).toEqual([expiresAtSeconds, expiresAtSeconds]);
  });

  it('reads every page of a shard and only the PENDING tasks of that exact second', async () => {
    // Prepare: 23 tasks in one second and shard, plus neighbours that share the partition.
    const { taskStore } = emulators.stores({ bucketCount: BUCKETS, queryPageSize: 4 });
    const second = 1_700_000_123;
    const inSecond = Array.from({ length: 23 }, (_, index) => task(second * 1000 + index * 40, 3));
    const neighbours = [
      task(second * 1000 - 1, 3), // the millisecond before
      task(second * 1000 + 1000, 3), // the next second
      task((second + BUCKETS) * 1000 + 5, 3), // a whole round of buckets later: same partition key
      task(second * 1000 + 10, 4), // same second, other shard
    ];
    await taskStore.createMany([...inSecond, ...neighbours]);
    const [cancelled] = inSecond;
    if (!cancelled) throw new Error('no task to cancel');
    await taskStore.cancel(cancelled.address, cancelRequest('acme', Date.now()));

    // Act
    const due = await taskStore.listDue(second, 3);

    // Assess
    expect(neighbours[2] && taskKey(neighbours[2].address).pk).toBe(inSecond[1] && taskKey(inSecond[1].address).pk);
    expect(due.map((entry) => entry.id).sort()).toEqual(
      inSecond
        .slice(1)
        .map((entry) => entry.task.id)
        .sort(),
    );
  });

  it('never lets a cancel and a delivery claim both succeed (cancelled tasks are never delivered)', async () => {
    // Prepare
    const { taskStore } = emulators.stores({ bucketCount: BUCKETS });
    const rounds = Array.from({ length: 40 }, (_, index) => task(1_700_100_000_000 + index, index % 16));
    await taskStore.createMany(rounds);
    const now = Date.now();

    // Act: each task is cancelled and claimed at the same moment.
    const outcomes = await Promise.all(
      rounds.map(async ({ address }) => {
        const [cancel, claim] = await Promise.all([
          taskStore.cancel(address, cancelRequest('acme', now, 0)),
          taskStore.claimDelivery(address, now, now + 60_000, 'lease-1'),
        ]);
        return { cancelled: cancel.cancelled, claimed: claim !== undefined };
      }),
    );

    // Assess: exactly one of the two wins every time.
    for (const outcome of outcomes) expect(outcome.cancelled !== outcome.claimed).toBe(true);
  });

  it('lets a new claim take over a lapsed lease but not a live one', async () => {
    // Prepare
    const { taskStore } = emulators.stores({ bucketCount: BUCKETS });
    const entry = task(1_700_200_000_000, 0);
    await taskStore.create(entry.task, entry.address);
    const t0 = 1_000_000;

    // Act
    const first = await taskStore.claimDelivery(entry.address, t0, t0 + 60_000, 'lease-2');
    const whileLive = await taskStore.claimDelivery(entry.address, t0 + 59_999, t0 + 120_000, 'lease-3');
    const afterLapse = await taskStore.claimDelivery(entry.address, t0 + 60_001, t0 + 120_000, 'lease-4');
    const staleFinish = await taskStore.finishDelivery(entry.address, 1, {
      status: 'PENDING',
      history: [],
      lastError: 'late',
      retryAtMs: t0 + 61_000,
    });

    // Assess
    expect(first?.attempts).toBe(1);
    expect(whileLive).toBeUndefined();
    expect(afterLapse?.attempts).toBe(2);
    expect(staleFinish).toBe(false);
  });

  it('refuses to cancel while the outcome of an attempt is unknown, and cancels once the retry has released the task', async () => {
    // Prepare: a callback took the lease, called the target (maybe) and died; the lease has lapsed.
    const { taskStore } = emulators.stores({ bucketCount: BUCKETS });
    const entry = task(1_700_300_000_000, 2);
    await taskStore.create(entry.task, entry.address);
    const t0 = 2_000_000;
    await taskStore.claimDelivery(entry.address, t0, t0 + 60_000, 'lease-5');

    // Act
    const whileUnknown = await taskStore.cancel(entry.address, cancelRequest('acme', t0 + 90_000, 0));
    const retry = await taskStore.claimDelivery(entry.address, t0 + 180_000, t0 + 240_000, 'lease-6');
    await taskStore.finishDelivery(entry.address, retry?.attempts ?? 0, {
      status: 'PENDING',
      history: [],
      lastError: 'HTTP 503',
      retryAtMs: t0 + 181_000,
    });
    const afterRelease = await taskStore.cancel(entry.address, cancelRequest('acme', t0 + 200_000, 0));

    // Assess
    expect(whileUnknown).toEqual({ cancelled: false, reason: 'in-delivery', status: 'DELIVERING' });
    expect(afterRelease).toEqual({ cancelled: true, unleased: false });
    expect((await taskStore.get(entry.address))?.status).toBe('CANCELLED');
  });
});
