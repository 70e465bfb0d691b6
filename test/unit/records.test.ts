import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';

import {
  deliverRecords,
  type InboxMessage,
  type RecordPorts,
  type SpareTime,
} from '../../functions/callback/records.js';
import type { DeliveryPorts, TargetResult } from '../../functions/core/deliver/deliver.js';
import { SlowCallWatch } from '../../functions/core/deliver/slow-calls.js';
import type { DeliveryMessage, Task } from '../../functions/core/kernel/task.js';
import {
  aTask,
  FakeDeliveryQueue,
  fakeOccurrencePorts,
  FakeRequestCounter,
  FakeTaskStore,
  fakeTenantDirectory,
  ManualClock,
} from './fakes.js';
import { sqsRecord } from './handlers/setup.js';

afterEach(() => {
  vi.restoreAllMocks();
});

const NOW_MS = Date.UTC(2026, 10, 21, 12);
const HALF_DAY_SECONDS = 43_200;

/** The callback's record handling over fakes: a failing target, a bizType-style 12-hour backoff. */
function recordPorts(tasks: readonly Task[], result: TargetResult = { ok: false, error: 'HTTP 503' }) {
  const clock = new ManualClock(NOW_MS);
  const taskStore = new FakeTaskStore(tasks);
  const deliveryQueue = new FakeDeliveryQueue();
  const calls: number[] = [];
  const delivery: DeliveryPorts = {
    taskStore,
    occurrences: fakeOccurrencePorts(taskStore, clock),
    targets: {
      dispatch: async () => {
        calls.push(clock.now());
        return result;
      },
    },
    tenants: fakeTenantDirectory(),
    deadLetters: { send: async () => undefined },
    callbackCounter: new FakeRequestCounter(),
    clock,
    bucketCount: 1000,
    shardCount: 4,
    maxAttempts: 5,
    backoffBaseSeconds: HALF_DAY_SECONDS,
    backoffMaxSeconds: HALF_DAY_SECONDS,
    retentionDays: 1,
    leaseMs: 60_000,
    maxEarlyWaitMs: 5000,
  };
  const ports: RecordPorts = {
    delivery,
    deliveryQueue,
    logger: new Logger({ serviceName: 'unit', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'unit' }),
  };
  return { clock, taskStore, deliveryQueue, calls, ports };
}

const recordOf = (message: Pick<DeliveryMessage, 'id' | 'notBeforeMs'>, messageId = 'm-1') =>
  sqsRecord(JSON.stringify(message), messageId);

describe('Function: deliverRecords', () => {
  it("logs each record's lines with its task id as the correlation id, even when records run concurrently", async () => {
    // Prepare
    const nowMs = Date.UTC(2026, 10, 21, 12);
    const tasks = [aTask(nowMs - 1000, 0), aTask(nowMs - 1000, 1)];
    const taskStore = new FakeTaskStore(tasks);
    const clock = new ManualClock(nowMs);
    const delivery: DeliveryPorts = {
      taskStore,
      occurrences: fakeOccurrencePorts(taskStore, clock),
      targets: { dispatch: async () => ({ ok: true }) },
      tenants: fakeTenantDirectory(),
      deadLetters: { send: async () => undefined },
      callbackCounter: new FakeRequestCounter(),
      clock,
      bucketCount: 1000,
      shardCount: 4,
      maxAttempts: 3,
      backoffBaseSeconds: 1,
      backoffMaxSeconds: 2,
      retentionDays: 1,
      leaseMs: 60_000,
      maxEarlyWaitMs: 5000,
    };
    const lines: string[] = [];
    // The per-delivery line is logged at debug: at scale it would be the largest log bill.
    const logger = new Logger({ serviceName: 'unit', logLevel: 'DEBUG' });
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });

    // Act
    await deliverRecords(
      { delivery, deliveryQueue: new FakeDeliveryQueue(), logger, metrics: new Metrics({ namespace: 'unit' }) },
      tasks.map((task, index) => sqsRecord(JSON.stringify({ id: task.id }), `m-${index}`)),
    );

    // Assess
    const delivered = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.message === 'delivered');
    expect(delivered.map((line) => [line.correlation_id, line.taskId])).toEqual(
      tasks.map((task) => [task.id, task.id]),
    );
  });

  it('sends a failed task a new message delayed by its backoff, with the retry time also in the task, and lets the received one go', async () => {
    // Prepare
    const task = aTask(NOW_MS - 1000, 0);
    const { ports, taskStore, deliveryQueue } = recordPorts([task]);

    // Act
    const result = await deliverRecords(ports, [recordOf({ id: task.id })]);

    // Assess
    const retryAtMs = NOW_MS + HALF_DAY_SECONDS * 1000;
    expect(result).toEqual({ batchItemFailures: [] });
    expect(taskStore.tasks.get(task.id)).toMatchObject({ status: 'PENDING', attempts: 1, retryAtMs });
    expect(deliveryQueue.sent).toEqual([{ id: task.id, notBeforeMs: retryAtMs, delaySeconds: 900 }]);
  });

  it('waits out a 43,200 s backoff as a chain of delayed messages, and attempts again only when it is over', async () => {
    // Prepare: the first attempt failed; its retry is twelve hours away.
    const task = aTask(NOW_MS - 1000, 0);
    const { ports, clock, deliveryQueue, calls } = recordPorts([task]);
    await deliverRecords(ports, [recordOf({ id: task.id })]);
    const retryAtMs = NOW_MS + HALF_DAY_SECONDS * 1000;

    // Act: each message surfaces after its delay and is sent on, until the backoff is over.
    let hops = 0;
    for (let message = deliveryQueue.sent.at(-1); message && calls.length < 2; message = deliveryQueue.sent.at(-1)) {
      clock.advance(message.delaySeconds * 1000);
      deliveryQueue.sent.length = 0;
      await deliverRecords(ports, [recordOf(message, `m-${++hops}`)]);
    }

    // Assess: 43,200 / 900 = 48 delayed messages, the second attempt at the backoff's end and not before.
    expect(hops).toBe(48);
    expect(calls).toEqual([NOW_MS, retryAtMs]);
  });

  it('honours the retry time in the task when a message knows nothing of it', async () => {
    // Prepare: the replacement message was lost in a crash; the received one comes back after the visibility timeout.
    const task = aTask(NOW_MS - 1000, 0);
    const { ports, clock, taskStore, deliveryQueue, calls } = recordPorts([task]);
    await deliverRecords(ports, [recordOf({ id: task.id })]);
    deliveryQueue.sent.length = 0;
    clock.advance(180_000);

    // Act
    const result = await deliverRecords(ports, [recordOf({ id: task.id }, 'm-again')]);

    // Assess: no attempt; the lease and the attempt are given back and a message waits for the retry time.
    const retryAtMs = NOW_MS + HALF_DAY_SECONDS * 1000;
    expect(result).toEqual({ batchItemFailures: [] });
    expect(calls).toEqual([NOW_MS]);
    expect(taskStore.tasks.get(task.id)).toMatchObject({ status: 'PENDING', attempts: 1, retryAtMs });
    expect(deliveryQueue.sent).toEqual([{ id: task.id, notBeforeMs: retryAtMs, delaySeconds: 900 }]);
  });

  it('reports a record whose processing throws, so SQS brings it back', async () => {
    // Prepare
    const task = aTask(NOW_MS - 1000, 0);
    const { ports, deliveryQueue } = recordPorts([task]);
    deliveryQueue.failure = new Error('SQS unavailable');

    // Act
    const result = await deliverRecords(ports, [recordOf({ id: task.id }, 'm-crash')]);

    // Assess
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-crash' }] });
  });

  it('records the first attempts a batch delivered in one receipt per fire second, writing none of their task items', async () => {
    // Prepare: ten tasks, eight firing in one second and two in the next, and a copy of one message.
    const second = Math.floor(NOW_MS / 1000) - 2;
    const tasks = [
      ...Array.from({ length: 8 }, (_, index) => aTask(second * 1000 + index * 100, index % 4)),
      aTask((second + 1) * 1000 + 10, 0),
      aTask((second + 1) * 1000 + 20, 1),
    ];
    const { ports, taskStore, calls } = recordPorts(tasks, { ok: true, statusCode: 200 });
    const recordReceipt = vi.spyOn(taskStore, 'recordReceipt');
    const finishFirstAttempt = vi.spyOn(taskStore, 'finishFirstAttempt');
    const records = tasks.map((task, index) => recordOf({ id: task.id }, `m-${index}`));

    // Act
    const result = await deliverRecords(ports, [...records, recordOf({ id: tasks[0]?.id ?? '' }, 'm-copy')]);

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    expect(calls).toHaveLength(11);
    expect(finishFirstAttempt).not.toHaveBeenCalled();
    expect(recordReceipt.mock.calls.map(([receipt]) => [receipt.second, [...receipt.delivered.keys()].sort()])).toEqual(
      [
        [
          second,
          tasks
            .slice(0, 8)
            .map((task) => task.id)
            .sort(),
        ],
        [
          second + 1,
          tasks
            .slice(8)
            .map((task) => task.id)
            .sort(),
        ],
      ],
    );
    for (const task of tasks) {
      expect(taskStore.tasks.get(task.id)).toEqual(task);
      expect(taskStore.shown(task.id)).toMatchObject({ status: 'DELIVERED', attempts: 1, deliveredAtMs: NOW_MS });
    }
  });

  it('stores the receipt of every group when two copies of one message, with different notBefore times, fall in different groups', async () => {
    // Prepare: A and B go together; a later copy of A's message (a reminder's, or a restart's,
    // notBefore 3 s on) goes in a group of its own, and its record may finish before B's.
    const [a, b] = [aTask(NOW_MS - 5000, 0), aTask(NOW_MS - 5000, 1)];
    const { ports, taskStore } = recordPorts([a, b], { ok: true, statusCode: 200 });

    // Act
    const result = await deliverRecords(ports, [
      recordOf({ id: a.id }, 'm-a'),
      recordOf({ id: b.id }, 'm-b'),
      recordOf({ id: a.id, notBeforeMs: NOW_MS - 2000 }, 'm-a-later'),
    ]);

    // Assess: each delivered task is shown DELIVERED by a stored receipt, or its record comes back.
    const comeBack = new Set(result.batchItemFailures.map((failure) => failure.itemIdentifier));
    expect(comeBack.has('m-a') || taskStore.shown(a.id)?.status === 'DELIVERED').toBe(true);
    expect(comeBack.has('m-b') || taskStore.shown(b.id)?.status === 'DELIVERED').toBe(true);
  });

  it('stores a receipt whose first write failed by trying again, so its tasks are not called again', async () => {
    // Prepare
    const tasks = [aTask(NOW_MS - 1000, 0), aTask(NOW_MS - 1000, 1)];
    const { ports, taskStore } = recordPorts(tasks, { ok: true });
    const recordReceipt = vi
      .spyOn(taskStore, 'recordReceipt')
      .mockRejectedValueOnce(new Error('InternalServerError'))
      .mockRejectedValueOnce(new Error('InternalServerError'));

    // Act
    const result = await deliverRecords(
      ports,
      tasks.map((task, index) => recordOf({ id: task.id }, `m-${index}`)),
    );

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    expect(recordReceipt).toHaveBeenCalledTimes(3);
    for (const task of tasks) expect(taskStore.shown(task.id)).toMatchObject({ status: 'DELIVERED' });
  });

  it('reports the records of a receipt that could not be stored, so SQS brings them back and they are delivered again', async () => {
    // Prepare
    const tasks = [aTask(NOW_MS - 1000, 0), aTask(NOW_MS - 1000, 1)];
    const failing = aTask(NOW_MS - 1000, 2);
    const { ports, taskStore } = recordPorts([...tasks, failing], { ok: true });
    vi.spyOn(taskStore, 'recordReceipt').mockRejectedValue(new Error('ProvisionedThroughputExceededException'));
    vi.spyOn(ports.delivery.targets, 'dispatch').mockImplementation(async (_target, notification) =>
      notification.id === failing.id ? { ok: false, error: 'HTTP 503' } : { ok: true },
    );

    // Act
    const result = await deliverRecords(ports, [
      recordOf({ id: tasks[0]?.id ?? '' }, 'm-0'),
      recordOf({ id: failing.id }, 'm-failing'),
      recordOf({ id: tasks[1]?.id ?? '' }, 'm-1'),
    ]);

    // Assess: the failed attempt has its retry recorded and is done with; the two delivered ones come back.
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-0' }, { itemIdentifier: 'm-1' }] });
    for (const task of tasks) expect(taskStore.shown(task.id)).toMatchObject({ status: 'PENDING', attempts: 0 });
    expect(taskStore.shown(failing.id)).toMatchObject({ status: 'PENDING', attempts: 1 });
  });
});

describe('Function: deliverRecords, while a call hangs', () => {
  /**
   * A batch whose one call hangs until released, and an inbox holding more of the queue: the
   * ports of `recordPorts`, with `targets` behind a slow-call watch of `slowMs`.
   */
  function heldInvocation(options: {
    queued: readonly Task[];
    remainingMs?: number;
    failDelete?: boolean;
    slowCallCounts?: () => boolean;
    slowMs?: number;
  }) {
    const hanging = aTask(NOW_MS - 1000, 0, { target: { type: 'http', url: 'https://hangs.example.com/timer' } });
    const { ports, taskStore, calls, deliveryQueue } = recordPorts([hanging, ...options.queued], {
      ok: true,
      statusCode: 204,
    });
    let release = () => {};
    const hung = new Promise<void>((resolve) => {
      release = resolve;
    });
    const answering = ports.delivery.targets;
    const delivered: string[] = [];
    const slowCalls = new SlowCallWatch(
      {
        dispatch: async (target, notification, sender) => {
          if (target.type === 'http' && target.url.includes('hangs')) await hung;
          else delivered.push(notification.id);
          return answering.dispatch(target, notification, sender);
        },
      },
      options.slowMs ?? 20,
      options.slowCallCounts,
    );
    const queue = options.queued.map((task, index) => ({
      ...recordOf({ id: task.id }, `q-${index}`),
      receiptHandle: `handle-${index}`,
    }));
    const inbox = {
      receives: 0,
      deleted: [] as string[],
      async receive() {
        inbox.receives += 1;
        return queue.splice(0, 10);
      },
      async delete(messages: readonly InboxMessage[]) {
        if (options.failDelete) throw new Error('SQS unavailable');
        inbox.deleted.push(...messages.map((message) => message.receiptHandle));
      },
    };
    const spare: SpareTime = {
      inbox,
      slowCalls,
      remainingMs: () => options.remainingMs ?? 30_000,
      callReserveMs: 13_000,
    };
    const portsHeld: RecordPorts = { ...ports, delivery: { ...ports.delivery, targets: slowCalls } };
    const run = () => deliverRecords(portsHeld, [recordOf({ id: hanging.id }, 'm-hangs')], spare);
    return { run, release, inbox, delivered, taskStore, calls, hanging, deliveryQueue };
  }

  const otherTenantsTasks = (count: number) =>
    Array.from({ length: count }, (_, index) => aTask(NOW_MS - 1000, index % 4));

  it('delivers and deletes more of the queue while the batch waits on a hanging call, then answers for its own batch', async () => {
    // Prepare: twelve other tasks wait in the queue, more than one receive takes.
    const queued = otherTenantsTasks(12);
    const held = heldInvocation({ queued });

    // Act
    const invocation = held.run();
    await vi.waitFor(() => expect(held.delivered).toHaveLength(12), { timeout: 2000 });
    const settledEarly = await Promise.race([invocation.then(() => true), sleep(50).then(() => false)]);
    held.release();
    const result = await invocation;

    // Assess: the others were delivered while the hanging call was still open, and only then did the invocation end.
    expect(settledEarly).toBe(false);
    expect(result).toEqual({ batchItemFailures: [] });
    expect(held.inbox.deleted.sort()).toEqual(queued.map((_, index) => `handle-${index}`).sort());
    expect(held.delivered.sort()).toEqual(queued.map((task) => task.id).sort());
  });

  it('takes the next batch while a taken one meets the hanging host too, so no hanging call holds the tasks behind it', async () => {
    // Prepare: the first ten taken hold one more of the hanging host's tasks; twelve more come after them.
    const alsoHanging = aTask(NOW_MS - 1000, 1, { target: { type: 'http', url: 'https://hangs.example.com/timer' } });
    const behind = otherTenantsTasks(12);
    const held = heldInvocation({ queued: [...otherTenantsTasks(9), alsoHanging, ...behind] });

    // Act
    const invocation = held.run();
    await vi.waitFor(() => expect(held.delivered).toHaveLength(21), { timeout: 2000 });
    held.release();
    await invocation;

    // Assess: every other task was delivered while both hanging calls were open; all 22 taken were deleted.
    expect(held.delivered).toEqual(expect.arrayContaining(behind.map((task) => task.id)));
    expect(held.inbox.deleted).toHaveLength(22);
  });

  it('takes the next batch at once while the taken ones are still in hand, so a held invocation keeps up with the queue', async () => {
    // Prepare: 30 more of the hanging host's tasks, so every batch taken stays in hand; a call is slow after 1 s.
    const queued = Array.from({ length: 30 }, (_, index) =>
      aTask(NOW_MS - 1000, index % 4, { target: { type: 'http', url: 'https://hangs.example.com/timer' } }),
    );
    const held = heldInvocation({ queued, slowMs: 1000 });

    // Act
    const invocation = held.run();
    await vi.waitFor(() => expect(held.inbox.receives).toBeGreaterThan(0), { timeout: 3000 });

    // Assess: all three batches taken well before any of them has been in hand a slow call's time.
    await vi.waitFor(() => expect(held.inbox.receives).toBeGreaterThanOrEqual(3), { timeout: 500 });
    held.release();
    await invocation;
    expect(held.inbox.deleted).toHaveLength(30);
  });

  it('takes nothing from the queue when no call is slow', async () => {
    // Prepare
    const held = heldInvocation({ queued: otherTenantsTasks(3) });
    held.release();

    // Act
    const result = await held.run();

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    expect(held.inbox.receives).toBe(0);
  });

  it('takes nothing while the slow call is to a host that has been answering: more work would only slow a busy machine', async () => {
    // Prepare
    const held = heldInvocation({ queued: otherTenantsTasks(3), slowCallCounts: () => false });

    // Act
    const invocation = held.run();
    await sleep(100);
    held.release();
    await invocation;

    // Assess
    expect(held.inbox.receives).toBe(0);
  });

  it('takes nothing once the time left is below what a batch may need, so a taken message never outlives the invocation', async () => {
    // Prepare
    const held = heldInvocation({ queued: otherTenantsTasks(3), remainingMs: 14_999 });

    // Act
    const invocation = held.run();
    await sleep(100);
    held.release();
    await invocation;

    // Assess
    expect(held.inbox.receives).toBe(0);
    expect(held.delivered).toEqual([]);
  });

  it('sends a taken message back for its time when waiting for it would leave its call too little of the time left', async () => {
    // Prepare: 16 s left, 13 of them a call's and its writes': a taken task may be waited for 3 s at most.
    // (The fake clock leaps when waited on, so the task that goes now is due already.)
    const soon = aTask(NOW_MS - 500, 1);
    const later = aTask(NOW_MS + 3500, 2);
    const held = heldInvocation({ queued: [soon, later], remainingMs: 16_000 });

    // Act
    const invocation = held.run();
    await vi.waitFor(() => expect(held.inbox.deleted).toHaveLength(2), { timeout: 2000 });
    held.release();
    await invocation;

    // Assess: the sooner task was waited for and called; the later one was not, and has a new
    // message for its time in place of the one taken.
    expect(held.delivered).toEqual([soon.id]);
    expect(held.deliveryQueue.sent.map((message) => [message.id, message.notBeforeMs])).toEqual([
      [later.id, later.fireAtMs],
    ]);
  });

  it('answers for its own batch when a delete fails; the messages not deleted come back after their visibility timeout', async () => {
    // Prepare
    const held = heldInvocation({ queued: otherTenantsTasks(2), failDelete: true });

    // Act
    const invocation = held.run();
    await vi.waitFor(() => expect(held.delivered).toHaveLength(2), { timeout: 2000 });
    held.release();
    const result = await invocation;

    // Assess: the batch's own record is settled; the taken ones were delivered, and stay in the queue to be deduplicated.
    expect(result).toEqual({ batchItemFailures: [] });
    expect(held.inbox.deleted).toEqual([]);
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
