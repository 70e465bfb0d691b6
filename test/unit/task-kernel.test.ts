import { describe, expect, it } from 'vitest';

import { taskNameTexts } from '../../functions/adapters/dynamo/table-schema.js';
import { secondOf } from '../../functions/core/kernel/clock.js';
import { newTaskId } from '../../functions/core/kernel/ids.js';
import {
  decodeDeliveryBody,
  deliveryMessageFor,
  encodeDeliveryBody,
  namedTaskId,
  newPendingTask,
  reminderMessage,
} from '../../functions/core/kernel/task-kernel.js';
import { occurrenceTaskId } from '../../functions/core/schedules/schedules.js';
import { DELIVERY_SETTINGS, TENANT_ID } from './fakes.js';
import { scheduleWorld, START, TARGET } from './schedule-world.js';

const PORTS = { ...DELIVERY_SETTINGS, lookaheadSeconds: 2 };
const CONTENT = { tenantId: TENANT_ID, target: TARGET, payloadJson: '{"n":1}', window: { seconds: 30 } };

describe('Function: namedTaskId', () => {
  // Pinned literally: a keyed retry after a deployment must find the task its first attempt made,
  // and a schedule's pending occurrence is stored by id, so these ids may never change.
  const AT_MS = 1_780_000_000_250;
  const naming = { shardCount: 16, nameTexts: taskNameTexts };

  it('derives the ids deployed tasks hold for a keyed submit, with and without a window', () => {
    // Act
    const name = { kind: 'keyed-submit', tenantId: 'acme', idempotencyKey: 'k-1' } as const;

    // Assess
    expect(namedTaskId(naming, name, AT_MS)).toBe('01KSR4927T0AQY2NNF8ZY7YDKQ');
    expect(namedTaskId(naming, name, AT_MS, { seconds: 60 })).toBe('01KSR497EN0AQY2NNF8ZY7YDKQ');
  });

  it('derives the ids deployed occurrences hold, with and without a window', () => {
    // Act
    const schedule = { id: 'sch-1', revision: 'r-1' };

    // Assess
    expect(occurrenceTaskId(schedule, AT_MS - 250, naming)).toBe('01KSR49200026W5GZNANQ8VW78');
    expect(occurrenceTaskId({ ...schedule, window: { seconds: 60 } }, AT_MS - 250, naming)).toBe(
      '01KSR49WG1026W5GZNANQ8VW78',
    );
  });
});

describe('Function: newPendingTask', () => {
  it('keeps dueAt within the window before the fire time its id fixed, and marks a task created close to it a late arrival', () => {
    // Prepare: an id an earlier attempt chose; the retry's delaySeconds resolved 42 s later than that attempt's.
    const id = newTaskId({ fireAtMs: START + 8_000, shard: 1 });

    // Act
    const early = newPendingTask(PORTS, id, { ...CONTENT, dueAtMs: START + 50_000 }, START - 3_600_000).task;
    const late = newPendingTask(PORTS, id, { ...CONTENT, dueAtMs: START + 1_000 }, START).task;

    // Assess
    expect(early).toMatchObject({
      id,
      status: 'PENDING',
      attempts: 0,
      fireAtMs: START + 8_000,
      dueAtMs: START + 8_000,
    });
    expect(early.lateArrival).toBeUndefined();
    expect(late).toMatchObject({ dueAtMs: START + 1_000, lateArrival: true });
  });
});

describe('Function: storeNewTasks', () => {
  it('indexes every task under the second it fires in, whichever way it was born', async () => {
    // Prepare
    const w = scheduleWorld();
    const windowed = (dueAtMs: number) => ({ dueAt: dueAtMs, window: { seconds: 60 }, target: TARGET, payload: {} });

    // Act: a submit, a batch, a reschedule's successor and a schedule's occurrences, all with windows.
    const submitted = await w.call('POST /v1/tasks', { body: windowed(START + 120_000) });
    await w.call('POST /v1/tasks/batch', { body: { tasks: [windowed(START + 200_000), windowed(START + 300_000)] } });
    const moved = await w.call('PATCH /v1/tasks/{id}', { id: String(submitted.json.id), body: { delaySeconds: 400 } });
    await w.call('POST /v1/schedules', { body: { rate: '1 minute', window: { seconds: 30 }, target: TARGET } });
    await w.runUntil(START + 151_000);

    // Assess
    expect(moved.statusCode).toBe(200);
    const tasks = [...w.taskStore.tasks.values()];
    expect(tasks.filter((task) => task.occurrence !== undefined).length).toBeGreaterThanOrEqual(3);
    expect(tasks.some((task) => secondOf(task.fireAtMs) !== secondOf(task.dueAtMs))).toBe(true);
    for (const task of tasks) expect(w.occurrences.occupancy.seconds, task.id).toContain(secondOf(task.fireAtMs));
  });
});

describe('Delivery message', () => {
  it('is sent to surface before its task goes, carrying a later not-before time only when there is one', () => {
    // Act
    const due = deliveryMessageFor({ id: 'T1', fireAtMs: START + 30_000 }, START);
    const held = deliveryMessageFor({ id: 'T1', fireAtMs: START + 30_000 }, START, START + 90_000);

    // Assess
    expect(due.notBeforeMs).toBeUndefined();
    expect(due.delaySeconds).toBeLessThanOrEqual(30);
    expect(held).toMatchObject({ notBeforeMs: START + 90_000 });
    expect(held.delaySeconds).toBeGreaterThan(due.delaySeconds);
  });

  it('takes the express queue when its task goes before the delivery queue could bring it, and only then', () => {
    // Act
    const scanned = deliveryMessageFor({ id: 'T1', fireAtMs: START + 2_000 }, START);
    const nextOccurrence = deliveryMessageFor({ id: 'T2', fireAtMs: START + 1_000 }, START);
    const overdue = deliveryMessageFor({ id: 'T3', fireAtMs: START - 5_000 }, START);
    const retryNow = reminderMessage('T4', START + 500, START);
    const retryLater = reminderMessage('T5', START + 30_000, START);

    // Assess
    expect([scanned, nextOccurrence, overdue, retryNow, retryLater].map((message) => message.express === true)).toEqual(
      [false, true, true, true, false],
    );
  });

  it('reads back what it writes, tells a redriven dead letter by its error, and refuses a body that names no task', () => {
    // Act
    const message = decodeDeliveryBody(encodeDeliveryBody({ id: 'T1', notBeforeMs: START }));
    const letter = decodeDeliveryBody(encodeDeliveryBody({ id: 'T2', attempt: 5, error: 'HTTP 500' }));

    // Assess
    expect(message).toEqual({ id: 'T1', notBeforeMs: START, redriven: false });
    expect(letter).toEqual({ id: 'T2', attempt: 5, error: 'HTTP 500', redriven: true });
    expect(decodeDeliveryBody('{"task":"T1"}')).toBeUndefined();
    expect(decodeDeliveryBody('not json')).toBeUndefined();
  });
});
