import { describe, expect, it, vi } from 'vitest';

import { taskNameTexts } from '../../functions/adapters/dynamo/table-schema.js';
import { deliverTask, type Notification } from '../../functions/core/deliver/deliver.js';
import { parseTaskId } from '../../functions/core/kernel/ids.js';
import type { Task } from '../../functions/core/kernel/task.js';
import { MISSED_AFTER_MS } from '../../functions/core/schedules/recurrence.js';
import {
  changeSchedule,
  createSchedule,
  deleteSchedule,
  occurrenceTaskId,
  upcomingOccurrences,
} from '../../functions/core/schedules/schedules.js';
import { DELIVERY_SETTINGS, TENANT_ID } from './fakes.js';
import { scheduleWorld as world, START, TARGET } from './schedule-world.js';

/** How deployed occurrences name their ids, over 16 shards. */
const NAMING = { shardCount: 16, nameTexts: taskNameTexts };

const occurrencesOf = (calls: Array<{ notification: Notification }>) => calls.map((c) => c.notification.occurrence);

describe('Function: createSchedule', () => {
  it('stores the first occurrence as a task before the schedule, and shows the coming occurrences', async () => {
    // Prepare
    const w = world();

    // Act
    const schedule = await w.create({ bizId: 'auction-7', payload: { lot: 7 } });

    // Assess
    expect(schedule.next?.atMs).toBe(START + 5000);
    expect(w.taskStore.tasks.get(schedule.next?.taskId ?? '')).toMatchObject({
      status: 'PENDING',
      dueAtMs: START + 5000,
      bizId: 'auction-7',
      payloadJson: '{"lot":7}',
      occurrence: { scheduleId: schedule.id, revision: schedule.revision, atMs: START + 5000 },
    });
    expect(upcomingOccurrences(schedule).map((ms) => ms - START)).toEqual([5000, 10_000, 15_000, 20_000, 25_000]);
  });

  it('answers a retry with the same idempotency key and body with the same schedule and the same first task', async () => {
    // Prepare
    const w = world();
    const first = await w.create({ idempotencyKey: 'k-1' });
    w.clock.advance(1700);

    // Act
    const again = await createSchedule(w.admin, TENANT_ID, {
      rate: '5 seconds',
      target: TARGET,
      idempotencyKey: 'k-1',
    });
    const other = await createSchedule(w.admin, TENANT_ID, {
      rate: '6 seconds',
      target: TARGET,
      idempotencyKey: 'k-1',
    });

    // Assess
    expect(again).toMatchObject({ kind: 'replayed', schedule: { id: first.id, next: first.next } });
    expect(other).toEqual({ kind: 'conflict', scheduleId: first.id });
    expect(w.taskStore.tasks.size).toBe(1);
  });

  it('rebuilds the same first occurrence when a keyed create died between its task and its schedule', async () => {
    // Prepare: the schedule write fails once, after the first occurrence was stored.
    const w = world();
    const create = w.scheduleStore.create.bind(w.scheduleStore);
    let failures = 1;
    w.scheduleStore.create = async (schedule) => {
      if (failures-- > 0) throw new Error('crash before the schedule was written');
      return create(schedule);
    };
    await expect(w.create({ idempotencyKey: 'k-2' })).rejects.toThrow('crash');
    w.clock.advance(2300);

    // Act
    const retried = await w.create({ idempotencyKey: 'k-2' });

    // Assess: one occurrence task, the one the schedule names, due where the first request put it.
    expect([...w.taskStore.tasks.keys()]).toEqual([retried.next?.taskId]);
    expect(retried.next?.atMs).toBe(START + 5000);
  });

  it('refuses a tenant its 1,001st schedule', async () => {
    // Prepare
    const w = world();
    const one = await w.create();
    for (let index = 1; index < 1000; index++) {
      await w.scheduleStore.create({ ...one, id: `sch_${String(index).padStart(20, '0')}` });
    }

    // Act
    const outcome = await createSchedule(w.admin, TENANT_ID, { rate: '5 seconds', target: TARGET });

    // Assess
    expect(outcome).toEqual({ kind: 'limit' });
  });
});

describe('Occurrence chain: deliverTask of an occurrence', () => {
  it('stores the successor before calling the target, and fires every occurrence once, on time', async () => {
    // Prepare
    const w = world();
    const schedule = await w.create();
    const successorsAtCall: boolean[] = [];
    const dispatch = w.delivery.targets.dispatch.bind(w.delivery.targets);
    w.delivery.targets.dispatch = async (target, notification, sender) => {
      const next = w.stored(schedule.id)?.next;
      successorsAtCall.push(next !== undefined && w.taskStore.tasks.has(next.taskId));
      return dispatch(target, notification, sender);
    };

    // Act
    for (let round = 0; round < 6; round++) expect((await w.fireNext(schedule.id)).kind).toBe('delivered');

    // Assess
    expect(successorsAtCall).toEqual([true, true, true, true, true, true]);
    expect(w.calls.map((c) => c.atMs - START)).toEqual([5000, 10_000, 15_000, 20_000, 25_000, 30_000]);
    expect(occurrencesOf(w.calls)).toEqual(
      [5, 10, 15, 20, 25, 30].map((s) => new Date(START + s * 1000).toISOString()),
    );
    expect(w.calls.every((c) => c.notification.scheduleId === schedule.id)).toBe(true);
    expect(w.pending(schedule.id)).toHaveLength(1);
  });

  it('leaves no gap and no double when it crashes after advancing the schedule but before storing the successor', async () => {
    // Prepare: the successor's write fails once.
    const w = world();
    const schedule = await w.create();
    const first = w.stored(schedule.id)?.next?.taskId ?? '';
    const create = w.taskStore.createUnlessStored.bind(w.taskStore);
    let failures = 1;
    w.taskStore.createUnlessStored = async (task) => {
      if (failures-- > 0) throw new Error('crash');
      return create(task);
    };
    w.clock.set(START + 5000);
    await expect(deliverTask(w.delivery, first)).rejects.toThrow('crash');
    expect(w.calls).toHaveLength(0);

    // Act: SQS brings the message back once the lease has lapsed.
    w.clock.advance(DELIVERY_SETTINGS.leaseMs + 1);
    const outcome = await deliverTask(w.delivery, first);

    // Assess: this occurrence fires, its successor (chosen once) is stored once.
    expect(outcome.kind).toBe('delivered');
    expect(w.scheduleStore.advances).toBe(1);
    expect(w.pending(schedule.id).map((task) => task.dueAtMs - START)).toEqual([10_000]);
    expect((await w.fireNext(schedule.id)).kind).toBe('delivered');
    expect(occurrencesOf(w.calls).map((o) => Date.parse(o ?? '') - START)).toEqual([5000, 10_000]);
  });

  it('makes no second successor when the call succeeded but its outcome was never recorded', async () => {
    // Prepare: the write of the first attempt's outcome fails, as if the callback died after the call.
    const w = world();
    const schedule = await w.create();
    const first = w.stored(schedule.id)?.next?.taskId ?? '';
    const finish = w.taskStore.finishDelivery.bind(w.taskStore);
    let failures = 1;
    w.taskStore.finishDelivery = async (key, attempt, outcome) => {
      if (failures-- > 0) throw new Error('crash');
      return finish(key, attempt, outcome);
    };
    w.clock.set(START + 5000);
    await expect(deliverTask(w.delivery, first)).rejects.toThrow('crash');
    // Meanwhile the successor comes due and is delivered, moving the chain on again.
    expect((await w.fireNext(schedule.id)).kind).toBe('delivered');

    // Act: the first occurrence's message comes back after its lease.
    w.clock.advance(DELIVERY_SETTINGS.leaseMs);
    const outcome = await deliverTask(w.delivery, first);

    // Assess: it is retried (at-least-once, same task id) and makes no further occurrence.
    expect(outcome.kind).toBe('delivered');
    const fired = occurrencesOf(w.calls).map((o) => Date.parse(o ?? '') - START);
    expect(fired).toEqual([5000, 10_000, 5000]);
    expect(new Set(w.calls.map((c) => c.notification.id)).size).toBe(2);
    expect(w.pending(schedule.id).map((task) => task.dueAtMs - START)).toEqual([15_000]);
  });

  it('gives one successor however often two copies of the message race', async () => {
    // Prepare
    const w = world();
    const schedule = await w.create();
    const first = w.stored(schedule.id)?.next?.taskId ?? '';
    w.clock.set(START + 5000);

    // Act
    const outcomes = await Promise.all([deliverTask(w.delivery, first), deliverTask(w.delivery, first)]);

    // Assess: one took the lease and fired; the chain moved once.
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['delivered', 'skipped']);
    expect(w.scheduleStore.advances).toBe(1);
    expect(w.pending(schedule.id)).toHaveLength(1);
  });

  it('skips, and does not chain, an occurrence of a paused schedule; resuming starts a new chain', async () => {
    // Prepare
    const w = world();
    const schedule = await w.create();
    const first = w.stored(schedule.id)?.next?.taskId ?? '';
    // A second on: a pause in the same instant as the create could be the create still landing.
    w.clock.advance(1000);
    const paused = await changeSchedule(w.admin, TENANT_ID, schedule.id, { paused: true });
    expect(paused.kind).toBe('changed');
    // The change cancels the pending occurrence; put it back as if the cancel had been lost.
    const cancelled = w.taskStore.tasks.get(first) as Task;
    w.taskStore.tasks.set(first, { ...cancelled, status: 'PENDING' });

    // Act
    w.clock.set(START + 5000);
    const outcome = await deliverTask(w.delivery, first);

    // Assess
    expect(outcome).toEqual({ kind: 'skipped', reason: 'schedule-changed' });
    expect(w.calls).toHaveLength(0);
    expect(w.pending(schedule.id)).toHaveLength(0);
    expect(w.taskStore.tasks.get(first)?.status).toBe('CANCELLED');

    const resumed = await changeSchedule(w.admin, TENANT_ID, schedule.id, { paused: false });
    expect(resumed.kind === 'changed' && resumed.schedule.next?.atMs).toBe(START + 10_000);
    expect((await w.fireNext(schedule.id)).kind).toBe('delivered');
  });

  it('never fires the next occurrence of a deleted schedule', async () => {
    // Prepare
    const w = world();
    const schedule = await w.create();
    const first = w.stored(schedule.id)?.next?.taskId ?? '';

    // Act
    expect(await deleteSchedule(w.admin, TENANT_ID, schedule.id)).toMatchObject({ id: schedule.id });
    w.clock.set(START + 5000);
    const outcome = await deliverTask(w.delivery, first);

    // Assess
    expect(outcome.kind).toBe('skipped');
    expect(w.calls).toHaveLength(0);
    expect(w.taskStore.tasks.get(first)?.status).toBe('CANCELLED');
  });

  it('fires an occurrence once when a PATCH races its attempt, with the payload of the revision the chain reached it under', async () => {
    // Prepare: a PATCH reads the schedule before its first occurrence is due ...
    const w = world();
    const schedule = await w.create({ rate: undefined, cron: '*/5 * * * * *', payload: { v: 1 } });
    w.clock.set(START + 4000);
    const replace = w.scheduleStore.replace.bind(w.scheduleStore);
    let raced = false;
    w.scheduleStore.replace = async (...args) => {
      // ... and, before it writes, the occurrence's leased attempt advances the chain and fires.
      if (!raced) {
        raced = true;
        expect((await w.fireNext(schedule.id)).kind).toBe('delivered');
      }
      return replace(...args);
    };

    // Act
    const changed = await changeSchedule(w.admin, TENANT_ID, schedule.id, { payload: { v: 2 } });
    await w.runUntil(START + 21_000);

    // Assess: every occurrence time fired one task, the first under the revision that reached it.
    expect(changed.kind).toBe('changed');
    expect(w.calls.map((c) => [Date.parse(c.notification.occurrence ?? '') - START, c.notification.payload])).toEqual([
      [5000, { v: 1 }],
      [10_000, { v: 2 }],
      [15_000, { v: 2 }],
      [20_000, { v: 2 }],
    ]);
    expect(w.pending(schedule.id)).toHaveLength(1);
  });

  it('does not fire an occurrence time again when the change comes from a clock behind the callback that fired it', async () => {
    // Prepare: the first occurrence fires and advances the chain ...
    const w = world();
    const schedule = await w.create({ rate: undefined, cron: '*/5 * * * * *', payload: { v: 1 } });
    expect((await w.fireNext(schedule.id)).kind).toBe('delivered');
    // ... and the api, whose clock runs 200 ms behind the callback's (within the skew bound), changes it.
    w.clock.set(START + 4800);

    // Act
    const changed = await changeSchedule(w.admin, TENANT_ID, schedule.id, { payload: { v: 2 } });
    await w.runUntil(START + 16_000);

    // Assess
    expect(changed.kind).toBe('changed');
    expect(w.calls.map((c) => [Date.parse(c.notification.occurrence ?? '') - START, c.notification.payload])).toEqual([
      [5000, { v: 1 }],
      [10_000, { v: 2 }],
      [15_000, { v: 2 }],
    ]);
  });

  it('does not fire an occurrence time again when a second change comes from a clock behind the callback that fired it', async () => {
    // Prepare: the first occurrence fires, a change from an on-time clock replaces the chain ...
    const w = world();
    const schedule = await w.create({ rate: undefined, cron: '*/5 * * * * *', payload: { v: 1 } });
    expect((await w.fireNext(schedule.id)).kind).toBe('delivered');
    expect((await changeSchedule(w.admin, TENANT_ID, schedule.id, { payload: { v: 2 } })).kind).toBe('changed');
    // ... and another api, whose clock runs 200 ms behind the callback's, changes it again.
    w.clock.set(START + 4800);

    // Act
    const changed = await changeSchedule(w.admin, TENANT_ID, schedule.id, { payload: { v: 3 } });
    await w.runUntil(START + 16_000);

    // Assess
    expect(changed.kind).toBe('changed');
    expect(w.calls.map((c) => [Date.parse(c.notification.occurrence ?? '') - START, c.notification.payload])).toEqual([
      [5000, { v: 1 }],
      [10_000, { v: 3 }],
      [15_000, { v: 3 }],
    ]);
  });

  it('fires an occurrence of a changed schedule only under its new revision', async () => {
    // Prepare
    const w = world();
    const schedule = await w.create();
    const old = w.stored(schedule.id)?.next?.taskId ?? '';
    w.clock.advance(1000);

    // Act
    const changed = await changeSchedule(w.admin, TENANT_ID, schedule.id, { rate: '1 minute', payload: { v: 2 } });

    // Assess
    expect(changed.kind).toBe('changed');
    expect(w.taskStore.tasks.get(old)?.status).toBe('CANCELLED');
    expect((await w.fireNext(schedule.id)).kind).toBe('delivered');
    expect(w.calls.map((c) => [c.atMs - START, c.notification.payload])).toEqual([[61_000, { v: 2 }]]);
  });

  it('keeps the new chain of a change whose write landed though its answer was lost', async () => {
    // Prepare: the replace lands, its answer is lost, and the SDK's resend fails on the new revision.
    const w = world();
    const schedule = await w.create();
    const old = w.stored(schedule.id)?.next?.taskId ?? '';
    w.clock.advance(1000);
    const replace = w.scheduleStore.replace.bind(w.scheduleStore);
    vi.spyOn(w.scheduleStore, 'replace').mockImplementationOnce(async (...args) => {
      await replace(...args);
      return replace(...args);
    });

    // Act
    const changed = await changeSchedule(w.admin, TENANT_ID, schedule.id, { rate: '1 minute', payload: { v: 2 } });

    // Assess: answered as made, the old occurrence cancelled and the new one left to fire.
    expect(changed.kind).toBe('changed');
    expect(w.taskStore.tasks.get(old)?.status).toBe('CANCELLED');
    expect((await w.fireNext(schedule.id)).kind).toBe('delivered');
    expect(w.calls.map((c) => [c.atMs - START, c.notification.payload])).toEqual([[61_000, { v: 2 }]]);
  });

  it('waits, rather than cancels, an occurrence due before the create that stored it has written its schedule', async () => {
    // Prepare: the create stores its first occurrence (due in 1 s), and its schedule write lands
    // only after that occurrence's message has come and gone.
    const w = world();
    const storeSchedule = w.scheduleStore.create.bind(w.scheduleStore);
    let early: Awaited<ReturnType<typeof deliverTask>> | undefined;
    w.scheduleStore.create = async (schedule) => {
      const first = schedule.next?.taskId ?? '';
      w.clock.set(schedule.next?.atMs ?? START);
      early = await deliverTask(w.delivery, first);
      return storeSchedule(schedule);
    };

    // Act
    const schedule = await w.create({ rate: '1 second' });
    const later = await w.fireNext(schedule.id);

    // Assess: the early message was sent back, and the occurrence fired once its schedule was there.
    expect(early).toEqual({ kind: 'deferred', retryAfterSeconds: DELIVERY_SETTINGS.backoffBaseSeconds });
    expect(later.kind).toBe('delivered');
    expect(w.calls).toHaveLength(1);
  });

  it('waits, rather than cancels, an occurrence due before the change that stored it has written its schedule', async () => {
    // Prepare: a paused schedule is resumed; the resume stores its first occurrence (due in under
    // a second), and its schedule write lands only after that occurrence's message came.
    const w = world();
    const schedule = await w.create({ rate: '1 second' });
    w.clock.advance(1000);
    await changeSchedule(w.admin, TENANT_ID, schedule.id, { paused: true });
    const replace = w.scheduleStore.replace.bind(w.scheduleStore);
    let early: Awaited<ReturnType<typeof deliverTask>> | undefined;
    w.scheduleStore.replace = async (changed, readAt) => {
      const first = changed.next?.taskId ?? '';
      w.clock.set(changed.next?.atMs ?? START);
      early = await deliverTask(w.delivery, first);
      return replace(changed, readAt);
    };

    // Act
    const resumed = await changeSchedule(w.admin, TENANT_ID, schedule.id, { paused: false });
    const later = await w.fireNext(schedule.id);

    // Assess
    expect(resumed.kind).toBe('changed');
    expect(early).toEqual({ kind: 'deferred', retryAfterSeconds: DELIVERY_SETTINGS.backoffBaseSeconds });
    expect(later.kind).toBe('delivered');
    expect(w.calls).toHaveLength(1);
  });

  it('cancels an occurrence whose schedule is gone once no create that stored it can still be running', async () => {
    // Prepare
    const w = world();
    const schedule = await w.create({ rate: '1 minute' });
    const first = w.stored(schedule.id)?.next?.taskId ?? '';
    w.scheduleStore.schedules.delete(`${TENANT_ID}#${schedule.id}`);

    // Act: at its fire time, a minute after the create.
    w.clock.set(parseTaskId(first, DELIVERY_SETTINGS.shardCount)?.fireAtMs ?? START);
    const outcome = await deliverTask(w.delivery, first);

    // Assess
    expect(outcome).toEqual({ kind: 'skipped', reason: 'schedule-changed' });
    expect(w.taskStore.tasks.get(first)?.status).toBe('CANCELLED');
    expect(w.calls).toHaveLength(0);
  });

  it('after an outage fires one late occurrence and resumes on time (catchUp fire-once, the default)', async () => {
    // Prepare
    const w = world();
    const schedule = await w.create();
    // Long enough that the occurrence after the pending one was missed too.
    const outageEnd = START + 10_000 + MISSED_AFTER_MS + 2500;

    // Act
    w.clock.set(outageEnd);
    await w.fireNext(schedule.id);
    await w.fireNext(schedule.id);

    // Assess
    expect(w.calls.map((c) => Date.parse(c.notification.occurrence ?? '') - START)).toEqual([
      5000,
      10_000 + MISSED_AFTER_MS + 5000,
    ]);
    expect(w.calls.map((c) => c.atMs - START)).toEqual([outageEnd - START, 10_000 + MISSED_AFTER_MS + 5000]);
  });

  it('after an outage fires none of the missed occurrences with catchUp skip, and resumes on time', async () => {
    // Prepare
    const w = world();
    const schedule = await w.create({ catchUp: 'skip' });
    const first = w.stored(schedule.id)?.next?.taskId ?? '';

    // Act
    w.clock.set(START + 10_000 + MISSED_AFTER_MS + 2500);
    const outcome = await deliverTask(w.delivery, first);
    await w.fireNext(schedule.id);

    // Assess
    expect(outcome).toEqual({ kind: 'skipped', reason: 'occurrence-missed' });
    expect(w.calls.map((c) => Date.parse(c.notification.occurrence ?? '') - START)).toEqual([
      10_000 + MISSED_AFTER_MS + 5000,
    ]);
  });

  it('ends the chain at endAt', async () => {
    // Prepare
    const w = world();
    const schedule = await w.create({ endAt: START + 10_000 });

    // Act
    await w.fireNext(schedule.id);
    await w.fireNext(schedule.id);

    // Assess
    expect(w.calls).toHaveLength(2);
    expect(w.stored(schedule.id)?.next).toBeUndefined();
    expect(w.pending(schedule.id)).toHaveLength(0);
  });

  it('chains a cron schedule across spring-forward in Berlin at the first valid instant, with the injected clock', async () => {
    // Prepare: 02:30 Berlin daily; 2026-03-29 has no 02:30.
    const w = world();
    w.clock.set(Date.parse('2026-03-27T12:00:00Z'));
    const schedule = await w.create({ rate: undefined, cron: '30 2 * * *', timezone: 'Europe/Berlin' });

    // Act
    for (let day = 0; day < 3; day++) await w.fireNext(schedule.id);

    // Assess
    expect(w.calls.map((c) => c.notification.occurrence)).toEqual([
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z',
      '2026-03-30T00:30:00.000Z',
    ]);
  });

  it('derives the occurrence id from schedule, revision and time alone', () => {
    const a = occurrenceTaskId({ id: 'sch_a', revision: 'r0' }, START, NAMING);
    expect(occurrenceTaskId({ id: 'sch_a', revision: 'r0' }, START, NAMING)).toBe(a);
    expect(occurrenceTaskId({ id: 'sch_a', revision: 'r1' }, START, NAMING)).not.toBe(a);
    expect(occurrenceTaskId({ id: 'sch_b', revision: 'r0' }, START, NAMING)).not.toBe(a);
    expect(occurrenceTaskId({ id: 'sch_a', revision: 'r0' }, START + 1000, NAMING)).not.toBe(a);
  });
});

describe('Schedules: the flexible window', () => {
  it('plans each occurrence within [occurrence, occurrence + window], the same time however often it is named', () => {
    // Act
    const ids = Array.from({ length: 600 }, (_, index) =>
      occurrenceTaskId({ id: `sch_${index}`, revision: 'r0', window: { seconds: 60 } }, START, NAMING),
    );
    const again = occurrenceTaskId({ id: 'sch_0', revision: 'r0', window: { seconds: 60 } }, START, NAMING);
    const fireTimes = ids.map((id) => parseTaskId(id, 16)?.fireAtMs ?? Number.NaN);

    // Assess: never early, never past the window, and 600 schedules' occurrences spread over it.
    expect(again).toBe(ids[0]);
    for (const fireAtMs of fireTimes) {
      expect(fireAtMs).toBeGreaterThanOrEqual(START);
      expect(fireAtMs).toBeLessThanOrEqual(START + 60_000);
    }
    for (let slice = 0; slice < 6; slice++) {
      const inSlice = fireTimes.filter((ms) => ms >= START + slice * 10_000 && ms < START + (slice + 1) * 10_000);
      expect(inSlice.length).toBeGreaterThan(600 * 0.1);
      expect(inSlice.length).toBeLessThan(600 * 0.25);
    }
  });

  it("fires an occurrence at its planned time, never before it, with the occurrence's own time as dueAt", async () => {
    // Prepare
    const { create, stored, fireNext, calls } = world();
    const schedule = await create({ rate: '1 minute', window: { seconds: 30 } });
    const next = stored(schedule.id)?.next;
    const firesAt = parseTaskId(next?.taskId ?? '', 16)?.fireAtMs ?? 0;

    // Act
    const outcome = await fireNext(schedule.id);

    // Assess
    expect(outcome).toMatchObject({ kind: 'delivered' });
    expect(calls[0]?.atMs).toBeGreaterThanOrEqual(firesAt);
    expect(firesAt).toBeGreaterThanOrEqual(next?.atMs ?? Number.POSITIVE_INFINITY);
    expect(calls[0]?.notification.dueAt).toBe(new Date(next?.atMs ?? 0).toISOString());
  });

  it('fires every occurrence of a windowed schedule through the scan, once, within its window', async () => {
    // Prepare
    const { create, runUntil, calls } = world();
    await create({ rate: '1 minute', window: { seconds: 30 } });

    // Act: the scanner finds occurrences only through the occupancy index.
    // The third occurrence may fire as late as 30 s after its time.
    await runUntil(START + 211_000);

    // Assess
    const fired = calls.map(({ atMs, notification }) => ({
      atMs,
      occurrenceMs: Date.parse(notification.occurrence ?? ''),
    }));
    expect(fired.map(({ occurrenceMs }) => occurrenceMs - START)).toEqual([60_000, 120_000, 180_000]);
    for (const { atMs, occurrenceMs } of fired) {
      expect(atMs).toBeGreaterThanOrEqual(occurrenceMs);
      // The window, plus the second the scan loop steps by.
      expect(atMs).toBeLessThanOrEqual(occurrenceMs + 31_000);
    }
  });

  it('refuses a window as long as the time between occurrences, naming window.seconds, and writes nothing', async () => {
    // Prepare
    const { admin, taskStore, scheduleStore } = world();

    // Act
    const outcome = await createSchedule(admin, TENANT_ID, {
      rate: '30 seconds',
      target: TARGET,
      window: { seconds: 30 },
    });

    // Assess
    expect(outcome).toMatchObject({ kind: 'invalid', errors: [{ path: 'window.seconds' }] });
    expect(taskStore.tasks.size).toBe(0);
    expect(scheduleStore.schedules.size).toBe(0);
  });

  it('takes the window away with window: null, for the occurrences not yet due', async () => {
    // Prepare
    const { admin, create, stored } = world();
    const schedule = await create({ rate: '1 minute', window: { seconds: 30 } });

    // Act
    const outcome = await changeSchedule(admin, TENANT_ID, schedule.id, { window: null });

    // Assess: the new pending occurrence fires at its own time.
    expect(outcome).toMatchObject({ kind: 'changed' });
    const next = stored(schedule.id)?.next;
    expect(stored(schedule.id)?.window).toBeUndefined();
    expect(parseTaskId(next?.taskId ?? '', 16)?.fireAtMs).toBe(next?.atMs);
  });
});
