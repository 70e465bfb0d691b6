import { randomUUID } from 'node:crypto';

import { CLOCK_SKEW_MS, DAY_SECONDS } from '../kernel/clock.js';
import { parseTaskId, type TaskAddress, taskAddress } from '../kernel/ids.js';
import { receiptOf, withReceipt } from '../kernel/receipts.js';
import type { CancelOutcome, Clock, DueTask, IdempotencyStore, Task, TaskStore } from '../kernel/task.js';
import {
  endedTaskExpiry,
  expiryAfter,
  FIRST_ATTEMPT_READ_AHEAD_MS,
  UNLEASED_CANCEL_MARGIN_MS,
} from '../kernel/task.js';
import {
  createOrAdopt,
  deliveryMessageFor,
  type Entry,
  freshTaskId,
  type IndexTasks,
  type LateHandOff,
  namedTaskId,
  newPendingTask,
  type Placement,
  storeNewTasks,
  type TaskBirthPorts,
  type TaskName,
} from '../kernel/task-kernel.js';
import type { NewTask } from './schemas.js';

export interface SubmitPorts extends TaskBirthPorts {
  readonly idempotencyStore: IdempotencyStore;
  readonly retentionDays: number;
  /** This execution environment's own dealers, for the fresh ids of submits and reschedules. */
  readonly placement: Placement;
}

export type SubmitOutcome =
  | { readonly kind: 'created'; readonly task: Task }
  /** A retry of a submit that already made this task (same idempotency key, same request). */
  | { readonly kind: 'replayed'; readonly task: Task }
  /** The idempotency key was first used with a different request, which made this task. */
  | { readonly kind: 'conflict'; readonly taskId: string }
  /** The key's task finished and has expired; the key cannot be used again. */
  | { readonly kind: 'expired'; readonly taskId: string };

export type SubmitResult = LateHandOff & {
  /** One per request, in order. */
  readonly outcomes: SubmitOutcome[];
};

/**
 * The name a submit's task id is derived from, if it has one. A request with an idempotency key and
 * a due time of its own (`dueAt`) is named by the two: the same request always writes the same
 * item, so one conditional put both creates it and, failing, finds the one an earlier attempt made.
 * A request due `delaySeconds` from now resolves to another time on every retry, and an id must
 * carry the time its task fires, so such a keyed request has no name: it records its id under its
 * key instead (`scheduleWithKey`). Keys are the tenant's own: two tenants using one key never meet.
 */
function nameOf(tenantId: string, request: NewTask): TaskName | undefined {
  if (request.idempotencyKey === undefined || request.dueFromDelay) return undefined;
  return { kind: 'keyed-submit', tenantId, idempotencyKey: request.idempotencyKey };
}

/**
 * A submitted task and its address: a fresh id, its fire time planned (window.ts) once, here, or
 * the id its name derives, or, given `id`, the id an earlier attempt of the same request recorded,
 * whose place and fire time it takes instead. A named task keeps the request's fingerprint.
 */
function newEntry(ports: SubmitPorts, tenantId: string, request: NewTask, createdAtMs: number, id?: string): Entry {
  const { fingerprint, ...content } = request;
  const name = nameOf(tenantId, request);
  const taskId =
    id ??
    (name === undefined
      ? freshTaskId(ports, request.dueAtMs, request.window)
      : namedTaskId(ports, name, request.dueAtMs, request.window));
  return newPendingTask(
    ports,
    taskId,
    { ...content, tenantId, ...(name !== undefined && { fingerprint }) },
    createdAtMs,
  );
}

/**
 * A named submit's one write: the task is created, or the item already under its id is an earlier
 * attempt's (the same request: its answer again) or another request's with the same key and due
 * time (a conflict). A replay finds the task as it stands now, perhaps delivered or cancelled.
 */
async function scheduleNamed(
  ports: SubmitPorts,
  tenantId: string,
  request: NewTask,
  entry: Entry,
): Promise<SubmitOutcome> {
  const written = await ports.taskStore.createUnlessStored(entry.task, entry.address);
  if (written.created) return { kind: 'created', task: entry.task };
  const { stored } = written;
  const same = stored.tenantId === tenantId && stored.fingerprint === request.fingerprint;
  return same ? { kind: 'replayed', task: await asShown(ports, stored) } : { kind: 'conflict', taskId: stored.id };
}

/** A stored task as a replay answers with it: as GET shows it, its receipt read in (receipts.ts). */
async function asShown(ports: Pick<SubmitPorts, 'taskStore' | 'clock'>, task: Task): Promise<Task> {
  return (await withReceipt(ports.taskStore, task, ports.clock.now())) ?? task;
}

/**
 * A keyed submit due `delaySeconds` from now claims its key first (a conditional put recording the
 * new task's id, the request's fingerprint and when), then stores the task. A retry finds the key
 * taken: the same request gets the task back; a different one is a conflict. If the first submit
 * died between its two writes, the retry stores the task under the recorded id. That repair is
 * only safe while the task, had it been written, could not yet have expired: a finished task lives
 * `retentionDays` after it ends, so within that many days of the claim a missing task was never
 * written. After it, the key is spent.
 */
async function scheduleWithKey(
  ports: SubmitPorts,
  tenantId: string,
  request: NewTask & { idempotencyKey: string },
  entry: Entry,
  index: IndexTasks,
): Promise<SubmitOutcome> {
  const { createdAtMs } = entry.task;
  const expiresAtSeconds = expiryAfter(Math.max(entry.task.fireAtMs, createdAtMs), ports.retentionDays);
  const { claimed, holder } = await ports.idempotencyStore.claim(
    {
      scope: 'task',
      tenantId,
      key: request.idempotencyKey,
      fingerprint: request.fingerprint,
      taskId: entry.task.id,
      claimedAtMs: createdAtMs,
    },
    expiresAtSeconds,
  );
  if (claimed) return { kind: 'created', task: await createOrAdopt(ports, entry) };
  if (holder.fingerprint !== request.fingerprint) return { kind: 'conflict', taskId: holder.taskId };
  const recorded = newEntry(ports, tenantId, request, createdAtMs, holder.taskId);
  const existing = await ports.taskStore.get(recorded.address);
  if (existing) return { kind: 'replayed', task: await asShown(ports, existing) };
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
 * for a batch). Named ones (see nameOf) are each written with a conditional PutItem, all at
 * once: BatchWriteItem cannot be conditional, and a PutItem costs the same write units as an item
 * of a BatchWriteItem, so a keyed batch pays what an unkeyed one does in writes, and one round
 * trip. Two items of a batch with the same key and due time meet at one id: one is created and
 * the other replays it (or conflicts with it). Keyed tasks due `delaySeconds` from now each claim
 * their key first.
 */
export async function submitTasks(
  ports: SubmitPorts,
  tenantId: string,
  requests: readonly NewTask[],
): Promise<SubmitResult> {
  const { taskStore, clock } = ports;
  const createdAtMs = clock.now();
  const outcomes: SubmitOutcome[] = new Array(requests.length);
  const entries = requests.map((request) => newEntry(ports, tenantId, request, createdAtMs));
  const { stored: _stored, ...handOff } = await storeNewTasks(ports, entries, async (written, index) => {
    const plain: Array<{ position: number; entry: Entry }> = [];
    const keyed: Array<Promise<void>> = [];
    requests.forEach((request, position) => {
      const entry = written[position];
      if (!entry) return;
      const { idempotencyKey } = request;
      const settle = (outcome: SubmitOutcome) => {
        outcomes[position] = outcome;
      };
      if (nameOf(tenantId, request) !== undefined)
        keyed.push(scheduleNamed(ports, tenantId, request, entry).then(settle));
      else if (idempotencyKey !== undefined) {
        keyed.push(scheduleWithKey(ports, tenantId, { ...request, idempotencyKey }, entry, index).then(settle));
      } else plain.push({ position, entry });
    });
    const writePlain = async () => {
      const [single] = plain;
      if (plain.length === 1 && single) await taskStore.create(single.entry.task, single.entry.address);
      else if (plain.length > 1) await taskStore.createMany(plain.map(({ entry }) => entry));
      for (const { position, entry } of plain) outcomes[position] = { kind: 'created', task: entry.task };
    };
    // Awaited together: a failure on one side must not leave the other's rejection unhandled.
    await Promise.all([writePlain(), ...keyed]);
    const stored = new Map<string, Task>();
    for (const outcome of outcomes) {
      if (outcome.kind === 'created' || outcome.kind === 'replayed') stored.set(outcome.task.id, outcome.task);
    }
    // Once each: a batch's two items with one key and due time are one task, to hand off once.
    return [...stored.values()];
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
 * The tenant's task with this id, as its receipt shows it (receipts.ts), or undefined for unknown
 * ids, malformed ids and other tenants' tasks alike, so an id is no oracle for whether someone
 * else's task exists.
 */
export async function getTask(ports: TaskLookupPorts, tenantId: string, id: string): Promise<Task | undefined> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return undefined;
  const task = await ports.taskStore.get(taskAddress(id, location, ports.bucketCount));
  return task?.tenantId === tenantId ? withReceipt(ports.taskStore, task, ports.clock.now()) : undefined;
}

/** What a cancel needs: the task, and the delivery queue to give a task whose cancel it undoes its message back. */
export type CancelPorts = TaskLookupPorts & Pick<SubmitPorts, 'deliveryQueue'>;

/** Rounds of a cancel whose settling another request keeps getting to first. */
const CANCEL_ROUNDS = 3;

/**
 * Cancels a task that has not been delivered. Once this returns `cancelled: true` the task can
 * never be delivered, whatever happens to the request or its retries.
 *
 * A task whose next attempt holds a lease is cancelled by one conditional write, final once
 * stored. A task awaiting its unleased first attempt (the rule: UNLEASED_CANCEL_MARGIN_MS) is
 * refused from that margin before it fires, and otherwise cancelled in two phases:
 *
 * 1. The write makes the task CANCELLED, with `unconfirmedCancel` naming this request's cancel.
 * 2. Having seen it stored, the api confirms it (removes the mark) and answers 200 if
 *    `storedBeforeFirstAttempt` still holds by its clock; otherwise it undoes it (CANCELLED →
 *    PENDING), sends the task's delivery message again and answers `too-late`.
 *
 * Both writes of phase 2 are conditional on the mark still naming this cancel, so of a confirm and
 * an undo racing for one cancel exactly one lands. A DELETE that finds the task CANCELLED answers
 * 200 if that cancel is final, and settles an unconfirmed one by the same rule and its own clock.
 * A request whose confirm or undo finds the mark gone reads the task again and answers by what it
 * finds. Why no lost response, retry, second DELETE or crash between the phases turns a late
 * cancel into a 200: docs/architecture.md, "The first attempt takes no lease".
 */
export async function cancelTask(ports: CancelPorts, tenantId: string, id: string): Promise<CancelOutcome> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return { cancelled: false, reason: 'not-found' };
  const address = taskAddress(id, location, ports.bucketCount);
  for (let round = 0; round < CANCEL_ROUNDS; round++) {
    const nowMs = ports.clock.now();
    const cancelId = randomUUID();
    const outcome = await ports.taskStore.cancel(address, {
      tenantId,
      nowMs,
      expiresAtSeconds: endedTaskExpiry(location.fireAtMs, nowMs, ports.retentionDays),
      unleasedDueAfterMs: nowMs + UNLEASED_CANCEL_MARGIN_MS,
      cancelId,
    });
    const cancelled = outcome.cancelled || (outcome.reason === 'already-final' && outcome.status === 'CANCELLED');
    const task = { id, fireAtMs: location.fireAtMs };
    if (!cancelled) return (await receiptBefore(ports, task, outcome, nowMs)) ?? outcome;
    const unconfirmed = outcome.cancelled ? (outcome.unleased ? cancelId : undefined) : outcome.unconfirmed;
    const delivered = await receiptBefore(ports, task, outcome, nowMs);
    if (delivered) return delivered;
    if (unconfirmed === undefined) return { cancelled: true };
    const settled = await settleCancel(ports, task, address, unconfirmed);
    if (settled) return settled;
  }
  return { cancelled: false, reason: 'in-delivery' };
}

/**
 * A 409 `already-final` DELIVERED when a receipt names the task, whatever its item let the cancel do
 * or say: a copy of its first attempt was answered 2xx (receipts.ts). A cancel that landed on it
 * stays, and stops nothing that matters. Only a task the callback may already have called is looked
 * up: one whose unleased first attempt is still ahead has no receipt, and its cancel lands and is
 * answered as before; and a receipt can come no later than the cancel's write refuses a task whose
 * first attempt may still be calling (`too-late`, `in-delivery`).
 */
async function receiptBefore(
  ports: CancelPorts,
  task: DueTask,
  outcome: CancelOutcome,
  nowMs: number,
): Promise<CancelOutcome | undefined> {
  const unknown = !outcome.cancelled && (outcome.reason === 'not-found' || outcome.status === 'DELIVERED');
  if (unknown || task.fireAtMs > nowMs + CLOCK_SKEW_MS) return undefined;
  const deliveredAtMs = await receiptOf(ports.taskStore, task);
  return deliveredAtMs === undefined ? undefined : { cancelled: false, reason: 'already-final', status: 'DELIVERED' };
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
  address: TaskAddress,
  cancelId: string,
): Promise<CancelOutcome | undefined> {
  if (storedBeforeFirstAttempt(ports.clock, task.fireAtMs)) {
    return (await ports.taskStore.confirmCancel(address, cancelId)) ? { cancelled: true } : undefined;
  }
  // Undone, the task is delivered as if the cancel never came (unless that attempt recorded its delivery already).
  const undone = await ports.taskStore.revertCancel(address, cancelId);
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
 * firing at `fireAtMs` could read it: that attempt reads FIRST_ATTEMPT_READ_AHEAD_MS before the
 * fire time at the earliest, by its own clock.
 */
export function storedBeforeFirstAttempt(clock: Clock, fireAtMs: number): boolean {
  return clock.now() + CLOCK_SKEW_MS + FIRST_ATTEMPT_READ_AHEAD_MS < fireAtMs;
}
