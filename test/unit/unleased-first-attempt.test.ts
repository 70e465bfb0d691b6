/**
 * A first attempt takes no lease: a cancel against it, and two copies of it running at once. Each
 * interleaving is forced with deferred promises over the fakes (one store, one ManualClock for the
 * api and the callback). The promises checked: a cancel answered 200 is never followed by a call
 * of the target (invariant 11); DELIVERED means a 2xx was seen and FAILED that none was (invariant
 * 12).
 */
import { describe, expect, it, vi } from 'vitest';

import {
  type DeadLetter,
  deliverTask,
  type DeliveryOutcome,
  type DeliveryPorts,
  redeliverDeadLetter,
  type TargetResult,
} from '../../functions/core/deliver/deliver.js';
import { CLOCK_SKEW_MS } from '../../functions/core/kernel/clock.js';
import { parseTaskId, taskAddress } from '../../functions/core/kernel/ids.js';
import {
  type CancelOutcome,
  FIRST_ATTEMPT_READ_AHEAD_MS,
  type Task,
  UNLEASED_CANCEL_MARGIN_MS,
} from '../../functions/core/kernel/task.js';
import { cancelTask } from '../../functions/core/submit/submit.js';
import {
  aTask,
  cancelRequest,
  DELIVERY_SETTINGS,
  FakeDeliveryQueue,
  fakeOccurrencePorts,
  FakeRequestCounter,
  FakeTaskStore,
  fakeTenantDirectory,
  ManualClock,
  TENANT_ID,
} from './fakes.js';

const NOW_MS = Date.UTC(2026, 5, 1, 8, 0, 0, 250);

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/**
 * The api and the callback over one store and clock, with a task never attempted that fires
 * `inMs` from now. The target's answers wait until the test gives them (`answer`); `callsMade(n)`
 * resolves once n calls have been made.
 */
function world(inMs: number, overrides: Partial<Task> = {}) {
  const clock = new ManualClock(NOW_MS);
  const task = aTask(NOW_MS + inMs, 1, overrides);
  const taskStore = new FakeTaskStore([task]);
  const deliveryQueue = new FakeDeliveryQueue();
  const api = {
    taskStore,
    deliveryQueue,
    clock,
    bucketCount: DELIVERY_SETTINGS.bucketCount,
    shardCount: DELIVERY_SETTINGS.shardCount,
    retentionDays: DELIVERY_SETTINGS.retentionDays,
  };
  const calls: number[] = [];
  const answers: Array<Deferred<TargetResult>> = [];
  const waiting: Array<{ count: number; resolve: () => void }> = [];
  const letters: DeadLetter[] = [];
  const callback = {
    taskStore,
    occurrences: fakeOccurrencePorts(taskStore, clock),
    targets: {
      dispatch: async (): Promise<TargetResult> => {
        calls.push(clock.now());
        const answer = deferred<TargetResult>();
        answers.push(answer);
        for (const wait of waiting) if (calls.length >= wait.count) wait.resolve();
        return answer.promise;
      },
    },
    tenants: fakeTenantDirectory(),
    deadLetters: { send: async (letter: DeadLetter) => void letters.push(letter) },
    callbackCounter: new FakeRequestCounter(),
    clock,
    ...DELIVERY_SETTINGS,
  } satisfies DeliveryPorts;
  const location = parseTaskId(task.id, DELIVERY_SETTINGS.shardCount);
  if (!location) throw new Error('unparsable task id');
  return {
    api,
    callback,
    clock,
    task,
    taskStore,
    deliveryQueue,
    calls,
    letters,
    callsMade: (count: number) =>
      new Promise<void>((resolve) => (calls.length >= count ? resolve() : waiting.push({ count, resolve }))),
    address: taskAddress(task.id, location, DELIVERY_SETTINGS.bucketCount),
    /** Gives the `index`th call its answer. */
    answer: (index: number, result: TargetResult) => answers[index]?.resolve(result),
    stored: () => taskStore.shown(task.id),
  };
}

describe('Function: cancelTask, against a first attempt that takes no lease', () => {
  it('answers too-late, never 200, when its write landed after the attempt read the task and the retry of its lost response found it cancelled', async () => {
    // Prepare: the cancel is asked for in time, but its write is held until the attempt, at the
    // fire time, has read the task and called the target. Then it lands, its response is lost, and
    // the SDK's retry finds the task CANCELLED.
    const { api, callback, clock, task, taskStore, calls, callsMade, answer, stored } = world(
      UNLEASED_CANCEL_MARGIN_MS + 100,
    );
    const cancel = taskStore.cancel.bind(taskStore);
    vi.spyOn(taskStore, 'cancel').mockImplementationOnce(async (address, request) => {
      await callsMade(1);
      await cancel(address, request);
      return cancel(address, request);
    });

    // Act
    const cancelling = cancelTask(api, TENANT_ID, task.id);
    clock.set(task.fireAtMs);
    const delivering = deliverTask(callback, task.id);
    const outcome = await cancelling;
    answer(0, { ok: true, statusCode: 200 });
    const delivery = await delivering;

    // Assess: the target was called, so the cancel must not have answered 200; the task says so.
    expect(calls).toHaveLength(1);
    expect(outcome).toEqual({ cancelled: false, reason: 'too-late', status: 'PENDING' });
    expect(delivery).toMatchObject({ kind: 'delivered', attempt: 1 });
    expect(stored()?.status).toBe('DELIVERED');
  });

  it('answers a second DELETE too-late, never 200, while a late first one has yet to undo its cancel', async () => {
    // Prepare: the first cancel's write lands after the attempt read the task; before its request
    // looks at the clock, a second DELETE comes.
    const { api, callback, clock, task, taskStore, calls, callsMade, answer, stored } = world(
      UNLEASED_CANCEL_MARGIN_MS + 100,
    );
    const second = deferred<CancelOutcome>();
    const cancel = taskStore.cancel.bind(taskStore);
    vi.spyOn(taskStore, 'cancel').mockImplementationOnce(async (address, request) => {
      await callsMade(1);
      const outcome = await cancel(address, request);
      second.resolve(await cancelTask(api, TENANT_ID, task.id));
      return outcome;
    });

    // Act
    const first = cancelTask(api, TENANT_ID, task.id);
    clock.set(task.fireAtMs);
    const delivering = deliverTask(callback, task.id);
    const outcomes = [await second.promise, await first];
    answer(0, { ok: true, statusCode: 200 });
    await delivering;

    // Assess
    expect(calls).toHaveLength(1);
    expect(outcomes).toEqual([
      { cancelled: false, reason: 'too-late', status: 'PENDING' },
      { cancelled: false, reason: 'too-late', status: 'PENDING' },
    ]);
    expect(stored()?.status).toBe('DELIVERED');
  });

  it('answers a retried DELETE of a cancel confirmed in time 200 again, after the fire time too, and the attempt skips the task', async () => {
    // Prepare
    const { api, callback, clock, task, calls, stored } = world(UNLEASED_CANCEL_MARGIN_MS + 100);

    // Act
    const first = await cancelTask(api, TENANT_ID, task.id);
    clock.set(task.fireAtMs + 5000);
    const retried = await cancelTask(api, TENANT_ID, task.id);
    const delivery = await deliverTask(callback, task.id);

    // Assess
    expect([first.cancelled, retried.cancelled]).toEqual([true, true]);
    expect(delivery).toEqual<DeliveryOutcome>({ kind: 'skipped', reason: 'not-claimable' });
    expect(calls).toEqual([]);
    expect(stored()).toMatchObject({ status: 'CANCELLED' });
    expect(stored()?.unconfirmedCancel).toBeUndefined();
  });

  it('confirms, while still in time, a cancel whose request died before confirming it, and answers 200', async () => {
    // Prepare: a DELETE's write landed, and its request died before it looked at the clock.
    const { api, callback, clock, task, taskStore, address, calls } = world(UNLEASED_CANCEL_MARGIN_MS + 100);
    await taskStore.cancel(address, {
      ...cancelRequest(TENANT_ID, NOW_MS, 0, NOW_MS + UNLEASED_CANCEL_MARGIN_MS),
      cancelId: 'died',
    });

    // Act: the client retries while the api's clock is still more than the skew bound and the callback's
    // read-ahead before the fire time.
    clock.set(task.fireAtMs - CLOCK_SKEW_MS - FIRST_ATTEMPT_READ_AHEAD_MS - 1);
    const retried = await cancelTask(api, TENANT_ID, task.id);
    clock.set(task.fireAtMs);
    const delivery = await deliverTask(callback, task.id);

    // Assess
    expect(retried).toEqual({ cancelled: true });
    expect(delivery).toEqual<DeliveryOutcome>({ kind: 'skipped', reason: 'not-claimable' });
    expect(calls).toEqual([]);
  });

  it('undoes, once too late, a cancel whose request died before confirming it, and answers too-late', async () => {
    // Prepare: as above, but the client retries only at the fire time: the api cannot tell whether
    // the write landed before the attempt's read.
    const { api, clock, task, taskStore, address, stored } = world(UNLEASED_CANCEL_MARGIN_MS + 100);
    await taskStore.cancel(address, {
      ...cancelRequest(TENANT_ID, NOW_MS, 0, NOW_MS + UNLEASED_CANCEL_MARGIN_MS),
      cancelId: 'died',
    });

    // Act
    clock.set(task.fireAtMs - CLOCK_SKEW_MS - FIRST_ATTEMPT_READ_AHEAD_MS);
    const retried = await cancelTask(api, TENANT_ID, task.id);

    // Assess
    expect(retried).toEqual({ cancelled: false, reason: 'too-late', status: 'PENDING' });
    expect(stored()).toEqual(task);
  });

  it('gives the task of a cancel it undoes its delivery message back at once, so an attempt that saw the cancel and skipped leaves it delivered on time', async () => {
    // Prepare: the cancel's write lands in time for the attempt's read, which finds the task
    // CANCELLED and lets its message go; only then does the api see the write, too late to confirm it.
    const { api, callback, clock, task, taskStore, deliveryQueue, calls, callsMade, answer, stored } = world(
      UNLEASED_CANCEL_MARGIN_MS + 100,
    );
    const cancel = taskStore.cancel.bind(taskStore);
    let skipped: DeliveryOutcome | undefined;
    vi.spyOn(taskStore, 'cancel').mockImplementationOnce(async (address, request) => {
      const outcome = await cancel(address, request);
      clock.set(task.fireAtMs);
      skipped = await deliverTask(callback, task.id);
      return outcome;
    });

    // Act
    const outcome = await cancelTask(api, TENANT_ID, task.id);

    // Assess
    expect(skipped).toEqual<DeliveryOutcome>({ kind: 'skipped', reason: 'not-claimable' });
    expect(outcome).toEqual({ cancelled: false, reason: 'too-late', status: 'PENDING' });
    expect(deliveryQueue.sent).toEqual([{ id: task.id, delaySeconds: 0, express: true }]);

    // Act: the message comes back to the callback.
    const delivering = deliverTask(callback, task.id);
    await callsMade(1);
    answer(0, { ok: true, statusCode: 200 });
    const delivery = await delivering;

    // Assess
    expect(delivery).toEqual({ kind: 'delivered', attempt: 1, latenessMs: 0 });
    expect(calls).toEqual([task.fireAtMs]);
    expect(stored()?.status).toBe('DELIVERED');
  });

  it('answers 200 when its confirm landed but the response was lost and the retry found the mark gone', async () => {
    // Prepare
    const { api, callback, clock, task, taskStore, calls } = world(UNLEASED_CANCEL_MARGIN_MS + 100);
    const confirm = taskStore.confirmCancel.bind(taskStore);
    vi.spyOn(taskStore, 'confirmCancel').mockImplementationOnce(async (address, cancelId) => {
      await confirm(address, cancelId);
      return confirm(address, cancelId);
    });

    // Act
    const outcome = await cancelTask(api, TENANT_ID, task.id);
    clock.set(task.fireAtMs);
    await deliverTask(callback, task.id);

    // Assess
    expect(outcome).toEqual({ cancelled: true });
    expect(calls).toEqual([]);
  });
});

describe('Function: deliverTask, two copies of a first attempt at once', () => {
  it("records the 2xx one copy saw after the other copy's failure was recorded, so the task is neither called again by the retry nor cancelled with a 200", async () => {
    // Prepare: two copies of the task's message (an SQS duplicate) read it at its fire time.
    const { api, callback, clock, task, calls, callsMade, answer, stored } = world(0);

    // Act: both call; the failing copy records first.
    const failing = deliverTask(callback, task.id);
    const succeeding = deliverTask(callback, task.id);
    await callsMade(2);
    answer(0, { ok: false, error: 'HTTP 503', statusCode: 503 });
    const failure = await failing;
    answer(1, { ok: true, statusCode: 200 });
    const success = await succeeding;

    // Assess
    expect(failure).toMatchObject({ kind: 'retry', attempt: 1 });
    expect(success).toMatchObject({ kind: 'delivered', attempt: 1 });
    expect(stored()).toMatchObject({ status: 'DELIVERED', attempts: 1 });
    // The 2xx is in the receipt, which holds no history: the item keeps the failure's.
    expect(stored()?.history?.map((attempt) => attempt.statusCode)).toEqual([503]);

    // Act: the failing copy's retry message comes back after its backoff; then the owner cancels.
    const retryAtMs = failure.kind === 'retry' ? failure.retryAtMs : 0;
    clock.set(retryAtMs);
    const retry = await deliverTask(callback, task.id, retryAtMs);
    const cancel = await cancelTask(api, TENANT_ID, task.id);

    // Assess
    expect(retry).toEqual<DeliveryOutcome>({ kind: 'skipped', reason: 'delivered-by-receipt' });
    expect(calls).toHaveLength(2);
    expect(cancel).toEqual({ cancelled: false, reason: 'already-final', status: 'DELIVERED' });
    // The retry, holding the lease, wrote the receipt's delivery on the item.
    expect(callback.taskStore.tasks.get(task.id)).toMatchObject({ status: 'DELIVERED', attempts: 2 });
  });

  it('ends DELIVERED, not FAILED, when its bizType allows one attempt and the failing copy recorded first', async () => {
    // Prepare
    const { callback, task, callsMade, answer, letters, stored } = world(0, { policy: { maxAttempts: 1 } });

    // Act
    const failing = deliverTask(callback, task.id);
    const succeeding = deliverTask(callback, task.id);
    await callsMade(2);
    answer(0, { ok: false, error: 'HTTP 503', statusCode: 503 });
    const failure = await failing;
    answer(1, { ok: true, statusCode: 200 });
    await succeeding;

    // Assess
    expect(failure).toMatchObject({ kind: 'failed', attempt: 1 });
    expect(stored()).toMatchObject({ status: 'DELIVERED', attempts: 1 });

    // Act: the failing copy dead-lettered the task before it recorded FAILED; a redrive finds it delivered.
    const redriven = await redeliverDeadLetter(callback, letters[0]?.id ?? '');

    // Assess: its receipt, not its item (FAILED), says so; the task is not revived.
    expect(redriven).toEqual<DeliveryOutcome>({ kind: 'skipped', reason: 'delivered-by-receipt' });
    expect(stored()).toMatchObject({ status: 'DELIVERED', attempts: 1 });
  });
});

describe('Function: cancelTask, after a first attempt failed while a copy of it is still calling', () => {
  it('refuses the cancel as in delivery, not 200, while a copy that read the task before the failure was recorded may still be calling', async () => {
    // Prepare
    const { api, callback, clock, task, callsMade, answer, stored } = world(0);
    const failing = deliverTask(callback, task.id);
    const succeeding = deliverTask(callback, task.id);
    await callsMade(2);
    answer(0, { ok: false, error: 'HTTP 503', statusCode: 503 });
    await failing;

    // Act: the owner cancels while the other copy waits for its answer, which is a 2xx.
    clock.advance(1000);
    const cancel = await cancelTask(api, TENANT_ID, task.id);
    answer(1, { ok: true, statusCode: 200 });
    await succeeding;

    // Assess
    expect(cancel).toEqual({ cancelled: false, reason: 'in-delivery', status: 'PENDING' });
    expect(stored()).toMatchObject({ status: 'DELIVERED' });
  });

  it('takes the cancel once every copy of the failed first attempt is done calling', async () => {
    // Prepare
    const { api, callback, clock, task, callsMade, answer, stored } = world(0);
    const failing = deliverTask(callback, task.id);
    await callsMade(1);
    answer(0, { ok: false, error: 'HTTP 503', statusCode: 503 });
    await failing;

    // Act
    clock.advance(DELIVERY_SETTINGS.leaseMs + CLOCK_SKEW_MS + 1);
    const cancel = await cancelTask(api, TENANT_ID, task.id);

    // Assess
    expect(cancel).toEqual({ cancelled: true });
    expect(stored()).toMatchObject({ status: 'CANCELLED' });
  });
});
