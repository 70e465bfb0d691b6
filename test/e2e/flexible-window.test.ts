/**
 * Issue 14's done-when for flexible windows, end to end over HTTP in local mode: a hot second of
 * 1,000 tasks submitted with a 60 s window arrives at a real webhook receiver spread over the 60 s,
 * none early and none lost, each on time against the fire time its 201 answer planned.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { BatchResult } from '../../functions/contract/wire.js';
import type { LocalTimer } from '../../lib/local/runtime.js';
import { startTestTimer } from '../support/local-timer-fixture.js';
import { eventually, quantile, startWebhookReceiver } from '../support/webhook-receiver.js';

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

let timer: LocalTimer;
let receiver: Receiver;

beforeAll(async () => {
  timer = await startTestTimer();
  receiver = await startWebhookReceiver({ '/ok': () => 204 });
});

afterAll(async () => {
  await receiver?.close();
  await timer?.stop();
});

const TASKS = 1000;
const BATCH = 100;
const WINDOW_SECONDS = 60;

interface Planned {
  readonly id: string;
  readonly dueAtMs: number;
  readonly firesAtMs: number;
}

describe('End to end: a flexible window in local mode', () => {
  it('spreads a 1,000-task hot second with a 60 s window over the 60 s, none early, none lost', async () => {
    // Prepare: every task due within one second, far enough ahead that all are accepted before it.
    const hotSecondMs = (Math.floor(Date.now() / 1000) + 20) * 1000;
    const target = { type: 'http', url: receiver.url('/ok') };

    // Act
    const planned: Planned[] = [];
    for (let start = 0; start < TASKS; start += BATCH) {
      const tasks = Array.from({ length: BATCH }, (_, index) => ({
        dueAt: hotSecondMs + start + index,
        window: { seconds: WINDOW_SECONDS },
        target,
        payload: { n: start + index },
      }));
      const response = await fetch(`${timer.apiUrl}/v1/tasks/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${timer.apiKey}` },
        body: JSON.stringify({ tasks }),
      });
      expect(response.status).toBe(201);
      const { results } = (await response.json()) as BatchResult;
      for (const result of results) {
        if (!('task' in result)) throw new Error(`item ${result.index} was refused: ${result.problem.detail}`);
        const { id, dueAt, firesAt } = result.task;
        planned.push({ id, dueAtMs: Date.parse(dueAt), firesAtMs: Date.parse(firesAt) });
      }
    }
    expect(Date.now()).toBeLessThan(hotSecondMs);
    const firstArrival = new Map<string, { atMs: number; dueAt: string }>();
    await eventually(
      'every task has arrived',
      () => {
        for (const { receivedAtMs, body } of receiver.receipts) {
          if (!firstArrival.has(body.id)) firstArrival.set(body.id, { atMs: receivedAtMs, dueAt: body.dueAt });
        }
        return firstArrival.size === TASKS;
      },
      // The last fire time is at most 61 s after the hot second began; nine minutes more for a
      // machine running two suites (a wait that ends as soon as the last task arrives: four were
      // not enough beside a second npm test on a slower day).
      (hotSecondMs - Date.now() + (WINDOW_SECONDS + 1 + 540) * 1000) / 500,
    );

    // Assess: none lost, and none early by the receiver's clock, against dueAt or the planned time.
    expect(new Set(planned.map((task) => task.id)).size).toBe(TASKS);
    const offsets: number[] = [];
    const lateness: number[] = [];
    for (const task of planned) {
      const arrival = firstArrival.get(task.id);
      expect(arrival, task.id).toBeDefined();
      if (!arrival) continue;
      expect(arrival.dueAt).toBe(new Date(task.dueAtMs).toISOString());
      expect(task.firesAtMs).toBeGreaterThanOrEqual(task.dueAtMs);
      expect(task.firesAtMs).toBeLessThanOrEqual(task.dueAtMs + WINDOW_SECONDS * 1000);
      expect(arrival.atMs).toBeGreaterThanOrEqual(task.firesAtMs);
      offsets.push(arrival.atMs - task.dueAtMs);
      lateness.push(arrival.atMs - task.firesAtMs);
    }
    console.log(
      `window e2e: ${TASKS} tasks, arrivals from ${Math.min(...offsets)} to ${Math.max(...offsets)} ms after dueAt; lateness against firesAt p50 ${quantile(lateness, 0.5)} ms, p99 ${quantile(lateness, 0.99)} ms`,
    );
    // Spread over the window, judged on the planned fire times (the planner's work, which no load
    // changes; each arrival was checked above to come no earlier than its own): the first at the
    // window's start, the last near its end. How late arrivals are is the bench's to measure.
    const plannedOffsets = planned.map((task) => task.firesAtMs - task.dueAtMs);
    expect(Math.min(...plannedOffsets)).toBeLessThan(5000);
    expect(Math.max(...plannedOffsets)).toBeGreaterThan(50_000);
    // Spread evenly: a fair share of each 10 s slice of the window is 1/6, about 167 tasks.
    const slices = new Array<number>(WINDOW_SECONDS / 10).fill(0);
    for (const offset of plannedOffsets) slices[Math.min(slices.length - 1, Math.floor(offset / 10_000))]! += 1;
    for (const count of slices) {
      expect(count).toBeGreaterThanOrEqual(TASKS * 0.1);
      expect(count).toBeLessThanOrEqual(TASKS * 0.25);
    }
    // GET shows the planned fire time the 201 answered with and the window, and lateness measured
    // from the fire time: for the task planned latest, against dueAt it would be nearly 60 s.
    const latest = planned.reduce((a, b) => (b.firesAtMs - b.dueAtMs > a.firesAtMs - a.dueAtMs ? b : a));
    const shown = await fetch(`${timer.apiUrl}/v1/tasks/${latest.id}`, {
      headers: { authorization: `Bearer ${timer.apiKey}` },
    });
    const view = (await shown.json()) as { latenessMs: number };
    expect(view).toMatchObject({
      status: 'DELIVERED',
      dueAt: new Date(latest.dueAtMs).toISOString(),
      firesAt: new Date(latest.firesAtMs).toISOString(),
      window: { seconds: WINDOW_SECONDS },
    });
    expect(view.latenessMs).toBeGreaterThanOrEqual(0);
    expect(view.latenessMs).toBeLessThanOrEqual((firstArrival.get(latest.id)?.atMs ?? 0) - latest.firesAtMs);
  }, 900_000);
});
