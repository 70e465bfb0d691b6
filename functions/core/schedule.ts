import { parseTaskId, taskKey } from './ids.js';
import type { NewTask } from './schemas.js';
import type { CancelOutcome, Clock, IdempotencyStore, Task, TaskStore } from './task.js';
import { CLOCK_SKEW_MS, DAY_SECONDS, expiryAfter, UNLEASED_CANCEL_MARGIN_MS } from './task.js';
import {
  createOrAdopt,
  type Entry,
  freshTaskId,
  type IndexTasks,
  type LateHandOff,
  newPendingTask,
  storeNewTasks,
  type TaskBirthPorts,
} from './task-kernel.js';

export interface SchedulePorts extends TaskBirthPorts {
  readonly idempotencyStore: IdempotencyStore;
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

export type ScheduleResult = LateHandOff & {
  /** One per request, in order. */
  readonly outcomes: ScheduleOutcome[];
};

/**
 * A submitted task's item and key: a fresh id, its fire time planned (window.ts) once, here, or,
 * given `id`, the id an earlier attempt of the same request recorded, whose place and fire time
 * it takes instead.
 */
function newEntry(
  ports: SchedulePorts,
  tenantId: string,
  request: NewTask,
  createdAtMs: number,
  id = freshTaskId(ports, request.dueAtMs, request.window),
): Entry {
  return newPendingTask(ports, id, { ...request, tenantId }, createdAtMs);
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
  entry: Entry,
  index: IndexTasks,
): Promise<ScheduleOutcome> {
  const { createdAtMs } = entry.task;
  const expiresAtSeconds = expiryAfter(Math.max(entry.task.fireAtMs, createdAtMs), ports.retentionDays);
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
  // The recorded id may fire at another second than this request's entry (delaySeconds resolves
  // anew, and a window is planned anew).
  await index([recorded.task]);
  return { kind: 'replayed', task: await createOrAdopt(ports, recorded) };
}

/**
 * Submits tasks (one, or a batch) through the store path of every new task (task-kernel.ts).
 * Entries are built (and fire times planned) before any write starts, so nothing can throw with
 * writes left unawaited. Tasks without an idempotency key are written together (one BatchWrite
 * for a batch); each keyed one claims its key first.
 */
export async function scheduleTasks(
  ports: SchedulePorts,
  tenantId: string,
  requests: readonly NewTask[],
): Promise<ScheduleResult> {
  const { taskStore, clock } = ports;
  const createdAtMs = clock.now();
  const outcomes: ScheduleOutcome[] = new Array(requests.length);
  const entries = requests.map((request) => newEntry(ports, tenantId, request, createdAtMs));
  const { stored: _stored, ...handOff } = await storeNewTasks(ports, entries, async (written, index) => {
    const plain = written.flatMap((entry, position) =>
      requests[position]?.idempotencyKey === undefined ? [{ position, entry }] : [],
    );
    const keyed = requests.flatMap((request, position) => {
      const { idempotencyKey } = request;
      const entry = written[position];
      if (idempotencyKey === undefined || !entry) return [];
      return [
        scheduleWithKey(ports, tenantId, { ...request, idempotencyKey }, entry, index).then((outcome) => {
          outcomes[position] = outcome;
        }),
      ];
    });
    const writePlain = async () => {
      const [single] = plain;
      if (plain.length === 1 && single) await taskStore.create(single.entry.task, single.entry.key);
      else if (plain.length > 1) await taskStore.createMany(plain.map(({ entry }) => entry));
      for (const { position, entry } of plain) outcomes[position] = { kind: 'created', task: entry.task };
    };
    // Awaited together: a failure on one side must not leave the other's rejection unhandled.
    await Promise.all([writePlain(), ...keyed]);
    return outcomes.flatMap((outcome) =>
      outcome.kind === 'created' || outcome.kind === 'replayed' ? [outcome.task] : [],
    );
  });
  return { outcomes, ...handOff };
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
 * Cancels a task that has not been delivered. Once this returns `cancelled: true` the task can
 * never be delivered. A retry takes a lease before calling the target and only a PENDING task
 * can be cancelled, so no attempt is in flight or was cut short with an unknown outcome. A first
 * attempt takes no lease (one write per delivery instead of two): it reads the task at its fire
 * time (the id's; with a window, later than dueAt), so a cancel of a task never attempted counts
 * only once the api has seen it stored CLOCK_SKEW_MS before the fire time, and is refused from
 * UNLEASED_CANCEL_MARGIN_MS before it. One
 * stored later is undone and refused as `too-late`. Cancelling an already cancelled task
 * succeeds again, so retries are safe.
 */
export async function cancelTask(ports: TaskLookupPorts, tenantId: string, id: string): Promise<CancelOutcome> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return { cancelled: false, reason: 'not-found' };
  const key = taskKey(id, location, ports.bucketCount);
  const nowMs = ports.clock.now();
  const outcome = await ports.taskStore.cancel(key, {
    tenantId,
    nowMs,
    expiresAtSeconds: expiryAfter(nowMs, ports.retentionDays),
    unleasedDueAfterMs: nowMs + UNLEASED_CANCEL_MARGIN_MS,
  });
  if (outcome.cancelled && outcome.unleased && !storedBeforeFirstAttempt(ports.clock, location.fireAtMs)) {
    // Stored too late to be sure no first attempt read the task before it. Undone, the task is
    // delivered as if the cancel never came (unless that attempt recorded its delivery already).
    await ports.taskStore.revertCancel(key, nowMs);
    return { cancelled: false, reason: 'too-late', status: 'PENDING' };
  }
  if (!outcome.cancelled && outcome.status === 'CANCELLED') return { cancelled: true };
  return outcome;
}

/**
 * Whether a write the api has just seen stored came before any unleased first attempt of a task
 * firing at `fireAtMs` could read it: that attempt reads at the fire time by its own clock.
 */
export function storedBeforeFirstAttempt(clock: Clock, fireAtMs: number): boolean {
  return clock.now() + CLOCK_SKEW_MS < fireAtMs;
}
