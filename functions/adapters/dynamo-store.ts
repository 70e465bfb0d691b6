import {
  BatchGetCommand,
  BatchWriteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';

import { TABLE } from '../contract/topology.js';
import { MAX_CLAIM_SECONDS, minuteOf } from '../core/clock.js';
import type { TaskKey } from '../core/ids.js';
import { MAX_SHARDS, parseTaskId, partitionKey, secondRange, TASK_PARTITION_PREFIX, taskKey } from '../core/ids.js';
import { bizIdPartition, bizTypePartition } from '../core/listing.js';
import { MARKER_RETENTION_SECONDS } from '../core/scan.js';
import type {
  CancelOutcome,
  ClockState,
  ClockStore,
  DeliveryAttempt,
  DeliveryPolicy,
  DeliveryRecord,
  DueTask,
  IdempotencyRecord,
  IdempotencyStore,
  OccupancyIndex,
  RescheduleIntent,
  SecondRange,
  Target,
  Task,
  TaskIndex,
  TaskIndexName,
  TaskStatus,
  TaskStore,
  Watermark,
} from '../core/task.js';

/** DynamoDB reports a failed condition by name; checking the name also works across SDK copies. */
export function isConditionalCheckFailed(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConditionalCheckFailedException';
}

/** Sends a conditional write; true if it was applied, false if its condition did not hold. */
export async function unlessConditionFails(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return false;
    throw error;
  }
}

const LEASABLE = '#status = :pending OR (#status = :delivering AND leaseUntilMs < :now)';
const BATCH_WRITE_LIMIT = 25;
const UNPROCESSED_RETRIES = 8;
const CANCEL_ATTEMPTS = 3;

type Item = Record<string, unknown>;

/** The business-query index keys: written with the task and never again, as nothing they hold can change. */
function indexKeys(task: Task): Item {
  const shard = parseTaskId(task.id, MAX_SHARDS)?.shard ?? 0;
  return {
    ...(task.bizId !== undefined && {
      [TABLE.indexes.byBizId.partitionKey]: bizIdPartition(task.tenantId, task.bizId),
    }),
    ...(task.bizType !== undefined && {
      [TABLE.indexes.byBizType.partitionKey]: bizTypePartition(task.tenantId, task.bizType, shard),
    }),
  };
}

function toItem(task: Task, key: TaskKey): Item {
  return {
    ...key,
    ...indexKeys(task),
    id: task.id,
    tenantId: task.tenantId,
    status: task.status,
    dueAtMs: task.dueAtMs,
    createdAtMs: task.createdAtMs,
    target: task.target,
    payload: task.payloadJson,
    attempts: task.attempts,
    ...(task.bizType !== undefined && { bizType: task.bizType }),
    ...(task.bizId !== undefined && { bizId: task.bizId }),
    ...(task.idempotencyKey !== undefined && { idempotencyKey: task.idempotencyKey }),
    ...(task.policy !== undefined && { policy: task.policy }),
    ...(task.rescheduledFrom !== undefined && { rescheduledFrom: task.rescheduledFrom }),
  };
}

function optional<K extends string, V>(name: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: V };
}

function fromItem(item: Item): Task {
  return {
    id: item.id as string,
    tenantId: item.tenantId as string,
    status: item.status as TaskStatus,
    dueAtMs: item.dueAtMs as number,
    createdAtMs: item.createdAtMs as number,
    target: item.target as Target,
    payloadJson: item.payload as string,
    attempts: item.attempts as number,
    ...optional('bizType', item.bizType as string | undefined),
    ...optional('bizId', item.bizId as string | undefined),
    ...optional('idempotencyKey', item.idempotencyKey as string | undefined),
    ...optional('policy', item.policy as DeliveryPolicy | undefined),
    ...optional('leaseUntilMs', item.leaseUntilMs as number | undefined),
    ...optional('deliveredAtMs', item.deliveredAtMs as number | undefined),
    ...optional('latenessMs', item.latenessMs as number | undefined),
    ...optional('lastError', item.lastError as string | undefined),
    ...optional('cancelledAtMs', item.cancelledAtMs as number | undefined),
    ...optional('history', item.history as DeliveryAttempt[] | undefined),
    ...optional('rescheduledFrom', item.rescheduledFrom as string | undefined),
    ...optional('rescheduledTo', item.rescheduledTo as string | undefined),
    ...optional('rescheduleIntent', item.rescheduleIntent as RescheduleIntent | undefined),
  };
}

/** The attributes an attempt's outcome sets, by name. */
function finishAssignments(attempt: number, outcome: DeliveryRecord): Item {
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
      return { status: outcome.status, lastError: outcome.lastError, history: outcome.history };
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

type Page = { Items?: Item[]; LastEvaluatedKey?: Record<string, unknown> };

/** Every item of a Query or Scan, page after page: a page ends at 1 MB, not at the last match. */
export async function allItems(
  fetchPage: (startKey: Record<string, unknown> | undefined) => Promise<Page>,
): Promise<Item[]> {
  const items: Item[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await fetchPage(startKey);
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Items one Scan page reads at most, so a bounded scan stops close to its bound. */
const SCAN_PAGE_ITEMS = 1000;

/**
 * The tasks among the first `maxItemsRead` items of a Scan (in no particular order), how
 * many items it read, and whether that was the whole table. Only for local mode's console: a
 * deployment never scans its table.
 */
export async function scanTasks(
  options: { readonly client: DynamoDBDocumentClient; readonly tableName: string },
  maxItemsRead: number,
): Promise<{ tasks: Task[]; itemsRead: number; complete: boolean }> {
  const tasks: Task[] = [];
  let itemsRead = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await options.client.send(
      new ScanCommand({
        TableName: options.tableName,
        FilterExpression: 'begins_with(pk, :taskPartition)',
        ExpressionAttributeValues: { ':taskPartition': TASK_PARTITION_PREFIX },
        Limit: Math.min(SCAN_PAGE_ITEMS, maxItemsRead - itemsRead),
        ExclusiveStartKey: startKey,
      }),
    );
    tasks.push(...(page.Items ?? []).map(fromItem));
    itemsRead += page.ScannedCount ?? 0;
    startKey = page.LastEvaluatedKey;
  } while (startKey && itemsRead < maxItemsRead);
  return { tasks, itemsRead, complete: startKey === undefined };
}

export interface DynamoStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly bucketCount: number;
  /** Items per Query page; only tests set it, to prove every page is read. */
  readonly queryPageSize?: number;
}

/** Tasks in the one table: one item per task, keyed by bucket, shard and due time. */
export class DynamoTaskStore implements TaskStore {
  constructor(private readonly options: DynamoStoreOptions) {}

  async create(task: Task, key: TaskKey): Promise<void> {
    await this.options.client.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: toItem(task, key),
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  /** Writes chunks of 25 (BatchWriteItem's limit) all at once: a batch of 100 costs one round trip, not four. */
  async createMany(entries: ReadonlyArray<{ task: Task; key: TaskKey }>): Promise<void> {
    const { client, tableName } = this.options;
    const writeChunk = async (chunk: ReadonlyArray<{ task: Task; key: TaskKey }>) => {
      let requests = chunk.map(({ task, key }) => ({ PutRequest: { Item: toItem(task, key) } }));
      for (let retry = 0; requests.length > 0; retry++) {
        if (retry > UNPROCESSED_RETRIES)
          throw new Error(`${requests.length} task writes stayed unprocessed after retries`);
        if (retry > 0) await sleep(25 * 2 ** retry);
        const result = await client.send(new BatchWriteCommand({ RequestItems: { [tableName]: requests } }));
        requests = (result.UnprocessedItems?.[tableName] ?? []) as typeof requests;
      }
    };
    const chunks: Array<ReadonlyArray<{ task: Task; key: TaskKey }>> = [];
    for (let start = 0; start < entries.length; start += BATCH_WRITE_LIMIT)
      chunks.push(entries.slice(start, start + BATCH_WRITE_LIMIT));
    await Promise.all(chunks.map(writeChunk));
  }

  async get(key: TaskKey): Promise<Task | undefined> {
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: key, ConsistentRead: true }),
    );
    return result.Item ? fromItem(result.Item) : undefined;
  }

  async cancel(key: TaskKey, tenantId: string, nowMs: number, expiresAtSeconds: number): Promise<CancelOutcome> {
    // A failed condition is re-read; if the task is PENDING again (an attempt just failed and
    // released it), the cancel is tried again rather than refused.
    for (let attempt = 0; attempt < CANCEL_ATTEMPTS; attempt++) {
      if (await this.tryCancel(key, tenantId, nowMs, expiresAtSeconds)) return { cancelled: true };
      const current = await this.get(key);
      if (!current || current.tenantId !== tenantId) return { cancelled: false, reason: 'not-found' };
      if (current.status === 'DELIVERING') return { cancelled: false, reason: 'in-delivery', status: current.status };
      if (current.status !== 'PENDING') return { cancelled: false, reason: 'already-final', status: current.status };
    }
    return { cancelled: false, reason: 'in-delivery', status: 'DELIVERING' };
  }

  private async tryCancel(key: TaskKey, tenantId: string, nowMs: number, expiresAtSeconds: number): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: key,
          UpdateExpression: 'SET #status = :cancelled, cancelledAtMs = :now, expiresAt = :expiresAt',
          // Only PENDING: a DELIVERING task whose lease lapsed may have reached its target
          // before its callback died, so its outcome is unknown until the retry settles it.
          ConditionExpression: '#status = :pending AND tenantId = :tenant',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':cancelled': 'CANCELLED',
            ':pending': 'PENDING',
            ':tenant': tenantId,
            ':now': nowMs,
            ':expiresAt': expiresAtSeconds,
          },
        }),
      ),
    );
  }

  async listDue(second: number, shard: number, options: { neverAttempted?: boolean } = {}): Promise<DueTask[]> {
    const { client, tableName, bucketCount, queryPageSize } = this.options;
    const range = secondRange(second);
    const items = await allItems((startKey) =>
      client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          FilterExpression: options.neverAttempted ? '#status = :pending AND attempts = :zero' : '#status = :pending',
          ProjectionExpression: 'id, dueAtMs',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':pk': partitionKey(second, shard, bucketCount),
            ':from': range.from,
            ':to': range.to,
            ':pending': 'PENDING',
            ...(options.neverAttempted && { ':zero': 0 }),
          },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
          Limit: queryPageSize,
        }),
      ),
    );
    return items.map((item) => ({ id: item.id as string, dueAtMs: item.dueAtMs as number }));
  }

  async claimDelivery(key: TaskKey, nowMs: number, leaseUntilMs: number): Promise<Task | undefined> {
    try {
      const result = await this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: key,
          UpdateExpression: 'SET #status = :delivering, leaseUntilMs = :lease ADD attempts :one',
          ConditionExpression: LEASABLE,
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':pending': 'PENDING',
            ':delivering': 'DELIVERING',
            ':now': nowMs,
            ':lease': leaseUntilMs,
            ':one': 1,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return result.Attributes ? fromItem(result.Attributes) : undefined;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return undefined;
      throw error;
    }
  }

  async finishDelivery(key: TaskKey, attempt: number, outcome: DeliveryRecord): Promise<boolean> {
    const assignments = finishAssignments(attempt, outcome);
    const names = Object.keys(assignments);
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: key,
          UpdateExpression: `SET ${names.map((name) => `#${name} = :${name}`).join(', ')} REMOVE leaseUntilMs`,
          ConditionExpression: '#status = :delivering AND #attempts = :attempt',
          ExpressionAttributeNames: Object.fromEntries(['attempts', ...names].map((name) => [`#${name}`, name])),
          ExpressionAttributeValues: {
            ...Object.fromEntries(names.map((name) => [`:${name}`, assignments[name]])),
            ':delivering': 'DELIVERING',
            ':attempt': attempt,
          },
        }),
      ),
    );
  }

  async reviveFailed(key: TaskKey): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: key,
          // Attempts start again from zero; lastError stays until the next attempt replaces it.
          UpdateExpression: 'SET #status = :pending, attempts = :zero REMOVE expiresAt',
          ConditionExpression: '#status = :failed',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':pending': 'PENDING', ':failed': 'FAILED', ':zero': 0 },
        }),
      ),
    );
  }

  recordRescheduleIntent(
    key: TaskKey,
    tenantId: string,
    intent: RescheduleIntent,
    priorIntentTaskId?: string,
  ): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: key,
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

  commitReschedule(key: TaskKey, toTaskId: string, nowMs: number, expiresAtSeconds: number): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: key,
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

  withdrawRescheduleIntent(key: TaskKey, toTaskId: string): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: key,
          UpdateExpression: 'REMOVE rescheduleIntent',
          ConditionExpression: 'rescheduleIntent.taskId = :to AND attribute_not_exists(rescheduledTo)',
          ExpressionAttributeValues: { ':to': toTaskId },
        }),
      ),
    );
  }
}

const BATCH_GET_LIMIT = 100;
const idOfSortKey = (sk: string) => sk.slice(sk.indexOf('#') + 1);

/** The business-query indexes (keys only) and the task reads that turn their keys into tasks. */
export class DynamoTaskIndex implements TaskIndex {
  constructor(private readonly options: DynamoStoreOptions) {}

  async page(
    index: TaskIndexName,
    partition: string,
    limit: number,
    afterId?: string,
  ): Promise<{ ids: string[]; more: boolean }> {
    const spec = TABLE.indexes[index];
    const after = afterId === undefined ? undefined : parseTaskId(afterId, MAX_SHARDS);
    const result = await this.options.client.send(
      new QueryCommand({
        TableName: this.options.tableName,
        IndexName: spec.name,
        KeyConditionExpression: '#partition = :partition',
        ExpressionAttributeNames: { '#partition': spec.partitionKey },
        ExpressionAttributeValues: { ':partition': partition },
        Limit: limit,
        // An index's start key is the index key plus the table key; all of it follows from the partition and the id.
        ...(afterId !== undefined &&
          after && {
            ExclusiveStartKey: { [spec.partitionKey]: partition, ...taskKey(afterId, after, this.options.bucketCount) },
          }),
      }),
    );
    return {
      ids: (result.Items ?? []).map((item) => idOfSortKey(String(item[TABLE.sortKey]))),
      more: result.LastEvaluatedKey !== undefined,
    };
  }

  async getMany(keys: readonly TaskKey[]): Promise<Task[]> {
    const { client, tableName } = this.options;
    const found = new Map<string, Task>();
    for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
      let pending: Array<Record<string, unknown>> = keys
        .slice(start, start + BATCH_GET_LIMIT)
        .map((key) => ({ ...key }));
      for (let retry = 0; pending.length > 0; retry++) {
        if (retry > UNPROCESSED_RETRIES)
          throw new Error(`${pending.length} task reads stayed unprocessed after retries`);
        if (retry > 0) await sleep(25 * 2 ** retry);
        const result = await client.send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending } } }));
        for (const item of result.Responses?.[tableName] ?? []) found.set(String(item.sk), fromItem(item));
        pending = result.UnprocessedKeys?.[tableName]?.Keys ?? [];
      }
    }
    return keys.flatMap((key) => found.get(key.sk) ?? []);
  }
}

const CLOCK_KEY = { pk: 'CLOCK', sk: 'CLOCK' } as const;
/** Its own item, so sweeps never contend with the cursor writes. */
const SWEEP_KEY = { pk: 'SWEEP', sk: 'SWEEP' } as const;
const SECONDS_PER_MARKER_PARTITION = 3600;
type MarkerKind = 'SCANNED' | 'RECHECK' | 'OCCUPIED';
/** Per-second items live in one partition per hour and kind, so a range of seconds is one or two Queries. */
const markerKey = (kind: MarkerKind, second: number) => ({
  pk: `${kind}#${Math.floor(second / SECONDS_PER_MARKER_PARTITION)}`,
  sk: String(second).padStart(12, '0'),
});

/** Every item of `kind` filed under a second in [from, to] (consistent reads). */
async function markersBetween(
  options: { client: DynamoDBDocumentClient; tableName: string },
  kind: MarkerKind,
  from: number,
  to: number,
): Promise<Item[]> {
  const items: Item[] = [];
  for (
    let hourStart = from;
    hourStart <= to;
    hourStart = (Math.floor(hourStart / SECONDS_PER_MARKER_PARTITION) + 1) * SECONDS_PER_MARKER_PARTITION
  ) {
    const { pk } = markerKey(kind, hourStart);
    const page = await allItems((startKey) =>
      options.client.send(
        new QueryCommand({
          TableName: options.tableName,
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          // '~' sorts after '#', so the range takes in the flags filed under `to` too.
          ExpressionAttributeValues: {
            ':pk': pk,
            ':from': markerKey(kind, from).sk,
            ':to': `${markerKey(kind, to).sk}~`,
          },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      ),
    );
    items.push(...page);
  }
  return items;
}

/** The scan cursor and per-second progress markers, in the same table as the tasks. */
export class DynamoClockStore implements ClockStore {
  constructor(private readonly options: Omit<DynamoStoreOptions, 'bucketCount' | 'queryPageSize'>) {}

  async read(): Promise<ClockState | undefined> {
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: CLOCK_KEY, ConsistentRead: true }),
    );
    if (!result.Item) return undefined;
    return { cursor: result.Item.cursor as number, startedAt: result.Item.startedAt as number };
  }

  async start(second: number): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: { ...CLOCK_KEY, cursor: second, startedAt: second },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
  }

  async advance(from: number, through: number): Promise<boolean> {
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: CLOCK_KEY,
          UpdateExpression: 'SET #cursor = :next',
          ConditionExpression: '#cursor = :from',
          ExpressionAttributeNames: { '#cursor': 'cursor' },
          ExpressionAttributeValues: { ':from': from, ':next': through + 1 },
        }),
      ),
    );
  }

  async markScanned(
    range: SecondRange,
    enqueuedBySecond: ReadonlyMap<number, number>,
    expiresAtSeconds: number,
  ): Promise<void> {
    await this.options.client.send(
      new PutCommand({
        TableName: this.options.tableName,
        Item: {
          ...markerKey('SCANNED', range.from),
          through: range.through,
          // Only seconds that sent something: the sweeper's overdue pass looks at those alone.
          busy: Object.fromEntries(enqueuedBySecond),
          expiresAt: expiresAtSeconds,
        },
      }),
    );
  }

  async scannedSeconds(from: number, to: number): Promise<Map<number, number>> {
    // A marker is filed under its range's first second, which may lie up to a claim's length before `from`.
    const items = await markersBetween(this.options, 'SCANNED', from - MAX_CLAIM_SECONDS + 1, to);
    const seconds = new Map<number, number>();
    for (const item of items) {
      const busy = (item.busy ?? {}) as Record<string, number>;
      const last = Math.min(to, Number(item.through));
      for (let second = Math.max(from, Number(item.sk)); second <= last; second++) {
        seconds.set(second, Number(busy[second] ?? 0));
      }
    }
    return seconds;
  }

  async markForRecheck(dueSeconds: readonly number[], flaggedAt: number, expiresAtSeconds: number): Promise<void> {
    const marker = markerKey('RECHECK', flaggedAt);
    await Promise.all(
      [...new Set(dueSeconds)].map((dueSecond) =>
        this.options.client.send(
          new PutCommand({
            TableName: this.options.tableName,
            // The due second follows the flag's own second, so a range of flag times is still one sort-key range.
            Item: { pk: marker.pk, sk: `${marker.sk}#${dueSecond}`, dueSecond, expiresAt: expiresAtSeconds },
          }),
        ),
      ),
    );
  }

  async rechecksFlagged(from: number, to: number): Promise<Map<number, number[]>> {
    const flags = new Map<number, number[]>();
    for (const item of await markersBetween(this.options, 'RECHECK', from, to)) {
      const flaggedAt = Number(String(item.sk).split('#')[0]);
      flags.set(flaggedAt, [...(flags.get(flaggedAt) ?? []), Number(item.dueSecond)]);
    }
    return flags;
  }

  async watermark(name: Watermark): Promise<number | undefined> {
    const result = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: SWEEP_KEY, ConsistentRead: true }),
    );
    return result.Item?.[name] as number | undefined;
  }

  async raiseWatermark(name: Watermark, second: number): Promise<void> {
    await unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: SWEEP_KEY,
          UpdateExpression: 'SET #mark = :second',
          ConditionExpression: 'attribute_not_exists(#mark) OR #mark < :second',
          ExpressionAttributeNames: { '#mark': name },
          ExpressionAttributeValues: { ':second': second },
        }),
      ),
    );
  }
}

/**
 * Idempotency keys, one item each, claimed with a conditional put: of any number of
 * concurrent submits with one key, exactly one gets to create the task.
 */
export class DynamoIdempotencyStore implements IdempotencyStore {
  constructor(private readonly options: Omit<DynamoStoreOptions, 'bucketCount' | 'queryPageSize'>) {}

  async claim(
    record: IdempotencyRecord,
    expiresAtSeconds: number,
  ): Promise<{ claimed: boolean; holder: IdempotencyRecord }> {
    const key = { pk: `IDEM#${record.key}`, sk: 'IDEM' };
    const claimed = await unlessConditionFails(
      this.options.client.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: {
            ...key,
            taskId: record.taskId,
            fingerprint: record.fingerprint,
            claimedAtMs: record.claimedAtMs,
            expiresAt: expiresAtSeconds,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      ),
    );
    if (claimed) return { claimed, holder: record };
    const held = await this.options.client.send(
      new GetCommand({ TableName: this.options.tableName, Key: key, ConsistentRead: true }),
    );
    if (!held.Item) throw new Error(`idempotency key ${record.key} is taken but its record could not be read`);
    return {
      claimed,
      holder: {
        key: record.key,
        taskId: held.Item.taskId as string,
        fingerprint: held.Item.fingerprint as string,
        claimedAtMs: held.Item.claimedAtMs as number,
      },
    };
  }
}

/** Seconds one instance remembers having recorded; past this it forgets the oldest tenth. */
const REMEMBERED_SECONDS = 100_000;

/**
 * The occupancy index: one item per minute (filed by the minute's first second, an hour per
 * partition) holding the set of its seconds that have tasks, and whether the ticker has planned
 * it. Both the api's ADD and the ticker's plan are single-item updates that return the item as
 * it was, so they are ordered: either the plan saw a second, or its writer learns the minute
 * was planned without it and sends the tick itself.
 */
export class DynamoOccupancyIndex implements OccupancyIndex {
  /**
   * Seconds this instance has recorded, or is recording, each with the write that records it:
   * a hot second then costs one index write per instance, not one per batch, and a caller
   * sharing a second still waits until that write is durable.
   */
  private readonly recorded = new Map<number, Promise<unknown>>();

  constructor(private readonly options: { readonly client: DynamoDBDocumentClient; readonly tableName: string }) {}

  async occupy(seconds: readonly number[]): Promise<number[]> {
    const distinct = [...new Set(seconds)];
    const pending = distinct.flatMap((second) => this.recorded.get(second) ?? []);
    const byMinute = new Map<number, number[]>();
    for (const second of distinct.filter((second) => !this.recorded.has(second))) {
      byMinute.set(minuteOf(second), [...(byMinute.get(minuteOf(second)) ?? []), second]);
    }
    const writes = [...byMinute].map(([minute, fresh]) => {
      const write = this.record(minute, fresh);
      for (const second of fresh) this.recorded.set(second, write);
      write.catch(() => {
        for (const second of fresh) this.recorded.delete(second);
      });
      return write;
    });
    const [unticked] = await Promise.all([Promise.all(writes), Promise.all(pending)]);
    this.forgetOldest();
    return unticked.flat();
  }

  async plan(minute: number): Promise<number[] | undefined> {
    const result = await this.options.client.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: markerKey('OCCUPIED', minute * 60),
        UpdateExpression: 'SET planned = :planned, expiresAt = :expiresAt',
        ExpressionAttributeValues: { ':planned': true, ':expiresAt': this.expiry(minute) },
        ReturnValues: 'ALL_OLD',
      }),
    );
    if (result.Attributes?.planned) return undefined;
    return [...((result.Attributes?.seconds as Set<number> | undefined) ?? [])].sort((a, b) => a - b);
  }

  async occupied(from: number, to: number): Promise<Set<number>> {
    const items = await markersBetween(this.options, 'OCCUPIED', minuteOf(from) * 60, to);
    const seconds = new Set<number>();
    for (const item of items) {
      for (const second of (item.seconds as Set<number> | undefined) ?? []) {
        if (second >= from && second <= to) seconds.add(second);
      }
    }
    return seconds;
  }

  /** Adds seconds to a minute's set; returns those that were new to a minute already planned. */
  private async record(minute: number, seconds: readonly number[]): Promise<number[]> {
    const result = await this.options.client.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: markerKey('OCCUPIED', minute * 60),
        UpdateExpression: 'ADD #seconds :seconds SET expiresAt = :expiresAt',
        ExpressionAttributeNames: { '#seconds': 'seconds' },
        ExpressionAttributeValues: { ':seconds': new Set(seconds), ':expiresAt': this.expiry(minute) },
        ReturnValues: 'ALL_OLD',
      }),
    );
    if (!result.Attributes?.planned) return [];
    const before = result.Attributes.seconds as Set<number> | undefined;
    return seconds.filter((second) => !before?.has(second));
  }

  /** The sweeper may read a minute's entry until its scan markers expire. */
  private expiry(minute: number): number {
    return (minute + 1) * 60 + MARKER_RETENTION_SECONDS;
  }

  private forgetOldest(): void {
    if (this.recorded.size <= REMEMBERED_SECONDS) return;
    const oldest = [...this.recorded.keys()].sort((a, b) => a - b).slice(0, REMEMBERED_SECONDS / 10);
    for (const second of oldest) this.recorded.delete(second);
  }
}
