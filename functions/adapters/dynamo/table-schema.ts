/**
 * The one table's item layout: a named stored type for every kind of item, the key of each
 * (one builder per prefix), and the mapping between items and the core's records. It speaks
 * DynamoDB's item shape but never imports the AWS SDK, so local mode, its console, the bench
 * and the tests read and write items through it too. Changing anything stored here breaks
 * deployed tables: attribute names and values are a wire format.
 */
import { createHash } from 'node:crypto';

import { TABLE } from '../../contract/topology.js';
import { MAX_SHARDS, parseTaskId, type TaskAddress } from '../../core/kernel/ids.js';
import type {
  ClockState,
  DeliveryAttempt,
  DeliveryPolicy,
  DeliveryReceipt,
  DeliveryRecord,
  DueTask,
  IdempotencyRecord,
  IdempotencyScope,
  IndexPartition,
  OccurrenceRef,
  RescheduleIntent,
  Target,
  Task,
  TaskStatus,
  TaskWindow,
  Watermark,
} from '../../core/kernel/task.js';
import type { TaskName, TaskNameTexts } from '../../core/kernel/task-kernel.js';
import type { CatchUp } from '../../core/schedules/recurrence.js';
import type { NextOccurrence, Schedule } from '../../core/schedules/schedules.js';
import type { BizTypeSettings } from '../../core/submit/biz-types.js';
import type { ApiKeyRecord, CounterShare, Keyring, SigningSecret, Tenant } from '../../core/tenants/tenants.js';

const PK = TABLE.partitionKey;
const SK = TABLE.sortKey;

/** Every item's primary key. */
export type TableKey = { readonly [name in typeof PK | typeof SK]: string };

/** An item's primary key alone, to address a write to an item a Scan or Query returned. */
export function keyOf(item: TableKey): TableKey {
  return { [PK]: item[PK], [SK]: item[SK] };
}

/**
 * Key conditions and item conditions that name the table's key attributes. Values go in as
 * `:pk`, `:from`, `:to`, `:prefix`.
 */
export const KEY_EXPRESSIONS = {
  /** A conditional put that creates, never overwrites. */
  itemAbsent: `attribute_not_exists(${PK})`,
  /** A conditional update or delete that never creates. */
  itemPresent: `attribute_exists(${PK})`,
  partition: `${PK} = :pk`,
  partitionSortBetween: `${PK} = :pk AND ${SK} BETWEEN :from AND :to`,
  partitionSortAfter: `${PK} = :pk AND ${SK} > :after`,
  /** Items of every partition whose key starts with `:prefix` (a Scan's filter: local mode's console only). */
  partitionPrefix: `begins_with(${PK}, :prefix)`,
} as const;

/**
 * A key value scoped to one tenant: the tenant id, then `parts`, joined by '#'. Tenant ids hold no
 * '#' (`tenantIdProblem` admits letters, digits and hyphens only), so no two tenants' values meet,
 * whatever the parts hold. Every key that names a tenant is built with this.
 */
export function tenantScoped(prefix: string, tenantId: string, ...parts: ReadonlyArray<string | number>): string {
  return `${prefix}${[tenantId, ...parts].join('#')}`;
}

// ---- Tasks ----------------------------------------------------------------------------

/** A task as stored: the core's Task, with its payload under `payload` and its index keys beside it. */
export interface TaskItem extends TableKey {
  readonly bizIdKey?: string;
  readonly bizTypeKey?: string;
  readonly id: string;
  readonly tenantId: string;
  readonly status: TaskStatus;
  /** The due time the caller asked for. */
  readonly dueAtMs: number;
  /**
   * When a task with a window fires (the time in its id and sort key); absent for a task without
   * one, which fires at `dueAtMs`, as every task stored before windows existed does.
   */
  readonly fireAtMs?: number;
  /** The window's seconds, on a task that has one. */
  readonly windowSeconds?: number;
  readonly createdAtMs: number;
  readonly target: Target;
  /** The payload's JSON text, as submitted. */
  readonly payload: string;
  readonly attempts: number;
  readonly bizType?: string;
  readonly bizId?: string;
  readonly idempotencyKey?: string;
  /** The request's digest, on a task whose id its idempotency key derived. */
  readonly fingerprint?: string;
  readonly policy?: DeliveryPolicy;
  readonly leaseUntilMs?: number;
  readonly attemptId?: string;
  readonly retryAtMs?: number;
  readonly deliveredAtMs?: number;
  readonly latenessMs?: number;
  readonly lastError?: string;
  readonly cancelledAtMs?: number;
  readonly unconfirmedCancel?: string;
  readonly copiesCallUntilMs?: number;
  /**
   * The TTL attribute: set at create to `retentionDays` after the fire time (a task delivered by
   * a receipt is never written again), and moved later when the task ends later than that.
   */
  readonly expiresAt?: number;
  readonly history?: readonly DeliveryAttempt[];
  readonly rescheduledFrom?: string;
  readonly lateArrival?: true;
  readonly rescheduledTo?: string;
  readonly rescheduleIntent?: RescheduleIntent;
  readonly occurrence?: OccurrenceRef;
}

/** Task attributes by name, for the update and filter expressions that set or test them. */
export type TaskAttribute = keyof TaskItem;

/** Every task partition key starts with this; the table's other items (clock, markers, tenants) never do. */
export const TASK_PARTITION_PREFIX = 'B#';

/** The start of the partition keys of one bucket's tasks, whatever their shard. */
export function taskBucketPrefix(bucket: number): string {
  return `${TASK_PARTITION_PREFIX}${bucket}#`;
}

/** The partition of one shard of one bucket: `B#<bucket>#<shard>`. */
export function taskPartitionKey(bucket: number, shard: number): string {
  return `${taskBucketPrefix(bucket)}${shard}`;
}

const SORT_TIME_DIGITS = 15;

/** A millisecond as the start of a task's sort key: zero-padded so string order is time order. */
function sortTime(ms: number): string {
  return String(ms).padStart(SORT_TIME_DIGITS, '0');
}

/** A task's key: its bucket and shard's partition, sorted by `<fire time>#<id>`. */
export function taskKey(address: TaskAddress): TableKey {
  return {
    [PK]: taskPartitionKey(address.bucket, address.shard),
    [SK]: `${sortTime(address.fireAtMs)}#${address.id}`,
  };
}

/**
 * The sort-key range holding exactly one second's tasks. Buckets wrap every `bucketCount`
 * seconds, so a bucket also holds tasks due whole rounds later; the range keeps them out.
 */
export function taskSecondRange(second: number): { from: string; to: string } {
  // '~' sorts after every id character, so the range takes in the second's last millisecond.
  return { from: sortTime(second * 1000), to: `${sortTime(second * 1000 + 999)}#~` };
}

/**
 * The kind of item a partition key names: its prefix, the text before its first '#' (`B` for
 * tasks, `CLOCK`, `RATE`…), or the whole key where it has none. For the bench and the scale
 * model, which count reads and writes by kind.
 */
export function partitionKind(pk: string): string {
  const hash = pk.indexOf('#');
  return hash === -1 ? pk : pk.slice(0, hash);
}

/** The partition key of any item or key, whatever its kind. */
export function partitionOf(item: Record<string, unknown>): string {
  return String(item[PK]);
}

/** Whether a partition key is a task's. */
export function isTaskPartition(pk: string): boolean {
  return pk.startsWith(TASK_PARTITION_PREFIX);
}

/** The task id in a task's sort key (`<due time>#<id>`), which is all an index's keys-only projection carries. */
export function taskIdOfSortKey(sk: string): string {
  return sk.slice(sk.indexOf('#') + 1);
}

/**
 * An index partition's key: `<tenant>#<bizId>` (one per business object), or
 * `<tenant>#<bizType>#<shard>` (one per bizType and write shard; the shard is last).
 */
export function indexPartitionKey(partition: IndexPartition): string {
  return partition.index === 'byBizId'
    ? tenantScoped('', partition.tenantId, partition.bizId)
    : tenantScoped('', partition.tenantId, partition.bizType, partition.shard);
}

/** The business-query index keys: written with the task and never again, as nothing they hold can change. */
function indexKeys(task: Task): Pick<TaskItem, 'bizIdKey' | 'bizTypeKey'> {
  const { tenantId, bizId, bizType } = task;
  const shard = parseTaskId(task.id, MAX_SHARDS)?.shard ?? 0;
  return {
    ...(bizId !== undefined && {
      [TABLE.indexes.byBizId.partitionKey]: indexPartitionKey({ index: 'byBizId', tenantId, bizId }),
    }),
    ...(bizType !== undefined && {
      [TABLE.indexes.byBizType.partitionKey]: indexPartitionKey({ index: 'byBizType', tenantId, bizType, shard }),
    }),
  };
}

/**
 * A new task's item, at `address`: what a create writes (the attributes a delivery sets come
 * later, by update), with its TTL, `expiresAtSeconds`, when the store is given one.
 */
export function taskToItem(task: Task, address: TaskAddress, expiresAtSeconds?: number): TaskItem {
  return {
    ...taskKey(address),
    ...(expiresAtSeconds !== undefined && { expiresAt: expiresAtSeconds }),
    ...indexKeys(task),
    id: task.id,
    tenantId: task.tenantId,
    status: task.status,
    dueAtMs: task.dueAtMs,
    // Written only when it differs, so a task without a window costs no byte more (every write
    // to an item is billed by its size) and old items read the same way.
    ...(task.fireAtMs !== task.dueAtMs && { fireAtMs: task.fireAtMs }),
    ...(task.window !== undefined && { windowSeconds: task.window.seconds }),
    createdAtMs: task.createdAtMs,
    target: task.target,
    payload: task.payloadJson,
    attempts: task.attempts,
    ...(task.bizType !== undefined && { bizType: task.bizType }),
    ...(task.bizId !== undefined && { bizId: task.bizId }),
    ...(task.idempotencyKey !== undefined && { idempotencyKey: task.idempotencyKey }),
    ...(task.fingerprint !== undefined && { fingerprint: task.fingerprint }),
    ...(task.policy !== undefined && { policy: task.policy }),
    ...(task.rescheduledFrom !== undefined && { rescheduledFrom: task.rescheduledFrom }),
    ...(task.lateArrival && { lateArrival: true }),
    ...(task.occurrence !== undefined && { occurrence: task.occurrence }),
  };
}

function optional<K extends string, V>(name: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: V };
}

/** The core's Task from its item: keys, index keys and the TTL stay behind. */
export function taskFromItem(item: TaskItem): Task {
  return {
    id: item.id,
    tenantId: item.tenantId,
    status: item.status,
    dueAtMs: item.dueAtMs,
    fireAtMs: fireAtOf(item),
    ...(item.windowSeconds !== undefined && { window: { seconds: item.windowSeconds } }),
    createdAtMs: item.createdAtMs,
    target: item.target,
    payloadJson: item.payload,
    attempts: item.attempts,
    ...optional('bizType', item.bizType),
    ...optional('bizId', item.bizId),
    ...optional('idempotencyKey', item.idempotencyKey),
    ...optional('fingerprint', item.fingerprint),
    ...optional('policy', item.policy),
    ...optional('leaseUntilMs', item.leaseUntilMs),
    ...optional('attemptId', item.attemptId),
    ...optional('retryAtMs', item.retryAtMs),
    ...optional('deliveredAtMs', item.deliveredAtMs),
    ...optional('latenessMs', item.latenessMs),
    ...optional('lastError', item.lastError),
    ...optional('cancelledAtMs', item.cancelledAtMs),
    ...optional('unconfirmedCancel', item.unconfirmedCancel),
    ...optional('copiesCallUntilMs', item.copiesCallUntilMs),
    ...optional('history', item.history),
    ...optional('rescheduledFrom', item.rescheduledFrom),
    ...optional('rescheduledTo', item.rescheduledTo),
    ...optional('rescheduleIntent', item.rescheduleIntent),
    ...optional('lateArrival', item.lateArrival),
    ...optional('occurrence', item.occurrence),
  };
}

/** When a task item fires: `fireAtMs` if it has a window, else `dueAtMs`. */
export function fireAtOf(item: Pick<TaskItem, 'dueAtMs' | 'fireAtMs'>): number {
  return item.fireAtMs ?? item.dueAtMs;
}

/**
 * The task fires after the time in `placeholder` (one value, used twice): `fireAtMs` if the item
 * has one, `dueAtMs` if it has no window. For the write that depends on it: a cancel of a task
 * whose first attempt takes no lease.
 */
export function firesAfter(placeholder: `:${string}`): string {
  return `(fireAtMs > ${placeholder} OR (attribute_not_exists(fireAtMs) AND dueAtMs > ${placeholder}))`;
}

/** What a due-task Query projects, and the scanner needs. */
export const DUE_TASK_PROJECTION = ['id', 'dueAtMs', 'fireAtMs'] as const satisfies readonly TaskAttribute[];

export function dueTaskFromItem(item: Pick<TaskItem, (typeof DUE_TASK_PROJECTION)[number]>): DueTask {
  return { id: item.id, fireAtMs: fireAtOf(item) };
}

/** The attributes an attempt's outcome sets, by name. */
export function finishAssignments(attempt: number, outcome: DeliveryRecord): Partial<TaskItem> {
  switch (outcome.status) {
    case 'DELIVERED':
      return {
        status: outcome.status,
        deliveredAtMs: outcome.deliveredAtMs,
        latenessMs: outcome.latenessMs,
        expiresAt: outcome.expiresAtSeconds,
        history: outcome.history,
      };
    case 'PENDING':
      return {
        status: outcome.status,
        lastError: outcome.lastError,
        history: outcome.history,
        retryAtMs: outcome.retryAtMs,
        ...(outcome.expiresAtSeconds !== undefined && { expiresAt: outcome.expiresAtSeconds }),
      };
    case 'FAILED':
      return {
        status: outcome.status,
        lastError: outcome.lastError,
        expiresAt: outcome.expiresAtSeconds,
        history: outcome.history,
      };
    case 'RELEASED':
      // The claim counted an attempt that was never made; giving it back keeps the attempt budget honest.
      return { status: 'PENDING', attempts: attempt - 1 };
    case 'CANCELLED':
      return {
        status: outcome.status,
        cancelledAtMs: outcome.cancelledAtMs,
        lastError: outcome.lastError,
        expiresAt: outcome.expiresAtSeconds,
      };
  }
}

/**
 * The texts a derived task id and its window position are hashed from (see `TaskNameTexts`):
 * kept byte for byte as first deployed, or a retry after a deployment would derive another id.
 */
export function taskNameTexts(name: TaskName): TaskNameTexts {
  const id =
    name.kind === 'keyed-submit'
      ? `key#${name.tenantId}#${name.idempotencyKey}`
      : `${name.scheduleId}#${name.revision}#${name.atMs}`;
  return { id, windowPosition: `${id}#window` };
}

// ---- Delivery receipts -----------------------------------------------------------------

/**
 * How many partitions one fire second's receipts are spread over. At the peak to plan for, 20,000
 * tasks due in one second, a callback batch of ten is a receipt of about 400 bytes (one write unit),
 * so some 2,000 receipts a second: 250 a second on each of 8 partitions, under DynamoDB's 1,000
 * even when batches average only 2.5 tasks. A reader of a second's receipts queries all 8.
 */
export const RECEIPT_SPREAD = 8;
export const RECEIPT_PARTITION_PREFIX = 'RECEIPT#';

/** A receipt as stored: the delivered task ids as the names of a map, each with its delivery time. */
export interface ReceiptItem extends TableKey {
  readonly second: number;
  readonly delivered: Record<string, number>;
  readonly expiresAt: number;
}

/** One of a fire second's receipt partitions: `RECEIPT#<second>#<0..RECEIPT_SPREAD-1>`. */
export function receiptPartition(second: number, slot: number): string {
  return `${RECEIPT_PARTITION_PREFIX}${second}#${slot}`;
}

/** A receipt's key: its partition is picked by its id, so the receipts of one second spread evenly. */
export function receiptKey(second: number, receiptId: string): TableKey {
  let hash = 0;
  for (const char of receiptId) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return { [PK]: receiptPartition(second, hash % RECEIPT_SPREAD), [SK]: receiptId };
}

export function receiptToItem(receipt: DeliveryReceipt): ReceiptItem {
  return {
    ...receiptKey(receipt.second, receipt.id),
    second: receipt.second,
    delivered: Object.fromEntries(receipt.delivered),
    expiresAt: receipt.expiresAtSeconds,
  };
}

/** The deliveries receipt items name, by task id; a task two receipts name (two copies delivered) keeps the earlier. */
export function receiptDeliveries(items: readonly ReceiptItem[]): Map<string, number> {
  const delivered = new Map<string, number>();
  for (const item of items) {
    for (const [id, atMs] of Object.entries(item.delivered)) {
      delivered.set(id, Math.min(atMs, delivered.get(id) ?? atMs));
    }
  }
  return delivered;
}

// ---- Clock, sweep watermarks and per-second markers ----------------------------------

/** The scan cursor: one item. */
export const CLOCK_KEY = { [PK]: 'CLOCK', [SK]: 'CLOCK' } as const satisfies TableKey;
/** The sweeper's watermarks: their own item, so sweeps never contend with the cursor writes. */
export const SWEEP_KEY = { [PK]: 'SWEEP', [SK]: 'SWEEP' } as const satisfies TableKey;

export interface ClockItem extends TableKey, ClockState {}

export type SweepItem = TableKey & { readonly [name in Watermark]?: number };

export function clockToItem(state: ClockState): ClockItem {
  return { ...CLOCK_KEY, cursor: state.cursor, startedAt: state.startedAt };
}

export function clockFromItem(item: ClockItem): ClockState {
  return { cursor: item.cursor, startedAt: item.startedAt };
}

const SECONDS_PER_MARKER_PARTITION = 3600;
export type MarkerKind = 'SCANNED' | 'RECHECK';

/** The partition of `kind`'s items filed under `second`: one per hour and kind, so a range of seconds is one or two Queries. */
export function markerPartition(kind: MarkerKind, second: number): string {
  return `${kind}#${Math.floor(second / SECONDS_PER_MARKER_PARTITION)}`;
}

/** The first second of the marker partition after the one holding `second`. */
export function nextMarkerPartitionStart(second: number): number {
  return (Math.floor(second / SECONDS_PER_MARKER_PARTITION) + 1) * SECONDS_PER_MARKER_PARTITION;
}

/** The sort key of a second: zero-padded so string order is time order. */
export function markerSortKey(second: number): string {
  return String(second).padStart(12, '0');
}

/** The item of `kind` filed under `second`. */
export function markerKey(kind: MarkerKind, second: number): TableKey {
  return { [PK]: markerPartition(kind, second), [SK]: markerSortKey(second) };
}

/** The sort-key range of every item of one kind filed under a second in [from, to], flags included. */
export function markerSortRange(from: number, to: number): { from: string; to: string } {
  // '~' sorts after '#', so the range takes in the flags filed under `to` too.
  return { from: markerSortKey(from), to: `${markerSortKey(to)}~` };
}

/** A scan's progress over a range of seconds, filed under its first second. */
export interface ScanMarkerItem extends TableKey {
  readonly through: number;
  /**
   * Second → tasks enqueued, for the seconds that sent something: the sweeper's overdue pass looks at those alone.
   * Readers take a missing map as empty, as the store always has, so a marker written by hand or by other tooling still reads.
   */
  readonly busy?: Record<string, number>;
  readonly expiresAt: number;
}

export function scanMarkerItem(
  from: number,
  through: number,
  enqueuedBySecond: ReadonlyMap<number, number>,
  expiresAtSeconds: number,
): ScanMarkerItem {
  return {
    ...markerKey('SCANNED', from),
    through,
    busy: Object.fromEntries(enqueuedBySecond),
    expiresAt: expiresAtSeconds,
  };
}

/** The first second a scan marker covers. */
export function scanMarkerFrom(item: ScanMarkerItem): number {
  return Number(item.sk);
}

/** A flag that `dueSecond` needs another scan, raised at `flaggedAt`. */
export interface RecheckFlagItem extends TableKey {
  readonly dueSecond: number;
  readonly expiresAt: number;
}

export function recheckFlagItem(flaggedAt: number, dueSecond: number, expiresAtSeconds: number): RecheckFlagItem {
  const marker = markerKey('RECHECK', flaggedAt);
  // The due second follows the flag's own second, so a range of flag times is still one sort-key range.
  return { [PK]: marker.pk, [SK]: `${marker.sk}#${dueSecond}`, dueSecond, expiresAt: expiresAtSeconds };
}

/** The second a recheck flag was raised. */
export function recheckFlaggedAt(item: RecheckFlagItem): number {
  return Number(item.sk.split('#')[0]);
}

/**
 * How many items hold one minute of the occupancy index. Each api instance writes the slots in
 * turn, from one chosen at random when it starts, so a minute's writes (one per instance and new
 * second) are spread evenly over this many items and partition keys, however few instances run;
 * readers read them all. A single submit brings at most one second new to its instance, so the
 * writes grow with the submission rate (and with the fleet, which grows with it) up to one per
 * submit: at the peak of a billion single submits a day, about 23,000 a second, that is some 720
 * writes a second on each of 32 slots, against DynamoDB's 1,000 per partition. Eight slots took
 * 2,900. What more slots cost is the ticker's plan of each minute, one write per slot.
 */
export const OCCUPANCY_SLOTS = 32;

/** A minute's occupied seconds, as one slot saw them, and whether the ticker has planned the minute. */
export interface OccupancyItem extends TableKey {
  readonly seconds?: Set<number>;
  readonly planned?: boolean;
  readonly expiresAt: number;
}

/** One slot of one minute: a partition of its own, filed by the minute's first second. */
export function occupancyKey(minute: number, slot: number): TableKey {
  return { [PK]: `OCCUPIED#${minute}#${slot}`, [SK]: markerSortKey(minute * 60) };
}

/**
 * The item whose `planned` flag says a minute was ticked in dense mode (every second ticked, no
 * index kept): the minute's first slot. Sharing it with the index means a ticker of either mode
 * sees a minute the other planned while a deployment switches modes, and ticks no second twice
 * on its account.
 */
export function minutePlanKey(minute: number): TableKey {
  return occupancyKey(minute, 0);
}

// ---- Idempotency claims ---------------------------------------------------------------

export interface IdempotencyItem extends TableKey {
  readonly taskId: string;
  readonly fingerprint: string;
  readonly claimedAtMs: number;
  readonly expiresAt: number;
}

export const IDEMPOTENCY_PARTITION_PREFIX = 'IDEM#';

/**
 * A claim's key: `IDEM#<tenant>#<key>` for a submit's, `IDEM#<tenant>/schedules#<key>` for a
 * schedule's ('/' is in no tenant id, so the two spaces never meet). Kept as deployed tables hold
 * them: a key built another way would miss its live claim, and a retry inside the retention would
 * make a second task or schedule.
 */
export function idempotencyKey(scope: IdempotencyScope, tenantId: string, key: string): TableKey {
  const space = scope === 'task' ? tenantId : `${tenantId}/schedules`;
  return { [PK]: tenantScoped(IDEMPOTENCY_PARTITION_PREFIX, space, key), [SK]: 'IDEM' };
}

export function idempotencyToItem(record: IdempotencyRecord, expiresAtSeconds: number): IdempotencyItem {
  return {
    ...idempotencyKey(record.scope, record.tenantId, record.key),
    taskId: record.taskId,
    fingerprint: record.fingerprint,
    claimedAtMs: record.claimedAtMs,
    expiresAt: expiresAtSeconds,
  };
}

/** The record that holds a claim's key, read back for a claim that found the key taken. */
export function idempotencyFromItem(
  claim: Pick<IdempotencyRecord, 'scope' | 'tenantId' | 'key'>,
  item: IdempotencyItem,
): IdempotencyRecord {
  return {
    scope: claim.scope,
    tenantId: claim.tenantId,
    key: claim.key,
    taskId: item.taskId,
    fingerprint: item.fingerprint,
    claimedAtMs: item.claimedAtMs,
  };
}

// ---- Tenants, API keys, counters and bizType settings: the record beside its key -----

/**
 * The tenants' listing: one entry per tenant, holding only its id, so listing them is one Query.
 * Each tenant's record lives in a partition of its own (`tenantKey`), which every api and callback
 * instance reads once per tenant per cache lifetime: kept here, those reads grew with the fleet
 * times the tenant count, and a full fleet's reads of some 45 active tenants passed one
 * partition's 3,000 read units a second. A tenant stored before that layout has its whole record
 * in its entry here and no partition of its own; it is read from here until its next change.
 */
export const TENANTS_PARTITION = 'TENANTS';
/** A tenant's API keys share a partition of their own. */
export const apiKeysPartition = (tenantId: string) => tenantScoped('APIKEYS#', tenantId);
/** A tenant's bizType settings share one partition, `BIZTYPES#<tenant>`: they are few, and listing them is one Query. */
export const BIZ_TYPES_PARTITION_PREFIX = 'BIZTYPES#';
export const bizTypesPartition = (tenantId: string) => tenantScoped(BIZ_TYPES_PARTITION_PREFIX, tenantId);

/** A tenant as stored. Each attribute is mapped by name below, so renaming a field of `Tenant` cannot rename a stored attribute. */
export interface TenantItem extends TableKey {
  readonly id: string;
  readonly name: string;
  readonly createdAtMs: number;
  readonly signingSecrets: readonly SigningSecretItem[];
  readonly allowedHosts?: readonly string[];
  readonly rateLimitPerSecond: number;
  /** The optimistic lock a tenant's replacing put is conditional on. */
  readonly version: number;
}

/** A tenant's entry in the listing: its id, or, for a tenant stored before each had its own partition, its whole record. */
export type TenantListingItem = TableKey & { readonly id?: string } & Partial<Omit<TenantItem, keyof TableKey>>;

/** Whether a listing entry is a whole record, as tenants stored before each had a partition of its own have. */
export function isWholeTenantRecord(entry: TenantListingItem): entry is TenantListingItem & TenantItem {
  return entry.signingSecrets !== undefined;
}

export const tenantListingEntry = (tenantId: string): TenantListingItem => ({
  ...tenantListingKey(tenantId),
  id: tenantId,
});

export interface SigningSecretItem {
  readonly secret: string;
  readonly createdAtMs: number;
  readonly retiresAtMs?: number;
}

/** An API key as stored: the digest of its secret, never the secret. */
export interface ApiKeyItem extends TableKey {
  readonly tenantId: string;
  readonly keyId: string;
  readonly secretHash: string;
  readonly createdAtMs: number;
  readonly label?: string;
  readonly revokedAtMs?: number;
}

/** A bizType's settings as stored. */
export interface BizTypeItem extends TableKey {
  readonly tenantId: string;
  readonly bizType: string;
  readonly defaultTarget?: Target;
  readonly maxAttempts?: number;
  readonly backoffBaseSeconds?: number;
  readonly backoffMaxSeconds?: number;
  readonly callbackRateLimitPerSecond?: number;
  readonly updatedAtMs: number;
}

/** A tenant's record: `TENANT#<id>`, a partition of its own. */
export const tenantKey = (tenantId: string): TableKey => ({ [PK]: tenantScoped('TENANT#', tenantId), [SK]: 'TENANT' });
/** A tenant's entry in the listing. */
export const tenantListingKey = (tenantId: string): TableKey => ({ [PK]: TENANTS_PARTITION, [SK]: tenantId });
export const apiKeyKey = (tenantId: string, keyId: string): TableKey => ({
  [PK]: apiKeysPartition(tenantId),
  [SK]: keyId,
});
export const bizTypeKey = (tenantId: string, bizType: string): TableKey => ({
  [PK]: bizTypesPartition(tenantId),
  [SK]: bizType,
});

const signingSecretToItem = (secret: SigningSecret): SigningSecretItem => ({
  secret: secret.secret,
  createdAtMs: secret.createdAtMs,
  ...optional('retiresAtMs', secret.retiresAtMs),
});
const signingSecretFromItem = (item: SigningSecretItem): SigningSecret => ({
  secret: item.secret,
  createdAtMs: item.createdAtMs,
  ...optional('retiresAtMs', item.retiresAtMs),
});

export const tenantToItem = (tenant: Tenant): TenantItem => ({
  ...tenantKey(tenant.id),
  id: tenant.id,
  name: tenant.name,
  createdAtMs: tenant.createdAtMs,
  signingSecrets: tenant.signingSecrets.map(signingSecretToItem),
  ...optional('allowedHosts', tenant.allowedHosts),
  rateLimitPerSecond: tenant.rateLimitPerSecond,
  version: tenant.version,
});
export const tenantFromItem = (item: TenantItem): Tenant => ({
  id: item.id,
  name: item.name,
  createdAtMs: item.createdAtMs,
  signingSecrets: item.signingSecrets.map(signingSecretFromItem),
  ...optional('allowedHosts', item.allowedHosts),
  rateLimitPerSecond: item.rateLimitPerSecond,
  version: item.version,
});

export const apiKeyToItem = (record: ApiKeyRecord): ApiKeyItem => ({
  ...apiKeyKey(record.tenantId, record.keyId),
  tenantId: record.tenantId,
  keyId: record.keyId,
  secretHash: record.secretHash,
  createdAtMs: record.createdAtMs,
  ...optional('label', record.label),
  ...optional('revokedAtMs', record.revokedAtMs),
});
export const apiKeyFromItem = (item: ApiKeyItem): ApiKeyRecord => ({
  tenantId: item.tenantId,
  keyId: item.keyId,
  secretHash: item.secretHash,
  createdAtMs: item.createdAtMs,
  ...optional('label', item.label),
  ...optional('revokedAtMs', item.revokedAtMs),
});

export const bizTypeToItem = (settings: BizTypeSettings): BizTypeItem => ({
  ...bizTypeKey(settings.tenantId, settings.bizType),
  tenantId: settings.tenantId,
  bizType: settings.bizType,
  ...optional('defaultTarget', settings.defaultTarget),
  ...optional('maxAttempts', settings.maxAttempts),
  ...optional('backoffBaseSeconds', settings.backoffBaseSeconds),
  ...optional('backoffMaxSeconds', settings.backoffMaxSeconds),
  ...optional('callbackRateLimitPerSecond', settings.callbackRateLimitPerSecond),
  updatedAtMs: settings.updatedAtMs,
});
export const bizTypeFromItem = (item: BizTypeItem): BizTypeSettings => ({
  tenantId: item.tenantId,
  bizType: item.bizType,
  ...optional('defaultTarget', item.defaultTarget),
  ...optional('maxAttempts', item.maxAttempts),
  ...optional('backoffBaseSeconds', item.backoffBaseSeconds),
  ...optional('backoffMaxSeconds', item.backoffMaxSeconds),
  ...optional('callbackRateLimitPerSecond', item.callbackRateLimitPerSecond),
  updatedAtMs: item.updatedAtMs,
});

/**
 * The deployment's keyring: one item in a partition of its own (not `TENANTS`, whose Query lists
 * the tenants). Read once per api instance, so it is never hot.
 */
export const KEYRING_KEY: TableKey = { [PK]: 'KEYRING', [SK]: 'KEYRING' };

/** The keyring as stored: its untagged keys as a list, which unlike a string set may be empty. */
export type KeyringItem = TableKey & {
  readonly tagSecret: string;
  readonly createdAtMs: number;
  readonly untaggedKeys: readonly string[];
};

export const keyringToItem = (keyring: Keyring): KeyringItem => ({
  ...KEYRING_KEY,
  tagSecret: keyring.tagSecret,
  createdAtMs: keyring.createdAtMs,
  untaggedKeys: [...keyring.untaggedKeys],
});
export const keyringFromItem = (item: KeyringItem): Keyring => ({
  tagSecret: item.tagSecret,
  createdAtMs: item.createdAtMs,
  untaggedKeys: new Set(item.untaggedKeys),
});

/** Api requests per tenant, share and second: `RATE#<tenant>#<share>` (see sharesOf). */
export const RATE_COUNTER_PREFIX = 'RATE#';
/** Callbacks per tenant, bizType, share and second: `CALLBACKS#<tenant>#<bizType>#<share>`. */
export const CALLBACK_COUNTER_PREFIX = 'CALLBACKS#';

/** One second of a counter: `<prefix><tenant>[#<bizType>][#<share>]`, sort key the second. */
export function counterKey(prefix: string, subject: CounterShare, second: number): TableKey {
  const parts = [subject.bizType, subject.share].filter((part) => part !== undefined);
  return { [PK]: tenantScoped(prefix, subject.tenantId, ...parts), [SK]: String(second) };
}

// ---- Schedules ------------------------------------------------------------------------

/**
 * A tenant's schedules are spread over SCHEDULE_SHARES partitions, `SCHEDULES#<tenant>#<share>`,
 * the share a hash of the schedule id, sort key the schedule id. Each occurrence reads its
 * schedule and moves its chain on, a write billed at the item's size: a tenant at its cap
 * (MAX_SCHEDULES_PER_TENANT, 1,000) whose schedules all fire every second writes some 2,000 units
 * a second of 2 KB items, twice what one partition takes; over 8 shares each takes about 250.
 * Schedules stored before the shares live in `SCHEDULES#<tenant>` (SCHEDULES_LEGACY), where the
 * store still finds them.
 */
export const SCHEDULE_SHARES = 8;
export const SCHEDULES_PARTITION_PREFIX = 'SCHEDULES#';
/** Where a schedule stored before the shares lives: the tenant's one schedule partition. */
export const SCHEDULES_LEGACY = 'legacy';
export type ScheduleShare = number | typeof SCHEDULES_LEGACY;

export function scheduleShareOf(id: string): number {
  return createHash('sha256').update(id).digest().readUInt32BE(0) % SCHEDULE_SHARES;
}

/** Every partition a tenant's schedules may be in: the shares, then the one from before them. */
export const SCHEDULE_PARTITIONS: readonly ScheduleShare[] = [
  ...Array.from({ length: SCHEDULE_SHARES }, (_, share) => share),
  SCHEDULES_LEGACY,
];

export const schedulesPartition = (tenantId: string, share: ScheduleShare) =>
  share === SCHEDULES_LEGACY
    ? tenantScoped(SCHEDULES_PARTITION_PREFIX, tenantId)
    : tenantScoped(SCHEDULES_PARTITION_PREFIX, tenantId, share);

/**
 * The partitions the api may delete items in: bizType settings and schedules (tasks are never
 * deleted, they expire). The construct holds the api role's DeleteItem to them with an IAM
 * `dynamodb:LeadingKeys` condition.
 */
export const API_DELETABLE_PARTITION_PREFIXES = [BIZ_TYPES_PARTITION_PREFIX, SCHEDULES_PARTITION_PREFIX] as const;

/** A schedule as stored; `next` and `advancedFrom` are what the chain's conditional updates set (schedule-store.ts). */
export interface ScheduleItem extends TableKey {
  readonly id: string;
  readonly tenantId: string;
  readonly cron?: string;
  readonly rate?: string;
  readonly timezone: string;
  readonly startAtMs?: number;
  readonly endAtMs?: number;
  readonly anchorMs: number;
  readonly target: Target;
  readonly payloadJson: string;
  readonly bizType?: string;
  readonly bizId?: string;
  readonly idempotencyKey?: string;
  readonly catchUp: CatchUp;
  readonly paused: boolean;
  readonly window?: TaskWindow;
  readonly revision: string;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  readonly next?: NextOccurrenceItem;
  readonly advancedFrom?: string;
}

export interface NextOccurrenceItem {
  readonly taskId: string;
  readonly atMs: number;
}

/** A schedule's key: in its share, or where one stored before the shares lives. */
export const scheduleKey = (tenantId: string, id: string, share: ScheduleShare = scheduleShareOf(id)): TableKey => ({
  [PK]: schedulesPartition(tenantId, share),
  [SK]: id,
});

/** The pending occurrence as stored, and as the chain's conditional update writes it. */
export const nextOccurrenceToItem = (next: NextOccurrence): NextOccurrenceItem => ({
  taskId: next.taskId,
  atMs: next.atMs,
});

/** A field that is undefined (`next` of a schedule that has ended) is left out, not written. */
export const scheduleToItem = (schedule: Schedule): ScheduleItem => ({
  ...scheduleKey(schedule.tenantId, schedule.id),
  id: schedule.id,
  tenantId: schedule.tenantId,
  ...optional('cron', schedule.cron),
  ...optional('rate', schedule.rate),
  timezone: schedule.timezone,
  ...optional('startAtMs', schedule.startAtMs),
  ...optional('endAtMs', schedule.endAtMs),
  anchorMs: schedule.anchorMs,
  target: schedule.target,
  payloadJson: schedule.payloadJson,
  ...optional('bizType', schedule.bizType),
  ...optional('bizId', schedule.bizId),
  ...optional('idempotencyKey', schedule.idempotencyKey),
  catchUp: schedule.catchUp,
  paused: schedule.paused,
  ...optional('window', schedule.window),
  revision: schedule.revision,
  createdAtMs: schedule.createdAtMs,
  updatedAtMs: schedule.updatedAtMs,
  ...optional('next', schedule.next && nextOccurrenceToItem(schedule.next)),
  ...optional('advancedFrom', schedule.advancedFrom),
});

export const scheduleFromItem = (item: ScheduleItem): Schedule => ({
  id: item.id,
  tenantId: item.tenantId,
  ...optional('cron', item.cron),
  ...optional('rate', item.rate),
  timezone: item.timezone,
  ...optional('startAtMs', item.startAtMs),
  ...optional('endAtMs', item.endAtMs),
  anchorMs: item.anchorMs,
  target: item.target,
  payloadJson: item.payloadJson,
  ...optional('bizType', item.bizType),
  ...optional('bizId', item.bizId),
  ...optional('idempotencyKey', item.idempotencyKey),
  catchUp: item.catchUp,
  paused: item.paused,
  ...optional('window', item.window),
  revision: item.revision,
  createdAtMs: item.createdAtMs,
  updatedAtMs: item.updatedAtMs,
  ...optional('next', item.next && { taskId: item.next.taskId, atMs: item.next.atMs }),
  ...optional('advancedFrom', item.advancedFrom),
});
