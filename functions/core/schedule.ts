import { randomInt } from 'node:crypto';
import { readClock, secondOf } from './clock';
import { newTaskId, parseTaskId, taskKey } from './ids';
import { toDeliveryMessages } from './scan';
import type { NewTask } from './schemas';
import type { TaskKey } from './ids';
import type { CancelOutcome, Clock, ClockStore, DeliveryQueue, IdempotencyStore, Task, TaskStore } from './task';
import { expiryAfter } from './task';

export interface SchedulePorts {
  readonly taskStore: TaskStore;
  readonly clockStore: ClockStore;
  readonly idempotencyStore: IdempotencyStore;
  readonly deliveryQueue: DeliveryQueue;
  readonly clock: Clock;
  readonly bucketCount: number;
  readonly shardCount: number;
  readonly retentionDays: number;
}

/** Idempotency keys are scoped per tenant; there is one tenant until API keys exist. */
const TENANT = 'default';

export type ScheduleOutcome =
  | { readonly kind: 'created'; readonly task: Task }
  /** A retry of a submit that already made this task (same idempotency key, same request). */
  | { readonly kind: 'replayed'; readonly task: Task }
  /** The idempotency key was first used with a different request, which made this task. */
  | { readonly kind: 'conflict'; readonly taskId: string };

export interface ScheduleResult {
  /** One per request, in order. */
  readonly outcomes: ScheduleOutcome[];
  /** Late arrivals the api enqueued itself. */
  readonly enqueuedDirect: number;
  /** Late arrivals it could not enqueue and left, flagged, to the sweeper. */
  readonly deferred: number;
}

type Entry = { task: Task; key: TaskKey };

function newEntry(ports: SchedulePorts, request: NewTask, createdAtMs: number, id?: string): Entry {
  const location = id ? parseTaskId(id, ports.shardCount) : { dueAtMs: request.dueAtMs, shard: randomInt(ports.shardCount) };
  if (!location) throw new Error(`task id ${id} does not fit this deployment's shard count`);
  const taskId = id ?? newTaskId(location);
  const task: Task = { ...request, id: taskId, dueAtMs: location.dueAtMs, status: 'PENDING', createdAtMs, attempts: 0 };
  return { task, key: taskKey(taskId, location, ports.bucketCount) };
}

/**
 * A submit with an idempotency key claims the key first (a conditional put recording the
 * new task's id and the request's fingerprint), then stores the task. A retry finds the
 * key taken: the same request gets the task back; a different one is a conflict. If the
 * first submit died between its two writes, the retry stores the task under the recorded
 * id, so a crash at any point leaves either no task or exactly one.
 */
async function scheduleWithKey(ports: SchedulePorts, request: NewTask & { idempotencyKey: string }, createdAtMs: number): Promise<ScheduleOutcome> {
  const entry = newEntry(ports, request, createdAtMs);
  const expiresAtSeconds = expiryAfter(Math.max(request.dueAtMs, createdAtMs), ports.retentionDays);
  const { claimed, holder } = await ports.idempotencyStore.claim(
    { key: `${TENANT}#${request.idempotencyKey}`, fingerprint: request.fingerprint, taskId: entry.task.id },
    expiresAtSeconds,
  );
  if (claimed) {
    await ports.taskStore.create(entry.task, entry.key);
    return { kind: 'created', task: entry.task };
  }
  if (holder.fingerprint !== request.fingerprint) return { kind: 'conflict', taskId: holder.taskId };
  const recovered = newEntry(ports, request, createdAtMs, holder.taskId);
  const existing = await ports.taskStore.get(recovered.key);
  if (existing) return { kind: 'replayed', task: existing };
  try {
    await ports.taskStore.create(recovered.task, recovered.key);
  } catch (error) {
    // A concurrent retry may have stored it first; anything else is a real failure.
    const stored = await ports.taskStore.get(recovered.key);
    if (!stored) throw error;
    return { kind: 'replayed', task: stored };
  }
  return { kind: 'replayed', task: recovered.task };
}

/**
 * Stores new tasks, then hands any whose second is already claimed straight to the
 * delivery queue. The order matters (invariant 5): the cursor is read after the write,
 * so either the scanner's claim came later and its query sees the task, or the cursor
 * read here already shows the claim and this call enqueues it. A task can be enqueued
 * twice by that race, never zero times. If that enqueue fails, the task's second is
 * flagged for the sweeper, which enqueues it within a few minutes; only when the flag
 * cannot be written either does the call fail.
 */
export async function scheduleTasks(ports: SchedulePorts, requests: readonly NewTask[]): Promise<ScheduleResult> {
  const { taskStore, clockStore, deliveryQueue, clock } = ports;
  const createdAtMs = clock.now();
  const outcomes: ScheduleOutcome[] = new Array(requests.length);
  const plain: Array<{ index: number; entry: Entry }> = [];
  const keyed: Array<Promise<void>> = [];
  requests.forEach((request, index) => {
    const { idempotencyKey } = request;
    if (idempotencyKey === undefined) plain.push({ index, entry: newEntry(ports, request, createdAtMs) });
    else {
      keyed.push(
        scheduleWithKey(ports, { ...request, idempotencyKey }, createdAtMs).then((outcome) => {
          outcomes[index] = outcome;
        }),
      );
    }
  });
  const writePlain = async () => {
    const [single] = plain;
    if (plain.length === 1 && single) await taskStore.create(single.entry.task, single.entry.key);
    else if (plain.length > 1) await taskStore.createMany(plain.map(({ entry }) => entry));
    for (const { index, entry } of plain) outcomes[index] = { kind: 'created', task: entry.task };
  };
  // Awaited together: a failure on one side must not leave the other's rejection unhandled.
  await Promise.all([writePlain(), ...keyed]);

  const { cursor } = await readClock(clockStore, clock);
  const late = outcomes.flatMap((outcome) =>
    outcome.kind !== 'conflict' && outcome.task.status === 'PENDING' && outcome.task.attempts === 0 && secondOf(outcome.task.dueAtMs) < cursor
      ? [outcome.task]
      : [],
  );
  if (late.length === 0) return { outcomes, enqueuedDirect: 0, deferred: 0 };
  try {
    await deliveryQueue.send(toDeliveryMessages(late, clock.now()));
    return { outcomes, enqueuedDirect: late.length, deferred: 0 };
  } catch (error) {
    const dueSeconds = late.map((task) => secondOf(task.dueAtMs));
    const nowMs = clock.now();
    await clockStore.markForRecheck(dueSeconds, secondOf(nowMs), expiryAfter(nowMs, RECHECK_RETENTION_DAYS)).catch(() => {
      throw error;
    });
    return { outcomes, enqueuedDirect: 0, deferred: late.length };
  }
}

/** A recheck flag only matters until the sweeper has passed its second; a few days is ample. */
const RECHECK_RETENTION_DAYS = 3;

export interface TaskLookupPorts {
  readonly taskStore: TaskStore;
  readonly clock: Clock;
  readonly bucketCount: number;
  readonly shardCount: number;
  readonly retentionDays: number;
}

/** The task with this id, or undefined for unknown and malformed ids alike. */
export async function getTask(ports: TaskLookupPorts, id: string): Promise<Task | undefined> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return undefined;
  return ports.taskStore.get(taskKey(id, location, ports.bucketCount));
}

/**
 * Cancels a task that has not been delivered. Once this returns `cancelled: true` the
 * task can never be delivered: the callback must take a lease on a PENDING task before
 * calling the target, and only a PENDING task can be cancelled, so no attempt is in flight
 * or was cut short with an unknown outcome. Cancelling an already cancelled task succeeds
 * again, so retries are safe.
 */
export async function cancelTask(ports: TaskLookupPorts, id: string): Promise<CancelOutcome> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return { cancelled: false, reason: 'not-found' };
  const nowMs = ports.clock.now();
  const outcome = await ports.taskStore.cancel(
    taskKey(id, location, ports.bucketCount),
    nowMs,
    expiryAfter(nowMs, ports.retentionDays),
  );
  if (!outcome.cancelled && outcome.status === 'CANCELLED') return { cancelled: true };
  return outcome;
}
