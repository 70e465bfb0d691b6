/**
 * The task record and the ports the core talks through. Adapters implement the ports
 * against DynamoDB and SQS; tests implement them against dynalite and fauxqs or fakes.
 */
import type { TaskKey } from './ids';

/**
 * PENDING until a callback claims it; DELIVERING while one holds the delivery lease;
 * then DELIVERED, FAILED (attempts exhausted) or CANCELLED. QUEUED is not stored: a
 * write per task per hop is the dominant cost at a billion tasks a day, and a task's
 * presence in the delivery queue is implied by its second having been scanned.
 */
export type TaskStatus = 'PENDING' | 'DELIVERING' | 'DELIVERED' | 'FAILED' | 'CANCELLED';

export type Target =
  | { readonly type: 'http'; readonly url: string; readonly headers?: Readonly<Record<string, string>> }
  | { readonly type: 'sqs'; readonly queueUrl: string }
  | {
      readonly type: 'eventbridge';
      readonly eventBusName: string;
      readonly source?: string;
      readonly detailType?: string;
    };

export interface Task {
  readonly id: string;
  /** The tenant whose API key created it; only that tenant can read or cancel it. */
  readonly tenantId: string;
  readonly status: TaskStatus;
  readonly dueAtMs: number;
  readonly createdAtMs: number;
  readonly target: Target;
  /** The caller's payload as the JSON text it sent, so it round-trips exactly. */
  readonly payloadJson: string;
  readonly bizType?: string;
  readonly bizId?: string;
  readonly idempotencyKey?: string;
  readonly attempts: number;
  readonly leaseUntilMs?: number;
  readonly deliveredAtMs?: number;
  readonly latenessMs?: number;
  readonly lastError?: string;
  readonly cancelledAtMs?: number;
}

/** A due task as the scanner sees it: enough to enqueue, nothing more. */
export interface DueTask {
  readonly id: string;
  readonly dueAtMs: number;
}

export type CancelOutcome =
  | { readonly cancelled: true }
  | {
      readonly cancelled: false;
      readonly reason: 'not-found' | 'already-final' | 'in-delivery';
      readonly status?: TaskStatus;
    };

export interface TaskStore {
  /** Writes a new task; ids are fresh, so an existing item means a bug and must not be overwritten. */
  create(task: Task, key: TaskKey): Promise<void>;
  /** Writes many new tasks (up to any count; the adapter chunks and retries unprocessed items). */
  createMany(entries: ReadonlyArray<{ task: Task; key: TaskKey }>): Promise<void>;
  get(key: TaskKey): Promise<Task | undefined>;
  /**
   * PENDING → CANCELLED, else says why not (a DELIVERING task is in an attempt, or its
   * outcome is not known yet). Another tenant's task is `not-found`.
   */
  cancel(key: TaskKey, tenantId: string, nowMs: number, expiresAtSeconds: number): Promise<CancelOutcome>;
  /**
   * All PENDING tasks of one shard of one second (consistent reads, every page); with
   * `neverAttempted`, only those no callback has ever claimed.
   */
  listDue(second: number, shard: number, options?: { neverAttempted?: boolean }): Promise<DueTask[]>;
  /**
   * Takes the delivery lease: PENDING, or DELIVERING with a lapsed lease, becomes
   * DELIVERING with attempts + 1. Undefined when the task is gone, final or leased.
   */
  claimDelivery(key: TaskKey, nowMs: number, leaseUntilMs: number): Promise<Task | undefined>;
  /** Records the outcome of the attempt that holds the lease; false if the lease was lost. */
  finishDelivery(key: TaskKey, attempt: number, outcome: DeliveryRecord): Promise<boolean>;
  /** FAILED → PENDING with a fresh attempt budget; false if the task is not FAILED. */
  reviveFailed(key: TaskKey): Promise<boolean>;
}

export type DeliveryRecord =
  | {
      readonly status: 'DELIVERED';
      readonly deliveredAtMs: number;
      readonly latenessMs: number;
      readonly expiresAtSeconds: number;
    }
  | { readonly status: 'PENDING'; readonly lastError: string }
  | { readonly status: 'FAILED'; readonly lastError: string; readonly expiresAtSeconds: number };

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
  /** Moves the cursor from `from` to `from + 1` if nobody else has; true if this call claimed `from`. */
  advance(from: number): Promise<boolean>;
  /** Records that a claimed second was fully scanned and enqueued. */
  markScanned(second: number, enqueued: number, expiresAtSeconds: number): Promise<void>;
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
export interface IdempotencyRecord {
  readonly key: string;
  readonly fingerprint: string;
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

export const DAY_SECONDS = 24 * 3600;

/** When a task or marker that ended now should disappear (DynamoDB TTL, in epoch seconds). */
export function expiryAfter(nowMs: number, retentionDays: number): number {
  return Math.floor(nowMs / 1000) + retentionDays * DAY_SECONDS;
}
