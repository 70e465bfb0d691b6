import { describe, expect, it } from 'vitest';

import { CLOCK_SKEW_MS } from '../../functions/core/kernel/clock.js';
import { parseTaskId, type TaskAddress, taskAddress } from '../../functions/core/kernel/ids.js';
import type { DeliveryRecord, FirstAttemptRecord, Task, TaskStore } from '../../functions/core/kernel/task.js';
import { aTask, cancelRequest, TENANT_ID } from '../unit/fakes.js';

/** Buckets the store under test is made with; the addresses below are built with the same count. */
export const CONTRACT_BUCKET_COUNT = 1000;
const SHARDS = 4;
const DUE_MS = 1_700_000_123_456;
const SECOND = Math.floor(DUE_MS / 1000);
const LEASE_MS = 60_000;
/** Until when copies of a failed first attempt may still call: a lease's length after it. */
const COPIES_CALL_UNTIL_MS = DUE_MS + LEASE_MS;
/** When a failed attempt says the next may run: a backoff after DUE_MS. */
const RETRY_AT_MS = DUE_MS + 30_000;
const EXPIRES_AT = SECOND + 86_400;

function addressOf(task: Task): TaskAddress {
  const location = parseTaskId(task.id, SHARDS);
  if (!location) throw new Error(`${task.id} is not a task id`);
  return taskAddress(task.id, location, CONTRACT_BUCKET_COUNT);
}

async function stored(store: TaskStore, ...tasks: Task[]): Promise<TaskAddress[]> {
  await store.createMany(tasks.map((task) => ({ task, address: addressOf(task) })));
  return tasks.map(addressOf);
}

/**
 * What the scanner, delivery and api rely on from a TaskStore: conditional status changes
 * (cancel only while PENDING, one lease at a time, an outcome only from the attempt that holds
 * the lease) and the reads that find due tasks.
 */
export function taskStoreContract(name: string, makeStore: (bucketCount: number) => Promise<TaskStore>): void {
  describe(`Contract: TaskStore (${name})`, () => {
    it('reads back a created task as it was, and nothing for a key never written', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 1, { bizType: 'order', bizId: 'o-7', idempotencyKey: 'k-1' });

      // Act
      await store.create(task, addressOf(task));

      // Assess
      expect(await store.get(addressOf(task))).toEqual(task);
      expect(await store.get(addressOf(aTask(DUE_MS, 1)))).toBeUndefined();
    });

    it('reads many tasks in one call, in the keys’ order, with nothing where no task is and the latest write seen', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const first = aTask(DUE_MS, 1);
      const second = aTask(DUE_MS + 2500, 3, { bizId: 'o-9' });
      const [firstKey, secondKey] = await stored(store, first, second);
      const nowhere = addressOf(aTask(DUE_MS, 2));
      await store.cancel(firstKey as TaskAddress, cancelRequest(TENANT_ID, DUE_MS - 60_000));

      // Act
      const read = await store.getMany([secondKey as TaskAddress, nowhere, firstKey as TaskAddress]);

      // Assess
      expect(read).toEqual([second, undefined, await store.get(firstKey as TaskAddress)]);
      expect(read[2]?.status).toBe('CANCELLED');
      expect(await store.getMany([])).toEqual([]);
    });

    it('never overwrites a task with a create', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 1);
      await store.create(task, addressOf(task));

      // Act
      const again = store.create({ ...task, payloadJson: '{"other":true}' }, addressOf(task));

      // Assess
      await expect(again).rejects.toThrow();
      expect(await store.get(addressOf(task))).toEqual(task);
    });

    it('creates a task unless its key is taken, and otherwise hands back the stored task, fingerprint included', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 1, { idempotencyKey: 'k-1', fingerprint: 'f-1' });

      // Act
      const first = await store.createUnlessStored(task, addressOf(task));
      const concurrent = await Promise.all(
        [2, 3].map((n) => store.createUnlessStored({ ...task, fingerprint: `f-${n}` }, addressOf(task))),
      );

      // Assess
      expect(first).toEqual({ created: true });
      expect(concurrent).toEqual([
        { created: false, stored: task },
        { created: false, stored: task },
      ]);
      expect(await store.get(addressOf(task))).toEqual(task);
    });

    it('lists the PENDING tasks of exactly one second and shard, or only those no message may still bring', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const staleMs = DUE_MS + 300_000;
      const due = aTask(DUE_MS, 2);
      const retried = aTask(DUE_MS + 400, 2, { attempts: 1 });
      const retryWaiting = aTask(DUE_MS + 450, 2);
      const retryStranded = aTask(DUE_MS + 480, 2);
      const leaseLive = aTask(DUE_MS + 500, 2, { rescheduledFrom: 'x' });
      const leaseStranded = aTask(DUE_MS + 520, 2, { rescheduledFrom: 'y' });
      const cancelled = aTask(DUE_MS + 10, 2, { status: 'CANCELLED' });
      const otherShard = aTask(DUE_MS, 3);
      const nextSecond = aTask(DUE_MS + 1000, 2);
      const nextRound = aTask(DUE_MS + CONTRACT_BUCKET_COUNT * 1000, 2);
      await stored(store, due, retried, retryWaiting, retryStranded, leaseLive, leaseStranded);
      await stored(store, cancelled, otherShard, nextSecond, nextRound);
      const retryAt = (retryAtMs: number): FirstAttemptRecord => ({
        status: 'PENDING',
        lastError: 'HTTP 503',
        history: [],
        retryAtMs,
      });
      await store.finishFirstAttempt(addressOf(retryWaiting), retryAt(staleMs), DUE_MS, 'waiting');
      await store.finishFirstAttempt(addressOf(retryStranded), retryAt(staleMs - 1), DUE_MS, 'stranded');
      await store.claimDelivery(addressOf(leaseLive), DUE_MS, staleMs, 'live');
      await store.claimDelivery(addressOf(leaseStranded), DUE_MS, staleMs - 1, 'lapsed');

      // Act
      const listed = await store.listDue(SECOND, 2);
      const stranded = await store.listDue(SECOND, 2, { strandedBeforeMs: staleMs });

      // Assess
      const refs = (...tasks: Task[]) =>
        tasks.map(({ id, fireAtMs }) => ({ id, fireAtMs })).sort((a, b) => a.id.localeCompare(b.id));
      const sorted = (listing: Array<{ id: string; fireAtMs: number }>) =>
        [...listing].sort((a, b) => a.id.localeCompare(b.id));
      expect(sorted(listed)).toEqual(refs(due, retried, retryWaiting, retryStranded));
      expect(sorted(stranded)).toEqual(refs(due, retryStranded, leaseStranded));
    });

    it('keeps a task with a window where it fires: read back as it was, listed in its fire second, not its due second', async () => {
      // Prepare: due 40 s before the time its window planned; the id encodes the fire time.
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const windowed = aTask(DUE_MS, 2, { dueAtMs: DUE_MS - 40_000, window: { seconds: 60 } });
      await stored(store, windowed);

      // Act
      const read = await store.get(addressOf(windowed));
      const inFireSecond = await store.listDue(SECOND, 2);
      const inDueSecond = await store.listDue(SECOND - 40, 2);

      // Assess
      expect(read).toEqual(windowed);
      expect(inFireSecond).toEqual([{ id: windowed.id, fireAtMs: DUE_MS }]);
      expect(inDueSecond).toEqual([]);
    });

    it('cancels only a PENDING task of the same tenant, and says why not otherwise', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const pending = aTask(DUE_MS, 0);
      const delivering = aTask(DUE_MS, 0);
      const [pendingKey, deliveringKey] = await stored(store, pending, delivering);
      await store.claimDelivery(deliveringKey as TaskAddress, DUE_MS, DUE_MS + LEASE_MS, 'lease-1');

      // Act
      const stranger = await store.cancel(pendingKey as TaskAddress, cancelRequest('rival', DUE_MS, EXPIRES_AT));
      const cancelled = await store.cancel(pendingKey as TaskAddress, cancelRequest(TENANT_ID, DUE_MS, EXPIRES_AT));
      const twice = await store.cancel(pendingKey as TaskAddress, cancelRequest(TENANT_ID, DUE_MS + 1, EXPIRES_AT));
      const inDelivery = await store.cancel(deliveringKey as TaskAddress, cancelRequest(TENANT_ID, DUE_MS, EXPIRES_AT));
      const missing = await store.cancel(addressOf(aTask(DUE_MS, 0)), cancelRequest(TENANT_ID, DUE_MS, EXPIRES_AT));

      // Assess
      expect(stranger).toEqual({ cancelled: false, reason: 'not-found' });
      expect(cancelled).toEqual({ cancelled: true, unleased: true });
      expect(twice).toEqual({ cancelled: false, reason: 'already-final', status: 'CANCELLED' });
      expect(inDelivery).toEqual({ cancelled: false, reason: 'in-delivery', status: 'DELIVERING' });
      expect(missing).toEqual({ cancelled: false, reason: 'not-found' });
      expect(await store.get(pendingKey as TaskAddress)).toEqual({
        ...pending,
        status: 'CANCELLED',
        cancelledAtMs: DUE_MS,
      });
    });

    it('cancels a task never attempted only while it is due after the cutoff; a retried task at any time', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const dueSoon = aTask(DUE_MS, 0);
      const dueLater = aTask(DUE_MS + 5000, 0);
      const retried = aTask(DUE_MS, 0, { attempts: 1, retryAtMs: RETRY_AT_MS });
      const [soonKey, laterKey, retriedKey] = await stored(store, dueSoon, dueLater, retried);
      const cutoff = DUE_MS; // the api asks with now + margin: a task due at or before it is refused

      // Act
      const refused = await store.cancel(
        soonKey as TaskAddress,
        cancelRequest(TENANT_ID, DUE_MS - 1000, EXPIRES_AT, cutoff),
      );
      const later = await store.cancel(
        laterKey as TaskAddress,
        cancelRequest(TENANT_ID, DUE_MS - 1000, EXPIRES_AT, cutoff),
      );
      const afterRetry = await store.cancel(
        retriedKey as TaskAddress,
        cancelRequest(TENANT_ID, DUE_MS + 9000, EXPIRES_AT, DUE_MS + 10_000),
      );

      // Assess
      expect(refused).toEqual({ cancelled: false, reason: 'too-late', status: 'PENDING' });
      expect((await store.get(soonKey as TaskAddress))?.status).toBe('PENDING');
      expect(later).toEqual({ cancelled: true, unleased: true });
      expect(afterRetry).toEqual({ cancelled: true, unleased: false });
    });

    it('cancels a task with a window by its fire time: after its dueAt has passed, until the cutoff', async () => {
      // Prepare: both were due a minute ago; their windows planned one past the cutoff, one before it.
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const window = { seconds: 120 };
      const firesLater = aTask(DUE_MS + 5000, 0, { dueAtMs: DUE_MS - 60_000, window });
      const firesSoon = aTask(DUE_MS, 0, { dueAtMs: DUE_MS - 60_000, window });
      const [laterKey, soonKey] = await stored(store, firesLater, firesSoon);
      const cutoff = DUE_MS;

      // Act
      const later = await store.cancel(
        laterKey as TaskAddress,
        cancelRequest(TENANT_ID, DUE_MS - 1000, EXPIRES_AT, cutoff),
      );
      const soon = await store.cancel(
        soonKey as TaskAddress,
        cancelRequest(TENANT_ID, DUE_MS - 1000, EXPIRES_AT, cutoff),
      );

      // Assess
      expect(later).toEqual({ cancelled: true, unleased: true });
      expect(soon).toEqual({ cancelled: false, reason: 'too-late', status: 'PENDING' });
    });

    it('marks a cancel with an id as unconfirmed, names it to a repeated cancel, and drops the mark once confirmed', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const [key] = (await stored(store, task)) as [TaskAddress];
      const request = { ...cancelRequest(TENANT_ID, DUE_MS - 5000, EXPIRES_AT, DUE_MS - 4000), cancelId: 'c-1' };

      // Act
      const cancelled = await store.cancel(key, request);
      const marked = await store.get(key);
      const repeated = await store.cancel(key, { ...request, cancelId: 'c-2' });
      const someoneElses = await store.confirmCancel(key, 'c-2');
      const confirmed = await store.confirmCancel(key, 'c-1');
      const afterConfirm = await store.cancel(key, { ...request, cancelId: 'c-3' });
      const undone = await store.revertCancel(key, 'c-1');

      // Assess
      expect(cancelled).toEqual({ cancelled: true, unleased: true });
      expect(marked).toEqual({ ...task, status: 'CANCELLED', cancelledAtMs: DUE_MS - 5000, unconfirmedCancel: 'c-1' });
      expect(repeated).toEqual({ cancelled: false, reason: 'already-final', status: 'CANCELLED', unconfirmed: 'c-1' });
      expect([someoneElses, confirmed, undone]).toEqual([false, true, false]);
      expect(afterConfirm).toEqual({ cancelled: false, reason: 'already-final', status: 'CANCELLED' });
      expect(await store.get(key)).toEqual({ ...task, status: 'CANCELLED', cancelledAtMs: DUE_MS - 5000 });
    });

    it('names no unconfirmed cancel on a task whose next attempt holds a lease: its cancel is final at once', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const retried = aTask(DUE_MS, 0, { attempts: 1, retryAtMs: RETRY_AT_MS });
      const [key] = (await stored(store, retried)) as [TaskAddress];
      const request = { ...cancelRequest(TENANT_ID, DUE_MS + 1000, EXPIRES_AT, DUE_MS + 2000), cancelId: 'c-1' };

      // Act
      const cancelled = await store.cancel(key, request);
      const repeated = await store.cancel(key, { ...request, cancelId: 'c-2' });

      // Assess
      expect(cancelled).toEqual({ cancelled: true, unleased: false });
      expect(repeated).toEqual({ cancelled: false, reason: 'already-final', status: 'CANCELLED' });
    });

    it('reverts only the unconfirmed cancel it names, once', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const [key] = (await stored(store, task)) as [TaskAddress];
      await store.cancel(key, {
        ...cancelRequest(TENANT_ID, DUE_MS - 5000, EXPIRES_AT, DUE_MS - 4000),
        cancelId: 'c-1',
      });

      // Act
      const someoneElses = await store.revertCancel(key, 'c-2');
      const ours = await store.revertCancel(key, 'c-1');
      const again = await store.revertCancel(key, 'c-1');
      const confirmAfter = await store.confirmCancel(key, 'c-1');

      // Assess
      expect([someoneElses, ours, again, confirmAfter]).toEqual([false, true, false, false]);
      expect(await store.get(key)).toEqual(task);
    });

    it('confirms or reverts nothing once a first attempt recorded its delivery over the cancel', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const [key] = (await stored(store, task)) as [TaskAddress];
      await store.cancel(key, { ...cancelRequest(TENANT_ID, DUE_MS - 100), cancelId: 'c-1' });
      await store.finishFirstAttempt(
        key,
        {
          status: 'DELIVERED',
          deliveredAtMs: DUE_MS + 20,
          latenessMs: 20,
          expiresAtSeconds: EXPIRES_AT,
          history: [{ attempt: 1, atMs: DUE_MS + 20, latencyMs: 30, statusCode: 200 }],
        },
        COPIES_CALL_UNTIL_MS,
        'attempt-1',
      );

      // Act
      const confirmed = await store.confirmCancel(key, 'c-1');
      const reverted = await store.revertCancel(key, 'c-1');
      const repeated = await store.cancel(key, { ...cancelRequest(TENANT_ID, DUE_MS + 100), cancelId: 'c-2' });

      // Assess
      expect([confirmed, reverted]).toEqual([false, false]);
      expect(repeated).toEqual({ cancelled: false, reason: 'already-final', status: 'DELIVERED' });
    });

    it('records an unleased first attempt once, as attempt 1, and a delivery even over a cancel that came after it began', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const cancelledLate = aTask(DUE_MS, 1);
      const successor = aTask(DUE_MS, 2, { rescheduledFrom: aTask(DUE_MS - 60_000, 2).id });
      const [key, lateKey, successorKey] = await stored(store, task, cancelledLate, successor);
      await store.cancel(lateKey as TaskAddress, cancelRequest(TENANT_ID, DUE_MS - 100));
      const delivered: DeliveryRecord = {
        status: 'DELIVERED',
        deliveredAtMs: DUE_MS + 20,
        latenessMs: 20,
        expiresAtSeconds: EXPIRES_AT,
        history: [{ attempt: 1, atMs: DUE_MS + 20, latencyMs: 30, statusCode: 200 }],
      };
      const failed: DeliveryRecord = {
        status: 'PENDING',
        lastError: 'HTTP 503',
        retryAtMs: RETRY_AT_MS,
        history: [{ attempt: 1, atMs: DUE_MS + 20, latencyMs: 30, statusCode: 503, error: 'HTTP 503' }],
      };

      // Act
      const first = await store.finishFirstAttempt(key as TaskAddress, delivered, COPIES_CALL_UNTIL_MS, 'attempt-2');
      const duplicate = await store.finishFirstAttempt(key as TaskAddress, failed, COPIES_CALL_UNTIL_MS, 'attempt-3');
      const overCancel = await store.finishFirstAttempt(
        lateKey as TaskAddress,
        delivered,
        COPIES_CALL_UNTIL_MS,
        'attempt-4',
      );
      const ofSuccessor = await store.finishFirstAttempt(
        successorKey as TaskAddress,
        delivered,
        COPIES_CALL_UNTIL_MS,
        'attempt-5',
      );

      // Assess
      expect([first, duplicate, overCancel, ofSuccessor]).toEqual([true, false, true, false]);
      expect(await store.get(key as TaskAddress)).toMatchObject({ status: 'DELIVERED', attempts: 1, latenessMs: 20 });
      expect(await store.get(lateKey as TaskAddress)).toMatchObject({ status: 'DELIVERED', attempts: 1 });
      expect((await store.get(successorKey as TaskAddress))?.status).toBe('PENDING');
    });

    it('records a 2xx of a first attempt after a copy recorded its failure, a retry began or a cancel came, keeping the attempts and both in the history', async () => {
      // Prepare: two copies of each first attempt; the failing one recorded first.
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const retrying = aTask(DUE_MS, 0);
      const failed = aTask(DUE_MS, 1, { policy: { maxAttempts: 1 } });
      const inRetry = aTask(DUE_MS, 2);
      const cancelled = aTask(DUE_MS, 3);
      const keys = (await stored(store, retrying, failed, inRetry, cancelled)) as [
        TaskAddress,
        TaskAddress,
        TaskAddress,
        TaskAddress,
      ];
      const [retryingKey, failedKey, inRetryKey, cancelledKey] = keys;
      const failure = { attempt: 1, atMs: DUE_MS + 5, latencyMs: 10, statusCode: 503, error: 'HTTP 503' };
      const success = { attempt: 1, atMs: DUE_MS + 5, latencyMs: 900, statusCode: 200 };
      const retry: DeliveryRecord = {
        status: 'PENDING',
        lastError: 'HTTP 503',
        retryAtMs: RETRY_AT_MS,
        history: [failure],
      };
      for (const key of [retryingKey, inRetryKey, cancelledKey])
        await store.finishFirstAttempt(key, retry, COPIES_CALL_UNTIL_MS, 'attempt-6');
      await store.finishFirstAttempt(
        failedKey,
        {
          status: 'FAILED',
          lastError: 'HTTP 503',
          expiresAtSeconds: EXPIRES_AT,
          history: [failure],
        },
        COPIES_CALL_UNTIL_MS,
        'attempt-7',
      );
      await store.claimDelivery(inRetryKey, RETRY_AT_MS, RETRY_AT_MS + LEASE_MS, 'lease-2');
      await store.cancel(cancelledKey, cancelRequest(TENANT_ID, COPIES_CALL_UNTIL_MS + 1000, EXPIRES_AT));
      const delivered: DeliveryRecord = {
        status: 'DELIVERED',
        deliveredAtMs: DUE_MS + 5,
        latenessMs: 5,
        expiresAtSeconds: EXPIRES_AT,
        history: [success],
      };

      // Act
      const recorded = await Promise.all(
        keys.map((key) => store.finishFirstAttempt(key, delivered, COPIES_CALL_UNTIL_MS, 'attempt-8')),
      );
      const again = await store.finishFirstAttempt(
        retryingKey,
        { ...delivered, latenessMs: 99 },
        COPIES_CALL_UNTIL_MS,
        'attempt-9',
      );

      // Assess
      expect(recorded).toEqual([true, true, true, true]);
      expect(again).toBe(false);
      const facts = {
        status: 'DELIVERED',
        deliveredAtMs: DUE_MS + 5,
        latenessMs: 5,
        history: [failure, success],
        copiesCallUntilMs: COPIES_CALL_UNTIL_MS,
        attemptId: 'attempt-8',
      };
      expect(await store.get(retryingKey)).toEqual({
        ...retrying,
        ...facts,
        attempts: 1,
        lastError: 'HTTP 503',
        retryAtMs: RETRY_AT_MS,
      });
      expect(await store.get(failedKey)).toEqual({ ...failed, ...facts, attempts: 1, lastError: 'HTTP 503' });
      expect(await store.get(inRetryKey)).toEqual({
        ...inRetry,
        ...facts,
        attempts: 2,
        lastError: 'HTTP 503',
        retryAtMs: RETRY_AT_MS,
      });
      expect(await store.get(cancelledKey)).toMatchObject({ ...facts, attempts: 1 });
    });

    it('records no 2xx of a copy over a reschedule that took effect, nor over a task whose attempts all hold a lease', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const rescheduled = aTask(DUE_MS, 0);
      const lateArrival = aTask(DUE_MS, 1, { lateArrival: true });
      const [rescheduledKey, lateKey] = (await stored(store, rescheduled, lateArrival)) as [TaskAddress, TaskAddress];
      await store.finishFirstAttempt(
        rescheduledKey,
        {
          status: 'PENDING',
          lastError: 'HTTP 503',
          retryAtMs: RETRY_AT_MS,
          history: [],
        },
        COPIES_CALL_UNTIL_MS,
        'attempt-10',
      );
      const intent = { taskId: 'NEXT-1', fingerprint: 'f-1' };
      await store.recordRescheduleIntent(rescheduledKey, TENANT_ID, intent);
      await store.commitReschedule(rescheduledKey, intent.taskId, DUE_MS + 1000, EXPIRES_AT);
      await store.claimDelivery(lateKey, DUE_MS, DUE_MS + LEASE_MS, 'lease-3');
      const delivered: DeliveryRecord = {
        status: 'DELIVERED',
        deliveredAtMs: DUE_MS + 5,
        latenessMs: 5,
        expiresAtSeconds: EXPIRES_AT,
        history: [{ attempt: 1, atMs: DUE_MS + 5, latencyMs: 20, statusCode: 200 }],
      };

      // Act
      const overReschedule = await store.finishFirstAttempt(
        rescheduledKey,
        delivered,
        COPIES_CALL_UNTIL_MS,
        'attempt-11',
      );
      const overLease = await store.finishFirstAttempt(lateKey, delivered, COPIES_CALL_UNTIL_MS, 'attempt-12');

      // Assess
      expect([overReschedule, overLease]).toEqual([false, false]);
      expect((await store.get(rescheduledKey))?.status).toBe('CANCELLED');
      expect((await store.get(lateKey))?.status).toBe('DELIVERING');
    });

    it('refuses a cancel as in delivery while a copy of a failed first attempt may still be calling, and takes it after', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const [key] = (await stored(store, task)) as [TaskAddress];
      const failure = { attempt: 1, atMs: DUE_MS + 5, latencyMs: 10, statusCode: 503, error: 'HTTP 503' };
      await store.finishFirstAttempt(
        key,
        { status: 'PENDING', lastError: 'HTTP 503', retryAtMs: RETRY_AT_MS, history: [failure] },
        COPIES_CALL_UNTIL_MS,
        'attempt-13',
      );

      // Act: the api's clock may be CLOCK_SKEW_MS behind the callback's that set the time.
      const whileCalling = await store.cancel(
        key,
        cancelRequest(TENANT_ID, COPIES_CALL_UNTIL_MS + CLOCK_SKEW_MS, EXPIRES_AT),
      );
      const after = await store.cancel(
        key,
        cancelRequest(TENANT_ID, COPIES_CALL_UNTIL_MS + CLOCK_SKEW_MS + 1, EXPIRES_AT),
      );

      // Assess
      expect(whileCalling).toEqual({ cancelled: false, reason: 'in-delivery', status: 'PENDING' });
      expect(after).toEqual({ cancelled: true, unleased: false });
    });

    it('never records a failed first attempt over a cancel', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const [key] = (await stored(store, task)) as [TaskAddress];
      await store.cancel(key, cancelRequest(TENANT_ID, DUE_MS - 100));

      // Act
      const recorded = await store.finishFirstAttempt(
        key,
        {
          status: 'PENDING',
          lastError: 'HTTP 503',
          retryAtMs: RETRY_AT_MS,
          history: [],
        },
        COPIES_CALL_UNTIL_MS,
        'attempt-14',
      );

      // Assess
      expect(recorded).toBe(false);
      expect((await store.get(key))?.status).toBe('CANCELLED');
    });

    it('leases a task to one claimer at a time, and again once the lease has lapsed', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const [key] = (await stored(store, task)) as [TaskAddress];

      // Act
      const first = await store.claimDelivery(key, DUE_MS, DUE_MS + LEASE_MS, 'lease-4');
      const whileLeased = await store.claimDelivery(key, DUE_MS + 1, DUE_MS + 1 + LEASE_MS, 'lease-5');
      const afterLapse = await store.claimDelivery(key, DUE_MS + LEASE_MS + 1, DUE_MS + 2 * LEASE_MS, 'lease-6');

      // Assess
      expect(first).toEqual({
        ...task,
        status: 'DELIVERING',
        attempts: 1,
        leaseUntilMs: DUE_MS + LEASE_MS,
        attemptId: 'lease-4',
      });
      expect(whileLeased).toBeUndefined();
      expect(afterLapse).toEqual({
        ...task,
        status: 'DELIVERING',
        attempts: 2,
        leaseUntilMs: DUE_MS + 2 * LEASE_MS,
        attemptId: 'lease-6',
      });
    });

    it('knows its own claim and its own first-attempt record when sent again after their answers were lost, and no other attempt’s', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const leased = aTask(DUE_MS, 0);
      const firstAttempt = aTask(DUE_MS, 1);
      const [leasedKey, firstKey] = (await stored(store, leased, firstAttempt)) as [TaskAddress, TaskAddress];
      const retry: DeliveryRecord = {
        status: 'PENDING',
        lastError: 'HTTP 503',
        retryAtMs: RETRY_AT_MS,
        history: [{ attempt: 1, atMs: DUE_MS, latencyMs: 9, statusCode: 503, error: 'HTTP 503' }],
      };

      // Act: each write lands, then the SDK sends it again; a rival sends its own.
      const claimed = await store.claimDelivery(leasedKey, DUE_MS, DUE_MS + LEASE_MS, 'mine');
      const claimedAgain = await store.claimDelivery(leasedKey, DUE_MS, DUE_MS + LEASE_MS, 'mine');
      const rivalClaim = await store.claimDelivery(leasedKey, DUE_MS, DUE_MS + LEASE_MS, 'rival');
      const recorded = await store.finishFirstAttempt(firstKey, retry, COPIES_CALL_UNTIL_MS, 'mine');
      const recordedAgain = await store.finishFirstAttempt(firstKey, retry, COPIES_CALL_UNTIL_MS, 'mine');
      const rivalCopy = await store.finishFirstAttempt(firstKey, retry, COPIES_CALL_UNTIL_MS, 'rival');

      // Assess
      expect(claimed).toEqual({
        ...leased,
        status: 'DELIVERING',
        attempts: 1,
        leaseUntilMs: DUE_MS + LEASE_MS,
        attemptId: 'mine',
      });
      expect(claimedAgain).toEqual(claimed);
      expect(rivalClaim).toBeUndefined();
      expect([recorded, recordedAgain, rivalCopy]).toEqual([true, true, false]);
      expect(await store.get(firstKey)).toMatchObject({ status: 'PENDING', attempts: 1, attemptId: 'mine' });
    });

    it('records an outcome only from the attempt holding the lease, drops the lease with it, and knows its own record sent again', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const [key] = (await stored(store, task)) as [TaskAddress];
      await store.claimDelivery(key, DUE_MS, DUE_MS + LEASE_MS, 'lease-7');
      const history = [{ attempt: 1, atMs: DUE_MS + 5, latencyMs: 20, statusCode: 200 }];
      const outcome: DeliveryRecord = {
        status: 'DELIVERED',
        deliveredAtMs: DUE_MS + 25,
        latenessMs: 25,
        expiresAtSeconds: EXPIRES_AT,
        history,
      };

      // Act
      const stale = await store.finishDelivery(key, 2, outcome);
      const recorded = await store.finishDelivery(key, 1, outcome);
      // The SDK sending the same write again after its answer was lost: its condition fails, and the record is this one.
      const sentAgain = await store.finishDelivery(key, 1, outcome);
      const otherRecord = await store.finishDelivery(key, 1, { ...outcome, status: 'FAILED', lastError: 'HTTP 500' });

      // Assess
      expect([stale, recorded, sentAgain, otherRecord]).toEqual([false, true, true, false]);
      expect(await store.get(key)).toEqual({
        ...task,
        status: 'DELIVERED',
        attempts: 1,
        deliveredAtMs: DUE_MS + 25,
        latenessMs: 25,
        history,
      });
    });

    it('gives back an attempt that was never made, and keeps a failed attempt’s error', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const released = aTask(DUE_MS, 0);
      const retried = aTask(DUE_MS, 1);
      const [releasedKey, retriedKey] = (await stored(store, released, retried)) as [TaskAddress, TaskAddress];
      await store.claimDelivery(releasedKey, DUE_MS, DUE_MS + LEASE_MS, 'lease-8');
      await store.claimDelivery(retriedKey, DUE_MS, DUE_MS + LEASE_MS, 'lease-9');
      const history = [{ attempt: 1, atMs: DUE_MS, latencyMs: 9, statusCode: 503 }];

      // Act
      await store.finishDelivery(releasedKey, 1, { status: 'RELEASED' });
      await store.finishDelivery(retriedKey, 1, {
        status: 'PENDING',
        lastError: 'HTTP 503',
        history,
        retryAtMs: RETRY_AT_MS,
      });

      // Assess
      expect(await store.get(releasedKey)).toEqual(released);
      expect(await store.get(retriedKey)).toEqual({
        ...retried,
        attempts: 1,
        lastError: 'HTTP 503',
        history,
        retryAtMs: RETRY_AT_MS,
      });
    });

    it('revives only a FAILED task, with its attempts counted from zero again and no backoff left', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const [key] = (await stored(store, task)) as [TaskAddress];
      await store.claimDelivery(key, DUE_MS, DUE_MS + LEASE_MS, 'lease-10');
      await store.finishDelivery(key, 1, {
        status: 'PENDING',
        lastError: 'HTTP 503',
        history: [],
        retryAtMs: RETRY_AT_MS,
      });
      await store.claimDelivery(key, RETRY_AT_MS, RETRY_AT_MS + LEASE_MS, 'lease-11');
      await store.finishDelivery(key, 2, {
        status: 'FAILED',
        lastError: 'HTTP 410',
        expiresAtSeconds: EXPIRES_AT,
        history: [],
      });

      // Act
      const revived = await store.reviveFailed(key);
      const again = await store.reviveFailed(key);

      // Assess
      expect([revived, again]).toEqual([true, false]);
      expect(await store.get(key)).toEqual({ ...task, attempts: 0, lastError: 'HTTP 410', history: [] });
    });

    it('moves a reschedule through intent and commit, each step conditional on the one before', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const [key] = (await stored(store, task)) as [TaskAddress];
      const intent = { taskId: 'NEXT-1', fingerprint: 'f-1' };
      const replaced = { taskId: 'NEXT-2', fingerprint: 'f-2' };

      // Act
      const recorded = await store.recordRescheduleIntent(key, TENANT_ID, intent);
      const unconditional = await store.recordRescheduleIntent(key, TENANT_ID, replaced);
      const stranger = await store.recordRescheduleIntent(key, 'rival', replaced, intent.taskId);
      const replacedIntent = await store.recordRescheduleIntent(key, TENANT_ID, replaced, intent.taskId);
      const wrongCommit = await store.commitReschedule(key, intent.taskId, DUE_MS, EXPIRES_AT);
      const committed = await store.commitReschedule(key, replaced.taskId, DUE_MS, EXPIRES_AT);
      const withdrawn = await store.withdrawRescheduleIntent(key, replaced.taskId);

      // Assess
      expect([recorded, unconditional, stranger, replacedIntent]).toEqual([true, false, false, true]);
      expect([wrongCommit, committed, withdrawn]).toEqual([false, true, false]);
      expect(await store.get(key)).toEqual({
        ...task,
        status: 'CANCELLED',
        cancelledAtMs: DUE_MS,
        rescheduleIntent: replaced,
        rescheduledTo: replaced.taskId,
      });
    });

    it('withdraws an intent that was never committed, so a new one may be recorded', async () => {
      // Prepare
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const task = aTask(DUE_MS, 0);
      const [key] = (await stored(store, task)) as [TaskAddress];
      const intent = { taskId: 'NEXT-1', fingerprint: 'f-1' };
      await store.recordRescheduleIntent(key, TENANT_ID, intent);

      // Act
      const wrong = await store.withdrawRescheduleIntent(key, 'NEXT-9');
      const withdrawn = await store.withdrawRescheduleIntent(key, intent.taskId);
      const fresh = await store.recordRescheduleIntent(key, TENANT_ID, { taskId: 'NEXT-3', fingerprint: 'f-3' });

      // Assess
      expect([wrong, withdrawn, fresh]).toEqual([false, true, true]);
    });

    it('keeps receipts by fire second: every task they name with its earliest delivery time, a receipt sent again landing on itself', async () => {
      // Prepare: more receipts than a second's receipt partitions, so every partition is read.
      const store = await makeStore(CONTRACT_BUCKET_COUNT);
      const receipts = Array.from({ length: 20 }, (_, index) => ({
        id: `receipt-${index}`,
        second: SECOND,
        delivered: new Map([
          [`T-${index}-a`, DUE_MS + index],
          [`T-${index}-b`, DUE_MS + 500],
        ]),
        expiresAtSeconds: EXPIRES_AT,
      }));
      const copy = {
        id: 'receipt-copy',
        second: SECOND,
        delivered: new Map([['T-3-a', DUE_MS + 900]]),
        expiresAtSeconds: EXPIRES_AT,
      };
      const otherSecond = {
        id: 'receipt-later',
        second: SECOND + 1,
        delivered: new Map([['T-later', DUE_MS + 1000]]),
        expiresAtSeconds: EXPIRES_AT,
      };

      // Act
      for (const receipt of [...receipts, copy, otherSecond]) await store.recordReceipt(receipt);
      await store.recordReceipt(otherSecond);

      // Assess
      const delivered = await store.receiptsOf(SECOND);
      expect(delivered.size).toBe(40);
      expect(delivered.get('T-3-a')).toBe(DUE_MS + 3);
      expect(delivered.get('T-19-b')).toBe(DUE_MS + 500);
      expect(delivered.has('T-later')).toBe(false);
      expect(await store.receiptsOf(SECOND + 1)).toEqual(new Map([['T-later', DUE_MS + 1000]]));
      expect(await store.receiptsOf(SECOND + 2)).toEqual(new Map());
    });
  });
}
