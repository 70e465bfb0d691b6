/**
 * Fault injection on the whole pipeline (real dynalite, fauxqs and webhook receiver).
 * Each case submits a known set of tasks, injects one fault, lets the system recover and
 * checks what the receiver saw: every non-cancelled task at least once, none early,
 * duplicates counted, final states right. Each prints one line of what the fault cost.
 */
import { afterEach, describe, expect, it } from 'vitest';

import { type DeliveryMessage, UNLEASED_CANCEL_MARGIN_MS } from '../../functions/core/kernel/task.js';
import { eventually } from '../support/webhook-receiver.js';
import {
  failShare,
  type Harness,
  type HarnessOptions,
  injectFaults,
  occurrenceReport,
  printReport,
  report,
  startHarness,
  waitForDeliveries,
  webhookTasks,
} from './harness.js';

let harness: Harness | undefined;

afterEach(async () => {
  await harness?.stop();
  harness = undefined;
});

async function start(options: HarnessOptions = {}): Promise<Harness> {
  harness = await startHarness(options);
  return harness;
}

/** Replaces a method so that its first call matching `when` throws, as if the process died right there. */
function crashOnce<T extends object, K extends keyof T>(
  target: T,
  method: K,
  when: (...args: never[]) => boolean = () => true,
): { crashed: () => boolean } {
  const original = (target[method] as (...args: unknown[]) => Promise<unknown>).bind(target);
  let crashed = false;
  Object.assign(target, {
    [method]: async (...args: unknown[]) => {
      if (!crashed && (when as (...args: unknown[]) => boolean)(...args)) {
        crashed = true;
        throw new Error(`crash in ${String(method)} (injected)`);
      }
      return original(...args);
    },
  });
  return { crashed: () => crashed };
}

/** Every second claimed, by the scanners or by the sweeper's catch-up, in claim order. */
function recordClaims(h: Harness): number[] {
  const claimed: number[] = [];
  for (const clockStore of [h.scanner.clockStore, h.sweeper.clockStore]) {
    const advance = clockStore.advance.bind(clockStore);
    clockStore.advance = async (from: number, through: number) => {
      const won = await advance(from, through);
      if (won) for (let second = from; second <= through; second++) claimed.push(second);
      return won;
    };
  }
  return claimed;
}

/** Runs a case: submit, run, wait, report, and check the invariants every case shares. */
async function runCase(
  name: string,
  h: Harness,
  tasks: ReadonlyArray<Record<string, unknown>>,
  submit: { oneByOne?: boolean } = {},
  waitMs?: number,
) {
  const ids = await h.submit(tasks, submit);
  h.run();
  await waitForDeliveries(h, ids, waitMs);
  const result = report(h, ids);
  printReport(name, result);
  expect(result.lost).toEqual([]);
  expect(result.early).toEqual([]);
  return { ids, result };
}

async function statusOf(h: Harness, id: string): Promise<unknown> {
  const response = await h.call('GET /v1/tasks/{id}', { pathParameters: { id } });
  return (JSON.parse(response.body) as { status: string; attempts: number }).status;
}

describe('Faults: the scanner', () => {
  it('recovers a second whose scanner crashed after claiming it and before sending', async () => {
    // Prepare
    const h = await start();
    const crash = crashOnce(h.scanner.deliveryQueue, 'send');

    // Act
    const { result } = await runCase('scanner crash after claim, before send', h, webhookTasks(h, 40, 2500, 6000));

    // Assess
    expect(crash.crashed()).toBe(true);
    expect(result.delivered).toBe(40);
  });

  it('recovers a second whose scanner crashed after sending half of it', async () => {
    // Prepare: the first send with several messages gets half of them out, then the process dies.
    const h = await start({ shardCount: 1 });
    const queue = h.scanner.deliveryQueue;
    const original = queue.send.bind(queue);
    let crashed = false;
    queue.send = async (messages: readonly DeliveryMessage[]) => {
      if (crashed || messages.length < 2) return original(messages);
      crashed = true;
      await original(messages.slice(0, Math.floor(messages.length / 2)));
      throw new Error('crash halfway through the batch (injected)');
    };

    // Act: ten tasks in the same second, so one send carries them all.
    const dueAt = Math.ceil((Date.now() + 3000) / 1000) * 1000 + 100;
    const tasks = webhookTasks(h, 10, 0, 0).map((task) => ({ ...task, dueAt }));
    const { result } = await runCase('scanner crash after sending half a batch', h, tasks);

    // Assess
    expect(crashed).toBe(true);
    expect(result.delivered).toBe(10);
  });

  it('recovers a second whose scanner sent everything and crashed before writing its marker', async () => {
    // Prepare
    const h = await start();
    const crash = crashOnce(
      h.scanner.clockStore,
      'markScanned',
      (_range: unknown, enqueued: ReadonlyMap<number, number>) => enqueued.size > 0,
    );

    // Act
    const { result } = await runCase('scanner crash before the finished marker', h, webhookTasks(h, 40, 2500, 6000));

    // Assess: the re-scan only sends duplicates of what the callback already delivered or holds.
    expect(crash.crashed()).toBe(true);
    expect(result.delivered).toBe(40);
  });

  it('claims every second once however many duplicate ticks arrive, in any order', async () => {
    // Prepare
    const h = await start({ scannersPerTick: 4 });
    const claimed = recordClaims(h);

    // Act
    await runCase('duplicate and out-of-order ticks', h, webhookTasks(h, 40, 2000, 6000));

    // Assess
    expect(claimed.length).toBeGreaterThan(5);
    expect(new Set(claimed).size).toBe(claimed.length);
  });

  it('drains an hour of backlog with racing scanners, each second claimed once', async () => {
    // Prepare: the clock stopped an hour ago; tasks fell due during the last ten minutes of it.
    const h = await start({ shardCount: 2, scannersPerTick: 2 });
    const now = Math.floor(Date.now() / 1000);
    await h.scanner.clockStore.start(now - 3600);
    const claimed = recordClaims(h);
    const tasks = webhookTasks(h, 60, -600_000, 3000);

    // Act
    const { result } = await runCase('an hour of backlog after a 10-minute outage', h, tasks);

    // Assess: the tasks, past due when submitted, went out by the api's own hand; the scanners
    // work through the hour beside them, at whatever pace the machine allows.
    expect(result.delivered).toBe(60);
    const expected = Array.from({ length: 3600 }, (_, index) => now - 3600 + index);
    const unclaimed = () => expected.filter((second) => !claimed.includes(second));
    await eventually('every second of the hour claimed', () => unclaimed().length === 0, 240, 500);
    expect(new Set(claimed).size).toBe(claimed.length);
  }, 240_000);
});

describe('Faults: the callback', () => {
  it('redelivers, with the same id, a task whose callback crashed after the target answered', async () => {
    // Prepare
    const h = await start();
    const crash = crashOnce(
      h.callback.delivery.taskStore,
      'finishDelivery',
      (_key: unknown, _attempt: number, outcome: { status: string }) => outcome.status === 'DELIVERED',
    );

    // Act
    const { ids } = await runCase(
      'callback crash after delivering, before DELIVERED',
      h,
      webhookTasks(h, 20, 2000, 4000),
    );

    // Assess: one duplicate, carrying the same webhook-id, and the task ends DELIVERED. The crashed
    // task's message comes back only after its visibility timeout, which on a busy machine can
    // fall after the last first delivery the case waited for.
    expect(crash.crashed()).toBe(true);
    const repeats = () =>
      h.receiver.receipts.filter(
        (receipt, index, all) => all.findIndex((other) => other.body.id === receipt.body.id) !== index,
      );
    await eventually('the crashed delivery is made again', () => repeats().length >= 1, 60);
    const twice = repeats();
    expect(twice.length).toBeGreaterThanOrEqual(1);
    for (const receipt of twice) expect(receipt.headers['webhook-id']).toBe(receipt.body.id);
    for (const id of ids) expect(await statusOf(h, id)).toBe('DELIVERED');
  });

  it('survives webhooks that time out, fail, throttle with Retry-After or drop the connection', async () => {
    // Prepare: each path misbehaves on the first attempt of every task, then answers 200.
    const h = await start({
      webhookTimeoutMs: 500,
      responders: {
        '/slow': (_, seen) => (seen === 0 ? { status: 200, delayMs: 1500 } : 200),
        '/error': (_, seen) => (seen === 0 ? 502 : 200),
        '/throttle': (_, seen) => (seen === 0 ? { status: 429, headers: { 'retry-after': '2' } } : 200),
        '/drop': (_, seen) => (seen === 0 ? { dropConnection: true } : 200),
      },
    });
    const tasks = ['/slow', '/error', '/throttle', '/drop'].flatMap((path) => webhookTasks(h, 8, 2000, 4000, path));

    // Act
    const { ids, result } = await runCase('webhook timeout, 5xx, 429 Retry-After, dropped connection', h, tasks);

    // Assess: each got a second attempt; the throttled ones waited as asked.
    expect(result.delivered).toBe(32);
    for (const id of ids) expect(await statusOf(h, id)).toBe('DELIVERED');
    const throttled = h.receiver.receipts.filter((receipt) => receipt.path === '/throttle');
    for (const id of new Set(throttled.map((receipt) => receipt.body.id))) {
      const [first, second] = throttled.filter((receipt) => receipt.body.id === id);
      expect((second?.receivedAtMs ?? 0) - (first?.receivedAtMs ?? 0)).toBeGreaterThanOrEqual(1900);
    }
  });

  it('never delivers a task once its cancel returned 200, even with its message already queued', async () => {
    // Prepare: tasks due just past the cancel margin once the scanner's lookahead reaches them, so
    // they are cancelled as soon as the first is in the delivery queue, yet still cancellable.
    const h = await start();
    const queued = new Set<string>();
    const queue = h.scanner.deliveryQueue;
    const send = queue.send.bind(queue);
    queue.send = async (messages: readonly DeliveryMessage[]) => {
      await send(messages);
      for (const message of messages) queued.add(message.id);
    };
    const tasks = webhookTasks(h, 40, UNLEASED_CANCEL_MARGIN_MS + 1300, UNLEASED_CANCEL_MARGIN_MS + 2000);
    const ids = await h.submit(tasks);
    h.run();
    // By the first send, not by a fixed wait: how soon the scanner gets to them depends on the machine.
    await eventually('the scanner sent the first of them', () => queued.size > 0, 200, 10);
    const queuedBeforeCancel = new Set(queued);

    // Act: cancel every other task, racing the deliveries.
    const cancels = await Promise.all(
      ids
        .filter((_, index) => index % 2 === 0)
        .map(async (id) => {
          const response = await h.call('DELETE /v1/tasks/{id}', { pathParameters: { id } });
          return { id, status: response.statusCode };
        }),
    );
    const kept = ids.filter((id) => !cancels.some((cancel) => cancel.id === id && cancel.status === 200));
    await waitForDeliveries(h, kept);

    // Assess
    const cancelled = new Set(cancels.filter((cancel) => cancel.status === 200).map((cancel) => cancel.id));
    const result = report(h, kept);
    const deliveredCancelled = h.receiver.receipts.filter((receipt) => cancelled.has(receipt.body.id));
    printReport(
      `cancel racing queued deliveries (${cancelled.size} of ${cancels.length} cancels answered 200, ${[...cancelled].filter((id) => queuedBeforeCancel.has(id)).length} of them already queued; ${deliveredCancelled.length} delivered)`,
      result,
    );
    expect(cancelled.size).toBeGreaterThan(0);
    // The point of the case: some cancels hit tasks whose message was already on its way.
    expect([...cancelled].filter((id) => queuedBeforeCancel.has(id)).length).toBeGreaterThan(0);
    expect(deliveredCancelled).toEqual([]);
    expect(result.lost).toEqual([]);
    for (const id of cancelled) expect(await statusOf(h, id)).toBe('CANCELLED');
  });
});

describe('Faults: the AWS services', () => {
  it('loses nothing when DynamoDB throttles and SQS fails on every call site', async () => {
    // Prepare: in every component, one attempt in five of DynamoDB and SQS calls is
    // throttled (the SDK retries those with backoff), and one call in ten fails
    // outright, past the SDK, so the timer's own recovery has to find its way around it.
    const throttled = new Map<string, number>();
    const failed = new Map<string, number>();
    const h = await start({
      clientsFor: (component, clients) => {
        // Each component and client draws its own sequence, as independent processes would.
        const seed = ['api', 'scanner', 'callback', 'sweeper'].indexOf(component) * 4;
        injectFaults(
          clients.dynamo,
          'withinRetries',
          failShare(0.2, 'ProvisionedThroughputExceededException', throttled, seed + 1),
        );
        injectFaults(clients.sqs, 'withinRetries', failShare(0.2, 'RequestThrottled', throttled, seed + 2));
        injectFaults(clients.dynamo, 'beforeRetries', failShare(0.1, 'InternalServerError', failed, seed + 3));
        injectFaults(clients.sqs, 'beforeRetries', failShare(0.1, 'ServiceUnavailable', failed, seed + 4));
      },
    });

    // Act: submits are retried by the client with their idempotency keys, as callers should.
    const tasks = [...webhookTasks(h, 30, 2000, 6000), ...webhookTasks(h, 10, -5000, -1000)];
    // Late arrivals whose enqueue failed wait for the overdue pass, which fails as often as the
    // rest: on a loaded machine it can take longer than the usual wait to reach them all.
    const { ids, result } = await runCase(
      'DynamoDB throttling and SQS errors everywhere',
      h,
      tasks,
      { oneByOne: true },
      100_000,
    );

    // Assess: retried submits created no extra tasks, and faults really hit every kind of call.
    expect(new Set(ids).size).toBe(40);
    expect(result.delivered).toBe(40);
    // Inside the retry loop the document client's commands carry their low-level names (PutItemCommand…).
    for (const injected of [throttled, failed]) {
      const kinds = [...injected.keys()].join(' ');
      for (const operation of ['Put', 'Update', 'Query', 'Get', 'SendMessageBatch']) expect(kinds).toContain(operation);
    }
    console.log(
      `  injected: ${[...throttled.values()].reduce((a, b) => a + b, 0)} throttles, ${[...failed.values()].reduce((a, b) => a + b, 0)} hard failures`,
    );
  }, 180_000);

  it('keeps one task per idempotency key when the api dies at its keyed task write and the submit is retried', async () => {
    // Prepare
    const h = await start();
    const crash = crashOnce(h.api.taskStore, 'create');
    const tasks = webhookTasks(h, 1, 2000, 2000);

    // Act: the harness retries the failed submit with the same key.
    const { ids, result } = await runCase('api crash at a keyed task write', h, tasks);
    const again = await h.submit(tasks);

    // Assess
    expect(crash.crashed()).toBe(true);
    expect(again).toEqual(ids);
    expect(result).toMatchObject({ delivered: 1, duplicates: 0 });
  });
});

describe('Faults: clocks', () => {
  it('is never early and loses nothing when the api, scanner and sweeper clocks are seconds apart', async () => {
    // Prepare: only the callback's clock decides "not before dueAt"; it may lag, never lead (see docs).
    const h = await start({ skewMs: { api: -3000, scanner: 3000, sweeper: -5000, callback: -1000 } });

    // Act
    const { result } = await runCase('clock skew between components', h, [
      ...webhookTasks(h, 30, 2000, 7000),
      ...webhookTasks(h, 5, -3000, 0),
    ]);

    // Assess
    expect(result.delivered).toBe(35);
  });
});

/**
 * Tasks submitted well before their due time (past the late-arrival bound: lookahead, clock skew
 * tolerance and the api's timeout, 22 s) take no lease on their first attempt: one write instead
 * of two. These cases run them through the same faults as the leased path above.
 */
describe('Faults: unleased first attempts', () => {
  const FAR_MS = 25_000;

  it('redelivers, with the same id and attempt, a task whose callback crashed after the target answered and before its receipt was written', async () => {
    // Prepare: a first attempt's 2xx is recorded in its batch's receipt, not on the task.
    const h = await start();
    const crash = crashOnce(h.callback.delivery.taskStore, 'recordReceipt');

    // Act
    const { ids } = await runCase(
      'unleased first attempt: crash after delivering, before its receipt',
      h,
      webhookTasks(h, 20, FAR_MS, FAR_MS + 2000),
      {},
      60_000,
    );

    // Assess
    expect(crash.crashed()).toBe(true);
    const repeats = () =>
      h.receiver.receipts.filter(
        (receipt, index, all) => all.findIndex((other) => other.body.id === receipt.body.id) !== index,
      );
    await eventually('the crashed delivery is made again', () => repeats().length >= 1, 60);
    for (const receipt of repeats()) {
      expect(receipt.headers['webhook-id']).toBe(receipt.body.id);
      expect(receipt.body.attempt).toBe(1);
    }
    for (const id of ids) expect(await statusOf(h, id)).toBe('DELIVERED');
  }, 120_000);

  it('never delivers a task whose cancel answered 200, with cancels racing its due time', async () => {
    // Prepare: 30 tasks, each cancelled at its own moment from 1.5 s before the cancel margin to 0.5 s
    // after its due time.
    const h = await start();
    const tasks = webhookTasks(h, 30, FAR_MS, FAR_MS + 3000);
    const ids = await h.submit(tasks);
    h.run();

    // Act
    const cancels = await Promise.all(
      ids.map(async (id, index) => {
        const dueAt = Number((tasks[index] as { dueAt: number }).dueAt);
        const offsetMs =
          -(UNLEASED_CANCEL_MARGIN_MS + 1500) +
          Math.floor(((UNLEASED_CANCEL_MARGIN_MS + 2000) * index) / (ids.length - 1));
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, dueAt + offsetMs - Date.now())));
        const response = await h.call('DELETE /v1/tasks/{id}', { pathParameters: { id } });
        return {
          id,
          offsetMs,
          status: response.statusCode,
          type: (JSON.parse(response.body) as { type?: string }).type,
        };
      }),
    );
    const cancelled = new Set(cancels.filter((cancel) => cancel.status === 200).map((cancel) => cancel.id));
    const kept = ids.filter((id) => !cancelled.has(id));
    await waitForDeliveries(h, kept, 60_000);

    // Assess: 200 well before the margin, 409 after it; no cancelled task reaches the receiver.
    const result = report(h, kept);
    const deliveredCancelled = h.receiver.receipts.filter((receipt) => cancelled.has(receipt.body.id));
    printReport(
      `unleased first attempts: cancels racing the due time (${cancelled.size} of ${cancels.length} answered 200; ${deliveredCancelled.length} delivered)`,
      result,
    );
    expect(cancelled.size).toBeGreaterThan(0);
    expect(kept.length).toBeGreaterThan(0);
    // Refused ones were too late to cancel (or already delivered, for those asked after the due time).
    for (const cancel of cancels.filter((each) => each.status !== 200)) {
      expect(cancel.status).toBe(409);
      expect(['/problems/too-late', '/problems/already-final']).toContain(cancel.type);
    }
    expect(
      cancels
        .filter((cancel) => cancel.offsetMs < -(UNLEASED_CANCEL_MARGIN_MS + 500))
        .every((cancel) => cancel.status === 200),
    ).toBe(true);
    expect(deliveredCancelled).toEqual([]);
    expect(result.lost).toEqual([]);
    expect(result.early).toEqual([]);
    for (const id of cancelled) expect(await statusOf(h, id)).toBe('CANCELLED');
  }, 120_000);
});

describe('Faults: schedule occurrences', () => {
  const EVERY_MS = 2000;

  /** Creates a rate schedule through the api, runs the pipeline until `count` occurrences arrived, then deletes it. */
  async function runSchedule(h: Harness, name: string, count: number) {
    const created = await h.call('POST /v1/schedules', {
      body: { rate: `${EVERY_MS / 1000} seconds`, target: { type: 'http', url: h.receiver.url('/ok') } },
    });
    expect(created.statusCode).toBe(201);
    const { id } = JSON.parse(created.body) as { id: string };
    h.run();
    await eventually(
      `${count} occurrences`,
      () => occurrenceReport(h, id, EVERY_MS).occurrences.length >= count,
      240,
      250,
    );
    await h.call('DELETE /v1/schedules/{id}', { pathParameters: { id } });
    const result = occurrenceReport(h, id, EVERY_MS);
    console.log(
      `fault "${name}": occurrences ${result.occurrences.length}, gaps ${result.gaps.length}, doubles ${result.doubles.length}, duplicates ${result.duplicates}, early ${result.early}`,
    );
    return result;
  }

  it('leaves no gap and no double when the callback dies after moving the schedule on, before storing the next occurrence', async () => {
    // Prepare: the first write of an occurrence task by the callback (the successor) dies.
    const h = await start();
    const crash = crashOnce(h.callback.delivery.occurrences.taskStore, 'create');

    // Act
    const result = await runSchedule(
      h,
      'callback crash between advancing a schedule and storing its next occurrence',
      6,
    );

    // Assess
    expect(crash.crashed()).toBe(true);
    expect(result.gaps).toEqual([]);
    expect(result.doubles).toEqual([]);
    expect(result.early).toBe(0);
  }, 120_000);

  it('leaves no gap and no double when the schedule write lands but the callback dies before hearing so', async () => {
    // Prepare: the advance is applied, then the process dies before the successor is stored.
    const h = await start();
    const store = h.callback.delivery.occurrences.scheduleStore;
    const advance = store.advance.bind(store);
    let crashed = false;
    store.advance = async (...args: Parameters<typeof advance>) => {
      const applied = await advance(...args);
      if (crashed) return applied;
      crashed = true;
      throw new Error('crash after the schedule write (injected)');
    };

    // Act
    const result = await runSchedule(h, 'callback crash after the schedule write landed', 6);

    // Assess
    expect(crashed).toBe(true);
    expect(result.gaps).toEqual([]);
    expect(result.doubles).toEqual([]);
    expect(result.early).toBe(0);
  }, 120_000);

  it("leaves no gap and no double when the callback dies after an occurrence's delivery, before recording it", async () => {
    // Prepare: the write that records the first delivered occurrence dies; the call was made.
    const h = await start();
    const crash = crashOnce(
      h.callback.delivery.taskStore,
      'finishDelivery',
      (_key: unknown, _attempt: unknown, outcome: { status: string }) => outcome.status === 'DELIVERED',
    );

    // Act
    const result = await runSchedule(h, 'callback crash between an occurrence delivery and its record', 6);

    // Assess: the cut-short occurrence comes again under the same task id (a duplicate), never as a second task.
    expect(crash.crashed()).toBe(true);
    expect(result.gaps).toEqual([]);
    expect(result.doubles).toEqual([]);
    expect(result.duplicates).toBeGreaterThanOrEqual(1);
    expect(result.early).toBe(0);
  }, 120_000);
});
