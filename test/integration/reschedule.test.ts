import { describe, expect, it } from 'vitest';

import { taskNameTexts } from '../../functions/adapters/dynamo/table-schema.js';
import type { DynamoTaskStore } from '../../functions/adapters/dynamo/task-store.js';
import { deliverTask, type DeliveryPorts } from '../../functions/core/deliver/deliver.js';
import { newTaskId, taskAddress } from '../../functions/core/kernel/ids.js';
import { systemClock, type Task } from '../../functions/core/kernel/task.js';
import { rescheduleTask } from '../../functions/core/submit/reschedule.js';
import type { SubmitPorts } from '../../functions/core/submit/submit.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';
import { fakeTenantDirectory, TENANT_ID } from '../unit/fakes.js';

const BUCKETS = 1000;
const SHARDS = 4;

const emulators = emulatorsFixture();

/** The reschedule and delivery paths over the real store; the target records each task id it is called for. */
function pipeline(taskStore: DynamoTaskStore = emulators.stores({ bucketCount: BUCKETS }).taskStore) {
  const stores = { ...emulators.stores({ bucketCount: BUCKETS }), taskStore };
  const delivered: string[] = [];
  const common = {
    taskStore,
    clock: systemClock,
    bucketCount: BUCKETS,
    shardCount: SHARDS,
    nameTexts: taskNameTexts,
    retentionDays: 30,
  };
  const schedule: SubmitPorts = {
    ...stores,
    ...common,
    deliveryQueue: { send: async () => undefined },
    tickQueue: { send: async () => undefined },
    lookaheadSeconds: 2,
  };
  const delivery: DeliveryPorts = {
    ...common,
    occurrences: { ...schedule, scheduleStore: stores.scheduleStore },
    targets: {
      dispatch: async (_target, notification) => {
        delivered.push(notification.id);
        return { ok: true };
      },
    },
    tenants: fakeTenantDirectory(),
    deadLetters: { send: async () => undefined },
    callbackCounter: stores.callbackCounter,
    maxAttempts: 5,
    backoffBaseSeconds: 1,
    backoffMaxSeconds: 2,
    leaseMs: 60_000,
    maxEarlyWaitMs: 5000,
  };
  return { schedule, delivery, delivered, taskStore };
}

/**
 * A PENDING task due just now (so delivering it never waits), stored. Its first attempt failed,
 * so its next one takes the lease and a reschedule may race it right up to the call; a task never
 * attempted is refused near its due time instead (the last test).
 */
async function storedTask(taskStore: DynamoTaskStore, shard = 1, attempts = 1): Promise<Task> {
  const dueAtMs = Date.now() - 1000;
  const id = newTaskId({ fireAtMs: dueAtMs, shard });
  const task: Task = {
    id,
    tenantId: TENANT_ID,
    status: 'PENDING',
    dueAtMs,
    fireAtMs: dueAtMs,
    createdAtMs: dueAtMs - 60_000,
    target: { type: 'http', url: 'https://hooks.example.com/timer' },
    payloadJson: '{"n":1}',
    bizId: 'order-1',
    attempts,
  };
  await taskStore.create(task, taskAddress(id, { fireAtMs: dueAtMs, shard }, BUCKETS));
  return task;
}

const request = (fingerprint = 'f1') => ({ dueAtMs: Date.now() - 500, fingerprint, payloadJson: '{"n":2}' });

describe('Function: rescheduleTask on dynalite', () => {
  it('hands over to a successor that alone is delivered, and answers a repeat with the same successor', async () => {
    // Prepare
    const { schedule, delivery, delivered, taskStore } = pipeline();
    const old = await storedTask(taskStore);

    // Act
    const first = await rescheduleTask(schedule, TENANT_ID, old.id, request());
    const repeat = await rescheduleTask(schedule, TENANT_ID, old.id, request());
    const other = await rescheduleTask(schedule, TENANT_ID, old.id, request('f2'));
    const successor = first.kind === 'rescheduled' ? first.task : undefined;
    await deliverTask(delivery, old.id);
    await deliverTask(delivery, successor?.id ?? '');

    // Assess
    expect(successor).toMatchObject({ rescheduledFrom: old.id, payloadJson: '{"n":2}', bizId: 'order-1' });
    expect(repeat).toMatchObject({ kind: 'rescheduled', task: { id: successor?.id } });
    expect(other).toMatchObject({ kind: 'refused', reason: 'already-final', rescheduledTo: successor?.id });
    expect(delivered).toEqual([successor?.id]);
  });

  it('refuses with in-delivery while the old task is being delivered, and cancels the successor it made', async () => {
    // Prepare: a callback holds the old task's lease.
    const { schedule, delivered, taskStore } = pipeline();
    const old = await storedTask(taskStore);
    const oldAddress = taskAddress(old.id, { fireAtMs: old.fireAtMs, shard: 1 }, BUCKETS);
    const claimed = await taskStore.claimDelivery(oldAddress, Date.now(), Date.now() + 60_000, 'lease-1');
    if (!claimed) throw new Error('could not claim');

    // Act
    const outcome = await rescheduleTask(schedule, TENANT_ID, old.id, request());

    // Assess
    expect(outcome).toMatchObject({ kind: 'refused', reason: 'in-delivery' });
    expect(delivered).toEqual([]);
    expect((await taskStore.get(oldAddress))?.rescheduleIntent).toBeUndefined();
  });

  it('delivers exactly one of old and successor when reschedules race deliveries of the old task', async () => {
    // Prepare: 30 tasks, each rescheduled while its own delivery runs.
    const { schedule, delivery, delivered, taskStore } = pipeline();
    const olds = await Promise.all(Array.from({ length: 30 }, (_, index) => storedTask(taskStore, index % SHARDS)));

    // Act
    const outcomes = await Promise.all(
      olds.map(async (old) => {
        const [reschedule] = await Promise.all([
          rescheduleTask(schedule, TENANT_ID, old.id, request()),
          deliverTask(delivery, old.id),
        ]);
        if (reschedule.kind === 'rescheduled') await deliverTask(delivery, reschedule.task.id);
        return reschedule;
      }),
    );

    // Assess: per pair, one delivery; a 409 means the old one was delivered, a 200 means the successor was.
    for (const [index, old] of olds.entries()) {
      const outcome = outcomes[index];
      const successor = outcome?.kind === 'rescheduled' ? outcome.task.id : undefined;
      const forPair = delivered.filter((id) => id === old.id || id === successor);
      expect(forPair).toEqual([successor ?? old.id]);
    }
    const answers = outcomes.map((outcome) => (outcome.kind === 'refused' ? outcome.reason : outcome.kind));
    const counts = new Map<string, number>();
    for (const answer of answers) counts.set(answer, (counts.get(answer) ?? 0) + 1);
    console.info('reschedule races:', Object.fromEntries(counts));
  });

  it('lets the successor finish a reschedule whose request died before its commit', async () => {
    // Prepare: the commit write is lost (the api crashed right before it).
    const { taskStore } = pipeline();
    const crashing = Object.create(taskStore) as DynamoTaskStore;
    crashing.commitReschedule = async () => {
      throw new Error('api crashed before the commit');
    };
    const crashed = pipeline(crashing);
    const { delivery, delivered } = pipeline();
    const old = await storedTask(taskStore);
    await expect(rescheduleTask(crashed.schedule, TENANT_ID, old.id, request())).rejects.toThrow('crashed');
    const intent = (await taskStore.get(taskAddress(old.id, { fireAtMs: old.fireAtMs, shard: 1 }, BUCKETS)))
      ?.rescheduleIntent;

    // Act: the successor comes due first.
    await deliverTask(delivery, intent?.taskId ?? '');
    await deliverTask(delivery, old.id);

    // Assess
    expect(delivered).toEqual([intent?.taskId]);
  });

  it('abandons the successor of a request that died before its commit when the old task fires first', async () => {
    // Prepare
    const { taskStore } = pipeline();
    const crashing = Object.create(taskStore) as DynamoTaskStore;
    crashing.commitReschedule = async () => {
      throw new Error('api crashed before the commit');
    };
    const { delivery, delivered } = pipeline();
    const old = await storedTask(taskStore);
    await expect(rescheduleTask(pipeline(crashing).schedule, TENANT_ID, old.id, request())).rejects.toThrow('crashed');
    const intent = (await taskStore.get(taskAddress(old.id, { fireAtMs: old.fireAtMs, shard: 1 }, BUCKETS)))
      ?.rescheduleIntent;

    // Act
    await deliverTask(delivery, old.id);
    const orphan = await deliverTask(delivery, intent?.taskId ?? '');

    // Assess
    expect(delivered).toEqual([old.id]);
    expect(orphan).toEqual({ kind: 'skipped', reason: 'reschedule-abandoned' });
  });

  it('refuses, writing nothing, to reschedule a task never attempted once it is due within the margin', async () => {
    // Prepare: its first attempt takes no lease, so it may already be under way.
    const { schedule, taskStore } = pipeline();
    const old = await storedTask(taskStore, 1, 0);

    // Act
    const outcome = await rescheduleTask(schedule, TENANT_ID, old.id, request());

    // Assess
    expect(outcome).toMatchObject({ kind: 'refused', reason: 'too-late' });
    expect(await taskStore.get(taskAddress(old.id, { fireAtMs: old.fireAtMs, shard: 1 }, BUCKETS))).toEqual(old);
  });
});
