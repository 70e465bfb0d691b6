import { describe, expect, it, vi } from 'vitest';

import { taskNameTexts } from '../../functions/adapters/dynamo/table-schema.js';
import { claimableThrough, CLOCK_SKEW_MS, minuteOf, secondOf } from '../../functions/core/kernel/clock.js';
import { parseTaskId } from '../../functions/core/kernel/ids.js';
import { type Task, UNLEASED_CANCEL_MARGIN_MS } from '../../functions/core/kernel/task.js';
import { isLateArrival } from '../../functions/core/kernel/task-kernel.js';
import { newPlacement } from '../../functions/core/kernel/task-kernel.js';
import { applyBizType } from '../../functions/core/submit/biz-types.js';
import { rescheduleTask } from '../../functions/core/submit/reschedule.js';
import { parseTaskRequest } from '../../functions/core/submit/schemas.js';
import { cancelTask, type SubmitOutcome, type SubmitPorts, submitTasks } from '../../functions/core/submit/submit.js';
import {
  aTask,
  FakeClockStore,
  FakeDeliveryQueue,
  FakeIdempotencyStore,
  FakeOccupancyIndex,
  FakeTaskStore,
  FakeTickQueue,
  ManualClock,
  TENANT_ID,
} from './fakes.js';

const NOW_SECOND = 1_790_000_000;
const NOW_MS = NOW_SECOND * 1000 + 400;

function schedulePorts(options: { cursor?: number } = {}) {
  return {
    taskStore: new FakeTaskStore(),
    clockStore: new FakeClockStore({ cursor: options.cursor ?? NOW_SECOND + 3, startedAt: NOW_SECOND - 60 }),
    idempotencyStore: new FakeIdempotencyStore(),
    occupancy: new FakeOccupancyIndex(),
    deliveryQueue: new FakeDeliveryQueue(),
    tickQueue: new FakeTickQueue(),
    clock: new ManualClock(NOW_MS),
    placement: newPlacement(),
    bucketCount: 1000,
    shardCount: 4,
    nameTexts: taskNameTexts,
    retentionDays: 30,
    lookaheadSeconds: 2,
  } satisfies SubmitPorts;
}

/** A validated request as the api would pass it on. */
function request(body: Record<string, unknown>) {
  const parsed = parseTaskRequest(
    { target: { type: 'http', url: 'https://hooks.example.com/t' }, payload: { n: 1 }, ...body },
    { allowInsecureTargets: false, nowMs: NOW_MS },
  );
  const task = parsed.ok ? applyBizType(parsed.value, undefined) : parsed;
  if (!task.ok) throw new Error(JSON.stringify(task.errors));
  return task.value;
}

const idOf = (outcome: SubmitOutcome | undefined) =>
  outcome && (outcome.kind === 'created' || outcome.kind === 'replayed') ? outcome.task.id : outcome?.taskId;

describe('Function: submitTasks', () => {
  it('gives a retry with the same idempotency key and request the original task, and stores one task', async () => {
    // Prepare
    const ports = schedulePorts();
    const first = request({ delaySeconds: 60, idempotencyKey: 'order-1' });

    // Act: the retry comes 5 s later, so delaySeconds resolves to a different instant.
    const created = await submitTasks(ports, TENANT_ID, [first]);
    ports.clock.advance(5000);
    const retried = await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 60, idempotencyKey: 'order-1' })]);

    // Assess
    expect(created.outcomes[0]?.kind).toBe('created');
    expect(retried.outcomes[0]).toMatchObject({ kind: 'replayed' });
    expect(idOf(retried.outcomes[0])).toBe(idOf(created.outcomes[0]));
    expect(ports.taskStore.tasks.size).toBe(1);
  });

  it("keeps idempotency keys per tenant: another tenant's identical key makes its own task", async () => {
    // Prepare
    const ports = schedulePorts();
    const body = { delaySeconds: 60, idempotencyKey: 'order-1' };

    // Act
    const ours = await submitTasks(ports, TENANT_ID, [request(body)]);
    const theirs = await submitTasks(ports, 'globex', [request(body)]);

    // Assess
    expect(theirs.outcomes[0]?.kind).toBe('created');
    expect(idOf(theirs.outcomes[0])).not.toBe(idOf(ours.outcomes[0]));
    expect([...ports.taskStore.tasks.values()].map((task) => task.tenantId).sort()).toEqual(['acme', 'globex']);
  });

  it('refuses an idempotency key reused for a different request, naming the task it made', async () => {
    // Prepare
    const ports = schedulePorts();
    const created = await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 60, idempotencyKey: 'order-1' })]);

    // Act
    const reused = await submitTasks(ports, TENANT_ID, [
      request({ delaySeconds: 60, idempotencyKey: 'order-1', payload: { n: 2 } }),
    ]);

    // Assess
    expect(reused.outcomes[0]).toEqual({ kind: 'conflict', taskId: idOf(created.outcomes[0]) });
    expect(ports.taskStore.tasks.size).toBe(1);
  });

  it("ticks a second it was first to occupy even when it enqueues its own task there: another submit's task in that second waits for the scan", async () => {
    // Prepare: the minute is planned; submit A occupies second T first, and its task write takes a second.
    const ports = schedulePorts();
    const dueSecond = NOW_SECOND + 4;
    await ports.occupancy.plan(minuteOf(dueSecond));
    const create = ports.taskStore.create.bind(ports.taskStore);
    let writing!: () => void;
    const aWrites = new Promise<void>((resolve) => (writing = resolve));
    let finishWrite!: () => void;
    const slowWrite = new Promise<void>((resolve) => (finishWrite = resolve));
    vi.spyOn(ports.taskStore, 'create').mockImplementationOnce(async (...args) => {
      writing();
      await slowWrite;
      return create(...args);
    });
    const submitA = submitTasks(ports, TENANT_ID, [request({ dueAt: dueSecond * 1000 })]);
    await aWrites;

    // Act: B comes while A writes: T is no longer new to its minute, and B hands off too early to
    // enqueue a task due at T. A then hands off a second later, late enough to enqueue its own.
    const b = await submitTasks(ports, TENANT_ID, [request({ dueAt: dueSecond * 1000 })]);
    ports.clock.advance(1000);
    finishWrite();
    await submitA;

    // Assess: B's task is not enqueued, so its second must still be ticked for the scan to find it.
    const bId = idOf(b.outcomes[0]);
    expect(ports.deliveryQueue.sent.map((message) => message.id)).not.toContain(bId);
    expect(ports.tickQueue.sent.map((tick) => tick.second)).toContain(dueSecond);
  });

  it('stores the task on retry when the first submit died after claiming the key', async () => {
    // Prepare: the first submit's task write never happens.
    const ports = schedulePorts();
    const create = vi.spyOn(ports.taskStore, 'createUnlessStored').mockRejectedValueOnce(new Error('Lambda timed out'));
    await expect(submitTasks(ports, TENANT_ID, [request({ delaySeconds: 60, idempotencyKey: 'k' })])).rejects.toThrow();
    const claimedId = [...ports.idempotencyStore.records.values()][0]?.taskId;
    create.mockRestore();

    // Act
    const retried = await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 60, idempotencyKey: 'k' })]);

    // Assess
    expect(retried.outcomes[0]).toMatchObject({ kind: 'replayed', task: { id: claimedId, status: 'PENDING' } });
    expect([...ports.taskStore.tasks.keys()]).toEqual([claimedId]);
  });

  it('refuses to recreate a task whose key outlived it: a finished task may have expired', async () => {
    // Prepare: a task cancelled right away, then removed by TTL; the client retries 31 days later.
    const ports = schedulePorts();
    const first = await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 60, idempotencyKey: 'late-retry' })]);
    ports.taskStore.tasks.clear();
    ports.clock.advance(31 * 24 * 3600 * 1000);

    // Act
    const retried = await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 60, idempotencyKey: 'late-retry' })]);

    // Assess
    expect(retried.outcomes[0]).toEqual({ kind: 'expired', taskId: idOf(first.outcomes[0]) });
    expect(ports.taskStore.tasks.size).toBe(0);
  });

  it('takes the task a concurrent retry stored when its own write then fails', async () => {
    // Prepare: this submit claims the key, but a retry stores the task before its own write lands.
    const ports = schedulePorts();
    const create = ports.taskStore.createUnlessStored.bind(ports.taskStore);
    vi.spyOn(ports.taskStore, 'createUnlessStored').mockImplementationOnce(async (task) => {
      await create(task);
      return { created: false, stored: task };
    });

    // Act
    const result = await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 60, idempotencyKey: 'slow' })]);

    // Assess
    expect(result.outcomes[0]).toMatchObject({ kind: 'created' });
    expect(ports.taskStore.tasks.size).toBe(1);
  });

  it('writes no recheck flag for a late arrival whose enqueue succeeded', async () => {
    // Prepare
    const ports = schedulePorts();

    // Act
    const result = await submitTasks(ports, TENANT_ID, [request({ dueAt: NOW_MS - 2000 })]);

    // Assess: the message is in the queue; a flag per submit would make one more hot item.
    expect(result.enqueuedDirect).toBe(1);
    expect(ports.clockStore.rechecks.size).toBe(0);
  });

  it('enqueues a replayed late arrival again, in case the first submit died before enqueueing it', async () => {
    // Prepare: the task is due in a second the scanner has already claimed.
    const ports = schedulePorts();
    const late = request({ dueAt: NOW_MS - 2000, idempotencyKey: 'late' });
    await submitTasks(ports, TENANT_ID, [late]);

    // Act
    const retried = await submitTasks(ports, TENANT_ID, [late]);

    // Assess
    expect(retried.enqueuedDirect).toBe(1);
    expect(ports.deliveryQueue.sent).toHaveLength(2);
  });

  it('flags the second for the sweeper when a late arrival cannot be enqueued, and still accepts the task', async () => {
    // Prepare
    const ports = schedulePorts();
    ports.deliveryQueue.failure = new Error('SQS unavailable');

    // Act
    const result = await submitTasks(ports, TENANT_ID, [request({ dueAt: NOW_MS - 2000 })]);

    // Assess
    expect(result).toMatchObject({ enqueuedDirect: 0, deferred: 1 });
    expect([...ports.clockStore.rechecks]).toEqual([[NOW_SECOND, [NOW_SECOND - 2]]]);
  });

  it('fails the submit when neither the enqueue nor the flag can be written', async () => {
    // Prepare
    const ports = schedulePorts();
    ports.deliveryQueue.failure = new Error('SQS unavailable');
    vi.spyOn(ports.clockStore, 'markForRecheck').mockRejectedValue(new Error('DynamoDB unavailable'));

    // Act
    const scheduling = submitTasks(ports, TENANT_ID, [request({ dueAt: NOW_MS - 2000 })]);

    // Assess
    await expect(scheduling).rejects.toThrow('SQS unavailable');
  });

  it('leaves tasks due beyond what any scanner can have claimed to the scanner', async () => {
    // Prepare
    const ports = schedulePorts();

    // Act
    const result = await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 30 }), request({ delaySeconds: 40 })]);

    // Assess
    expect(result).toMatchObject({ enqueuedDirect: 0, deferred: 0 });
    expect(ports.deliveryQueue.sent).toEqual([]);
    expect(ports.taskStore.tasks.size).toBe(2);
  });
});

describe('Function: submitTasks and the occupancy index', () => {
  it('records every second in the index before it writes a task, and reads the clock only once per instance', async () => {
    // Prepare
    const ports = schedulePorts();
    const occupy = vi.spyOn(ports.occupancy, 'occupy');
    const createMany = vi.spyOn(ports.taskStore, 'createMany');
    const createKeyed = vi.spyOn(ports.taskStore, 'createUnlessStored');
    const readClock = vi.spyOn(ports.clockStore, 'read');

    // Act
    await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 30 }), request({ delaySeconds: 90 })]);
    await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 45, idempotencyKey: 'k' })]);
    await submitTasks(ports, TENANT_ID, [request({ dueAt: NOW_MS - 2000 })]);

    // Assess: the CLOCK item is no item every submit reads (invariant 8).
    expect(ports.occupancy.seconds).toEqual(
      new Set([NOW_SECOND + 30, NOW_SECOND + 90, NOW_SECOND + 45, NOW_SECOND - 2]),
    );
    const [firstOccupy, secondOccupy] = occupy.mock.invocationCallOrder;
    expect(firstOccupy).toBeLessThan(createMany.mock.invocationCallOrder[0] ?? 0);
    expect(secondOccupy).toBeLessThan(createKeyed.mock.invocationCallOrder[0] ?? 0);
    expect(readClock).toHaveBeenCalledTimes(1);
  });

  it('starts the clock before it writes the first task, so no task is due before a cursor that starts later', async () => {
    // Prepare: a new deployment, whose clock has never run.
    const ports = { ...schedulePorts(), clockStore: new FakeClockStore() };
    const create = vi.spyOn(ports.taskStore, 'create');
    const start = vi.spyOn(ports.clockStore, 'start');

    // Act
    await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 30 })]);

    // Assess
    expect(ports.clockStore.state).toEqual({ cursor: NOW_SECOND, startedAt: NOW_SECOND });
    expect(start.mock.invocationCallOrder[0]).toBeLessThan(create.mock.invocationCallOrder[0] ?? 0);
  });

  it('writes no task when the index cannot be written', async () => {
    // Prepare
    const ports = schedulePorts();
    vi.spyOn(ports.occupancy, 'occupy').mockRejectedValue(new Error('DynamoDB unavailable'));

    // Act
    const scheduling = submitTasks(ports, TENANT_ID, [
      request({ delaySeconds: 30 }),
      request({ delaySeconds: 31, idempotencyKey: 'k' }),
    ]);

    // Assess
    await expect(scheduling).rejects.toThrow('DynamoDB unavailable');
    expect(ports.taskStore.tasks.size).toBe(0);
  });

  it('ticks a second new to a minute the ticker already planned, lookahead seconds before it', async () => {
    // Prepare: this minute and the next are planned; a task lands in an empty second of each.
    const ports = schedulePorts();
    ports.occupancy.planned.add(minuteOf(NOW_SECOND)).add(minuteOf(NOW_SECOND) + 1);

    // Act
    await submitTasks(ports, TENANT_ID, [
      request({ delaySeconds: 20 }),
      request({ delaySeconds: 20 }),
      request({ delaySeconds: 70 }),
    ]);

    // Assess: one tick per second, not per task; each surfaces 2 s (the lookahead) before its second, never earlier.
    expect(ports.tickQueue.sent.sort((a, b) => a.second - b.second)).toEqual([
      { second: NOW_SECOND + 20, delaySeconds: 18 },
      { second: NOW_SECOND + 70, delaySeconds: 68 },
    ]);
  });

  it('sends no tick for a second already in the index, or in a minute not planned yet', async () => {
    // Prepare: this minute is planned and its second +20 was occupied before; the next is not planned.
    const ports = schedulePorts();
    ports.occupancy.planned.add(minuteOf(NOW_SECOND));
    ports.occupancy.seconds.add(NOW_SECOND + 20);

    // Act
    await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 20 }), request({ delaySeconds: 70 })]);

    // Assess: the ticker will tick +70 when it plans its minute.
    expect(ports.tickQueue.sent).toEqual([]);
  });

  it('enqueues a late arrival and still ticks the second it added to a planned minute', async () => {
    // Prepare
    const ports = schedulePorts();
    ports.occupancy.planned.add(minuteOf(NOW_SECOND - 2));

    // Act
    const result = await submitTasks(ports, TENANT_ID, [request({ dueAt: NOW_MS - 2000 })]);

    // Assess: a tick of a second already claimed finds nothing to claim; one that is not saves
    // another submit's task in that second (see the next tests).
    expect(result.enqueuedDirect).toBe(1);
    expect(ports.tickQueue.sent.map((tick) => tick.second)).toEqual([NOW_SECOND - 2]);
  });

  it('enqueues a task due within the lookahead itself, and ticks its second, not claimed yet, too', async () => {
    // Prepare: the cursor trails now, as an idle clock's does; the minute is planned.
    const ports = schedulePorts({ cursor: NOW_SECOND - 30 });
    ports.occupancy.planned.add(minuteOf(NOW_SECOND));

    // Act
    const result = await submitTasks(ports, TENANT_ID, [
      request({ dueAt: NOW_MS + 1500 }),
      request({ delaySeconds: 20 }),
    ]);

    // Assess: the first is enqueued here; both seconds get a tick.
    expect(result.enqueuedDirect).toBe(1);
    expect(ports.deliveryQueue.sent).toEqual([{ id: idOf(result.outcomes[0]), delaySeconds: 0 }]);
    expect(ports.tickQueue.sent.map((tick) => tick.second).sort()).toEqual([NOW_SECOND + 1, NOW_SECOND + 20]);
  });

  it('enqueues itself every task due up to the lookahead past the one clock-skew bound, and no later one', async () => {
    // Prepare: a scanner whose clock runs CLOCK_SKEW_MS ahead (the bound cancels assume too) may
    // have claimed through its now's second + lookahead, whatever the cursor read here would have
    // said. Now is late enough in its second that the skew reaches into the next.
    const ports = schedulePorts({ cursor: NOW_SECOND - 30 });
    ports.clock.set(NOW_SECOND * 1000 + 1000 - CLOCK_SKEW_MS);
    const lastClaimable = NOW_SECOND + 1 + ports.lookaheadSeconds;

    // Act
    const result = await submitTasks(ports, TENANT_ID, [
      request({ dueAt: lastClaimable * 1000 + 999 }),
      request({ dueAt: (lastClaimable + 1) * 1000 }),
    ]);

    // Assess
    expect(result.enqueuedDirect).toBe(1);
    expect(ports.deliveryQueue.sent.map((message) => message.id)).toEqual([idOf(result.outcomes[0])]);
  });

  it('still accepts the tasks when their tick cannot be sent, leaving the second to the sweeper', async () => {
    // Prepare
    const ports = schedulePorts();
    ports.occupancy.planned.add(minuteOf(NOW_SECOND)).add(minuteOf(NOW_SECOND) + 1);
    ports.tickQueue.failure = new Error('SQS unavailable');

    // Act
    const result = await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 20 })]);

    // Assess
    expect(result).toMatchObject({ untickedSeconds: 1, enqueuedDirect: 0 });
    expect(ports.taskStore.tasks.size).toBe(1);
  });
});

describe('Function: submitTasks with a flexible window', () => {
  const taskOf = (outcome: SubmitOutcome | undefined) =>
    outcome && (outcome.kind === 'created' || outcome.kind === 'replayed') ? outcome.task : undefined;

  it("keeps the caller's dueAt and files the task under its planned fire time: id, key and index", async () => {
    // Prepare
    const ports = schedulePorts();
    const dueAtMs = NOW_MS + 60_000;

    // Act
    const result = await submitTasks(ports, TENANT_ID, [request({ dueAt: dueAtMs, window: { seconds: 600 } })]);

    // Assess
    const task = taskOf(result.outcomes[0]);
    expect(task).toMatchObject({ dueAtMs, window: { seconds: 600 } });
    expect(task?.fireAtMs).toBeGreaterThanOrEqual(dueAtMs);
    expect(task?.fireAtMs).toBeLessThanOrEqual(dueAtMs + 600_000);
    expect(parseTaskId(task?.id, ports.shardCount)?.fireAtMs).toBe(task?.fireAtMs);
    expect(ports.occupancy.seconds).toEqual(new Set([secondOf(task?.fireAtMs ?? 0)]));
    expect(ports.taskStore.tasks.get(task?.id ?? '')).toEqual(task);
  });

  it('hands off the tasks whose fire time a scanner may have claimed, and leaves those planned later to the scan', async () => {
    // Prepare: due 450 s ago with a 900 s window, so about half fire in the past, half well ahead.
    const ports = schedulePorts({ cursor: NOW_SECOND + 3 });
    const requests = Array.from({ length: 40 }, () => request({ dueAt: NOW_MS - 450_000, window: { seconds: 900 } }));

    // Act
    const result = await submitTasks(ports, TENANT_ID, requests);

    // Assess
    const tasks = result.outcomes.map(taskOf).filter((task) => task !== undefined);
    const enqueued = new Set(ports.deliveryQueue.sent.map((message) => message.id));
    const claimable = claimableThrough(NOW_MS, ports.lookaheadSeconds);
    for (const task of tasks) {
      expect(task.dueAtMs).toBe(NOW_MS - 450_000);
      expect(enqueued.has(task.id)).toBe(secondOf(task.fireAtMs) <= claimable);
      expect(task.lateArrival === true).toBe(isLateArrival(task.fireAtMs, NOW_MS, ports.lookaheadSeconds));
    }
    expect(enqueued.size).toBeGreaterThan(10);
    expect(enqueued.size).toBeLessThan(30);
  });

  it('gives a retry of a keyed request the fire time the first one planned, its dueAt never after it', async () => {
    // Prepare: the first submit claims the key and dies before its task write.
    const ports = schedulePorts();
    const body = { delaySeconds: 60, window: { seconds: 30 }, idempotencyKey: 'k' };
    const create = vi.spyOn(ports.taskStore, 'createUnlessStored').mockRejectedValueOnce(new Error('Lambda timed out'));
    await expect(submitTasks(ports, TENANT_ID, [request(body)])).rejects.toThrow();
    const claimedId = [...ports.idempotencyStore.records.values()][0]?.taskId;
    create.mockRestore();

    // Act: 20 s later, so delaySeconds now resolves 20 s later than the plan was made for.
    ports.clock.advance(20_000);
    const retried = await submitTasks(ports, TENANT_ID, [request(body)]);

    // Assess
    const task = taskOf(retried.outcomes[0]);
    const fireAtMs = parseTaskId(claimedId, ports.shardCount)?.fireAtMs ?? 0;
    expect(task).toMatchObject({ id: claimedId, fireAtMs, window: { seconds: 30 } });
    expect(task?.dueAtMs).toBeLessThanOrEqual(fireAtMs);
    expect(task?.dueAtMs).toBeGreaterThanOrEqual(fireAtMs - 30_000);
    expect(ports.occupancy.seconds.has(secondOf(fireAtMs))).toBe(true);
  });

  it('refuses an idempotency key reused with another window: the window is part of the request', async () => {
    // Prepare
    const ports = schedulePorts();
    const created = await submitTasks(ports, TENANT_ID, [
      request({ delaySeconds: 60, window: { seconds: 30 }, idempotencyKey: 'k' }),
    ]);

    // Act
    const wider = await submitTasks(ports, TENANT_ID, [
      request({ delaySeconds: 60, window: { seconds: 60 }, idempotencyKey: 'k' }),
    ]);
    const none = await submitTasks(ports, TENANT_ID, [request({ delaySeconds: 60, idempotencyKey: 'k' })]);

    // Assess
    expect(wider.outcomes[0]).toEqual({ kind: 'conflict', taskId: idOf(created.outcomes[0]) });
    expect(none.outcomes[0]).toEqual({ kind: 'conflict', taskId: idOf(created.outcomes[0]) });
  });
});

describe('Function: parseTaskRequest fingerprint', () => {
  it('is the same for the same request whatever its key order, and differs when anything differs', () => {
    // Act
    const a = request({ delaySeconds: 10, payload: { x: 1, y: [1, { z: 2 }] }, bizId: 'b' });
    const reordered = request({ bizId: 'b', payload: { y: [1, { z: 2 }], x: 1 }, delaySeconds: 10 });
    const otherDelay = request({ delaySeconds: 11, payload: { x: 1, y: [1, { z: 2 }] }, bizId: 'b' });
    const otherPayload = request({ delaySeconds: 10, payload: { x: 1, y: [1, { z: 3 }] }, bizId: 'b' });

    // Assess
    expect(reordered.fingerprint).toBe(a.fingerprint);
    expect(otherDelay.fingerprint).not.toBe(a.fingerprint);
    expect(otherPayload.fingerprint).not.toBe(a.fingerprint);
  });
});

describe('Function: submitTasks with a key and a dueAt of its own', () => {
  const DUE_AT = NOW_MS + 60_000;
  const keyed = (key: string, extra: Record<string, unknown> = {}) =>
    request({ dueAt: DUE_AT, idempotencyKey: key, ...extra });

  it('writes a keyed submit with one conditional put and no key item, and gives a retry the same task', async () => {
    // Prepare
    const ports = schedulePorts();
    const put = vi.spyOn(ports.taskStore, 'createUnlessStored');
    const claim = vi.spyOn(ports.idempotencyStore, 'claim');

    // Act
    const first = await submitTasks(ports, TENANT_ID, [keyed('order-1')]);
    ports.clock.advance(5000);
    const retried = await submitTasks(ports, TENANT_ID, [keyed('order-1')]);

    // Assess
    expect(first.outcomes[0]?.kind).toBe('created');
    expect(retried.outcomes[0]).toEqual({
      kind: 'replayed',
      task: ports.taskStore.tasks.get(idOf(first.outcomes[0]) ?? ''),
    });
    expect(put).toHaveBeenCalledTimes(2);
    expect(claim).not.toHaveBeenCalled();
    expect(ports.taskStore.tasks.size).toBe(1);
  });

  it('answers the same key with a different body at the same due time with a conflict naming the first task', async () => {
    // Prepare
    const ports = schedulePorts();
    const created = await submitTasks(ports, TENANT_ID, [keyed('order-1')]);

    // Act
    const reused = await submitTasks(ports, TENANT_ID, [keyed('order-1', { payload: { n: 2 } })]);

    // Assess
    expect(reused.outcomes[0]).toEqual({ kind: 'conflict', taskId: idOf(created.outcomes[0]) });
    expect(ports.taskStore.tasks.size).toBe(1);
    expect(ports.idempotencyStore.records.size).toBe(0);
  });

  it('dedupes keyed items of a batch against each other and an earlier single, writing none in a BatchWrite', async () => {
    // Prepare
    const ports = schedulePorts();
    const single = await submitTasks(ports, TENANT_ID, [keyed('a')]);
    const createMany = vi.spyOn(ports.taskStore, 'createMany');

    // Act
    const batch = await submitTasks(ports, TENANT_ID, [keyed('a'), keyed('b'), keyed('b'), keyed('b', { bizId: 'x' })]);

    // Assess
    const [a, b, bAgain, bOther] = batch.outcomes;
    expect(a).toMatchObject({ kind: 'replayed', task: { id: idOf(single.outcomes[0]) } });
    expect([b?.kind, bAgain?.kind].sort()).toEqual(['created', 'replayed']);
    expect(idOf(bAgain)).toBe(idOf(b));
    expect(bOther).toEqual({ kind: 'conflict', taskId: idOf(b) });
    expect(ports.taskStore.tasks.size).toBe(2);
    expect(createMany).not.toHaveBeenCalled();
    expect(ports.idempotencyStore.records.size).toBe(0);
  });

  it('replays a keyed submit whose answer was lost after its put landed', async () => {
    // Prepare: the put lands, and the api dies before it answers.
    const ports = schedulePorts();
    const put = ports.taskStore.createUnlessStored.bind(ports.taskStore);
    vi.spyOn(ports.taskStore, 'createUnlessStored').mockImplementationOnce(async (task) => {
      await put(task);
      throw new Error('Lambda timed out');
    });
    await expect(submitTasks(ports, TENANT_ID, [keyed('lost')])).rejects.toThrow();
    const [storedId] = ports.taskStore.tasks.keys();

    // Act: the client sends the same body again a few seconds later.
    ports.clock.advance(3000);
    const retried = await submitTasks(ports, TENANT_ID, [keyed('lost')]);

    // Assess
    expect(retried.outcomes[0]).toMatchObject({ kind: 'replayed', task: { id: storedId, createdAtMs: NOW_MS } });
    expect(ports.taskStore.tasks.size).toBe(1);
  });
});

describe('Function: cancelTask', () => {
  /** A task never attempted, due `inMs` after NOW_MS, stored in the ports' store. */
  function storedTask(ports: ReturnType<typeof schedulePorts>, inMs: number, overrides: Partial<Task> = {}): Task {
    const task = aTask(NOW_MS + inMs, 1, overrides);
    ports.taskStore.tasks.set(task.id, task);
    return task;
  }

  it('cancels a task never attempted while it is due more than the margin away', async () => {
    // Prepare
    const ports = schedulePorts();
    const task = storedTask(ports, UNLEASED_CANCEL_MARGIN_MS + 1);

    // Act
    const outcome = await cancelTask(ports, TENANT_ID, task.id);

    // Assess
    expect(outcome).toMatchObject({ cancelled: true });
    expect(ports.taskStore.tasks.get(task.id)?.status).toBe('CANCELLED');
  });

  it('keeps a task cancelled ahead of its fire time until retention after that time, so a keyed retry finds it', async () => {
    // Prepare
    const ports = schedulePorts();
    const task = storedTask(ports, 10 * 24 * 3600 * 1000);
    const cancel = vi.spyOn(ports.taskStore, 'cancel');

    // Act
    await cancelTask(ports, TENANT_ID, task.id);

    // Assess
    expect(cancel.mock.calls[0]?.[1].expiresAtSeconds).toBe(Math.floor(task.fireAtMs / 1000) + 30 * 24 * 3600);
  });

  it('refuses, writing nothing, a cancel of a task never attempted that is due within the margin: its first attempt takes no lease', async () => {
    // Prepare
    const ports = schedulePorts();
    const task = storedTask(ports, UNLEASED_CANCEL_MARGIN_MS);

    // Act
    const outcome = await cancelTask(ports, TENANT_ID, task.id);

    // Assess
    expect(outcome).toEqual({ cancelled: false, reason: 'too-late', status: 'PENDING' });
    expect(ports.taskStore.tasks.get(task.id)).toEqual(task);
  });

  it('cancels a task waiting for a retry at any time, since retries take the lease', async () => {
    // Prepare
    const ports = schedulePorts();
    const task = storedTask(ports, -60_000, { attempts: 1, retryAtMs: NOW_MS + 200 });

    // Act
    const outcome = await cancelTask(ports, TENANT_ID, task.id);

    // Assess
    expect(outcome).toEqual({ cancelled: true });
  });

  it('goes by the fire time of a task with a window: cancels it after its dueAt, refuses it within the margin of firing', async () => {
    // Prepare: both were due a minute ago; their windows planned them after now.
    const ports = schedulePorts();
    const window = { seconds: 120 };
    const firesLater = storedTask(ports, UNLEASED_CANCEL_MARGIN_MS + 1, { dueAtMs: NOW_MS - 60_000, window });
    const firesSoon = storedTask(ports, UNLEASED_CANCEL_MARGIN_MS, { dueAtMs: NOW_MS - 60_000, window });

    // Act
    const later = await cancelTask(ports, TENANT_ID, firesLater.id);
    const soon = await cancelTask(ports, TENANT_ID, firesSoon.id);

    // Assess
    expect(later).toMatchObject({ cancelled: true });
    expect(soon).toEqual({ cancelled: false, reason: 'too-late', status: 'PENDING' });
  });

  it('undoes a cancel it saw stored too close to the due time, and answers too-late', async () => {
    // Prepare: the write takes long enough that the callback may already have read the task.
    const ports = schedulePorts();
    const task = storedTask(ports, UNLEASED_CANCEL_MARGIN_MS + 100);
    const cancel = ports.taskStore.cancel.bind(ports.taskStore);
    vi.spyOn(ports.taskStore, 'cancel').mockImplementation(async (key, request) => {
      const outcome = await cancel(key, request);
      ports.clock.advance(UNLEASED_CANCEL_MARGIN_MS + 100 - CLOCK_SKEW_MS);
      return outcome;
    });

    // Act
    const outcome = await cancelTask(ports, TENANT_ID, task.id);

    // Assess
    expect(outcome).toEqual({ cancelled: false, reason: 'too-late', status: 'PENDING' });
    expect(ports.taskStore.tasks.get(task.id)).toEqual(task);
  });
});

describe('Function: rescheduleTask (a task never attempted)', () => {
  it('withdraws an intent it saw stored too close to the due time, and answers too-late', async () => {
    // Prepare: the intent's write takes long enough that the first attempt may have read the task before it.
    const ports = schedulePorts();
    const task = aTask(NOW_MS + UNLEASED_CANCEL_MARGIN_MS + 100, 1);
    ports.taskStore.tasks.set(task.id, task);
    const record = ports.taskStore.recordRescheduleIntent.bind(ports.taskStore);
    vi.spyOn(ports.taskStore, 'recordRescheduleIntent').mockImplementation(async (...args) => {
      const recorded = await record(...args);
      ports.clock.advance(UNLEASED_CANCEL_MARGIN_MS + 100 - CLOCK_SKEW_MS);
      return recorded;
    });

    // Act
    const outcome = await rescheduleTask(ports, TENANT_ID, task.id, {
      dueAtMs: NOW_MS + 3_600_000,
      fingerprint: 'f1',
    });

    // Assess: no intent left, no successor made, the task delivered as it was.
    expect(outcome).toMatchObject({ kind: 'refused', reason: 'too-late' });
    expect(ports.taskStore.tasks.get(task.id)).toEqual(task);
    expect(ports.taskStore.tasks.size).toBe(1);
  });
});

describe('Function: rescheduleTask (a task whose first attempt failed)', () => {
  it('refuses in-delivery while a copy of the failed first attempt may still call, and hands over once none can', async () => {
    // Prepare: one copy of the first attempt recorded a failure; another may still be calling.
    const ports = schedulePorts();
    const task = aTask(NOW_MS - 1000, 1, { attempts: 1, copiesCallUntilMs: NOW_MS + 20_000 });
    ports.taskStore.tasks.set(task.id, task);
    const move = { dueAtMs: NOW_MS + 3_600_000, fingerprint: 'f1' };

    // Act
    const refused = await rescheduleTask(ports, TENANT_ID, task.id, move);
    ports.clock.advance(20_000 + CLOCK_SKEW_MS + 1);
    const later = await rescheduleTask(ports, TENANT_ID, task.id, move);

    // Assess: no successor while a copy could deliver the task; a handover once none can.
    expect(refused).toMatchObject({ kind: 'refused', reason: 'in-delivery' });
    expect(later.kind).toBe('rescheduled');
    expect(ports.taskStore.tasks.size).toBe(2);
  });
});

describe('Function: rescheduleTask (a task with a window)', () => {
  it('keeps the window on the successor, which fires at a time planned within it from the new dueAt', async () => {
    // Prepare
    const ports = schedulePorts();
    const task = aTask(NOW_MS + 90_000, 1, { dueAtMs: NOW_MS + 60_000, window: { seconds: 300 } });
    ports.taskStore.tasks.set(task.id, task);
    const newDueAtMs = NOW_MS + 3_600_000;

    // Act
    const outcome = await rescheduleTask(ports, TENANT_ID, task.id, { dueAtMs: newDueAtMs, fingerprint: 'f1' });

    // Assess
    const successor = outcome.kind === 'rescheduled' ? outcome.task : undefined;
    expect(successor).toMatchObject({ dueAtMs: newDueAtMs, window: { seconds: 300 }, rescheduledFrom: task.id });
    expect(successor?.fireAtMs).toBeGreaterThanOrEqual(newDueAtMs);
    expect(successor?.fireAtMs).toBeLessThanOrEqual(newDueAtMs + 300_000);
    expect(parseTaskId(successor?.id, ports.shardCount)?.fireAtMs).toBe(successor?.fireAtMs);
    expect(ports.occupancy.seconds.has(secondOf(successor?.fireAtMs ?? 0))).toBe(true);
  });
});
