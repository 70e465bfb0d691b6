import { BatchWriteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';

import { AWS_LIMITS } from '../../contract/aws-limits.js';
import { CLOCK_SKEW_MS } from '../../core/kernel/clock.js';
import { bucketOf, type TaskAddress } from '../../core/kernel/ids.js';
import {
  awaitsUnleasedFirstAttempt,
  type CancelOutcome,
  type CancelRequest,
  copiesMayCall,
  type DeliveryReceipt,
  type DeliveryRecord,
  type DueTask,
  endedTaskExpiry,
  type FirstAttemptRecord,
  type RescheduleIntent,
  showsRecord,
  StoreBusyError,
  type Task,
  type TaskStore,
  unconfirmedCancelOf,
} from '../../core/kernel/task.js';
import {
  allItems,
  backOff,
  batchGetAll,
  isConditionalCheckFailed,
  partitionItems,
  scanPartitions,
  type TableOptions,
  unlessConditionFails,
  UNPROCESSED_RETRIES,
} from './dynamo-helpers.js';
import {
  DUE_TASK_PROJECTION,
  dueTaskFromItem,
  finishAssignments,
  firesAfter,
  KEY_EXPRESSIONS,
  keyOf,
  RECEIPT_PARTITION_PREFIX,
  RECEIPT_SPREAD,
  receiptDeliveries,
  type ReceiptItem,
  receiptPartition,
  receiptToItem,
  TASK_PARTITION_PREFIX,
  taskFromItem,
  type TaskItem,
  taskKey,
  taskPartitionKey,
  taskSecondRange,
  taskToItem,
} from './table-schema.js';

const LEASABLE = '#status = :pending OR (#status = :delivering AND leaseUntilMs < :now)';
/** A task every attempt of which holds a lease, the first one included. */
const ALWAYS_LEASED =
  'attribute_exists(rescheduledFrom) OR attribute_exists(lateArrival) OR attribute_exists(occurrence)';
/** A PENDING task whose next attempt will hold a lease: the negation of awaitsUnleasedFirstAttempt, as a condition. */
const LEASED_NEXT = `attempts > :zero OR ${ALWAYS_LEASED}`;
const BATCH_WRITE_LIMIT = AWS_LIMITS.dynamodb.batchWriteItems;
const CANCEL_ATTEMPTS = 3;

/**
 * The tasks among the first `maxItemsRead` items of a Scan (in no particular order), how
 * many items it read, and whether that was the whole table. Only for local mode's console: a
 * deployment never scans its table.
 */
export async function scanTasks(
  options: TableOptions,
  maxItemsRead: number,
): Promise<{ tasks: Task[]; itemsRead: number; complete: boolean }> {
  const { items, itemsRead, complete } = await scanPartitions<TaskItem>(options, TASK_PARTITION_PREFIX, maxItemsRead);
  return { tasks: items.map(taskFromItem), itemsRead, complete };
}

/**
 * Every task id a receipt names, with its delivery time, among the first `maxItemsRead` items of a
 * Scan: for local mode's restart recovery and console only, which read the whole table anyway.
 */
export async function scanReceipts(options: TableOptions, maxItemsRead: number): Promise<Map<string, number>> {
  const { items } = await scanPartitions<ReceiptItem>(options, RECEIPT_PARTITION_PREFIX, maxItemsRead);
  return receiptDeliveries(items);
}

/**
 * Every task among the first `maxItemsRead` items of a Scan, as scanTasks, with each delivery
 * lease ended at `endedAtMs` on the way, only while the attempt that took it still holds it: for
 * local mode's restart recovery, which runs before any handler starts, when no callback of the
 * last run is alive to finish what it leased. Left running, such a lease would hold its task for
 * nobody for up to a minute (the lease's length, twice the callback's timeout). The attempt the
 * lease counted stays counted, as when a lease lapses. A task whose lease changed since the Scan
 * read it is returned as read.
 */
export async function scanTasksEndingLeases(
  options: TableOptions,
  endedAtMs: number,
  maxItemsRead: number,
): Promise<Task[]> {
  const { items } = await scanPartitions<TaskItem>(options, TASK_PARTITION_PREFIX, maxItemsRead);
  return Promise.all(
    items.map(async (item) => {
      const task = taskFromItem(item);
      if (item.status !== 'DELIVERING' || item.attemptId === undefined) return task;
      const ended = await unlessConditionFails(
        options.client.send(
          new UpdateCommand({
            TableName: options.tableName,
            Key: keyOf(item),
            UpdateExpression: 'SET leaseUntilMs = :ended',
            ConditionExpression: '#status = :delivering AND attemptId = :attemptId',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: {
              ':ended': endedAtMs,
              ':delivering': 'DELIVERING',
              ':attemptId': item.attemptId,
            },
          }),
        ),
      );
      return ended ? { ...task, leaseUntilMs: endedAtMs } : task;
    }),
  );
}

export interface DynamoStoreOptions extends TableOptions {
  readonly bucketCount: number;
  /**
   * Days a task item is kept after its fire time: its TTL, set at create, since a task delivered
   * by a receipt has no later write to set one. Without it (stores that create no tasks) none is set.
   */
  readonly retentionDays?: number;
  /** Items per Query page; only tests set it, to prove every page is read. */
  readonly queryPageSize?: number;
}

/** Tasks in the one table: one item per task, keyed by bucket, shard and due time. */
export class DynamoTaskStore implements TaskStore {
  constructor(private readonly options: DynamoStoreOptions) {}

  async create(task: Task, address: TaskAddress): Promise<void> {
    await this.options.client.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: taskToItem(task, address, this.expiryOf(task)),
        ConditionExpression: KEY_EXPRESSIONS.itemAbsent,
      }),
    );
  }

  /**
   * On a failed condition the stored item is read with a consistent GetItem. PutItem could return
   * it with the failure (ReturnValuesOnConditionCheckFailure), but dynalite 4 ignores that option
   * and the document client leaves such an item in DynamoDB's marshalled form; the read happens
   * only on this path, a retry's, never on a first submit's.
   */
  async createUnlessStored(
    task: Task,
    address: TaskAddress,
  ): Promise<{ created: true } | { created: false; stored: Task }> {
    const created = await unlessConditionFails(this.create(task, address));
    if (created) return { created };
    const stored = await this.get(address);
    // Task items are only ever removed by TTL, long after anything could write the same id again.
    if (!stored) throw new Error(`task ${task.id} is stored but could not be read`);
    return { created, stored };
  }

  /** Writes chunks of 25 (BatchWriteItem's limit) all at once: a batch of 100 costs one round trip, not four. */
  async createMany(entries: ReadonlyArray<{ task: Task; address: TaskAddress }>): Promise<void> {
    const { client, tableName } = this.options;
    const writeChunk = async (chunk: ReadonlyArray<{ task: Task; address: TaskAddress }>) => {
      let requests = chunk.map(({ task, address }) => ({
        PutRequest: { Item: taskToItem(task, address, this.expiryOf(task)) },
      }));
      for (let retry = 0; requests.length > 0; retry++) {
        if (retry > UNPROCESSED_RETRIES)
          throw new StoreBusyError(
            `${requests.length} task writes stayed unprocessed after ${UNPROCESSED_RETRIES} retries`,
          );
        if (retry > 0) await backOff(retry);
        const result = await client.send(new BatchWriteCommand({ RequestItems: { [tableName]: requests } }));
        requests = (result.UnprocessedItems?.[tableName] ?? []) as typeof requests;
      }
    };
    const chunks: Array<ReadonlyArray<{ task: Task; address: TaskAddress }>> = [];
    for (let start = 0; start < entries.length; start += BATCH_WRITE_LIMIT)
      chunks.push(entries.slice(start, start + BATCH_WRITE_LIMIT));
    await Promise.all(chunks.map(writeChunk));
  }

  private expiryOf(task: Task): number | undefined {
    const { retentionDays } = this.options;
    return retentionDays === undefined ? undefined : endedTaskExpiry(task.fireAtMs, task.fireAtMs, retentionDays);
  }

  async get(address: TaskAddress): Promise<Task | undefined> {
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: taskKey(address), ConsistentRead: true }),
    );
    return result.Item ? taskFromItem(result.Item as TaskItem) : undefined;
  }

  async getMany(addresses: readonly TaskAddress[]): Promise<Array<Task | undefined>> {
    const keys = addresses.map(taskKey);
    const found = new Map<string, Task>();
    for (const item of await batchGetAll<TaskItem>(this.options, keys, true)) {
      found.set(`${item.pk}|${item.sk}`, taskFromItem(item));
    }
    return keys.map((key) => found.get(`${key.pk}|${key.sk}`));
  }

  async cancel(address: TaskAddress, request: CancelRequest): Promise<CancelOutcome> {
    // A failed condition is re-read; if the task is PENDING again (an attempt just failed and
    // released it), the cancel is tried again rather than refused.
    for (let attempt = 0; attempt < CANCEL_ATTEMPTS; attempt++) {
      const before = await this.tryCancel(address, request);
      // Counted as unleased unless the old image says otherwise: the api then checks the timing.
      if (before)
        return {
          cancelled: true,
          unleased: awaitsUnleasedFirstAttempt({ ...before, attempts: before.attempts ?? 0 }),
        };
      const current = await this.get(address);
      if (!current || current.tenantId !== request.tenantId) return { cancelled: false, reason: 'not-found' };
      if (current.status === 'DELIVERING') return { cancelled: false, reason: 'in-delivery', status: current.status };
      if (current.status !== 'PENDING') {
        const unconfirmed = unconfirmedCancelOf(current);
        return {
          cancelled: false,
          reason: 'already-final',
          status: current.status,
          ...(unconfirmed && { unconfirmed }),
        };
      }
      if (awaitsUnleasedFirstAttempt(current) && current.fireAtMs <= request.unleasedDueAfterMs)
        return { cancelled: false, reason: 'too-late', status: current.status };
      if (copiesMayCall(current, request.nowMs))
        return { cancelled: false, reason: 'in-delivery', status: current.status };
    }
    return { cancelled: false, reason: 'in-delivery', status: 'DELIVERING' };
  }

  /** The task as it was before the cancel, or undefined when the condition refused it. */
  private async tryCancel(address: TaskAddress, request: CancelRequest): Promise<Partial<TaskItem> | undefined> {
    try {
      const result = await this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: taskKey(address),
          UpdateExpression: `SET #status = :cancelled, cancelledAtMs = :now, expiresAt = :expiresAt${
            request.cancelId === undefined ? '' : ', unconfirmedCancel = :cancelId'
          }`,
          // Only PENDING: a DELIVERING task whose lease lapsed may have reached its target
          // before its callback died, so its outcome is unknown until the retry settles it. A
          // task whose first attempt takes no lease only while that attempt cannot have begun.
          ConditionExpression:
            `#status = :pending AND tenantId = :tenant AND (${LEASED_NEXT} OR ${firesAfter(':dueAfter')}) AND ` +
            '(attribute_not_exists(copiesCallUntilMs) OR copiesCallUntilMs < :copiesDone)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':cancelled': 'CANCELLED',
            ':pending': 'PENDING',
            ':tenant': request.tenantId,
            ':now': request.nowMs,
            ':expiresAt': request.expiresAtSeconds,
            ':zero': 0,
            ':dueAfter': request.unleasedDueAfterMs,
            ':copiesDone': request.nowMs - CLOCK_SKEW_MS,
            ...(request.cancelId !== undefined && { ':cancelId': request.cancelId }),
          },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return (result.Attributes ?? {}) as Partial<TaskItem>;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return undefined;
      throw error;
    }
  }

  confirmCancel(address: TaskAddress, cancelId: string): Promise<boolean> {
    return this.settleCancel(address, cancelId, 'REMOVE unconfirmedCancel');
  }

  revertCancel(address: TaskAddress, cancelId: string): Promise<boolean> {
    return this.settleCancel(
      address,
      cancelId,
      // The cancel's TTL stays: it is no earlier than the one the create set.
      'SET #status = :pending REMOVE cancelledAtMs, unconfirmedCancel',
      {
        ':pending': 'PENDING',
      },
    );
  }

  /** Confirms or undoes the cancel `cancelId`, only while it is still the task's unconfirmed cancel. */
  private settleCancel(
    address: TaskAddress,
    cancelId: string,
    updateExpression: string,
    values: Record<string, string> = {},
  ): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: taskKey(address),
          UpdateExpression: updateExpression,
          ConditionExpression: '#status = :cancelled AND unconfirmedCancel = :cancelId',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ...values, ':cancelled': 'CANCELLED', ':cancelId': cancelId },
        }),
      ),
    );
  }

  async listDue(second: number, shard: number, options: { strandedBeforeMs?: number } = {}): Promise<DueTask[]> {
    const stranded = options.strandedBeforeMs;
    const { client, tableName, bucketCount, queryPageSize } = this.options;
    const range = taskSecondRange(second);
    const items = await allItems<TaskItem>((startKey) =>
      client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: KEY_EXPRESSIONS.partitionSortBetween,
          // A filter: the Query reads, and is billed for, every item of the second's range either way.
          FilterExpression:
            stranded === undefined
              ? '#status = :pending'
              : '(#status = :pending AND (attempts = :zero OR retryAtMs < :stale)) OR ' +
                '(#status = :delivering AND leaseUntilMs < :stale)',
          ProjectionExpression: DUE_TASK_PROJECTION.join(', '),
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':pk': taskPartitionKey(bucketOf(second, bucketCount), shard),
            ':from': range.from,
            ':to': range.to,
            ':pending': 'PENDING',
            ...(stranded !== undefined && { ':zero': 0, ':stale': stranded, ':delivering': 'DELIVERING' }),
          },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
          Limit: queryPageSize,
        }),
      ),
    );
    return items.map(dueTaskFromItem);
  }

  async claimDelivery(
    address: TaskAddress,
    nowMs: number,
    leaseUntilMs: number,
    attemptId: string,
  ): Promise<Task | undefined> {
    try {
      const result = await this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: taskKey(address),
          UpdateExpression:
            'SET #status = :delivering, leaseUntilMs = :lease, attemptId = :attemptId ADD attempts :one',
          ConditionExpression: LEASABLE,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':pending': 'PENDING',
            ':delivering': 'DELIVERING',
            ':now': nowMs,
            ':lease': leaseUntilMs,
            ':attemptId': attemptId,
            ':one': 1,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return result.Attributes ? taskFromItem(result.Attributes as TaskItem) : undefined;
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      // Only a failed claim pays this read (dynalite has no ReturnValuesOnConditionCheckFailure).
      const held = await this.get(address);
      return held?.status === 'DELIVERING' && held.attemptId === attemptId ? held : undefined;
    }
  }

  /** Whether the task shows `outcome` recorded as attempt `attempt`, read after its write's condition failed. */
  private async recordShown(address: TaskAddress, attempt: number, outcome: DeliveryRecord): Promise<boolean> {
    const task = await this.get(address);
    return task !== undefined && showsRecord(task, attempt, outcome);
  }

  async finishDelivery(address: TaskAddress, attempt: number, outcome: DeliveryRecord): Promise<boolean> {
    const assignments = Object.entries(finishAssignments(attempt, outcome));
    const names = assignments.map(([name]) => name);
    const landed = await unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: taskKey(address),
          UpdateExpression: `SET ${names.map((name) => `#${name} = :${name}`).join(', ')} REMOVE leaseUntilMs, attemptId`,
          ConditionExpression: '#status = :delivering AND #attempts = :attempt',
          ExpressionAttributeNames: Object.fromEntries(['attempts', ...names].map((name) => [`#${name}`, name])),
          ExpressionAttributeValues: {
            ...Object.fromEntries(assignments.map(([name, value]) => [`:${name}`, value])),
            ':delivering': 'DELIVERING',
            ':attempt': attempt,
          },
        }),
      ),
    );
    return landed || this.recordShown(address, attempt, outcome);
  }

  async finishFirstAttempt(
    address: TaskAddress,
    outcome: FirstAttemptRecord,
    copiesCallUntilMs: number,
    attemptId: string,
  ): Promise<boolean> {
    if (await this.recordFirstAttempt(address, outcome, copiesCallUntilMs, attemptId)) return true;
    if (outcome.status === 'DELIVERED' && (await this.recordDeliveryOverCopy(address, outcome, attemptId))) return true;
    // Copies of one first attempt write the same attempt count, so only the id tells this record apart.
    const task = await this.get(address);
    return task?.attemptId === attemptId && task.status === outcome.status;
  }

  private recordFirstAttempt(
    address: TaskAddress,
    outcome: FirstAttemptRecord,
    copiesCallUntilMs: number,
    attemptId: string,
  ): Promise<boolean> {
    const assignments = Object.entries({
      ...finishAssignments(1, outcome),
      attempts: 1,
      attemptId,
      // A delivery ends the task: no copy's call can matter to a cancel any more.
      ...(outcome.status !== 'DELIVERED' && { copiesCallUntilMs }),
    });
    const names = assignments.map(([name]) => name);
    // A delivery also lands over a cancel that came after this attempt read the task: the api
    // saw that cancel land too late to confirm it, and the task must say it was delivered.
    const overCancel =
      outcome.status === 'DELIVERED' ? ' OR (#status = :cancelled AND attribute_not_exists(rescheduledTo))' : '';
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: taskKey(address),
          UpdateExpression: `SET ${names.map((name) => `#${name} = :${name}`).join(', ')}`,
          ConditionExpression: `#attempts = :zero AND NOT (${LEASED_NEXT}) AND (#status = :pending${overCancel})`,
          ExpressionAttributeNames: Object.fromEntries(names.map((name) => [`#${name}`, name])),
          ExpressionAttributeValues: {
            ...Object.fromEntries(assignments.map(([name, value]) => [`:${name}`, value])),
            ':pending': 'PENDING',
            ':zero': 0,
            ...(overCancel && { ':cancelled': 'CANCELLED' }),
          },
        }),
      ),
    );
  }

  /**
   * A 2xx seen by a copy of a first attempt after another copy recorded its failure (or a retry
   * or a cancel followed that): DELIVERED, keeping the attempts counted and adding this attempt
   * to the history. Never over a delivery already recorded nor a reschedule that took effect.
   */
  private recordDeliveryOverCopy(
    address: TaskAddress,
    outcome: Extract<FirstAttemptRecord, { status: 'DELIVERED' }>,
    attemptId: string,
  ) {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: taskKey(address),
          UpdateExpression:
            'SET #status = :delivered, deliveredAtMs = :deliveredAt, latenessMs = :lateness, expiresAt = :expiresAt, ' +
            'history = list_append(if_not_exists(history, :none), :attempt), attemptId = :attemptId REMOVE leaseUntilMs',
          ConditionExpression: `attempts > :zero AND #status <> :delivered AND attribute_not_exists(rescheduledTo) AND NOT (${ALWAYS_LEASED})`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':delivered': 'DELIVERED',
            ':deliveredAt': outcome.deliveredAtMs,
            ':lateness': outcome.latenessMs,
            ':expiresAt': outcome.expiresAtSeconds,
            ':none': [],
            ':attempt': outcome.history.slice(-1),
            ':attemptId': attemptId,
            ':zero': 0,
          },
        }),
      ),
    );
  }

  async reviveFailed(address: TaskAddress): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: taskKey(address),
          // Attempts start again from zero; lastError stays until the next attempt replaces it. The
          // FAILED write's TTL stays (no earlier than the create's): a delivery by receipt sets none.
          UpdateExpression: 'SET #status = :pending, attempts = :zero REMOVE retryAtMs',
          ConditionExpression: '#status = :failed',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':pending': 'PENDING', ':failed': 'FAILED', ':zero': 0 },
        }),
      ),
    );
  }

  recordRescheduleIntent(
    address: TaskAddress,
    tenantId: string,
    intent: RescheduleIntent,
    priorIntentTaskId?: string,
  ): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: taskKey(address),
          UpdateExpression: 'SET rescheduleIntent = :intent',
          ConditionExpression: `#status = :pending AND tenantId = :tenant AND ${
            priorIntentTaskId === undefined
              ? 'attribute_not_exists(rescheduleIntent)'
              : 'rescheduleIntent.taskId = :prior'
          }`,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':intent': intent,
            ':pending': 'PENDING',
            ':tenant': tenantId,
            ...(priorIntentTaskId !== undefined && { ':prior': priorIntentTaskId }),
          },
        }),
      ),
    );
  }

  commitReschedule(address: TaskAddress, toTaskId: string, nowMs: number, expiresAtSeconds: number): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: taskKey(address),
          UpdateExpression:
            'SET #status = :cancelled, cancelledAtMs = :now, expiresAt = :expiresAt, rescheduledTo = :to',
          ConditionExpression: '#status = :pending AND rescheduleIntent.taskId = :to',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':cancelled': 'CANCELLED',
            ':pending': 'PENDING',
            ':now': nowMs,
            ':expiresAt': expiresAtSeconds,
            ':to': toTaskId,
          },
        }),
      ),
    );
  }

  withdrawRescheduleIntent(address: TaskAddress, toTaskId: string): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: taskKey(address),
          UpdateExpression: 'REMOVE rescheduleIntent',
          ConditionExpression: 'rescheduleIntent.taskId = :to AND attribute_not_exists(rescheduledTo)',
          ExpressionAttributeValues: { ':to': toTaskId },
        }),
      ),
    );
  }

  async recordReceipt(receipt: DeliveryReceipt): Promise<void> {
    await this.options.client.send(new PutCommand({ TableName: this.options.tableName, Item: receiptToItem(receipt) }));
  }

  async receiptsOf(second: number): Promise<Map<string, number>> {
    const partitions = Array.from({ length: RECEIPT_SPREAD }, (_, slot) => receiptPartition(second, slot));
    const items = await Promise.all(partitions.map((pk) => partitionItems<ReceiptItem>(this.options, pk)));
    return receiptDeliveries(items.flat());
  }
}
