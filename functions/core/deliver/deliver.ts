import type { WebhookNotification } from '../../contract/wire.js';
import { secondOf } from '../kernel/clock.js';
import { newAttemptId, parseTaskId, type TaskAddress, taskAddress } from '../kernel/ids.js';
import { mayHaveReceipt, receiptOf } from '../kernel/receipts.js';
import type {
  Clock,
  DeliveryAttempt,
  DeliveryReceipt,
  FirstAttemptRecord,
  Target,
  Task,
  TaskStore,
} from '../kernel/task.js';
import {
  expiryAfter,
  FIRST_ATTEMPT_READ_AHEAD_MS,
  HISTORY_ERROR_CHARS,
  HISTORY_LIMIT,
  nextAttemptUnleased,
} from '../kernel/task.js';
import { advanceSchedule, type OccurrencePorts } from '../schedules/schedules.js';
import { handoverTo } from '../submit/reschedule.js';
import { activeSigningSecrets, type RateLimiter, type TenantDirectory } from '../tenants/tenants.js';

/** What a business system receives: the same fields for a webhook body, an SQS message or an event's detail. */
export type Notification = WebhookNotification;

/**
 * A target's answer; `statusCode` is the webhook's HTTP status, when it answered. `notCalled`
 * says no call was made (its host is rested): no attempt was spent, and the task asks again
 * after `retryAfterSeconds`.
 */
export type TargetResult =
  | { readonly ok: true; readonly detail?: string; readonly statusCode?: number }
  | {
      readonly ok: false;
      readonly error: string;
      readonly retryAfterSeconds?: number;
      readonly statusCode?: number;
      readonly notCalled?: true;
    };

/** Whom a delivery is made for: the tenant's current signing secrets and the webhook hosts it allows. */
export interface Sender {
  readonly tenantId: string;
  readonly signingSecrets: readonly string[];
  readonly allowedHosts?: readonly string[];
}

/**
 * Calls a business system. Implementations never throw for the target's failures; they report
 * them. A call once made is waited on to its answer or the webhook timeout, never abandoned: its
 * receiver may process it all the same.
 */
export interface TargetDispatcher {
  dispatch(target: Target, notification: Notification, sender: Sender): Promise<TargetResult>;
}

export interface DeadLetter {
  readonly id: string;
  readonly attempt: number;
  readonly error: string;
}

export interface DeadLetterQueue {
  send(letter: DeadLetter): Promise<void>;
}

export interface DeliveryPorts {
  readonly taskStore: TaskStore;
  readonly targets: TargetDispatcher;
  readonly tenants: TenantDirectory;
  readonly deadLetters: DeadLetterQueue;
  /** Counts target calls per tenant, bizType and second, for bizTypes with a callbackRateLimitPerSecond. */
  readonly callbackCounter: RateLimiter;
  /** Where a schedule's occurrence moves its schedule on and stores its successor, before it fires. */
  readonly occurrences: OccurrencePorts;
  readonly clock: Clock;
  readonly bucketCount: number;
  readonly shardCount: number;
  readonly maxAttempts: number;
  readonly backoffBaseSeconds: number;
  readonly backoffMaxSeconds: number;
  readonly retentionDays: number;
  /** How long a claimed delivery stays exclusive; must outlast one invocation and stay under the queue's visibility timeout. */
  readonly leaseMs: number;
  /** Messages that surface at most this early are held in memory; earlier ones go back to the queue. */
  readonly maxEarlyWaitMs: number;
}

export type DeliveryOutcome =
  | { readonly kind: 'delivered'; readonly attempt: number; readonly latenessMs: number }
  | {
      readonly kind: 'skipped';
      readonly reason:
        | 'malformed-id'
        | 'not-claimable'
        | 'lease-lost'
        | 'reschedule-abandoned'
        | 'schedule-changed'
        | 'occurrence-missed'
        | 'delivered-by-receipt';
    }
  /** Surfaced before its task may go (its due time, or its retry's backoff): to be asked again at `notBeforeMs`. */
  | { readonly kind: 'early'; readonly notBeforeMs: number }
  /** A rescheduled task whose predecessor is in a delivery attempt: no attempt made, asked again later. */
  | { readonly kind: 'deferred'; readonly retryAfterSeconds: number }
  /** Its bizType's callbacks already used this second's rate: no attempt made, asked again later. */
  | { readonly kind: 'throttled'; readonly retryAfterSeconds: number }
  /** Its webhook host is rested (its circuit is open): no call and no attempt made, asked again later. */
  | { readonly kind: 'rested'; readonly retryAfterSeconds: number; readonly reason: string }
  /** The attempt failed; the task item records `retryAtMs`, the earliest the next attempt may run. */
  | {
      readonly kind: 'retry';
      readonly attempt: number;
      readonly retryAfterSeconds: number;
      readonly retryAtMs: number;
      readonly error: string;
    }
  | { readonly kind: 'failed'; readonly attempt: number; readonly error: string };

export function notificationOf(task: Task, attempt: number, firedAtMs: number): Notification {
  return {
    id: task.id,
    dueAt: new Date(task.dueAtMs).toISOString(),
    firedAt: new Date(firedAtMs).toISOString(),
    attempt,
    bizType: task.bizType ?? null,
    bizId: task.bizId ?? null,
    payload: JSON.parse(task.payloadJson),
    ...(task.occurrence && {
      scheduleId: task.occurrence.scheduleId,
      occurrence: new Date(task.occurrence.atMs).toISOString(),
    }),
  };
}

/** Exponential backoff: base, 2×base, 4×base … capped. */
export function backoffSeconds(attempt: number, baseSeconds: number, maxSeconds: number): number {
  return Math.min(maxSeconds, baseSeconds * 2 ** Math.max(0, attempt - 1));
}

/** Calls the task's target for its tenant; a tenant that cannot be read or no longer exists fails the attempt. */
async function dispatchFor(
  ports: DeliveryPorts,
  task: Task,
  attempt: number,
  firedAtMs: number,
): Promise<TargetResult> {
  let tenant: Awaited<ReturnType<TenantDirectory['tenant']>>;
  try {
    tenant = await ports.tenants.tenant(task.tenantId);
  } catch (error) {
    return {
      ok: false,
      error: `could not read tenant ${task.tenantId}: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  if (!tenant) return { ok: false, error: `tenant ${task.tenantId} no longer exists` };
  const sender: Sender = {
    tenantId: tenant.id,
    signingSecrets: activeSigningSecrets(tenant, firedAtMs),
    ...(tenant.allowedHosts && { allowedHosts: tenant.allowedHosts }),
  };
  return ports.targets.dispatch(task.target, notificationOf(task, attempt, firedAtMs), sender);
}

/** The history with one more attempt, keeping the latest HISTORY_LIMIT. */
function withAttempt(history: readonly DeliveryAttempt[] = [], attempt: DeliveryAttempt): DeliveryAttempt[] {
  return [...history, attempt].slice(-HISTORY_LIMIT);
}

/** Asked again after at least this long when the bizType's callback rate is used up: the next second has a fresh count. */
export const THROTTLED_RETRY_SECONDS = 1;

/**
 * How long a task turned away by its bizType's callback rate waits before it asks again. Each
 * ask costs a message sent and received, so a task that has waited long (a backlog deeper than
 * the rate drains in a few seconds) asks less often: a tenth of its wait so far, up to a minute.
 */
export function throttledRetrySeconds(waitedMs: number): number {
  return Math.max(THROTTLED_RETRY_SECONDS, Math.min(60, Math.ceil(waitedMs / 10_000)));
}

/**
 * Whether the task may call its target now under its bizType's callback rate. Counted only
 * for a task that holds the lease and is about to call, so a slot is never spent on a task
 * that is not delivered.
 */
function withinCallbackRate(ports: DeliveryPorts, task: Task, nowMs: number): Promise<boolean> {
  const limit = task.policy?.callbackRateLimitPerSecond;
  if (limit === undefined || task.bizType === undefined) return Promise.resolve(true);
  return ports.callbackCounter.admit({ tenantId: task.tenantId, bizType: task.bizType }, secondOf(nowMs), limit);
}

/** Waits until `atMs` by the injected clock; timers can fire a millisecond early, hence the loop. */
async function waitUntil(clock: Clock, atMs: number): Promise<void> {
  for (let rest = atMs - clock.now(); rest > 0; rest = atMs - clock.now()) await clock.sleep(rest);
}

/** Statuses no attempt can follow (a redrive revives FAILED before it delivers). */
const FINAL_STATUSES: ReadonlySet<Task['status']> = new Set(['DELIVERED', 'FAILED', 'CANCELLED']);

/**
 * Delivers one task named by a delivery message. Never early: it waits out the sub-second rest,
 * or says when a message that surfaced too early should come back: before the task's due time,
 * before the message's `notBeforeMs`, or before the `retryAtMs` the task item records (a message
 * that knew nothing of the backoff). Then it reads the task (a consistent read, cheaper than a
 * write) and makes the attempt one of two ways:
 *
 * - **A first attempt takes no lease** (the rule: UNLEASED_CANCEL_MARGIN_MS). It calls the
 *   target and records a 2xx in a receipt (`receipts`: one item for the callback's batch, see
 *   DeliveryReceipt), not on the task's item, which stays as the attempt read it; a failure it
 *   records in one write, conditional on the task never having been attempted. Two copies of one
 *   message running at once may both call the target (at-least-once, same id and attempt); a 2xx
 *   either sees is recorded, and its receipt outranks whatever the other recorded (receipts.ts).
 *   A first attempt that starts late looks for a receipt first (RECEIPT_CHECK_AFTER_MS).
 * - **Later attempts take the lease** (a conditional write before the call), as do a
 *   reschedule's successor, a task with a reschedule begun and a schedule's occurrence, so a
 *   cancel or a reschedule may come at any time between retries and is never followed by a
 *   delivery. A retry first looks for a receipt of a copy of its first attempt, and records that
 *   delivery instead of calling again. An occurrence, holding the lease, moves its schedule on
 *   before the call (see schedules.ts) and is skipped if its schedule changed since it was made.
 *
 * A task whose bizType has a callback rate calls only within it; over it, no attempt is made and
 * the message comes round again, as it does when the host breaker rests the task's webhook host
 * (a call not made is not an attempt). The task's own retry policy (its bizType's, copied at submit)
 * wins over the deployment's. On failure it either records a retry time (the backoff) in the
 * outcome's write or, when attempts run out, dead-letters the task (DLQ first, then FAILED, so a
 * crash in between re-delivers rather than loses it).
 */
export async function deliverTask(
  ports: DeliveryPorts,
  id: string,
  notBeforeMs = 0,
  reads: TaskReads = readAlone(ports),
  receipts: ReceiptWrites = receiptAlone(ports),
): Promise<DeliveryOutcome> {
  const { taskStore, clock } = ports;
  const place = placeOf(ports, id, notBeforeMs, clock.now());
  if ('kind' in place) return place;
  const { address, goesAtMs } = place;
  const task = await reads.read(address, goesAtMs);
  await waitUntil(clock, goesAtMs);
  if (!task || FINAL_STATUSES.has(task.status)) return { kind: 'skipped', reason: 'not-claimable' };
  if (nextAttemptUnleased(task)) {
    if (
      clock.now() - task.fireAtMs > RECEIPT_CHECK_AFTER_MS &&
      (await reads.receiptsOf(secondOf(task.fireAtMs))).has(id)
    )
      return { kind: 'skipped', reason: 'delivered-by-receipt' };
    return attempt(ports, task, goesAtMs, 1, {
      record: async (outcome) => {
        if (outcome.status === 'DELIVERED') {
          await receipts.delivered(task, outcome.deliveredAtMs);
          return true;
        }
        // A copy of this attempt that read the task before the record lands is done calling (and
        // has written its receipt, within its invocation) within two invocations of now (the
        // lease's length): it read before this one ended, and calls within its own.
        return taskStore.finishFirstAttempt(address, outcome, clock.now() + ports.leaseMs, newAttemptId());
      },
      // Nothing was written before the call, so there is nothing to give back.
      giveBack: () => Promise.resolve(),
    });
  }
  return leasedAttempt(ports, address, goesAtMs);
}

/**
 * Where a delivery message's task lives and when it may go (its fire time, or the later time its
 * message asks for); or why it is not read now: a malformed id, or a message that surfaced more
 * than `maxEarlyWaitMs` early and goes back to the queue.
 */
function placeOf(
  ports: Pick<DeliveryPorts, 'shardCount' | 'bucketCount' | 'maxEarlyWaitMs'>,
  id: string,
  notBeforeMs: number,
  nowMs: number,
):
  | { readonly address: TaskAddress; readonly goesAtMs: number }
  | Extract<DeliveryOutcome, { kind: 'skipped' | 'early' }> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return { kind: 'skipped', reason: 'malformed-id' };
  const goesAtMs = Math.max(location.fireAtMs, notBeforeMs);
  if (goesAtMs - nowMs > ports.maxEarlyWaitMs) return { kind: 'early', notBeforeMs: goesAtMs };
  return { address: taskAddress(id, location, ports.bucketCount), goesAtMs };
}

/** How a delivery reads its task: not before FIRST_ATTEMPT_READ_AHEAD_MS ahead of `goesAtMs`, by the callback's clock. */
export interface TaskReads {
  read(address: TaskAddress, goesAtMs: number): Promise<Task | undefined>;
  /** The receipts of a fire second (TaskStore.receiptsOf), read once for the whole batch. */
  receiptsOf(second: number): Promise<Map<string, number>>;
}

/**
 * A first attempt that starts this long after its fire time looks for a receipt first: its message
 * is likely not the first (one back after a crash or the visibility timeout, a re-scan of a second
 * whose scanner died after sending, a restart's), and the first may have delivered the task, which
 * its item does not show. On time, it reads none: a receipt is then rare, and a copy's call is what
 * at-least-once allows.
 */
export const RECEIPT_CHECK_AFTER_MS = 2000;

/**
 * Reads each second's receipts once, however many tasks of it ask. Receipts that cannot be read
 * are taken as none, as a receipt not yet written would be: the call may repeat one a copy made
 * (at least once), where failing the record would hold its task back a visibility timeout.
 */
function receiptsOnce(ports: Pick<DeliveryPorts, 'taskStore'>): TaskReads['receiptsOf'] {
  const read = new Map<number, Promise<Map<string, number>>>();
  return (second) => {
    const receipts = read.get(second) ?? ports.taskStore.receiptsOf(second).catch(() => new Map<string, number>());
    read.set(second, receipts);
    return receipts;
  };
}

/** Reads each task on its own, when it goes: a delivery outside a batch (a redriven dead letter, a test). */
function readAlone(ports: Pick<DeliveryPorts, 'taskStore' | 'clock'>): TaskReads {
  return {
    read: async (address, goesAtMs) => {
      await waitUntil(ports.clock, goesAtMs);
      return ports.taskStore.get(address);
    },
    receiptsOf: receiptsOnce(ports),
  };
}

/** A delivery message as the callback's batch read plans for it. */
export interface PlannedDelivery {
  readonly id: string;
  readonly notBeforeMs?: number;
}

/** A delivery of a batch, placed: where its task lives and when it goes. */
interface GoingDelivery {
  readonly address: TaskAddress;
  readonly goesAtMs: number;
  readonly delivery: PlannedDelivery;
}

/**
 * The deliveries of a batch that will read, in time order, grouped: each group takes every one that
 * goes within FIRST_ATTEMPT_READ_AHEAD_MS of its first. Messages that will not read (a malformed
 * id, one that surfaced too early and goes back) are left out. Each entry keeps the delivery it
 * was planned from: two copies of one task's message can share a batch and land in different
 * groups (the scanner's, and a reminder or a sweeper's with a later notBeforeMs), so a copy is
 * told apart by its delivery, never by its task id.
 */
function goingTogether(
  ports: Pick<DeliveryPorts, 'shardCount' | 'bucketCount' | 'maxEarlyWaitMs' | 'clock'>,
  deliveries: readonly PlannedDelivery[],
): GoingDelivery[][] {
  const nowMs = ports.clock.now();
  const planned = deliveries.flatMap((delivery): GoingDelivery[] => {
    const place = placeOf(ports, delivery.id, delivery.notBeforeMs ?? 0, nowMs);
    return 'kind' in place ? [] : [{ ...place, delivery }];
  });
  planned.sort((a, b) => a.goesAtMs - b.goesAtMs);
  const groups: GoingDelivery[][] = [];
  for (let start = 0; start < planned.length;) {
    const firstGoesAtMs = planned[start]?.goesAtMs ?? nowMs;
    let end = start + 1;
    while (end < planned.length && (planned[end]?.goesAtMs ?? nowMs) - firstGoesAtMs <= FIRST_ATTEMPT_READ_AHEAD_MS)
      end++;
    groups.push(planned.slice(start, end));
    start = end;
  }
  return groups;
}

/**
 * Reads the tasks of a callback's batch in as few requests as the read-ahead allows: in time
 * order, each group takes every task that goes within FIRST_ATTEMPT_READ_AHEAD_MS of its first,
 * and is read in one `getMany` once the last of them is that close to going. A batch gathered
 * over a second (the delivery queue's batching window) is one or two reads, and no task's call
 * waits for a read that another task held back. Each delivery reads with its own group, told apart
 * by its delivery, not its task id (see goingTogether): two copies of one task's message in
 * different groups each read when their own group goes. Messages that will not read (a malformed
 * id, one that surfaced too early and goes back) are left out; a delivery not planned (a redriven
 * dead letter) is read alone, when its task goes.
 */
export function readTogether(
  ports: DeliveryPorts,
  deliveries: readonly PlannedDelivery[],
): { of(delivery: PlannedDelivery | undefined): TaskReads } {
  const readerOf = new Map<PlannedDelivery, () => Promise<Map<string, Task | undefined>>>();
  for (const group of goingTogether(ports, deliveries)) {
    const readAtMs = (group.at(-1)?.goesAtMs ?? 0) - FIRST_ATTEMPT_READ_AHEAD_MS;
    let read: Promise<Map<string, Task | undefined>> | undefined;
    const readGroup = async () => {
      await waitUntil(ports.clock, readAtMs);
      // BatchGetItem refuses a key twice, and two copies of one message can share a batch.
      const addresses = [...new Map(group.map(({ address }) => [address.id, address])).values()];
      const tasks = await ports.taskStore.getMany(addresses);
      return new Map(addresses.map((address, index) => [address.id, tasks[index]]));
    };
    for (const { delivery } of group) readerOf.set(delivery, () => (read ??= readGroup()));
  }
  const alone = readAlone(ports);
  return {
    of: (delivery) => {
      const reader = delivery && readerOf.get(delivery);
      if (!reader) return alone;
      return { read: async (address) => (await reader()).get(address.id), receiptsOf: alone.receiptsOf };
    },
  };
}

/** How a delivery records an unleased first attempt answered 2xx: in a receipt (see DeliveryReceipt). */
export interface ReceiptWrites {
  /** Resolves once the delivery is recorded, or, in a batch, once it is the batch's to record. */
  delivered(task: Pick<Task, 'id' | 'fireAtMs'>, deliveredAtMs: number): Promise<void>;
}

/** A receipt of its own for each delivery: a delivery outside a batch (a redriven dead letter, a test). */
function receiptAlone(ports: Pick<DeliveryPorts, 'taskStore' | 'clock' | 'retentionDays'>): ReceiptWrites {
  return {
    delivered: async (task, deliveredAtMs) => {
      await receiptsOf(ports, [{ id: task.id, fireAtMs: task.fireAtMs, deliveredAtMs }])[0]?.write;
    },
  };
}

interface OwedReceipt {
  readonly id: string;
  readonly fireAtMs: number;
  readonly deliveredAtMs: number;
}

/** The receipts for these deliveries, one per fire second, each with the ids it names and its write. */
function receiptsOf(
  ports: Pick<DeliveryPorts, 'taskStore' | 'clock' | 'retentionDays'>,
  owed: readonly OwedReceipt[],
): Array<{ readonly ids: readonly string[]; readonly write: Promise<void> }> {
  const bySecond = new Map<number, Map<string, number>>();
  for (const { id, fireAtMs, deliveredAtMs } of owed) {
    const second = secondOf(fireAtMs);
    bySecond.set(second, (bySecond.get(second) ?? new Map<string, number>()).set(id, deliveredAtMs));
  }
  // Kept as long as the tasks they stand for: their items' TTL is the fire time plus the retention.
  const expiresAtSeconds = expiryAfter(ports.clock.now(), ports.retentionDays);
  return [...bySecond].map(([second, delivered]) => ({
    ids: [...delivered.keys()],
    write: storeReceipt(ports.taskStore, { id: newAttemptId(), second, delivered, expiresAtSeconds }),
  }));
}

/**
 * Tries to store a receipt this many times before its tasks' messages are sent back. A receipt
 * sent again lands on itself, and one that fails to store costs every task of its group another
 * call, after the queue's visibility timeout: one failed request must not do that.
 */
export const RECEIPT_WRITE_TRIES = 3;

async function storeReceipt(taskStore: Pick<TaskStore, 'recordReceipt'>, receipt: DeliveryReceipt): Promise<void> {
  for (let tried = 1; ; tried++) {
    try {
      return await taskStore.recordReceipt(receipt);
    } catch (error) {
      if (tried >= RECEIPT_WRITE_TRIES) throw error;
    }
  }
}

/**
 * The receipts of a callback's batch: each delivery is noted as it happens, and stored once every
 * record that goes with it (within FIRST_ATTEMPT_READ_AHEAD_MS: the group its task was read with)
 * is `done`, one item per fire second among them, so a batch gathered over a second is one
 * receipt, and a record that goes seconds later, or hangs on a slow target, holds back no other
 * group's. Deliveries of records read alone (a redriven dead letter) are stored by `written`, which
 * waits for every receipt and names the tasks whose receipt failed to store: their messages must
 * come back (at least once: a redelivery), as they do when the invocation dies first.
 */
export function receiptsTogether(
  ports: DeliveryPorts,
  deliveries: readonly PlannedDelivery[],
): {
  /** How `delivery`'s record notes a delivery; one not planned (a redriven dead letter) is stored by `written`. */
  of(delivery: PlannedDelivery | undefined): ReceiptWrites;
  /** `delivery`'s record is settled; its group's receipt is stored once every record of the group is. */
  done(delivery: PlannedDelivery): void;
  /** Waits for every receipt; the ids of tasks whose receipt failed to store. */
  written(): Promise<Set<string>>;
} {
  interface Group {
    pending: number;
    readonly owed: OwedReceipt[];
  }
  const groupOf = new Map<PlannedDelivery, Group>();
  for (const planned of goingTogether(ports, deliveries)) {
    const group: Group = { pending: planned.length, owed: [] };
    for (const { delivery } of planned) groupOf.set(delivery, group);
  }
  const alone: Group = { pending: 0, owed: [] };
  const writes: Array<Promise<string[]>> = [];
  const write = (owed: readonly OwedReceipt[]) =>
    writes.push(
      Promise.all(
        receiptsOf(ports, owed).map(({ ids, write: stored }) =>
          stored.then(
            () => [],
            () => ids,
          ),
        ),
      ).then((failed) => failed.flat()),
    );
  return {
    of: (delivery) => {
      const group = (delivery && groupOf.get(delivery)) ?? alone;
      return {
        delivered: async (task, deliveredAtMs) => {
          group.owed.push({ id: task.id, fireAtMs: task.fireAtMs, deliveredAtMs });
        },
      };
    },
    done: (delivery) => {
      const group = groupOf.get(delivery);
      if (!group) return;
      group.pending--;
      if (group.pending === 0 && group.owed.length > 0) write(group.owed);
    },
    written: async () => {
      if (alone.owed.length > 0) write(alone.owed);
      return new Set((await Promise.all(writes)).flat());
    },
  };
}

const OCCURRENCE_SKIPS = {
  'schedule-changed': 'its schedule was changed, paused or deleted before this occurrence was due',
  'occurrence-missed': 'missed during an outage; its schedule skips missed occurrences (catchUp "skip")',
} as const;

/** How an attempt writes: its outcome, and what it gives back when it makes no call. */
interface AttemptWrites {
  record(outcome: FirstAttemptRecord): Promise<boolean>;
  giveBack(): Promise<void>;
}

/** An attempt that takes the delivery lease first, and what must be settled before it may call. */
async function leasedAttempt(ports: DeliveryPorts, address: TaskAddress, goesAtMs: number): Promise<DeliveryOutcome> {
  const { taskStore, clock } = ports;
  const claimedAtMs = clock.now();
  const task = await taskStore.claimDelivery(address, claimedAtMs, claimedAtMs + ports.leaseMs, newAttemptId());
  if (!task) return { kind: 'skipped', reason: 'not-claimable' };
  const number = task.attempts;
  const release = async () => {
    await taskStore.finishDelivery(address, number, { status: 'RELEASED' });
  };
  if (mayHaveReceipt(task, claimedAtMs)) {
    // A copy of its first attempt was answered 2xx after another recorded a failure: that is
    // recorded on the item now, and the target is not called again.
    const deliveredAtMs = await receiptOf(taskStore, task);
    if (deliveredAtMs !== undefined) {
      await taskStore.finishDelivery(address, number, {
        status: 'DELIVERED',
        deliveredAtMs,
        latenessMs: deliveredAtMs - task.fireAtMs,
        expiresAtSeconds: expiryAfter(clock.now(), ports.retentionDays),
        history: task.history ?? [],
      });
      return { kind: 'skipped', reason: 'delivered-by-receipt' };
    }
  }
  if (task.retryAtMs !== undefined && task.retryAtMs > claimedAtMs) {
    // A message that does not know of the backoff (the one whose sending crashed before its
    // replacement was sent, or a copy a local restart re-enqueued): the table's retry time wins.
    await release();
    return { kind: 'early', notBeforeMs: task.retryAtMs };
  }
  if (task.rescheduledFrom !== undefined) {
    const handover = await handoverTo(ports, task);
    if (handover === 'waiting') {
      await release();
      return { kind: 'deferred', retryAfterSeconds: ports.backoffBaseSeconds };
    }
    if (handover === 'abandoned') {
      const nowMs = clock.now();
      await taskStore.finishDelivery(address, number, {
        status: 'CANCELLED',
        cancelledAtMs: nowMs,
        lastError: `the reschedule of task ${task.rescheduledFrom} to this task did not take effect`,
        expiresAtSeconds: expiryAfter(nowMs, ports.retentionDays),
      });
      return { kind: 'skipped', reason: 'reschedule-abandoned' };
    }
  }
  if (task.occurrence !== undefined) {
    // Before the call, under the lease: a crash after it brings the message back to this step.
    const verdict = await advanceSchedule(ports.occurrences, task);
    if (verdict === 'schedule-not-yet-stored') {
      await release();
      return { kind: 'deferred', retryAfterSeconds: ports.backoffBaseSeconds };
    }
    if (verdict !== 'fire') {
      const nowMs = clock.now();
      await taskStore.finishDelivery(address, number, {
        status: 'CANCELLED',
        cancelledAtMs: nowMs,
        lastError: OCCURRENCE_SKIPS[verdict],
        expiresAtSeconds: expiryAfter(nowMs, ports.retentionDays),
      });
      return { kind: 'skipped', reason: verdict };
    }
  }
  return attempt(ports, task, goesAtMs, number, {
    record: (outcome) => taskStore.finishDelivery(address, number, outcome),
    giveBack: release,
  });
}

/** Calls the target within the task's callback rate, and records what came of it. */
async function attempt(
  ports: DeliveryPorts,
  task: Task,
  goesAtMs: number,
  number: number,
  writes: AttemptWrites,
): Promise<DeliveryOutcome> {
  const { clock } = ports;
  // Counted in the second it fires in, so a receiver sees at most the limit in any second by firedAt.
  const firedAtMs = clock.now();
  let admitted: boolean;
  try {
    admitted = await withinCallbackRate(ports, task, firedAtMs);
  } catch (error) {
    // No attempt was made: give back what was taken before SQS brings the message round again.
    await writes.giveBack();
    throw error;
  }
  if (!admitted) {
    await writes.giveBack();
    return { kind: 'throttled', retryAfterSeconds: throttledRetrySeconds(firedAtMs - goesAtMs) };
  }

  const maxAttempts = task.policy?.maxAttempts ?? ports.maxAttempts;
  const backoffBaseSeconds = task.policy?.backoffBaseSeconds ?? ports.backoffBaseSeconds;
  const backoffMaxSeconds = task.policy?.backoffMaxSeconds ?? ports.backoffMaxSeconds;
  const result = await dispatchFor(ports, task, number, firedAtMs);
  if (!result.ok && result.notCalled) {
    // A call not made is not an attempt: as for the callback rate, the task asks again later.
    await writes.giveBack();
    return { kind: 'rested', retryAfterSeconds: result.retryAfterSeconds ?? backoffBaseSeconds, reason: result.error };
  }
  const history = withAttempt(task.history, {
    attempt: number,
    atMs: firedAtMs,
    latencyMs: clock.now() - firedAtMs,
    ...(result.statusCode !== undefined && { statusCode: result.statusCode }),
    ...(!result.ok && { error: result.error.slice(0, HISTORY_ERROR_CHARS) }),
  });
  if (result.ok) {
    // Against the fire time, not dueAt: a window's spread is asked for, and is no lateness.
    const latenessMs = firedAtMs - task.fireAtMs;
    await writes.record({
      status: 'DELIVERED',
      deliveredAtMs: firedAtMs,
      latenessMs,
      expiresAtSeconds: expiryAfter(clock.now(), ports.retentionDays),
      history,
    });
    return { kind: 'delivered', attempt: number, latenessMs };
  }

  if (number >= maxAttempts) {
    await ports.deadLetters.send({ id: task.id, attempt: number, error: result.error });
    await writes.record({
      status: 'FAILED',
      lastError: result.error,
      expiresAtSeconds: expiryAfter(clock.now(), ports.retentionDays),
      history,
    });
    return { kind: 'failed', attempt: number, error: result.error };
  }
  const backoff = backoffSeconds(number, backoffBaseSeconds, backoffMaxSeconds);
  const retryAfterSeconds = Math.min(backoffMaxSeconds, Math.max(backoff, result.retryAfterSeconds ?? 0));
  // The backoff goes into the write that records the failure: the table owns when the next
  // attempt may run, the message that will bring it is only a reminder (invariant 10).
  const retryAtMs = clock.now() + retryAfterSeconds * 1000;
  const released = await writes.record({
    status: 'PENDING',
    lastError: result.error,
    history,
    retryAtMs,
    expiresAtSeconds: expiryAfter(retryAtMs, ports.retentionDays),
  });
  if (!released) return { kind: 'skipped', reason: 'lease-lost' };
  return { kind: 'retry', attempt: number, retryAfterSeconds, retryAtMs, error: result.error };
}

/**
 * A dead letter that comes back on the delivery queue was put there by a DLQ redrive:
 * an operator asking for another round of attempts. The FAILED task is made PENDING
 * again (a task in any other state is left alone) and delivered as usual.
 */
export async function redeliverDeadLetter(
  ports: DeliveryPorts,
  id: string,
  receipts: ReceiptWrites = receiptAlone(ports),
): Promise<DeliveryOutcome> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return { kind: 'skipped', reason: 'malformed-id' };
  // A FAILED task a receipt names was delivered (a copy's 2xx): it is not revived.
  if ((await receiptOf(ports.taskStore, { id, fireAtMs: location.fireAtMs })) !== undefined) {
    return { kind: 'skipped', reason: 'delivered-by-receipt' };
  }
  await ports.taskStore.reviveFailed(taskAddress(id, location, ports.bucketCount));
  return deliverTask(ports, id, 0, readAlone(ports), receipts);
}
