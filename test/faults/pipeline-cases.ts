/**
 * What the pipeline's fault files share: a harness per test, crashes injected into a store, and
 * the run every case makes. Each case submits a known set of tasks, injects one fault, lets the
 * system recover and checks what the receiver saw: every non-cancelled task at least once, none
 * early, duplicates counted, final states right. Each prints one line of what the fault cost.
 */
import { expect, it } from 'vitest';

import { parseTaskId } from '../../functions/core/kernel/ids.js';
import type { DeliveryRecord } from '../../functions/core/kernel/task.js';
import { clockTime } from '../support/clock.js';
import { settledValue } from '../support/webhook-receiver.js';
import { type Harness, type HarnessOptions, printReport, report, startHarness, waitForDeliveries } from './harness.js';

/**
 * A pipeline case: its `start` starts a harness of the case's own, stopped when the case ends.
 * Each harness has its own emulators and receiver, and a case spends most of its time waiting on
 * real time (leases, visibility timeouts, due times), so a file runs its cases at once
 * (`describe.concurrent`) rather than adding their waits up.
 */
export const pipelineCase = it.extend<{ start: (options?: HarnessOptions) => Promise<Harness> }>({
  start: async ({ onTestFinished }, use) => {
    await use(async (options = {}) => {
      const harness = await startHarness(options);
      onTestFinished(() => harness.stop());
      return harness;
    });
  },
});

/**
 * Replaces a method so that its first `calls` calls matching `when` throw, as if the process died
 * right there: more than one for a write the code tries again before giving up.
 */
export function crashOnce<T extends object, K extends keyof T>(
  target: T,
  method: K,
  when: (...args: never[]) => boolean = () => true,
  calls = 1,
): { crashed: () => boolean } {
  const original = (target[method] as (...args: unknown[]) => Promise<unknown>).bind(target);
  let thrown = 0;
  Object.assign(target, {
    [method]: async (...args: unknown[]) => {
      if (thrown < calls && (when as (...args: unknown[]) => boolean)(...args)) {
        thrown += 1;
        throw new Error(`crash in ${String(method)} (injected)`);
      }
      return original(...args);
    },
  });
  return { crashed: () => thrown > 0 };
}

/** Tells `seen` of each call of `target[method]` once it has resolved: its result, then its arguments. */
function afterEachCall<T extends object, K extends keyof T>(
  target: T,
  method: K,
  seen: T[K] extends (...args: infer A) => Promise<infer R> ? (result: R, ...args: A) => void : never,
): void {
  const original = (target[method] as (...args: unknown[]) => Promise<unknown>).bind(target);
  Object.assign(target, {
    [method]: async (...args: unknown[]) => {
      const result = await original(...args);
      (seen as (result: unknown, ...args: unknown[]) => void)(result, ...args);
      return result;
    },
  });
}

/** Every second claimed, by the scanners or by the sweeper's catch-up, in claim order. */
export function recordClaims(h: Harness): number[] {
  const claimed: number[] = [];
  for (const clockStore of [h.scanner.clockStore, h.sweeper.clockStore]) {
    afterEachCall(clockStore, 'advance', (won, from, through) => {
      if (won) for (let second = from; second <= through; second++) claimed.push(second);
    });
  }
  return claimed;
}

/**
 * The retry time each task's answered failed attempt recorded, by task id: only the callback's
 * writes that landed, and only for an attempt that got an HTTP status back. An attempt whose lease
 * ran out before its write (a stall on a loaded machine) records none, and the task's next copy
 * may then go when the lease ends, as at-least-once allows. An attempt the callback gave up on
 * (its timeout) records the backoff alone: the receiver may still have answered, a 429 with a
 * Retry-After among them, after the callback stopped listening (seen once in an idle npm test:
 * the call reached the receiver 545 ms after it was made, past the 500 ms timeout).
 */
export function recordRetryTimes(h: Harness): Map<string, number> {
  const retryAtById = new Map<string, number>();
  const note = (id: string, outcome: DeliveryRecord, landed: boolean) => {
    const answered = 'history' in outcome && outcome.history.at(-1)?.statusCode !== undefined;
    if (landed && answered && outcome.status === 'PENDING' && outcome.retryAtMs !== undefined)
      retryAtById.set(id, outcome.retryAtMs);
  };
  const store = h.callback.delivery.taskStore;
  afterEachCall(store, 'finishDelivery', (landed, address, _attempt, outcome) => note(address.id, outcome, landed));
  afterEachCall(store, 'finishFirstAttempt', (landed, address, outcome) => note(address.id, outcome, landed));
  return retryAtById;
}

/**
 * What a cancel case needs to explain a cancelled task that was called anyway: its cancel's
 * writes and answer, each read the callback made of it and what it saw, its calls, and how far the
 * wall clock moved against the monotonic one during the case (every component here shares one
 * clock, so a step of it is the one way their skew could pass the design's bound).
 */
export function recordCancelTimeline(h: Harness) {
  const events = new Map<string, string[]>();
  const cancelLandedAtMs = new Map<string, number>();
  const answeredAtMs = new Map<string, number>();
  const clockOffsetAtStart = Date.now() - performance.now();
  const note = (id: string, line: string) =>
    events.set(id, [...(events.get(id) ?? []), `${clockTime(Date.now())} ${line}`]);
  const store = h.callback.delivery.taskStore;
  afterEachCall(store, 'getMany', (tasks, addresses) =>
    addresses.forEach((address, index) => note(address.id, `callback read ${tasks[index]?.status ?? 'nothing'}`)),
  );
  afterEachCall(store, 'get', (task, address) =>
    note(address.id, `callback read ${task?.status ?? 'nothing'} (alone)`),
  );
  const api = h.api.taskStore;
  afterEachCall(api, 'cancel', (outcome, address) => {
    if (outcome.cancelled && !cancelLandedAtMs.has(address.id)) cancelLandedAtMs.set(address.id, Date.now());
    note(address.id, `cancel written ${JSON.stringify(outcome)}`);
  });
  afterEachCall(api, 'confirmCancel', (landed, address) => note(address.id, `cancel confirmed: ${landed}`));
  afterEachCall(api, 'revertCancel', (landed, address) => note(address.id, `cancel undone: ${landed}`));
  return {
    answered: (id: string, status: number) => {
      answeredAtMs.set(id, Date.now());
      note(id, `DELETE answered ${status}`);
    },
    /**
     * When the task's cancel was surely stored: its write had returned (else its DELETE's answer).
     * A call fired before then may have been under way when the cancel came, as a leased attempt
     * that failed (a timeout, whose request can still reach the receiver) and left the task PENDING
     * for the cancel; one fired after it breaks the promise.
     */
    cancelStoredAtMs: (id: string) => cancelLandedAtMs.get(id) ?? answeredAtMs.get(id),
    /** The timeline of each task in `ids`, and the clock's step, for a failure's message. */
    explain(ids: readonly string[]): string {
      const stepMs = Math.round(Date.now() - performance.now() - clockOffsetAtStart);
      const called = (id: string) =>
        h.receiver.receipts
          .filter((receipt) => receipt.body.id === id)
          .map((receipt) => `${clockTime(receipt.receivedAtMs)} called, attempt ${receipt.body.attempt}`);
      const due = (id: string) => clockTime(parseTaskId(id, h.api.shardCount)?.fireAtMs ?? 0);
      const lines = ids.map(
        (id) => `${id} (due ${due(id)}): ${[...(events.get(id) ?? []), ...called(id)].sort().join('; ')}`,
      );
      return [...lines, `wall clock moved ${stepMs} ms against the monotonic clock during the case`].join('\n');
    },
  };
}

/** Runs a case: submit, run, wait, report, and check the invariants every case shares. */
export async function runCase(
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

export async function statusOf(h: Harness, id: string): Promise<unknown> {
  const response = await h.call('GET /v1/tasks/{id}', { pathParameters: { id } });
  return (JSON.parse(response.body) as { status: string; attempts: number }).status;
}

/**
 * Every task's status, once each shows `status` or a wait bounded for a busy machine has passed.
 * The receiver has a delivery before the callback records it, so a read right after the last
 * delivery can still see the task PENDING (its first attempt unleased) or DELIVERING.
 */
export function statusesOnceSettled(h: Harness, ids: readonly string[], status: string) {
  return settledValue(
    () => Promise.all(ids.map((id) => statusOf(h, id))),
    (statuses) => statuses.every((seen) => seen === status),
  );
}
