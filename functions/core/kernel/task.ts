/**
 * The task record and the ports the core talks through. Adapters implement the ports
 * against DynamoDB and SQS; tests implement them against dynalite and fauxqs or fakes.
 */
import type { Target, TaskStatus, TaskWindow } from '../../contract/wire.js';
import { CLOCK_SKEW_MS, DAY_SECONDS } from './clock.js';
import type { TaskAddress } from './ids.js';

/**
 * A task's status and target are the ones the HTTP contract shows. PENDING until a callback
 * records an attempt's outcome (a first attempt is made without a lease: see
 * UNLEASED_CANCEL_MARGIN_MS); DELIVERING while a later attempt holds the delivery lease; then
 * DELIVERED, FAILED (attempts exhausted) or CANCELLED. QUEUED is not stored: a write per task
 * per hop is the dominant cost at a billion tasks a day, and a task's presence in the delivery
 * queue is implied by its second having been scanned.
 */
export type { Target, TaskStatus, TaskWindow };

export interface Task {
  readonly id: string;
  /** The tenant whose API key created it; only that tenant can read or cancel it. */
  readonly tenantId: string;
  readonly status: TaskStatus;
  /** The due time the caller asked for; the notification carries it. */
  readonly dueAtMs: number;
  /**
   * When it fires: `dueAtMs`, or the time planned within its window (window.ts). The id encodes
   * it, so it is where the task lives and never changes; scans, the delivery's wait, lateness
   * and the cancel margin all go by it.
   */
  readonly fireAtMs: number;
  /** The flexible window it was submitted with; a reschedule's successor keeps it. */
  readonly window?: TaskWindow;
  readonly createdAtMs: number;
  readonly target: Target;
  /** The caller's payload as the JSON text it sent, so it round-trips exactly. */
  readonly payloadJson: string;
  readonly bizType?: string;
  readonly bizId?: string;
  readonly idempotencyKey?: string;
  /**
   * On a task whose id was derived from its idempotency key (see submitTasks): the digest of
   * the request that made it, which a retry with the same key is compared with.
   */
  readonly fingerprint?: string;
  /** Its bizType's delivery settings as they were at submit, so delivering it needs no extra read. */
  readonly policy?: DeliveryPolicy;
  readonly attempts: number;
  readonly leaseUntilMs?: number;
  /**
   * Names the attempt that holds the lease, or that recorded the task's unleased first attempt: a
   * write whose answer was lost is sent again by the SDK and then fails its condition on its own
   * effect, and this is how it knows that effect for its own.
   */
  readonly attemptId?: string;
  /**
   * When the next attempt of a task whose last attempt failed may run. The table, not a hidden
   * queue message, owns the backoff, so a lost message or a restart never shortens it.
   */
  readonly retryAtMs?: number;
  readonly deliveredAtMs?: number;
  readonly latenessMs?: number;
  readonly lastError?: string;
  readonly cancelledAtMs?: number;
  /**
   * Set, with status CANCELLED, by a DELETE (the id it gave the cancel) until the api has seen the
   * cancel stored before a first attempt that takes no lease could read the task; then removed, and
   * the cancel is final. While set, the cancel has not been answered 200 and may be undone (see
   * cancelTask). It means nothing on a task whose first attempt holds a lease (see unconfirmedCancelOf).
   */
  readonly unconfirmedCancel?: string;
  /**
   * Set by the record of a first attempt that failed (it took no lease): until then, by the
   * callback's clock, another copy of that attempt, which read the task before this record, may
   * still be calling the target, so a cancel is refused as `in-delivery` (see finishFirstAttempt).
   */
  readonly copiesCallUntilMs?: number;
  /** The latest delivery attempts, oldest first, at most HISTORY_LIMIT of them. */
  readonly history?: readonly DeliveryAttempt[];
  /**
   * Set on a task made by rescheduling another: it may be delivered only once that task
   * records `rescheduledTo` this one (see reschedule.ts), so the two are never both delivered.
   */
  readonly rescheduledFrom?: string;
  /**
   * Stored by a submit that came so close to the due time that a scanner may have claimed its
   * second already (see `isLateArrival`): the api enqueues it itself and the scan may send it
   * too, so two messages may bring it at once, and its first attempt takes the lease.
   */
  readonly lateArrival?: true;
  /** Set, with status CANCELLED, in the one write that makes a reschedule take effect. */
  readonly rescheduledTo?: string;
  /** A reschedule begun but not yet in effect: the task it would hand over to, and the request's fingerprint. */
  readonly rescheduleIntent?: RescheduleIntent;
  /** Set on a schedule's occurrence: it fires only while its schedule still has this revision (see schedules.ts). */
  readonly occurrence?: OccurrenceRef;
}

/** Which schedule, at which revision, a task is an occurrence of, and the occurrence's nominal time. */
export interface OccurrenceRef {
  readonly scheduleId: string;
  readonly revision: string;
  readonly atMs: number;
}

/** How a task is delivered, where it differs from the deployment's defaults (its bizType's settings). */
export interface DeliveryPolicy {
  readonly maxAttempts?: number;
  readonly backoffBaseSeconds?: number;
  readonly backoffMaxSeconds?: number;
  /** Calls of the target per second for all of the tenant's tasks of this bizType together. */
  readonly callbackRateLimitPerSecond?: number;
}

export interface RescheduleIntent {
  readonly taskId: string;
  readonly fingerprint: string;
}

/** One delivery attempt, as GET shows it. */
export interface DeliveryAttempt {
  readonly attempt: number;
  readonly atMs: number;
  readonly latencyMs: number;
  /** The webhook's HTTP status, when there was an answer. */
  readonly statusCode?: number;
  readonly error?: string;
}

/** Attempts kept per task: enough to see a pattern, bounded so a failing task's item (and every write to it) stays small. */
export const HISTORY_LIMIT = 20;
/** Error texts are cut to this in the history; the full last error is in `lastError`. */
export const HISTORY_ERROR_CHARS = 160;

/** A due task as the scanner sees it: enough to enqueue, nothing more. */
export interface DueTask {
  readonly id: string;
  readonly fireAtMs: number;
}

/**
 * How long before a task goes its callback may read it. A callback reads the tasks of its batch
 * together, in one BatchGetItem, once the latest of them is within this of going, rather than
 * each at its own millisecond (a batch holds tasks spread over a second or two). The read is then
 * that much older when an unleased first attempt calls the target, so the cancel margin below
 * keeps this much further from the fire time.
 */
export const FIRST_ATTEMPT_READ_AHEAD_MS = 1000;

/**
 * The unleased-first-attempt rule, which the callback, cancel and reschedule all follow. A task's
 * first attempt takes no lease (`nextAttemptUnleased`): its callback reads the task up to
 * FIRST_ATTEMPT_READ_AHEAD_MS before its fire time (`fireAtMs`) and calls the target with no write
 * before the call, which saves a write per delivered task. So a cancel or a reschedule intent of
 * such a task must be stored before that read: the api refuses one (409 too-late) from this long
 * before the fire time, and confirms one only while `storedBeforeFirstAttempt` holds, else undoes
 * it. The margin is CLOCK_SKEW_MS (the most the api's clock can be behind the callback's), plus
 * time for the write to be stored and seen, plus the read-ahead. Why this keeps every answered
 * cancel final in every interleaving: docs/architecture.md, "The first attempt takes no lease".
 */
export const UNLEASED_CANCEL_MARGIN_MS = CLOCK_SKEW_MS + 500 + FIRST_ATTEMPT_READ_AHEAD_MS;

/**
 * Whether the callback makes the task's next attempt without a lease: the task awaits its unleased
 * first attempt (`awaitsUnleasedFirstAttempt`), is PENDING, and no reschedule has begun (an intent
 * must be able to stop the attempt, so the attempt takes the lease and checks it).
 */
export function nextAttemptUnleased(task: Task): boolean {
  return task.status === 'PENDING' && task.rescheduleIntent === undefined && awaitsUnleasedFirstAttempt(task);
}

/**
 * Whether the task has not been attempted and is of the kind whose first attempt takes no lease:
 * not a reschedule's successor (its delivery checks its predecessor first), not a late arrival
 * (whose two messages may come at once), not a schedule's occurrence (which advances its chain
 * before the call). A cancel or a reschedule intent of such a task must be stored before that
 * attempt can read it, whatever the task's status now.
 */
export function awaitsUnleasedFirstAttempt(
  task: Pick<Task, 'attempts' | 'rescheduledFrom' | 'lateArrival' | 'occurrence'>,
): boolean {
  return (
    task.attempts === 0 &&
    task.rescheduledFrom === undefined &&
    task.lateArrival === undefined &&
    task.occurrence === undefined
  );
}

/** A cancel as the api asks for it. */
export interface CancelRequest {
  readonly tenantId: string;
  readonly nowMs: number;
  readonly expiresAtSeconds: number;
  /**
   * A task never attempted (and not a reschedule's successor) is cancelled only if it fires
   * after this: its first attempt takes no lease, so a cancel must land before it can start.
   */
  readonly unleasedDueAfterMs: number;
  /**
   * A DELETE's id for this cancel, stored as the task's `unconfirmedCancel`: the cancel of a task
   * whose first attempt takes no lease counts only once confirmed. Cancels the service makes itself
   * (of a reschedule's orphaned successor, a schedule's pending occurrence) are of tasks whose
   * attempts hold a lease, and give none.
   */
  readonly cancelId?: string;
}

/**
 * Whether a copy of the task's failed first attempt may still be calling its target, by a clock
 * that read `nowMs` (CLOCK_SKEW_MS behind the callback's at most): a cancel must wait for it.
 */
export function copiesMayCall(task: Pick<Task, 'copiesCallUntilMs'>, nowMs: number): boolean {
  return task.copiesCallUntilMs !== undefined && task.copiesCallUntilMs >= nowMs - CLOCK_SKEW_MS;
}

/**
 * The id of the cancel a CANCELLED task still waits to have confirmed, or undefined if its cancel
 * is final: confirmed, made without an id, or of a task whose next attempt would have held a lease
 * (which a cancel stops at any moment, so it needs no confirming).
 */
export function unconfirmedCancelOf(
  task: Pick<Task, 'status' | 'unconfirmedCancel' | 'attempts' | 'rescheduledFrom' | 'lateArrival' | 'occurrence'>,
): string | undefined {
  return task.status === 'CANCELLED' && awaitsUnleasedFirstAttempt(task) ? task.unconfirmedCancel : undefined;
}

export type CancelOutcome =
  /** `unleased`: the task was waiting for an unleased first attempt, so the cancel counts only if it landed in time. */
  | { readonly cancelled: true; readonly unleased?: boolean }
  | {
      readonly cancelled: false;
      /**
       * `too-late`: never attempted and due too soon (or already due): its first attempt, which
       * takes no lease, may be under way. `in-delivery`: a leased attempt is in flight, or was cut
       * short and its outcome is not known yet.
       */
      readonly reason: 'not-found' | 'already-final' | 'in-delivery' | 'too-late';
      readonly status?: TaskStatus;
      /** On a CANCELLED task whose cancel is not confirmed yet: that cancel's id (see unconfirmedCancelOf). */
      readonly unconfirmed?: string;
    };

/**
 * The store kept refusing part of a batch read or write (it is over its throughput) for as long
 * as a request may wait. Nothing about the request is wrong: the same request again, a little
 * later, can succeed.
 */
export class StoreBusyError extends Error {
  override readonly name = 'StoreBusyError';
}

export interface TaskStore {
  /** Writes a new task; ids are fresh, so an existing item means a bug and must not be overwritten. */
  create(task: Task, address: TaskAddress): Promise<void>;
  /**
   * Writes a new task unless an item has its key (one conditional put): a task whose id is derived
   * from a name, so that another request may have written it already. Otherwise returns the task
   * stored there, read consistently after the failed condition.
   */
  createUnlessStored(task: Task, address: TaskAddress): Promise<{ created: true } | { created: false; stored: Task }>;
  /**
   * Writes many new tasks (up to any count; the adapter chunks and retries unprocessed items).
   * Throws StoreBusyError when items stay unprocessed; some tasks may have been written.
   */
  createMany(entries: ReadonlyArray<{ task: Task; address: TaskAddress }>): Promise<void>;
  get(address: TaskAddress): Promise<Task | undefined>;
  /**
   * The tasks at `addresses`, in their order (undefined where there is none), read as consistently
   * as `get` but together: a callback reads its batch's tasks in one request, not one per task.
   * Throws StoreBusyError when some reads stay unprocessed.
   */
  getMany(addresses: readonly TaskAddress[]): Promise<Array<Task | undefined>>;
  /**
   * PENDING → CANCELLED (with `unconfirmedCancel` set to the request's `cancelId`, if it has
   * one), else says why not (a DELIVERING task is in an attempt, or its outcome is not known
   * yet, as is a task whose failed first attempt may have a copy still calling, until its
   * `copiesCallUntilMs` is CLOCK_SKEW_MS past; a task never attempted is refused once due by
   * `unleasedDueAfterMs`; a CANCELLED task is `already-final`, naming its cancel if that is
   * unconfirmed). Another tenant's task is `not-found`.
   */
  cancel(address: TaskAddress, request: CancelRequest): Promise<CancelOutcome>;
  /**
   * Makes the unconfirmed cancel `cancelId` final (removes `unconfirmedCancel`), once the api has
   * seen it stored in time; false if it is no longer there (undone, or delivered over).
   */
  confirmCancel(address: TaskAddress, cancelId: string): Promise<boolean>;
  /**
   * Undoes the unconfirmed cancel `cancelId` (CANCELLED → PENDING), which the api saw stored too
   * close to the fire time to be sure it came before the first attempt; false if it is no longer
   * there (confirmed, undone already, or that attempt recorded its delivery over it).
   */
  revertCancel(address: TaskAddress, cancelId: string): Promise<boolean>;
  /**
   * All PENDING tasks of one shard of one second (consistent reads, every page). With
   * `strandedBeforeMs`, instead, those no live message may still bring: PENDING and never
   * attempted, PENDING with a `retryAtMs` before it, or DELIVERING with a lease lapsed before it.
   */
  listDue(second: number, shard: number, options?: { strandedBeforeMs?: number }): Promise<DueTask[]>;
  /**
   * Takes the delivery lease for the attempt `attemptId`: PENDING, or DELIVERING with a lapsed
   * lease, becomes DELIVERING with attempts + 1. Undefined when the task is gone, final or leased
   * by another attempt; a task already leased to `attemptId` is returned (this claim landed, its
   * answer was lost and it was sent again), or nobody would ever finish that lease.
   */
  claimDelivery(
    address: TaskAddress,
    nowMs: number,
    leaseUntilMs: number,
    attemptId: string,
  ): Promise<Task | undefined>;
  /**
   * Records the outcome of the attempt that holds the lease; false if the lease was lost. True, too,
   * when the task already shows this very record (see showsRecord): the write landed, its answer
   * was lost, and the SDK's retry failed its condition.
   */
  finishDelivery(address: TaskAddress, attempt: number, outcome: DeliveryRecord): Promise<boolean>;
  /**
   * Records the outcome of an unleased first attempt, making it attempt 1, in the one write the
   * attempt makes: only over a task still never attempted (false otherwise: another copy of the
   * message recorded first). A delivery is also recorded over a cancel that landed after the
   * attempt read the task (the api did not confirm that cancel), so the task says what happened.
   * A delivery is recorded, too, when a copy of the same first attempt recorded its failure first
   * (or a retry or a cancel has followed that): a 2xx was seen, so the task is DELIVERED, with the
   * attempts counted so far and this attempt added to its history (a second write, made only then).
   * Never over a delivery already recorded, nor over a reschedule that took effect. A failure is
   * recorded with `copiesCallUntilMs`: every copy that read the task before this record lands is
   * done calling by then (the caller's clock), and until then the task cannot be cancelled.
   * The record names its attempt `attemptId`; true, too, when the task already shows this
   * attempt's record (its write landed, its answer was lost, and the SDK's retry failed).
   */
  finishFirstAttempt(
    address: TaskAddress,
    outcome: FirstAttemptRecord,
    copiesCallUntilMs: number,
    attemptId: string,
  ): Promise<boolean>;
  /** FAILED → PENDING with a fresh attempt budget and no backoff to wait out; false if the task is not FAILED. */
  reviveFailed(address: TaskAddress): Promise<boolean>;
  /**
   * Records that the tenant's PENDING task is to be rescheduled to `intent.taskId`, replacing
   * any intent it had (`priorIntentTaskId`); false if the task changed since it was read.
   */
  recordRescheduleIntent(
    address: TaskAddress,
    tenantId: string,
    intent: RescheduleIntent,
    priorIntentTaskId?: string,
  ): Promise<boolean>;
  /**
   * The reschedule takes effect: PENDING with this intent → CANCELLED with `rescheduledTo`;
   * false if the task is no longer PENDING or its intent changed.
   */
  commitReschedule(address: TaskAddress, toTaskId: string, nowMs: number, expiresAtSeconds: number): Promise<boolean>;
  /** Drops the intent to reschedule to `toTaskId` unless the reschedule already took effect; false if it did, or the intent changed. */
  withdrawRescheduleIntent(address: TaskAddress, toTaskId: string): Promise<boolean>;
  /**
   * Stores a receipt (one unconditional put: sent again after a lost answer, it lands on itself).
   * The task items it names are not written: see DeliveryReceipt.
   */
  recordReceipt(receipt: DeliveryReceipt): Promise<void>;
  /** Task id → when it was delivered, for every task firing in `second` that a receipt names (consistent reads). */
  receiptsOf(second: number): Promise<Map<string, number>>;
}

/**
 * The record of unleased first attempts answered 2xx: a callback batch writes one per fire second
 * it delivered tasks of, instead of an update of each task's item (a write unit per task, at a
 * billion a day the largest one). The task item stays as it was (PENDING, never attempted), so
 * every reader of a task's status reads its second's receipts too (see receipts.ts).
 */
export interface DeliveryReceipt {
  /** Fresh for each receipt: it names the receipt's item. */
  readonly id: string;
  /** The second every task it names fires in (the second their ids encode). */
  readonly second: number;
  /** Task id → when its delivered call was made (its `firedAt`). */
  readonly delivered: ReadonlyMap<string, number>;
  readonly expiresAtSeconds: number;
}

/** Where a listing resumes: a write shard of the index, and the last task id already listed in it. */
export interface ListPosition {
  readonly shard: number;
  readonly afterId?: string;
}

/**
 * One partition of a business-query index: a tenant's tasks of one bizId (one partition per
 * business object), or of one bizType in one write shard. The store builds its key
 * (table-schema.ts), so the core never spells one.
 */
export type IndexPartition =
  | { readonly index: 'byBizId'; readonly tenantId: string; readonly bizId: string }
  | { readonly index: 'byBizType'; readonly tenantId: string; readonly bizType: string; readonly shard: number };

export interface TaskIndex {
  /**
   * Task ids of one index partition in due order, at most `limit`, after `afterId` if given;
   * `more` says whether the partition may hold further ids.
   */
  page(partition: IndexPartition, limit: number, afterId?: string): Promise<{ ids: string[]; more: boolean }>;
  /** The tasks at these addresses, in their order; tasks gone since (TTL) are left out. */
  getMany(addresses: readonly TaskAddress[]): Promise<Task[]>;
}

/**
 * What an attempt came to. `history` is the task's whole new history (the claimed task's, plus
 * this attempt, capped): the lease makes the callback the only writer, so it goes in the same
 * write as the outcome and costs no extra request.
 */
export type DeliveryRecord =
  | {
      readonly status: 'DELIVERED';
      readonly deliveredAtMs: number;
      readonly latenessMs: number;
      readonly expiresAtSeconds: number;
      readonly history: readonly DeliveryAttempt[];
    }
  | {
      readonly status: 'PENDING';
      readonly lastError: string;
      readonly history: readonly DeliveryAttempt[];
      /** The backoff's end, recorded in the same write as the failure. */
      readonly retryAtMs: number;
      /**
       * The item's TTL moved past the retry (the callback always gives it): the create's, its fire
       * time plus the retention, must not remove a task still waiting for an attempt.
       */
      readonly expiresAtSeconds?: number;
    }
  | {
      readonly status: 'FAILED';
      readonly lastError: string;
      readonly expiresAtSeconds: number;
      readonly history: readonly DeliveryAttempt[];
    }
  /** No attempt was made (a rescheduled task waiting for its predecessor): the lease is given back, uncounted. */
  | { readonly status: 'RELEASED' }
  /** A rescheduled task whose reschedule never took effect: it must never be delivered. */
  | {
      readonly status: 'CANCELLED';
      readonly cancelledAtMs: number;
      readonly lastError: string;
      readonly expiresAtSeconds: number;
    };

/** What an unleased first attempt can end in. */
export type FirstAttemptRecord = Extract<DeliveryRecord, { status: 'DELIVERED' | 'PENDING' | 'FAILED' }>;

/**
 * Whether a task shows the record of the leased attempt `attempt` written: how a store tells that
 * a record whose conditional write failed had in fact landed before (its answer was lost, and the
 * SDK sent it again). Only that attempt's lease holder writes a record with its attempt count.
 * Taken for lost, a retry record would strand the task: the callback sends the reminder message
 * only for a record it knows landed.
 */
export function showsRecord(task: Task, attempt: number, outcome: DeliveryRecord): boolean {
  if (outcome.status === 'RELEASED') return task.status === 'PENDING' && task.attempts === attempt - 1;
  return (
    task.status === outcome.status &&
    task.attempts === attempt &&
    (outcome.status !== 'PENDING' || task.retryAtMs === outcome.retryAtMs)
  );
}

/** Seconds `from` to `through`, both included. */
export interface SecondRange {
  readonly from: number;
  readonly through: number;
}

/**
 * Which seconds have tasks, recorded at submit before a task is written, so that scanners
 * and the ticker pass over empty seconds instead of querying every shard of each one (the
 * empty-turning time wheel). Kept per minute; a minute is "planned" once the ticker has
 * read its seconds to send their ticks.
 */
export interface OccupancyIndex {
  /**
   * Records that tasks are due in these seconds, durably, before it resolves. Returns those
   * that were not recorded before and fall in a minute the ticker has already planned: no
   * tick will come for them unless the caller sends one.
   */
  occupy(seconds: readonly number[]): Promise<number[]>;
  /** Marks the minute planned and returns its occupied seconds; undefined if it was planned before. */
  plan(minute: number): Promise<number[] | undefined>;
  /** The occupied seconds in [from, to] (a consistent read). */
  occupied(from: number, to: number): Promise<Set<number>>;
}

/** The scan cursor: the next second nobody has claimed yet. */
export interface ClockState {
  readonly cursor: number;
  /** The first second the clock ever pointed at; nothing before it was claimed by a scanner. */
  readonly startedAt: number;
}

export interface ClockStore {
  read(): Promise<ClockState | undefined>;
  /** Creates the clock at `second` unless it exists; true if this call created it. */
  start(second: number): Promise<boolean>;
  /** Moves the cursor from `from` to `through + 1` if nobody else has; true if this call claimed `from`..`through`. */
  advance(from: number, through: number): Promise<boolean>;
  /**
   * Records that the claimed seconds `range` were fully scanned and enqueued, with how many
   * tasks each second that had any sent (seconds left out sent none). One marker per range.
   */
  markScanned(
    range: SecondRange,
    enqueuedBySecond: ReadonlyMap<number, number>,
    expiresAtSeconds: number,
  ): Promise<void>;
  /** The seconds in [from, to] that have a finished marker, each with how many tasks its scan enqueued. */
  scannedSeconds(from: number, to: number): Promise<Map<number, number>>;
  /**
   * Asks the sweeper to look at these due seconds again: the api stored late arrivals it
   * could not enqueue. Flags are filed under the second they were raised (`flaggedAt`), not
   * the due second: a late arrival can be due long before the sweeper's watermark, while the
   * moment it was flagged is always ahead of it.
   */
  markForRecheck(dueSeconds: readonly number[], flaggedAt: number, expiresAtSeconds: number): Promise<void>;
  /** The due seconds of the flags raised in [from, to], by the second they were raised. */
  rechecksFlagged(from: number, to: number): Promise<Map<number, number[]>>;
  /** A sweeper watermark; undefined before the first sweep. */
  watermark(name: Watermark): Promise<number | undefined>;
  /** Raises a watermark to `second`; it never moves back, even when two sweeps race. */
  raiseWatermark(name: Watermark, second: number): Promise<void>;
}

/**
 * `swept`: every claimed second up to it is known to be finished (scanned and enqueued).
 * `overdueChecked`: every second up to it has been checked for tasks still never attempted long after their due time.
 */
export type Watermark = 'swept' | 'overdueChecked';

/** An idempotency key's claim on a task: the request it was first used with, and the task that request made. */
/** What an idempotency key is claimed for: each tenant has a key space for submits and one for schedules. */
export type IdempotencyScope = 'task' | 'schedule';

export interface IdempotencyRecord {
  readonly scope: IdempotencyScope;
  readonly tenantId: string;
  /** The caller's key, as given; the store keys it by tenant and scope (table-schema.ts). */
  readonly key: string;
  readonly fingerprint: string;
  /** The task, or the schedule, the key made. */
  readonly taskId: string;
  readonly claimedAtMs: number;
}

export interface IdempotencyStore {
  /** Gives `record.key` to `record.taskId` unless the key is taken; returns whichever record holds the key. */
  claim(record: IdempotencyRecord, expiresAtSeconds: number): Promise<{ claimed: boolean; holder: IdempotencyRecord }>;
}

export interface DeliveryMessage {
  readonly id: string;
  readonly delaySeconds: number;
  /**
   * Set when the message must not be acted on before this time though its task is already due
   * (a retry's backoff, or a wait longer than SQS's 900 s delay): the callback sends such a
   * message on again, delayed, until the time comes, without reading the task.
   */
  readonly notBeforeMs?: number;
  /**
   * Set when its task goes too soon for the delivery queue to bring it on time: the adapter sends
   * it to the express queue instead (see goesExpress in task-kernel.ts).
   */
  readonly express?: true;
}

export interface DeliveryQueue {
  /** Sends every message or throws; the adapter batches by ten and retries failed entries. */
  send(messages: readonly DeliveryMessage[]): Promise<void>;
}

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
};

/** When a task or marker that ended now should disappear (DynamoDB TTL, in epoch seconds). */
export function expiryAfter(nowMs: number, retentionDays: number): number {
  return Math.floor(nowMs / 1000) + retentionDays * DAY_SECONDS;
}

/**
 * When a task that ended at `endedAtMs` should disappear: `retentionDays` after that, or after its
 * fire time if it ended before it (a cancel, a reschedule). A keyed submit's id is named by its due
 * time, which a request may give up to a day past (LIMITS.pastDays), so its retries find the task
 * for as long as they can be sent, and never write it anew.
 */
export function endedTaskExpiry(fireAtMs: number, endedAtMs: number, retentionDays: number): number {
  return expiryAfter(Math.max(fireAtMs, endedAtMs), retentionDays);
}
