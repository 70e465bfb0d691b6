import { describe, expect, it, vi } from 'vitest';

import {
  backoffSeconds,
  type DeadLetter,
  deliverTask,
  type DeliveryPorts,
  type Notification,
  readTogether,
  redeliverDeadLetter,
  type Sender,
  type TargetResult,
} from '../../functions/core/deliver/deliver.js';
import type { TaskAddress } from '../../functions/core/kernel/ids.js';
import { FIRST_ATTEMPT_READ_AHEAD_MS, HISTORY_LIMIT, type Task } from '../../functions/core/kernel/task.js';
import type { Tenant } from '../../functions/core/tenants/tenants.js';
import {
  aTask,
  aTenant,
  cancelRequest,
  DELIVERY_SETTINGS,
  fakeOccurrencePorts,
  FakeRequestCounter,
  FakeTaskStore,
  fakeTenantDirectory,
  ManualClock,
} from './fakes.js';

const DUE_AT_MS = Date.UTC(2026, 5, 1, 8, 0, 0, 250);

/** The fake store finds a task by the id alone. */
const addressOf = (task: Task): TaskAddress => ({ id: task.id, bucket: 0, shard: 0, fireAtMs: task.fireAtMs });
const LEASE_MS = 60_000;

/** Delivery ports over fakes; the target answers `result` and records when it was called. */
function deliveryPorts(task: Task, options: { nowMs: number; result?: TargetResult; tenants?: readonly Tenant[] }) {
  const clock = new ManualClock(options.nowMs);
  const calls: Array<{ atMs: number; notification: Notification; sender: Sender }> = [];
  const letters: DeadLetter[] = [];
  const taskStore = new FakeTaskStore([task]);
  const ports = {
    taskStore,
    occurrences: fakeOccurrencePorts(taskStore, clock),
    targets: {
      dispatch: vi.fn(
        async (_target: Task['target'], notification: Notification, sender: Sender): Promise<TargetResult> => {
          calls.push({ atMs: clock.now(), notification, sender });
          return options.result ?? { ok: true };
        },
      ),
    },
    tenants: fakeTenantDirectory(options.tenants),
    deadLetters: { send: vi.fn(async (letter: DeadLetter) => void letters.push(letter)) },
    callbackCounter: new FakeRequestCounter(),
    clock,
    ...DELIVERY_SETTINGS,
    leaseMs: LEASE_MS,
  } satisfies DeliveryPorts;
  return { ports, clock, calls, letters, stored: () => ports.taskStore.shown(task.id) };
}

describe('Function: deliverTask', () => {
  it('waits out the rest of an early message so the target is never called before dueAt', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 2);
    const { ports, clock, calls } = deliveryPorts(task, { nowMs: DUE_AT_MS - 1500 });

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toEqual({ kind: 'delivered', attempt: 1, latenessMs: 0 });
    expect(clock.sleeps).toEqual([1500]);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.atMs).toBeGreaterThanOrEqual(DUE_AT_MS);
  });

  it('fires a task with a window at its planned time, measuring lateness from it, and tells the receiver the dueAt asked for', async () => {
    // Prepare: due 40 s before the time its window planned (and its id encodes).
    const fireAtMs = DUE_AT_MS + 40_000;
    const task = aTask(fireAtMs, 2, { dueAtMs: DUE_AT_MS, window: { seconds: 60 } });
    const { ports, clock, calls, stored } = deliveryPorts(task, { nowMs: fireAtMs - 1200 });
    vi.spyOn(clock, 'sleep').mockImplementationOnce(async (ms) => clock.advance(ms + 30));

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toEqual({ kind: 'delivered', attempt: 1, latenessMs: 30 });
    expect(calls[0]?.atMs).toBe(fireAtMs + 30);
    expect(calls[0]?.notification).toMatchObject({
      dueAt: new Date(DUE_AT_MS).toISOString(),
      firedAt: new Date(fireAtMs + 30).toISOString(),
    });
    expect(stored()).toMatchObject({ status: 'DELIVERED', latenessMs: 30, dueAtMs: DUE_AT_MS });
  });

  it('keeps waiting when a timer fires a little early', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 2);
    const { ports, clock, calls } = deliveryPorts(task, { nowMs: DUE_AT_MS - 1500 });
    // Real timers may fire a millisecond early; this one falls 1 ms short the first time.
    vi.spyOn(clock, 'sleep').mockImplementationOnce(async (ms) => clock.advance(ms - 1));

    // Act
    await deliverTask(ports, task.id);

    // Assess
    expect(calls[0]?.atMs).toBe(DUE_AT_MS);
  });

  it('says when to come back for a message that surfaced more than the allowed wait early', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 2);
    const { ports, clock, calls, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS - 7200 });

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toEqual({ kind: 'early', notBeforeMs: DUE_AT_MS });
    expect(calls).toHaveLength(0);
    expect(clock.sleeps).toEqual([]);
    expect(stored()).toEqual(task);
  });

  it('skips a task it cannot claim, such as a cancelled one, without calling the target', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 1, { status: 'CANCELLED', cancelledAtMs: DUE_AT_MS - 10_000 });
    const { ports, calls, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS + 100 });

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toEqual({ kind: 'skipped', reason: 'not-claimable' });
    expect(calls).toHaveLength(0);
    expect(stored()?.status).toBe('CANCELLED');
  });

  it('skips a task another consumer holds a live lease on', async () => {
    // Prepare
    const nowMs = DUE_AT_MS + 100;
    const task = aTask(DUE_AT_MS, 1, { status: 'DELIVERING', attempts: 1, leaseUntilMs: nowMs + 1000 });
    const { ports, calls } = deliveryPorts(task, { nowMs });

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toEqual({ kind: 'skipped', reason: 'not-claimable' });
    expect(calls).toHaveLength(0);
  });

  it('records a success as DELIVERED with its lateness', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 3, { bizType: 'order', bizId: 'o-1' });
    const { ports, calls, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS + 250 });

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toEqual({ kind: 'delivered', attempt: 1, latenessMs: 250 });
    expect(stored()).toMatchObject({
      status: 'DELIVERED',
      attempts: 1,
      deliveredAtMs: DUE_AT_MS + 250,
      latenessMs: 250,
    });
    expect(stored()?.leaseUntilMs).toBeUndefined();
    expect(calls[0]?.notification).toEqual({
      id: task.id,
      dueAt: new Date(DUE_AT_MS).toISOString(),
      firedAt: new Date(DUE_AT_MS + 250).toISOString(),
      attempt: 1,
      bizType: 'order',
      bizId: 'o-1',
      payload: { orderId: 'o-1' },
    });
  });

  it("signs for the task's tenant with its unretired secrets and passes its webhook host allow-list", async () => {
    // Prepare
    const nowMs = DUE_AT_MS + 10;
    const tenant = aTenant({
      signingSecrets: [
        { secret: 'whsec_cmV0aXJlZA==', createdAtMs: 0, retiresAtMs: nowMs - 1 },
        { secret: 'whsec_b2xk', createdAtMs: 1, retiresAtMs: nowMs + 3_600_000 },
        { secret: 'whsec_bmV3', createdAtMs: 2 },
      ],
      allowedHosts: ['hooks.example.com'],
    });
    const task = aTask(DUE_AT_MS, 1);
    const { ports, calls } = deliveryPorts(task, { nowMs, tenants: [tenant] });

    // Act
    await deliverTask(ports, task.id);

    // Assess
    expect(calls[0]?.sender).toEqual({
      tenantId: tenant.id,
      signingSecrets: ['whsec_b2xk', 'whsec_bmV3'],
      allowedHosts: ['hooks.example.com'],
    });
  });

  it("fails the attempt, without calling the target, when the task's tenant no longer exists", async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 1);
    const { ports, calls, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS, tenants: [] });

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toMatchObject({ kind: 'retry', attempt: 1, error: `tenant ${task.tenantId} no longer exists` });
    expect(calls).toHaveLength(0);
    expect(stored()).toMatchObject({ status: 'PENDING', attempts: 1 });
  });

  it('puts the task back to PENDING with its retry time, the backoff of the attempt, in the same write', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0, { attempts: 2 });
    const { ports, stored } = deliveryPorts(task, {
      nowMs: DUE_AT_MS + 40_000,
      result: { ok: false, error: 'HTTP 503 from hooks.example.com' },
    });

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toEqual({
      kind: 'retry',
      attempt: 3,
      retryAfterSeconds: backoffSeconds(3, 5, 900),
      retryAtMs: DUE_AT_MS + 60_000,
      error: 'HTTP 503 from hooks.example.com',
    });
    expect(backoffSeconds(3, 5, 900)).toBe(20);
    expect(stored()).toMatchObject({
      status: 'PENDING',
      attempts: 3,
      lastError: 'HTTP 503 from hooks.example.com',
      retryAtMs: DUE_AT_MS + 60_000,
    });
  });

  it('waits as long as the target asks when that is longer than the backoff', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0);
    const { ports } = deliveryPorts(task, {
      nowMs: DUE_AT_MS,
      result: { ok: false, error: 'HTTP 429 from hooks.example.com', retryAfterSeconds: 120 },
    });

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toMatchObject({ kind: 'retry', attempt: 1, retryAfterSeconds: 120 });
  });

  it('keeps the backoff when the target asks for less', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0);
    const { ports } = deliveryPorts(task, {
      nowMs: DUE_AT_MS,
      result: { ok: false, error: 'HTTP 429 from hooks.example.com', retryAfterSeconds: 1 },
    });

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toMatchObject({ kind: 'retry', attempt: 1, retryAfterSeconds: 5 });
  });

  it('dead-letters the task before marking it FAILED when the last attempt fails', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0, { attempts: 4 });
    const { ports, letters, stored } = deliveryPorts(task, {
      nowMs: DUE_AT_MS + 600_000,
      result: { ok: false, error: 'HTTP 500 from hooks.example.com' },
    });
    const finishDelivery = vi.spyOn(ports.taskStore, 'finishDelivery');

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toEqual({ kind: 'failed', attempt: 5, error: 'HTTP 500 from hooks.example.com' });
    expect(letters).toEqual([{ id: task.id, attempt: 5, error: 'HTTP 500 from hooks.example.com' }]);
    expect(stored()).toMatchObject({ status: 'FAILED', attempts: 5, lastError: 'HTTP 500 from hooks.example.com' });
    expect(ports.deadLetters.send.mock.invocationCallOrder[0]).toBeLessThan(
      finishDelivery.mock.invocationCallOrder[0] ?? 0,
    );
  });

  it('leaves the task leased, not FAILED, when the dead letter cannot be sent', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0, { attempts: 4 });
    const { ports, stored } = deliveryPorts(task, {
      nowMs: DUE_AT_MS + 600_000,
      result: { ok: false, error: 'HTTP 500 from hooks.example.com' },
    });
    ports.deadLetters.send.mockRejectedValueOnce(new Error('DLQ unavailable'));

    // Act
    const delivering = deliverTask(ports, task.id);

    // Assess
    await expect(delivering).rejects.toThrow('DLQ unavailable');
    expect(stored()?.status).toBe('DELIVERING');
  });

  it('skips a malformed id without touching the store or the target', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0);
    const { ports, calls } = deliveryPorts(task, { nowMs: DUE_AT_MS });
    const claimDelivery = vi.spyOn(ports.taskStore, 'claimDelivery');

    // Act
    const outcome = await deliverTask(ports, 'not-a-task-id');

    // Assess
    expect(outcome).toEqual({ kind: 'skipped', reason: 'malformed-id' });
    expect(claimDelivery).not.toHaveBeenCalled();
    expect(calls).toHaveLength(0);
  });
});

describe('Function: deliverTask (the unleased first attempt)', () => {
  it('calls no target for a message that comes back late for a task a receipt names, and calls on time without reading receipts', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0);
    const { ports, clock, calls } = deliveryPorts(task, { nowMs: DUE_AT_MS });
    const receiptsOf = vi.spyOn(ports.taskStore, 'receiptsOf');
    await deliverTask(ports, task.id);
    const readOnTime = receiptsOf.mock.calls.length;

    // Act: its message comes back after the visibility timeout (its callback died before deleting it).
    clock.set(DUE_AT_MS + 30_000);
    const again = await deliverTask(ports, task.id);

    // Assess
    expect(readOnTime).toBe(0);
    expect(again).toEqual({ kind: 'skipped', reason: 'delivered-by-receipt' });
    expect(calls).toHaveLength(1);
  });

  it('calls a task whose message comes back late when its receipts cannot be read, rather than holding it back', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0);
    const { ports, calls } = deliveryPorts(task, { nowMs: DUE_AT_MS + 30_000 });
    vi.spyOn(ports.taskStore, 'receiptsOf').mockRejectedValue(new Error('InternalServerError'));

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome.kind).toBe('delivered');
    expect(calls).toHaveLength(1);
  });

  it('delivers a task never attempted with one write, a receipt, and no write of its item before or after the call', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0);
    const { ports, calls, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS });
    const claimDelivery = vi.spyOn(ports.taskStore, 'claimDelivery');
    const finishFirstAttempt = vi.spyOn(ports.taskStore, 'finishFirstAttempt');
    const recordReceipt = vi.spyOn(ports.taskStore, 'recordReceipt');

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toEqual({ kind: 'delivered', attempt: 1, latenessMs: 0 });
    expect(claimDelivery).not.toHaveBeenCalled();
    expect(finishFirstAttempt).not.toHaveBeenCalled();
    expect(recordReceipt).toHaveBeenCalledTimes(1);
    expect(recordReceipt.mock.calls[0]?.[0]).toMatchObject({
      second: Math.floor(DUE_AT_MS / 1000),
      delivered: new Map([[task.id, DUE_AT_MS]]),
    });
    expect(ports.taskStore.tasks.get(task.id)).toEqual(task);
    expect(calls[0]?.notification.attempt).toBe(1);
    expect(stored()).toMatchObject({ status: 'DELIVERED', attempts: 1, deliveredAtMs: DUE_AT_MS, latenessMs: 0 });
  });

  it('never calls the target for a task cancelled before its due time', async () => {
    // Prepare: the cancel was stored while the message waited in the queue.
    const task = aTask(DUE_AT_MS, 0);
    const { ports, clock, calls, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS - 3000 });
    await ports.taskStore.cancel(addressOf(task), cancelRequest(task.tenantId, clock.now()));
    clock.advance(3000);

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toEqual({ kind: 'skipped', reason: 'not-claimable' });
    expect(calls).toHaveLength(0);
    expect(stored()?.status).toBe('CANCELLED');
  });

  it('records a failed first attempt as attempt 1 with its retry time, and takes the lease for the retry', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0);
    const { ports, clock, stored } = deliveryPorts(task, {
      nowMs: DUE_AT_MS,
      result: { ok: false, error: 'HTTP 503 from hooks.example.com' },
    });
    const claimDelivery = vi.spyOn(ports.taskStore, 'claimDelivery');

    // Act
    const first = await deliverTask(ports, task.id);
    clock.advance(10_000);
    const second = await deliverTask(ports, task.id);

    // Assess
    expect(first).toMatchObject({ kind: 'retry', attempt: 1 });
    expect(claimDelivery).toHaveBeenCalledTimes(1);
    expect(second).toMatchObject({ kind: 'retry', attempt: 2 });
    expect(stored()).toMatchObject({ status: 'PENDING', attempts: 2 });
  });

  it('reports a second copy that finds the first attempt recorded as a lost race, not a retry', async () => {
    // Prepare: two copies of one message read the task before either recorded its outcome.
    const task = aTask(DUE_AT_MS, 0);
    const { ports, calls } = deliveryPorts(task, {
      nowMs: DUE_AT_MS,
      result: { ok: false, error: 'HTTP 503 from hooks.example.com' },
    });
    const get = ports.taskStore.get.bind(ports.taskStore);
    vi.spyOn(ports.taskStore, 'get').mockImplementation(async (key) => get(key));

    // Act
    const outcomes = await Promise.all([deliverTask(ports, task.id), deliverTask(ports, task.id)]);

    // Assess: at least once, same id and attempt number; one outcome recorded.
    expect(calls.map((call) => call.notification.attempt)).toEqual([1, 1]);
    expect(outcomes.map((outcome) => outcome.kind).sort()).toEqual(['retry', 'skipped']);
  });

  it('makes no write when the bizType callback rate turns a first attempt away', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0, { bizType: 'order', policy: { callbackRateLimitPerSecond: 1 } });
    const { ports, calls, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS });
    vi.spyOn(ports.callbackCounter, 'admit').mockResolvedValue(false);
    const finishFirstAttempt = vi.spyOn(ports.taskStore, 'finishFirstAttempt');

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toMatchObject({ kind: 'throttled' });
    expect(calls).toHaveLength(0);
    expect(finishFirstAttempt).not.toHaveBeenCalled();
    expect(stored()).toEqual(task);
  });
});

describe('Function: deliverTask (history)', () => {
  it('records each attempt with its time, status code, latency and error in the write of its outcome', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 1);
    const { ports, stored } = deliveryPorts(task, {
      nowMs: DUE_AT_MS,
      result: { ok: false, error: 'HTTP 503 from hooks.example.com', statusCode: 503 },
    });

    // Act
    await deliverTask(ports, task.id);

    // Assess
    expect(stored()?.history).toEqual([
      { attempt: 1, atMs: DUE_AT_MS, latencyMs: 0, statusCode: 503, error: 'HTTP 503 from hooks.example.com' },
    ]);
  });

  it(`keeps only the latest ${HISTORY_LIMIT} attempts`, async () => {
    // Prepare: a task with a full history.
    const history = Array.from({ length: HISTORY_LIMIT }, (_, index) => ({
      attempt: index + 1,
      atMs: index,
      latencyMs: 1,
    }));
    const task = aTask(DUE_AT_MS, 1, { history, attempts: HISTORY_LIMIT });
    const { ports, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS, result: { ok: true, statusCode: 204 } });

    // Act
    await deliverTask({ ...ports, maxAttempts: 100 }, task.id);

    // Assess
    const kept = stored()?.history ?? [];
    expect(kept).toHaveLength(HISTORY_LIMIT);
    expect(kept[0]?.attempt).toBe(2);
    expect(kept.at(-1)).toEqual({ attempt: HISTORY_LIMIT + 1, atMs: DUE_AT_MS, latencyMs: 0, statusCode: 204 });
  });
});

describe('Function: deliverTask (rescheduled tasks)', () => {
  const old = aTask(DUE_AT_MS - 60_000, 0);

  it('gives the lease back uncounted and asks again later while the predecessor is in a delivery attempt', async () => {
    // Prepare
    const successor = aTask(DUE_AT_MS, 1, { rescheduledFrom: old.id });
    const { ports, calls, stored } = deliveryPorts(successor, { nowMs: DUE_AT_MS });
    ports.taskStore.tasks.set(old.id, {
      ...old,
      status: 'DELIVERING',
      rescheduleIntent: { taskId: successor.id, fingerprint: 'f' },
    });

    // Act
    const outcome = await deliverTask(ports, successor.id);

    // Assess
    expect(outcome).toEqual({ kind: 'deferred', retryAfterSeconds: ports.backoffBaseSeconds });
    expect(calls).toEqual([]);
    expect(stored()).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it('cancels a successor whose predecessor was cancelled without handing over to it', async () => {
    // Prepare
    const successor = aTask(DUE_AT_MS, 1, { rescheduledFrom: old.id });
    const { ports, calls, stored } = deliveryPorts(successor, { nowMs: DUE_AT_MS });
    ports.taskStore.tasks.set(old.id, {
      ...old,
      status: 'CANCELLED',
      rescheduleIntent: { taskId: successor.id, fingerprint: 'f' },
    });

    // Act
    const outcome = await deliverTask(ports, successor.id);

    // Assess
    expect(outcome).toEqual({ kind: 'skipped', reason: 'reschedule-abandoned' });
    expect(calls).toEqual([]);
    expect(stored()?.status).toBe('CANCELLED');
  });
});

describe('Function: redeliverDeadLetter', () => {
  it('gives a FAILED task a fresh attempt budget and delivers it (DLQ redrive)', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0, { status: 'FAILED', attempts: 5, lastError: 'HTTP 500 from hooks.example.com' });
    const { ports, calls, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS + 3_600_000 });

    // Act
    const outcome = await redeliverDeadLetter(ports, task.id);

    // Assess
    expect(outcome).toMatchObject({ kind: 'delivered', attempt: 1 });
    expect(calls).toHaveLength(1);
    expect(stored()).toMatchObject({ status: 'DELIVERED', attempts: 1 });
  });

  it('leaves a task that is not FAILED as it is, so a stale dead letter cannot resurrect a cancelled one', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0, { status: 'CANCELLED', attempts: 2 });
    const { ports, calls, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS + 3_600_000 });

    // Act
    const outcome = await redeliverDeadLetter(ports, task.id);

    // Assess
    expect(outcome).toEqual({ kind: 'skipped', reason: 'not-claimable' });
    expect(calls).toEqual([]);
    expect(stored()?.status).toBe('CANCELLED');
  });
});

/**
 * Makes the store's `method` lose its first answer: the write lands, and the caller gets the answer
 * of the same call sent again, as the SDK's retry of a call whose response never came.
 */
function loseFirstAnswer(store: FakeTaskStore, method: 'claimDelivery' | 'finishDelivery' | 'finishFirstAttempt') {
  const original = store[method].bind(store) as (...args: unknown[]) => Promise<unknown>;
  let lost = false;
  vi.spyOn(store, method).mockImplementation((async (...args: unknown[]) => {
    if (lost) return original(...args);
    lost = true;
    await original(...args);
    return original(...args);
  }) as never);
}

describe('Function: deliverTask (a write whose answer is lost and sent again)', () => {
  it('delivers a task whose claim landed though its answer was lost, instead of leaving it DELIVERING', async () => {
    // Prepare: a retry, which takes the lease.
    const task = aTask(DUE_AT_MS, 0, { attempts: 1 });
    const { ports, calls, stored } = deliveryPorts(task, { nowMs: DUE_AT_MS + 40_000 });
    loseFirstAnswer(ports.taskStore, 'claimDelivery');

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toMatchObject({ kind: 'delivered', attempt: 2 });
    expect(calls).toHaveLength(1);
    expect(stored()).toMatchObject({ status: 'DELIVERED', attempts: 2 });
  });

  it('asks for its retry when the record of a failed retry landed though its answer was lost', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0, { attempts: 1 });
    const { ports, stored } = deliveryPorts(task, {
      nowMs: DUE_AT_MS + 40_000,
      result: { ok: false, error: 'HTTP 503 from hooks.example.com' },
    });
    loseFirstAnswer(ports.taskStore, 'finishDelivery');

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess: a "lease-lost" skip would send no message, and nothing would bring the task back.
    expect(outcome).toMatchObject({ kind: 'retry', attempt: 2 });
    expect(stored()).toMatchObject({ status: 'PENDING', attempts: 2 });
  });

  it('asks for its retry when the record of a failed first attempt landed though its answer was lost', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 0);
    const { ports, stored } = deliveryPorts(task, {
      nowMs: DUE_AT_MS,
      result: { ok: false, error: 'HTTP 503 from hooks.example.com' },
    });
    loseFirstAnswer(ports.taskStore, 'finishFirstAttempt');

    // Act
    const outcome = await deliverTask(ports, task.id);

    // Assess
    expect(outcome).toMatchObject({ kind: 'retry', attempt: 1 });
    expect(stored()).toMatchObject({ status: 'PENDING', attempts: 1 });
  });
});

describe('Function: backoffSeconds', () => {
  it('doubles from the base with each attempt', () => {
    // Act & Assess
    expect([1, 2, 3, 4].map((attempt) => backoffSeconds(attempt, 5, 900))).toEqual([5, 10, 20, 40]);
  });

  it('never exceeds the cap', () => {
    // Act & Assess
    expect(backoffSeconds(8, 5, 900)).toBe(640);
    expect(backoffSeconds(9, 5, 900)).toBe(900);
    expect(backoffSeconds(60, 5, 900)).toBe(900);
  });
});

describe('Function: readTogether', () => {
  it('reads the tasks of a batch that go within the read-ahead of each other in one request, never earlier than the read-ahead before the last of them goes', async () => {
    // Prepare: two tasks 600 ms apart and a third 2.5 s after the first, all surfaced 2 s before the first goes.
    const first = aTask(DUE_AT_MS, 1);
    const second = aTask(DUE_AT_MS + 600, 2);
    const third = aTask(DUE_AT_MS + 2500, 3);
    const { ports, calls } = deliveryPorts(first, { nowMs: DUE_AT_MS - 2000 });
    ports.taskStore.tasks.set(second.id, second);
    ports.taskStore.tasks.set(third.id, third);
    const getMany = ports.taskStore.getMany.bind(ports.taskStore);
    const reads: Array<{ atMs: number; ids: string[] }> = [];
    vi.spyOn(ports.taskStore, 'getMany').mockImplementation(async (keys) => {
      const tasks = await getMany(keys);
      reads.push({ atMs: ports.clock.now(), ids: tasks.map((task) => task?.id ?? '') });
      return tasks;
    });
    const get = vi.spyOn(ports.taskStore, 'get');
    const batch = [third, first, second].map((task) => ({ id: task.id }));

    // Act
    const together = readTogether(ports, batch);
    const outcomes = await Promise.all(
      batch.map((delivery) => deliverTask(ports, delivery.id, 0, together.of(delivery))),
    );

    // Assess
    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['delivered', 'delivered', 'delivered']);
    expect(reads.map((read) => read.ids)).toEqual([[first.id, second.id], [third.id]]);
    expect(reads[0]?.atMs).toBeGreaterThanOrEqual(second.fireAtMs - FIRST_ATTEMPT_READ_AHEAD_MS);
    expect(reads[1]?.atMs).toBeGreaterThanOrEqual(third.fireAtMs - FIRST_ATTEMPT_READ_AHEAD_MS);
    expect(get).not.toHaveBeenCalled();
    for (const task of [first, second, third]) {
      const call = calls.find((made) => made.notification.id === task.id);
      expect(call?.atMs).toBeGreaterThanOrEqual(task.fireAtMs);
    }
  });

  it('reads each of two copies of one task in a batch with its own group, so the earlier copy is not held back to the later', async () => {
    // Prepare: the scanner's copy goes at the fire time; a later copy (a restart's, a reminder's) 3 s after.
    const task = aTask(DUE_AT_MS, 1);
    const { ports, calls } = deliveryPorts(task, { nowMs: DUE_AT_MS - 500 });
    const onTime = { id: task.id };
    const later = { id: task.id, notBeforeMs: DUE_AT_MS + 3000 };

    // Act
    const outcome = await deliverTask(ports, task.id, 0, readTogether(ports, [onTime, later]).of(onTime));

    // Assess: called when it went, not after the later copy's read.
    expect(outcome.kind).toBe('delivered');
    expect(calls[0]?.atMs).toBeGreaterThanOrEqual(task.fireAtMs);
    expect(calls[0]?.atMs).toBeLessThan(later.notBeforeMs - FIRST_ATTEMPT_READ_AHEAD_MS);
  });

  it('reads a key it was not told of on its own, when its task goes', async () => {
    // Prepare
    const task = aTask(DUE_AT_MS, 1);
    const { ports, calls } = deliveryPorts(task, { nowMs: DUE_AT_MS - 500 });
    const getMany = vi.spyOn(ports.taskStore, 'getMany');

    // Act
    const outcome = await deliverTask(ports, task.id, 0, readTogether(ports, []).of({ id: task.id }));

    // Assess
    expect(outcome.kind).toBe('delivered');
    expect(getMany).not.toHaveBeenCalled();
    expect(calls[0]?.atMs).toBeGreaterThanOrEqual(task.fireAtMs);
  });
});
