import { describe, expect, it } from 'vitest';

import type { Schedule } from '../../functions/core/schedules/schedules.js';
import { sparingly } from '../../lib/local/console/routes.js';
import {
  LATENESS_WINDOW_MS,
  schedulesView,
  TASKS_SHOWN,
  tasksView,
  UPCOMING_SECONDS,
} from '../../lib/local/console/views.js';
import { aTask } from './fakes.js';

const NOW_MS = Date.UTC(2026, 10, 21, 12, 0, 30, 400);
const WHOLE_TABLE = { itemsRead: 100, complete: true };

const delivered = (dueAtMs: number, latenessMs: number) =>
  aTask(dueAtMs, 0, { status: 'DELIVERED', attempts: 1, deliveredAtMs: dueAtMs + latenessMs, latenessMs });

describe('Function: tasksView', () => {
  it('counts tasks of every tenant by status, in the order a task goes through them', () => {
    // Prepare
    const tasks = [
      aTask(NOW_MS, 0, { tenantId: 'acme' }),
      aTask(NOW_MS, 0, { tenantId: 'globex' }),
      aTask(NOW_MS, 0, { status: 'FAILED' }),
      delivered(NOW_MS - 5000, 40),
    ];

    // Act
    const view = tasksView(tasks, NOW_MS, WHOLE_TABLE);

    // Assess
    expect(view.statusCounts).toEqual([
      { status: 'PENDING', count: 2 },
      { status: 'DELIVERING', count: 0 },
      { status: 'DELIVERED', count: 1 },
      { status: 'FAILED', count: 1 },
      { status: 'CANCELLED', count: 0 },
    ]);
    expect(new Set(view.tasks.map((task) => task.tenantId))).toEqual(new Set(['acme', 'globex']));
  });

  it('counts PENDING tasks per coming second from the start of the current one, and leaves out the rest', () => {
    // Prepare
    const currentSecondMs = Math.floor(NOW_MS / 1000) * 1000;
    const tasks = [
      aTask(currentSecondMs + 5),
      aTask(currentSecondMs + 2000),
      aTask(currentSecondMs + 2999),
      aTask(currentSecondMs + UPCOMING_SECONDS * 1000),
      aTask(currentSecondMs + 2000, 0, { status: 'CANCELLED' }),
      aTask(currentSecondMs - 1),
    ];

    // Act
    const { upcomingSeconds, upcomingMinutes } = tasksView(tasks, NOW_MS, WHOLE_TABLE);

    // Assess
    expect(upcomingSeconds.firstStartMs).toBe(currentSecondMs);
    expect(upcomingSeconds.counts).toHaveLength(UPCOMING_SECONDS);
    expect(upcomingSeconds.counts.slice(0, 4)).toEqual([1, 0, 2, 0]);
    expect(upcomingSeconds.counts.reduce((sum, count) => sum + count, 0)).toBe(3);
    expect(upcomingMinutes.firstStartMs).toBe(Date.UTC(2026, 10, 21, 12, 0, 0));
    expect(upcomingMinutes.counts.slice(0, 2)).toEqual([3, 1]);
  });

  it('shows the tasks due nearest to now, the nearest first, past or future', () => {
    // Prepare
    const far = Array.from({ length: TASKS_SHOWN }, (_, index) => aTask(NOW_MS + 3_600_000 + index));
    const near = [
      aTask(NOW_MS + 5000),
      aTask(NOW_MS - 1000),
      aTask(NOW_MS + 1000, 0, { bizId: '<b>x</b>' }),
      aTask(NOW_MS - 3000),
    ];

    // Act
    const view = tasksView([...far, ...near], NOW_MS, WHOLE_TABLE);

    // Assess
    expect(view.tasks).toHaveLength(TASKS_SHOWN);
    expect(view.tasks.slice(0, 4).map((task) => task.dueAtMs - NOW_MS)).toEqual([-1000, 1000, -3000, 5000]);
    expect(view.tasks[1]?.bizId).toBe('<b>x</b>');
    expect(view.tasks.slice(4).map((task) => task.dueAtMs)).toEqual(
      far.slice(0, TASKS_SHOWN - 4).map((t) => t.dueAtMs),
    );
  });

  it('lists deliveries newest first and charts only those of the lateness window, with their quantiles', () => {
    // Prepare
    const old = delivered(NOW_MS - LATENESS_WINDOW_MS - 5000, 900);
    const recent = [delivered(NOW_MS - 3000, 120), delivered(NOW_MS - 2000, 80), delivered(NOW_MS - 1000, 400)];

    // Act
    const view = tasksView([old, ...recent], NOW_MS, WHOLE_TABLE);

    // Assess
    expect(view.deliveries.map((task) => task.latenessMs)).toEqual([400, 80, 120, 900]);
    expect(view.lateness.points.map((point) => point.latenessMs)).toEqual([120, 80, 400]);
    expect(view.lateness).toMatchObject({ windowMs: LATENESS_WINDOW_MS, p50Ms: 120, p99Ms: 400 });
  });

  it('cuts long payloads to a preview and names each kind of target', () => {
    // Prepare
    const tasks = [
      aTask(NOW_MS, 0, { payloadJson: JSON.stringify({ text: 'x'.repeat(500) }) }),
      aTask(NOW_MS + 1, 0, { target: { type: 'sqs', queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q' } }),
      aTask(NOW_MS + 2, 0, { target: { type: 'eventbridge', eventBusName: 'orders' } }),
    ];

    // Act
    const [http, sqs, eventBridge] = tasksView(tasks, NOW_MS, WHOLE_TABLE).tasks;

    // Assess
    expect(http?.payloadPreview.length).toBeLessThan(130);
    expect(http?.payloadPreview.endsWith('…')).toBe(true);
    expect(http?.target).toBe('https://hooks.example.com/timer');
    expect(sqs?.target).toBe('SQS https://sqs.eu-west-1.amazonaws.com/1/q');
    expect(eventBridge?.target).toBe('EventBridge bus orders');
  });
});

describe('Function: sparingly', () => {
  it('answers from the last read until that read took at most the given share of the time since it began', async () => {
    // Prepare: each read takes 100 ms of a clock the test moves.
    let nowMs = 0;
    let reads = 0;
    const read = sparingly(
      async () => {
        nowMs += 100;
        return ++reads;
      },
      0.25,
      () => nowMs,
    );

    // Act
    const first = await read();
    nowMs = 399;
    const cached = await read();
    nowMs = 400;
    const fresh = await read();

    // Assess
    expect([first, cached, fresh]).toEqual([1, 1, 2]);
  });

  it('lets callers that come while a read runs share it', async () => {
    // Prepare
    let reads = 0;
    const read = sparingly(async () => ++reads, 0.25);

    // Act
    const results = await Promise.all([read(), read(), read()]);

    // Assess
    expect(results).toEqual([1, 1, 1]);
  });
});

describe('Function: schedulesView', () => {
  const schedule = (id: string, overrides: Partial<Schedule>): Schedule => ({
    id,
    tenantId: 'acme',
    rate: '1 hour',
    timezone: 'UTC',
    anchorMs: NOW_MS,
    target: { type: 'http', url: 'https://hooks.example.com/x' },
    payloadJson: 'null',
    catchUp: 'fire-once',
    paused: false,
    revision: 'r0',
    createdAtMs: NOW_MS,
    updatedAtMs: NOW_MS,
    ...overrides,
  });

  it("shows each schedule's next occurrences from its pending one, soonest first, paused and ended ones last", () => {
    // Prepare
    const hourly = schedule('sch_hourly', { next: { taskId: 't1', atMs: NOW_MS + 3_600_000 } });
    const daily = schedule('sch_daily', {
      rate: undefined,
      cron: '30 2 * * *',
      timezone: 'Europe/Berlin',
      next: { taskId: 't2', atMs: Date.parse('2026-11-22T01:30:00Z') },
    });
    const paused = schedule('sch_paused', { paused: true });

    // Act
    const view = schedulesView([paused, daily, hourly], NOW_MS);

    // Assess
    expect(view.schedules.map((shown) => shown.id)).toEqual(['sch_hourly', 'sch_daily', 'sch_paused']);
    expect(view.schedules[0]).toMatchObject({ when: 'rate 1 hour', target: 'https://hooks.example.com/x' });
    expect(view.schedules[0]?.nextOccurrencesMs.map((ms) => (ms - NOW_MS) / 3_600_000)).toEqual([1, 2, 3, 4, 5]);
    expect(view.schedules[1]?.nextOccurrencesMs.slice(0, 2).map((ms) => new Date(ms).toISOString())).toEqual([
      '2026-11-22T01:30:00.000Z',
      '2026-11-23T01:30:00.000Z',
    ]);
    expect(view.schedules[2]?.nextOccurrencesMs).toEqual([]);
  });
});
