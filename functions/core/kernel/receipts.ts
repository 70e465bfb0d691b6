/**
 * Reading a task's status through its receipts. An unleased first attempt answered 2xx is recorded
 * in its callback batch's receipt (DeliveryReceipt), not on the task's item, which stays as the
 * attempt read it. So every reader that tells or acts on whether a task was delivered (GET,
 * listings, cancel, the sweeper, redrive, a leased retry) reads the receipts of its fire second.
 */
import { CLOCK_SKEW_MS, secondOf } from './clock.js';
import { awaitsUnleasedFirstAttempt, type Task, type TaskStore } from './task.js';

/**
 * Whether a receipt may tell more than the task's item, read by a clock that says `nowMs`: it is
 * not DELIVERED already, not handed over by a reschedule, of the kind whose first attempt takes
 * no lease, and a callback may have called it (it fires by the callback's clock, which is at most
 * CLOCK_SKEW_MS ahead). A task that fails any of these is read as its item says, with no receipt read.
 */
export function mayHaveReceipt(task: Task, nowMs: number): boolean {
  return (
    task.status !== 'DELIVERED' &&
    task.rescheduledTo === undefined &&
    awaitsUnleasedFirstAttempt({ ...task, attempts: 0 }) &&
    task.fireAtMs <= nowMs + CLOCK_SKEW_MS
  );
}

/**
 * The task as its receipt shows it: DELIVERED, whatever its item says since the attempt read it (a
 * copy's failure, a retry, a FAILED, a cancel the api could not confirm in time): a 2xx was seen.
 */
export function deliveredByReceipt(task: Task, deliveredAtMs: number): Task {
  const {
    leaseUntilMs: _lease,
    retryAtMs: _retryAt,
    cancelledAtMs: _cancelledAt,
    unconfirmedCancel: _unconfirmed,
    copiesCallUntilMs: _copies,
    ...rest
  } = task;
  return {
    ...rest,
    status: 'DELIVERED',
    attempts: Math.max(task.attempts, 1),
    deliveredAtMs,
    // Against the fire time, as the callback measures it.
    latenessMs: deliveredAtMs - task.fireAtMs,
  };
}

/** When a receipt says the task was delivered; undefined if none does (or none can: see mayHaveReceipt). */
export async function receiptOf(
  store: Pick<TaskStore, 'receiptsOf'>,
  task: Pick<Task, 'id' | 'fireAtMs'>,
): Promise<number | undefined> {
  return (await store.receiptsOf(secondOf(task.fireAtMs))).get(task.id);
}

/** The tasks as their receipts show them: one read of the receipts of each fire second among those that may have one. */
export async function withReceipts(
  store: Pick<TaskStore, 'receiptsOf'>,
  tasks: readonly Task[],
  nowMs: number,
): Promise<Task[]> {
  const seconds = new Set(tasks.filter((task) => mayHaveReceipt(task, nowMs)).map((task) => secondOf(task.fireAtMs)));
  const bySecond = new Map(
    await Promise.all([...seconds].map(async (second) => [second, await store.receiptsOf(second)] as const)),
  );
  return tasks.map((task) => asReceiptsShow(task, bySecond.get(secondOf(task.fireAtMs)) ?? new Map(), nowMs));
}

/** The task as receipts already read show it: `delivered` holds every receipted id of its fire second, or more. */
export function asReceiptsShow(task: Task, delivered: ReadonlyMap<string, number>, nowMs: number): Task {
  const deliveredAtMs = mayHaveReceipt(task, nowMs) ? delivered.get(task.id) : undefined;
  return deliveredAtMs === undefined ? task : deliveredByReceipt(task, deliveredAtMs);
}

/** One task as its receipt shows it (see withReceipts). */
export async function withReceipt(
  store: Pick<TaskStore, 'receiptsOf'>,
  task: Task | undefined,
  nowMs: number,
): Promise<Task | undefined> {
  if (!task) return undefined;
  const [read] = await withReceipts(store, [task], nowMs);
  return read;
}
