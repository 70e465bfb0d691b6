/**
 * Schedules' occurrences end to end: local mode over HTTP with a real webhook receiver. An
 * occurrence with a window fires inside it, and cancelling an occurrence's task moves the
 * schedule on rather than stopping it.
 */
import { describe, expect, it } from 'vitest';

import type { ScheduleView } from '../../functions/contract/wire.js';
import { localTimerFixture } from '../support/local-timer-fixture.js';
import { eventually } from '../support/webhook-receiver.js';

const local = localTimerFixture({
  '/windowed': () => 204,
  '/occurrence-cancelled': () => 204,
  '/every-second': () => 204,
});

const receiptsAt = (path: string) => local.receiver.receipts.filter((receipt) => receipt.path === path);

describe.concurrent('End to end: schedule occurrences over HTTP in local mode', () => {
  it('fires a schedule with a window every time, inside its window', async () => {
    // Prepare
    const created = await local.api('POST', '/v1/schedules', {
      rate: '10 seconds',
      window: { seconds: 5 },
      target: { type: 'http', url: local.receiver.url('/windowed') },
    });
    expect(created.status).toBe(201);
    const { id } = created.body as unknown as ScheduleView;

    // Act
    await eventually('three occurrences', () => receiptsAt('/windowed').length >= 3, 100, 500);
    await local.api('DELETE', `/v1/schedules/${id}`);

    // Assess: each planned inside its window, [occurrence, occurrence + 5 s], and by the receiver's
    // clock none early against its planned time. How late arrivals are is the bench's to measure:
    // a bound on it here failed on a machine running two suites at once.
    const three = receiptsAt('/windowed').slice(0, 3);
    const occurrences = three.map((receipt) => Date.parse(String(receipt.body.occurrence)));
    expect(occurrences.slice(1).map((ms, index) => ms - (occurrences[index] ?? 0))).toEqual([10_000, 10_000]);
    for (const receipt of three) {
      const occurrenceMs = Date.parse(String(receipt.body.occurrence));
      const { body: task } = await local.api('GET', `/v1/tasks/${String(receipt.body.id)}`);
      const firesAtMs = Date.parse(String(task.firesAt));
      expect(task).toMatchObject({ window: { seconds: 5 } });
      expect(firesAtMs).toBeGreaterThanOrEqual(occurrenceMs);
      expect(firesAtMs).toBeLessThanOrEqual(occurrenceMs + 5000);
      expect(receipt.receivedAtMs).toBeGreaterThanOrEqual(firesAtMs);
    }
  }, 70_000);
  it('keeps a per-second schedule at its rate: its chain does not fall behind', async () => {
    // Prepare: each occurrence stores its successor when it fires, due a second later. Sent
    // through the delivery queue, the successor waits out the mapping's batching window (a
    // second, when the queue is quiet) behind that write, so a chain carried by the queue alone
    // loses the write's time at every step and falls ever further behind.
    const created = await local.api('POST', '/v1/schedules', {
      rate: '1 second',
      target: { type: 'http', url: local.receiver.url('/every-second') },
    });
    expect(created.status).toBe(201);
    const { id } = created.body as unknown as ScheduleView;

    // Act
    await eventually('30 occurrences', () => receiptsAt('/every-second').length >= 30, 120, 500);
    await local.api('DELETE', `/v1/schedules/${id}`);

    // Assess: every second once, and the last ones no later than the first. A lateness bound
    // measures the machine (see above); a lateness that grows with every step is the chain's.
    const receipts = receiptsAt('/every-second').slice(0, 30);
    const occurrences = receipts.map((receipt) => Date.parse(String(receipt.body.occurrence)));
    expect(occurrences.slice(1).map((ms, index) => ms - (occurrences[index] ?? 0))).toEqual(Array(29).fill(1000));
    const lateness = receipts.map((receipt, index) => receipt.receivedAtMs - (occurrences[index] ?? 0));
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
    console.log(`per-second schedule, lateness of 30 occurrences in ms: ${lateness.join(' ')}`);
    expect(median(lateness.slice(20))).toBeLessThan(median(lateness.slice(0, 10)) + 500);
  }, 90_000);
  it("goes on firing after its pending occurrence's task is cancelled", async () => {
    // Prepare
    const created = await local.api('POST', '/v1/schedules', {
      rate: '3 seconds',
      target: { type: 'http', url: local.receiver.url('/occurrence-cancelled') },
    });
    const schedule = created.body as unknown as ScheduleView;

    // Act
    const cancelled = await local.api('DELETE', `/v1/tasks/${schedule.nextTaskId}`);
    await eventually('two later occurrences', () => receiptsAt('/occurrence-cancelled').length >= 2, 60, 500);
    await local.api('DELETE', `/v1/schedules/${schedule.id}`);

    // Assess
    expect(cancelled).toMatchObject({ status: 200, body: { status: 'CANCELLED' } });
    const fired = receiptsAt('/occurrence-cancelled').map((receipt) => receipt.body.id);
    expect(fired).not.toContain(schedule.nextTaskId);
  }, 60_000);
});
