import { describe, expect, it, vi } from 'vitest';

import { secondOf } from '../../functions/core/kernel/clock.js';
import type { Task, TaskIndex } from '../../functions/core/kernel/task.js';
import { cancelTask, getTask } from '../../functions/core/submit/submit.js';
import { listTasks } from '../../functions/core/submit/task-listing.js';
import { aTask, DELIVERY_SETTINGS, FakeDeliveryQueue, FakeTaskStore, ManualClock, TENANT_ID } from './fakes.js';

const FIRE_AT_MS = Date.UTC(2026, 10, 21, 12, 0, 0, 400);

/** The api's view over a store holding `tasks`, with a receipt naming `delivered` (delivered 250 ms after firing). */
function api(tasks: readonly Task[], delivered: readonly Task[], nowMs = FIRE_AT_MS + 60_000) {
  const taskStore = new FakeTaskStore(tasks);
  for (const task of delivered) {
    void taskStore.recordReceipt({
      id: `receipt-${task.id}`,
      second: secondOf(task.fireAtMs),
      delivered: new Map([[task.id, task.fireAtMs + 250]]),
      expiresAtSeconds: secondOf(nowMs) + 86_400,
    });
  }
  const taskIndex: TaskIndex = {
    page: async () => ({ ids: tasks.map((task) => task.id), more: false }),
    getMany: async (keys) => (await taskStore.getMany(keys)).flatMap((task) => (task ? [task] : [])),
  };
  const ports = {
    taskStore,
    taskIndex,
    deliveryQueue: new FakeDeliveryQueue(),
    clock: new ManualClock(nowMs),
    bucketCount: DELIVERY_SETTINGS.bucketCount,
    shardCount: DELIVERY_SETTINGS.shardCount,
    retentionDays: DELIVERY_SETTINGS.retentionDays,
  };
  return { ports, taskStore };
}

describe('Function: getTask, listTasks and cancelTask, of a task a receipt names', () => {
  it('shows it DELIVERED with its delivery time, attempts and lateness, though its item is PENDING and never attempted', async () => {
    // Prepare
    const task = aTask(FIRE_AT_MS, 1, { bizId: 'o-1' });
    const { ports } = api([task], [task]);

    // Act
    const read = await getTask(ports, TENANT_ID, task.id);

    // Assess
    expect(read).toMatchObject({
      status: 'DELIVERED',
      attempts: 1,
      deliveredAtMs: FIRE_AT_MS + 250,
      latenessMs: 250,
    });
  });

  it('shows it DELIVERED over what a copy of its first attempt recorded after: a retry, FAILED, or a cancel the api could not confirm', async () => {
    // Prepare
    const retrying = aTask(FIRE_AT_MS, 0, { attempts: 1, lastError: 'HTTP 503', retryAtMs: FIRE_AT_MS + 5000 });
    const failed = aTask(FIRE_AT_MS, 1, { status: 'FAILED', attempts: 1, lastError: 'HTTP 503' });
    const cancelled = aTask(FIRE_AT_MS, 2, { status: 'CANCELLED', cancelledAtMs: FIRE_AT_MS, unconfirmedCancel: 'c' });
    const tasks = [retrying, failed, cancelled];
    const { ports } = api(tasks, tasks);

    // Act
    const read = await Promise.all(tasks.map((task) => getTask(ports, TENANT_ID, task.id)));

    // Assess
    expect(read.map((task) => [task?.status, task?.attempts, task?.retryAtMs, task?.unconfirmedCancel])).toEqual([
      ['DELIVERED', 1, undefined, undefined],
      ['DELIVERED', 1, undefined, undefined],
      ['DELIVERED', 1, undefined, undefined],
    ]);
  });

  it('lists it by its status as its receipt shows it', async () => {
    // Prepare
    const delivered = aTask(FIRE_AT_MS, 1, { bizId: 'o-1' });
    const pending = aTask(FIRE_AT_MS, 2, { bizId: 'o-1' });
    const { ports } = api([delivered, pending], [delivered]);

    // Act
    const listed = await listTasks(ports, TENANT_ID, { bizId: 'o-1', status: 'DELIVERED', limit: 10 });

    // Assess
    expect(listed.tasks.map((task) => [task.id, task.status, task.deliveredAtMs])).toEqual([
      [delivered.id, 'DELIVERED', FIRE_AT_MS + 250],
    ]);
  });

  it('answers a DELETE 409 already-final DELIVERED, never 200, whether the item refuses the cancel or takes it', async () => {
    // Prepare: one never attempted (its item refuses the cancel as too late), one whose failed copy
    // recorded a retry (its next attempt holds a lease, so its item takes the cancel).
    const neverAttempted = aTask(FIRE_AT_MS, 1);
    const retrying = aTask(FIRE_AT_MS, 2, { attempts: 1, lastError: 'HTTP 503', retryAtMs: FIRE_AT_MS + 5000 });
    const { ports } = api([neverAttempted, retrying], [neverAttempted, retrying]);

    // Act
    const outcomes = await Promise.all([
      cancelTask(ports, TENANT_ID, neverAttempted.id),
      cancelTask(ports, TENANT_ID, retrying.id),
    ]);

    // Assess
    const deliveredAnswer = { cancelled: false, reason: 'already-final', status: 'DELIVERED' };
    expect(outcomes).toEqual([deliveredAnswer, deliveredAnswer]);
    expect((await getTask(ports, TENANT_ID, retrying.id))?.status).toBe('DELIVERED');
  });

  it('reads no receipts for a task a callback cannot have called yet, nor for one whose item says how it ended', async () => {
    // Prepare
    const ahead = aTask(FIRE_AT_MS + 120_000, 1);
    const delivered = aTask(FIRE_AT_MS, 2, { status: 'DELIVERED', attempts: 1, deliveredAtMs: FIRE_AT_MS });
    const occurrence = aTask(FIRE_AT_MS, 3, { occurrence: { scheduleId: 's-1', revision: 'r-1', atMs: FIRE_AT_MS } });
    const { ports, taskStore } = api([ahead, delivered, occurrence], []);
    const receiptsOf = vi.spyOn(taskStore, 'receiptsOf');

    // Act
    await Promise.all([ahead, delivered, occurrence].map((task) => getTask(ports, TENANT_ID, task.id)));
    const cancel = await cancelTask(ports, TENANT_ID, ahead.id);

    // Assess
    expect(cancel).toEqual({ cancelled: true });
    expect(receiptsOf).not.toHaveBeenCalled();
  });
});
