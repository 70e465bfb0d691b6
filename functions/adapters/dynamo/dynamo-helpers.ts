import { BatchGetCommand, type DynamoDBDocumentClient, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';

import { AWS_LIMITS } from '../../contract/aws-limits.js';
import { StoreBusyError } from '../../core/kernel/task.js';
import type { MarkerKind } from './table-schema.js';
import { KEY_EXPRESSIONS, markerPartition, markerSortRange, nextMarkerPartitionStart } from './table-schema.js';

/** Where a store keeps its items: a client and the one table. */
export interface TableOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
}

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

type Page = { Items?: Array<Record<string, unknown>>; LastEvaluatedKey?: Record<string, unknown> };

/**
 * Every item of a Query or Scan, page after page: a page ends at 1 MB, not at the last match.
 * `T` names the stored type the Query or Scan selects; the table does not check it.
 */
export async function allItems<T = Record<string, unknown>>(
  fetchPage: (startKey: Record<string, unknown> | undefined) => Promise<Page>,
): Promise<T[]> {
  const items: T[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await fetchPage(startKey);
    items.push(...((page.Items ?? []) as T[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** Every item of one partition (consistent reads). */
export function partitionItems<T>(options: TableOptions, pk: string): Promise<T[]> {
  return allItems<T>((startKey) =>
    options.client.send(
      new QueryCommand({
        TableName: options.tableName,
        KeyConditionExpression: KEY_EXPRESSIONS.partition,
        ExpressionAttributeValues: { ':pk': pk },
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    ),
  );
}

/** Every item of `kind` filed under a second in [from, to] (consistent reads). */
export async function markersBetween<T>(
  options: TableOptions,
  kind: MarkerKind,
  from: number,
  to: number,
): Promise<T[]> {
  const items: T[] = [];
  const range = markerSortRange(from, to);
  for (let hourStart = from; hourStart <= to; hourStart = nextMarkerPartitionStart(hourStart)) {
    const page = await allItems<T>((startKey) =>
      options.client.send(
        new QueryCommand({
          TableName: options.tableName,
          KeyConditionExpression: KEY_EXPRESSIONS.partitionSortBetween,
          ExpressionAttributeValues: { ':pk': markerPartition(kind, hourStart), ':from': range.from, ':to': range.to },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      ),
    );
    items.push(...page);
  }
  return items;
}

/**
 * How often a batch read or write resends what DynamoDB left unprocessed, backing off each
 * time. The api's batches use these, so all the waits must fit its 10 s timeout with room for
 * the calls themselves (each of which the SDK retries on its own): six backoffs add up to
 * 3.15 s. An item still unprocessed after them is a throttled table, which waiting out a
 * Lambda timeout would not cure; the caller is told to come back instead.
 */
export const UNPROCESSED_RETRIES = 6;

export const backOff = (retry: number) => new Promise((resolve) => setTimeout(resolve, 25 * 2 ** retry));

const BATCH_GET_LIMIT = AWS_LIMITS.dynamodb.batchGetKeys;

/**
 * The items at `keys` that exist, read in BatchGetItems of 100 keys, resending what DynamoDB
 * left unprocessed; StoreBusyError if some stay unprocessed after UNPROCESSED_RETRIES.
 */
export async function batchGetAll<T>(
  options: TableOptions,
  keys: readonly object[],
  consistentRead: boolean,
): Promise<T[]> {
  const { client, tableName } = options;
  const found: T[] = [];
  for (let start = 0; start < keys.length; start += BATCH_GET_LIMIT) {
    let pending: Array<Record<string, unknown>> = keys.slice(start, start + BATCH_GET_LIMIT).map((key) => ({ ...key }));
    for (let retry = 0; pending.length > 0; retry++) {
      if (retry > UNPROCESSED_RETRIES) {
        throw new StoreBusyError(`${pending.length} reads stayed unprocessed after ${UNPROCESSED_RETRIES} retries`);
      }
      if (retry > 0) await backOff(retry);
      const result = await client.send(
        new BatchGetCommand({ RequestItems: { [tableName]: { Keys: pending, ConsistentRead: consistentRead } } }),
      );
      found.push(...((result.Responses?.[tableName] ?? []) as T[]));
      pending = result.UnprocessedKeys?.[tableName]?.Keys ?? [];
    }
  }
  return found;
}

/** Items one Scan page reads at most, so a bounded scan stops close to its bound. */
const SCAN_PAGE_ITEMS = 1000;

/**
 * The items whose partition key starts with `prefix` among the first `maxItemsRead` items of a
 * Scan (in no particular order), how many items it read, and whether that was the whole table.
 * Only for local mode's console: a deployment never scans its table.
 */
export async function scanPartitions<T>(
  options: TableOptions,
  prefix: string,
  maxItemsRead: number,
): Promise<{ items: T[]; itemsRead: number; complete: boolean }> {
  const items: T[] = [];
  let itemsRead = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await options.client.send(
      new ScanCommand({
        TableName: options.tableName,
        FilterExpression: KEY_EXPRESSIONS.partitionPrefix,
        ExpressionAttributeValues: { ':prefix': prefix },
        Limit: Math.min(SCAN_PAGE_ITEMS, maxItemsRead - itemsRead),
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...((page.Items ?? []) as T[]));
    itemsRead += page.ScannedCount ?? 0;
    startKey = page.LastEvaluatedKey;
  } while (startKey && itemsRead < maxItemsRead);
  return { items, itemsRead, complete: startKey === undefined };
}
