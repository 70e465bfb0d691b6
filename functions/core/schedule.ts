import { randomUUID } from 'node:crypto';

import { CLOCK_SKEW_MS, DAY_SECONDS } from './clock.js';
import { parseTaskId, type TaskKey, taskKey } from './ids.js';
import type { NewTask } from './schemas.js';
import type { CancelOutcome, Clock, DueTask, IdempotencyStore, Task, TaskStore } from './task.js';
import { expiryAfter, UNLEASED_CANCEL_MARGIN_MS } from './task.js';
import {
  createOrAdopt,
  deliveryMessageFor,
  type Entry,
  freshTaskId,
  type IndexTasks,
  type LateHandOff,
  newPendingTask,
  type Placement,
  storeNewTasks,
  type TaskBirthPorts,
} from './task-kernel.js';

export interface SchedulePorts extends TaskBirthPorts {
  readonly idempotencyStore: IdempotencyStore;
  readonly retentionDays: number;
  /** This execution environment's own dealers, for the fresh ids of submits and reschedules. */
  readonly placement: Placement;
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

/** What a cancel needs: the task, and the delivery queue to give a task whose cancel it undoes its message back. */
export type CancelPorts = TaskLookupPorts & Pick<SchedulePorts, 'deliveryQueue'>;

/** Rounds of a cancel whose settling another request keeps getting to first. */
const CANCEL_ROUNDS = 3;

/**
 * Cancels a task that has not been delivered. Once this returns `cancelled: true` the task can
 * never be delivered, whatever happens to the request or its retries.
 *
 * A retry takes a lease before calling the target and only a PENDING task can be cancelled, so
 * such a cancel is final the moment it is stored. A first attempt takes no lease (one write per
 * delivery instead of two): it reads the task at its fire time (the id's; with a window, later
 * than dueAt) by the callback's clock and calls the target with no further check. A cancel of a
 * task waiting for that attempt is refused from UNLEASED_CANCEL_MARGIN_MS before the fire time,
 * and otherwise made in two phases:
 *
 * 1. The write makes the task CANCELLED, with `unconfirmedCancel` naming this request's cancel.
 * 2. Having seen it stored, the api looks at its own clock: if it still reads more than
 *    CLOCK_SKEW_MS before the fire time, the cancel was stored before any callback's read (their
 *    clocks are at most that far ahead), so it confirms the cancel (removes the mark) and only then
 *    answers 200. Otherwise it undoes it (CANCELLED → PENDING), sends the task's delivery message
 *    again (an attempt that read the task after the cancel let its message go) and answers
 *    `too-late`: an attempt may have read the task before the cancel and be calling the target.
 *
 * Both writes of phase 2 are conditional on the mark still naming this cancel, so of a confirm and
 * an undo racing for one cancel exactly one lands. A DELETE that finds the task already CANCELLED
 * answers 200 only if that cancel is final. An unconfirmed one (its request is between the phases,
 * crashed there, lost the write's response and retried, or is about to undo it) has never been
 * answered 200, so this request settles it by the same rule: it saw the cancel stored just now, so
 * it confirms it if its clock is still in time, and undoes it if not. A request whose confirm or
 * undo finds the mark gone (another request settled the cancel, or the attempt recorded a delivery
 * over it) reads the task again and answers by what it finds. So:
 * - a cancel is answered 200 only by a request that saw it stored in time, or that found it final;
 * - a lost response never turns into a 200: the retry finds the cancel unconfirmed and judges it
 *   by its own clock, as does a second DELETE that comes while a late first one is undoing it;
 * - a DELETE of a cancel already answered 200 answers 200 again, at any time.
 * A request that dies between the phases leaves the task CANCELLED: no callback reading it calls
 * the target, and a retry of the DELETE settles it.
 */
export async function cancelTask(ports: CancelPorts, tenantId: string, id: string): Promise<CancelOutcome> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return { cancelled: false, reason: 'not-found' };
  const key = taskKey(id, location, ports.bucketCount);
  for (let round = 0; round < CANCEL_ROUNDS; round++) {
    const nowMs = ports.clock.now();
    const cancelId = randomUUID();
    const outcome = await ports.taskStore.cancel(key, {
      tenantId,
      nowMs,
      expiresAtSeconds: expiryAfter(nowMs, ports.retentionDays),
      unleasedDueAfterMs: nowMs + UNLEASED_CANCEL_MARGIN_MS,
      cancelId,
    });
    const cancelled = outcome.cancelled || (outcome.reason === 'already-final' && outcome.status === 'CANCELLED');
    if (!cancelled) return outcome;
    const unconfirmed = outcome.cancelled ? (outcome.unleased ? cancelId : undefined) : outcome.unconfirmed;
    if (unconfirmed === undefined) return { cancelled: true };
    const settled = await settleCancel(ports, { id, fireAtMs: location.fireAtMs }, key, unconfirmed);
    if (settled) return settled;
  }
  return { cancelled: false, reason: 'in-delivery' };
}

/**
 * Phase 2 of a cancel (see cancelTask): confirms the unconfirmed cancel `cancelId`, just seen
 * stored, if that was in time for the first attempt, else undoes it and gives the task its
 * delivery message back. Undefined when the cancel was no longer there to confirm or undo:
 * another request or the attempt got to it first.
 */
async function settleCancel(
  ports: CancelPorts,
  task: DueTask,
  key: TaskKey,
  cancelId: string,
): Promise<CancelOutcome | undefined> {
  if (storedBeforeFirstAttempt(ports.clock, task.fireAtMs)) {
    return (await ports.taskStore.confirmCancel(key, cancelId)) ? { cancelled: true } : undefined;
  }
  // Undone, the task is delivered as if the cancel never came (unless that attempt recorded its delivery already).
  const undone = await ports.taskStore.revertCancel(key, cancelId);
  // A callback that read the task while it was CANCELLED let its message go, so the task needs
  // another, now: its 409 says it will be delivered, and the sweeper's overdue pass would send
  // it only overdueGraceSeconds late. Sent even when the undo found the mark gone, as its own
  // response may have been lost: a message too many finds a final task and stops at the read,
  // and is at worst one more copy of the first attempt. Should the send fail, the DELETE fails
  // and the overdue pass sends the task.
  await ports.deliveryQueue.send([deliveryMessageFor(task, ports.clock.now())]);
  return undone ? { cancelled: false, reason: 'too-late', status: 'PENDING' } : undefined;
}

/**
 * Whether a write the api has just seen stored came before any unleased first attempt of a task
 * firing at `fireAtMs` could read it: that attempt reads at the fire time by its own clock.
 */
export function storedBeforeFirstAttempt(clock: Clock, fireAtMs: number): boolean {
  return clock.now() + CLOCK_SKEW_MS < fireAtMs;
}
