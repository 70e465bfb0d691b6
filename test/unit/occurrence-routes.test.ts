/**
 * The task routes acting on a schedule's occurrence, over HTTP as a tenant calls them (the api's
 * route over fakes, with the real scanner and callback core): one occurrence acted on never stops
 * its schedule (invariant 13).
 */
import { describe, expect, it } from 'vitest';

import { scheduleWorld, START, TARGET } from './schedule-world.js';

/** A world with a `rate: "10 seconds"` schedule made over HTTP: its id and its pending occurrence's task id. */
async function withSchedule() {
  const w = scheduleWorld();
  const created = await w.call('POST /v1/schedules', { body: { rate: '10 seconds', target: TARGET } });
  if (created.statusCode !== 201) throw new Error(JSON.stringify(created.json));
  return { w, scheduleId: String(created.json.id), nextTaskId: String(created.json.nextTaskId) };
}

const firedOccurrences = (w: ReturnType<typeof scheduleWorld>) =>
  w.calls.map((call) => Date.parse(call.notification.occurrence ?? '') - START);

describe('Route: DELETE /v1/tasks/{id} of an occurrence', () => {
  it('cancels that occurrence only: the schedule fires every later one', async () => {
    // Prepare
    const { w, nextTaskId } = await withSchedule();

    // Act
    const cancelled = await w.call('DELETE /v1/tasks/{id}', { id: nextTaskId });
    await w.runUntil(START + 45_000);

    // Assess
    expect(cancelled).toMatchObject({ statusCode: 200, json: { id: nextTaskId, status: 'CANCELLED' } });
    expect(w.calls.map((call) => call.notification.id)).not.toContain(nextTaskId);
    expect(firedOccurrences(w)).toEqual([20_000, 30_000, 40_000]);
  });

  it('keeps the schedule going when the cancel is repeated after the chain moved on', async () => {
    // Prepare: the first DELETE's answer was lost, and the client retries it.
    const { w, nextTaskId } = await withSchedule();
    await w.call('DELETE /v1/tasks/{id}', { id: nextTaskId });

    // Act
    const again = await w.call('DELETE /v1/tasks/{id}', { id: nextTaskId });
    await w.runUntil(START + 35_000);

    // Assess
    expect(again).toMatchObject({ statusCode: 200, json: { status: 'CANCELLED' } });
    expect(firedOccurrences(w)).toEqual([20_000, 30_000]);
  });
  it('keeps the schedule going when a DELETE of the next occurrence looks before a crashed cancel stores it', async () => {
    // Prepare: a DELETE of the pending occurrence moves the chain to its successor and dies
    // storing it, so the schedule names a successor no task holds yet (GET shows its id).
    const { w, scheduleId, nextTaskId } = await withSchedule();
    const create = w.taskStore.createUnlessStored.bind(w.taskStore);
    let crashes = 1;
    w.taskStore.createUnlessStored = async (task) => {
      if (crashes-- > 0) throw new Error('crash');
      return create(task);
    };
    await expect(w.call('DELETE /v1/tasks/{id}', { id: nextTaskId })).rejects.toThrow('crash');
    const successor = w.stored(scheduleId)?.next?.taskId ?? '';
    expect(w.taskStore.tasks.has(successor)).toBe(false);

    // Act: a DELETE of the successor reads it while it is missing; the client's retry of the first
    // DELETE stores it before the second DELETE goes on.
    const get = w.taskStore.get.bind(w.taskStore);
    let raced = false;
    w.taskStore.get = async (address) => {
      const task = await get(address);
      if (!raced && address.id === successor) {
        raced = true;
        await w.call('DELETE /v1/tasks/{id}', { id: nextTaskId });
      }
      return task;
    };
    const cancelled = await w.call('DELETE /v1/tasks/{id}', { id: successor });
    await w.runUntil(START + 45_000);

    // Assess: the successor was not there when asked for, so it stays, fires, and the chain goes on.
    expect(raced).toBe(true);
    expect(cancelled.statusCode).toBe(404);
    expect(firedOccurrences(w)).toEqual([20_000, 30_000, 40_000]);
  });
});

describe('Route: PATCH /v1/tasks/{id} of an occurrence', () => {
  it('refuses with a 409 that names the schedule to change instead, and the schedule fires on', async () => {
    // Prepare
    const { w, scheduleId, nextTaskId } = await withSchedule();

    // Act
    const moved = await w.call('PATCH /v1/tasks/{id}', { id: nextTaskId, body: { delaySeconds: 60 } });
    await w.runUntil(START + 25_000);

    // Assess
    expect(moved.statusCode).toBe(409);
    expect(moved.json.type).toContain('reschedule-occurrence');
    expect(moved.json.detail).toContain(`/v1/schedules/${scheduleId}`);
    expect(firedOccurrences(w)).toEqual([10_000, 20_000]);
  });
});
