import { randomInt } from 'node:crypto';
import { readClock, secondOf } from './clock';
import { newTaskId, parseTaskId, taskKey } from './ids';
import { MARKER_RETENTION_SECONDS, toDeliveryMessages } from './scan';
import type { NewTask } from './schemas';
import type { TaskKey } from './ids';
import type { CancelOutcome, Clock, ClockStore, DeliveryQueue, IdempotencyStore, Task, TaskStore } from './task';
import { DAY_SECONDS, expiryAfter } from './task';

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

export type ScheduleOutcome =
  | { readonly kind: 'created'; readonly task: Task }
  /** A retry of a submit that already made this task (same idempotency key, same request). */
  | { readonly kind: 'replayed'; readonly task: Task }
  /** The idempotency key was first used with a different request, which made this task. */
  | { readonly kind: 'conflict'; readonly taskId: string }
  /** The key's task finished and has expired; the key cannot be used again. */
  | { readonly kind: 'expired'; readonly taskId: string };

export interface ScheduleResult {
  /** One per request, in order. */
  readonly outcomes: ScheduleOutcome[];
  /** Late arrivals the api enqueued itself. */
  readonly enqueuedDirect: number;
  /** Late arrivals it could not enqueue and left, flagged, to the sweeper. */
  readonly deferred: number;
}

export type Entry = { task: Task; key: TaskKey };

function newEntry(ports: SchedulePorts, tenantId: string, request: NewTask, createdAtMs: number, id?: string): Entry {
  const location = id ? parseTaskId(id, ports.shardCount) : { dueAtMs: request.dueAtMs, shard: randomInt(ports.shardCount) };
  if (!location) throw new Error(`task id ${id} does not fit this deployment's shard count`);
  const taskId = id ?? newTaskId(location);
  const task: Task = {
    ...request,
    id: taskId,
    tenantId,
    dueAtMs: location.dueAtMs,
    status: 'PENDING',
    createdAtMs,
    attempts: 0,
  };
  return { task, key: taskKey(taskId, location, ports.bucketCount) };
}

/** Stores the task, or, if a concurrent request that chose the same id stored it first, takes that one. */
export async function createOrAdopt(ports: Pick<SchedulePorts, 'taskStore'>, entry: Entry): Promise<Task> {
  try {
    await ports.taskStore.create(entry.task, entry.key);
    return entry.task;
  } catch (error) {
    const stored = await ports.taskStore.get(entry.key);
    if (!stored) throw error;
    return stored;
  }
}

/**
 * A submit with an idempotency key claims the key first (a conditional put recording the
 * new task's id, the request's fingerprint and when), then stores the task. A retry finds
 * the key taken: the same request gets the task back; a different one is a conflict. If
 * the first submit died between its two writes, the retry stores the task under the
 * recorded id. That repair is only safe while the task, had it been written, could not yet
 * have expired: a finished task lives `retentionDays` after it ends, so within that many
 * days of the claim a missing task was never written. After it, the key is spent.
 */
async function scheduleWithKey(
  ports: SchedulePorts,
  tenantId: string,
  request: NewTask & { idempotencyKey: string },
  createdAtMs: number,
): Promise<ScheduleOutcome> {
  const entry = newEntry(ports, tenantId, request, createdAtMs);
  const expiresAtSeconds = expiryAfter(Math.max(request.dueAtMs, createdAtMs), ports.retentionDays);
  const { claimed, holder } = await ports.idempotencyStore.claim(
    {
      // Keys are the tenant's own: two tenants using the same key never meet.
      key: `${tenantId}#${request.idempotencyKey}`,
      fingerprint: request.fingerprint,
      taskId: entry.task.id,
      claimedAtMs: createdAtMs,
    },
    expiresAtSeconds,
  );
  if (claimed) return { kind: 'created', task: await createOrAdopt(ports, entry) };
  if (holder.fingerprint !== request.fingerprint) return { kind: 'conflict', taskId: holder.taskId };
  const recorded = newEntry(ports, tenantId, request, createdAtMs, holder.taskId);
  const existing = await ports.taskStore.get(recorded.key);
  if (existing) return { kind: 'replayed', task: existing };
  if (createdAtMs - holder.claimedAtMs >= ports.retentionDays * DAY_SECONDS * 1000) {
    return { kind: 'expired', taskId: holder.taskId };
  }
  return { kind: 'replayed', task: await createOrAdopt(ports, recorded) };
}

/**
 * Stores new tasks, then hands any whose second is already claimed straight to the
 * delivery queue. The order matters (invariant 5): the cursor is read after the write,
 * so either the scanner's claim came later and its query sees the task, or the cursor
 * read here already shows the claim and this call enqueues it. A task can be enqueued
 * twice by that race, never zero times. Late arrivals are also flagged for the sweeper's
 * overdue pass, their seconds' scans having sent nothing of theirs: should the message be
 * lost, or the enqueue fail, the sweeper enqueues them once they are overdueGraceSeconds
 * past due. Only when neither the enqueue nor the flag can be written does the call fail.
 */
export async function scheduleTasks(
  ports: SchedulePorts,
  tenantId: string,
  requests: readonly NewTask[],
): Promise<ScheduleResult> {
  const { taskStore, clock } = ports;
  const createdAtMs = clock.now();
  const outcomes: ScheduleOutcome[] = new Array(requests.length);
  // Entries are built before any write starts, so nothing can throw with writes left unawaited.
  const plain = requests.flatMap((request, index) =>
    request.idempotencyKey === undefined ? [{ index, entry: newEntry(ports, tenantId, request, createdAtMs) }] : [],
  );
  const keyed = requests.flatMap((request, index) => {
    const { idempotencyKey } = request;
    if (idempotencyKey === undefined) return [];
    return [
      scheduleWithKey(ports, tenantId, { ...request, idempotencyKey }, createdAtMs).then((outcome) => {
        outcomes[index] = outcome;
      }),
    ];
  });
  const writePlain = async () => {
    const [single] = plain;
    if (plain.length === 1 && single) await taskStore.create(single.entry.task, single.entry.key);
    else if (plain.length > 1) await taskStore.createMany(plain.map(({ entry }) => entry));
    for (const { index, entry } of plain) outcomes[index] = { kind: 'created', task: entry.task };
  };
  // Awaited together: a failure on one side must not leave the other's rejection unhandled.
  await Promise.all([writePlain(), ...keyed]);

  const stored = outcomes.flatMap((outcome) =>
    outcome.kind === 'created' || outcome.kind === 'replayed' ? [outcome.task] : [],
  );
  return { outcomes, ...(await handOffLateArrivals(ports, stored)) };
}

/**
 * Enqueues the stored tasks whose second a scanner has already claimed (invariant 5: call
 * it after the write). Returns how many it enqueued, or, if the enqueue failed, how many it
 * left flagged for the sweeper; throws only when neither could be written.
 */
export async function handOffLateArrivals(
  ports: Pick<SchedulePorts, 'clockStore' | 'deliveryQueue' | 'clock'>,
  stored: readonly Task[],
): Promise<Omit<ScheduleResult, 'outcomes'>> {
  const { clockStore, deliveryQueue, clock } = ports;
  const { cursor } = await readClock(clockStore, clock);
  const late = stored.filter((task) => task.status === 'PENDING' && task.attempts === 0 && secondOf(task.dueAtMs) < cursor);
  if (late.length === 0) return { enqueuedDirect: 0, deferred: 0 };
  const nowMs = clock.now();
  const [sent, flagged] = await Promise.allSettled([
    deliveryQueue.send(toDeliveryMessages(late, nowMs)),
    clockStore.markForRecheck(
      late.map((task) => secondOf(task.dueAtMs)),
      secondOf(nowMs),
      secondOf(nowMs) + MARKER_RETENTION_SECONDS,
    ),
  ]);
  if (sent.status === 'fulfilled') return { enqueuedDirect: late.length, deferred: 0 };
  if (flagged.status === 'fulfilled') return { enqueuedDirect: 0, deferred: late.length };
  throw sent.reason;
}


export interface TaskLookupPorts {
  readonly taskStore: TaskStore;
  readonly clock: Clock;
  readonly bucketCount: number;
  readonly shardCount: number;
  readonly retentionDays: number;
}

/**
 * The tenant's task with this id, or undefined for unknown ids, malformed ids and other
 * tenants' tasks alike, so an id is no oracle for whether someone else's task exists.
 */
export async function getTask(ports: TaskLookupPorts, tenantId: string, id: string): Promise<Task | undefined> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return undefined;
  const task = await ports.taskStore.get(taskKey(id, location, ports.bucketCount));
  return task?.tenantId === tenantId ? task : undefined;
}

/**
 * Cancels a task that has not been delivered. Once this returns `cancelled: true` the
 * task can never be delivered: the callback must take a lease on a PENDING task before
 * calling the target, and only a PENDING task can be cancelled, so no attempt is in flight
 * or was cut short with an unknown outcome. Cancelling an already cancelled task succeeds
 * again, so retries are safe.
 */
export async function cancelTask(ports: TaskLookupPorts, tenantId: string, id: string): Promise<CancelOutcome> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return { cancelled: false, reason: 'not-found' };
  const nowMs = ports.clock.now();
  const outcome = await ports.taskStore.cancel(
    taskKey(id, location, ports.bucketCount),
    tenantId,
    nowMs,
    expiryAfter(nowMs, ports.retentionDays),
  );
  if (!outcome.cancelled && outcome.status === 'CANCELLED') return { cancelled: true };
  return outcome;
}
