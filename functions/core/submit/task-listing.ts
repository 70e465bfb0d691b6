/**
 * Business queries: a tenant's tasks by bizId, or by bizType, optionally of one status.
 *
 * The indexes hold keys only and are keyed by what never changes after the submit, so a
 * status transition never writes them; the price is paid on reads instead: each listed
 * key costs a read of the task itself, and a status filter is applied to what was read. A
 * page therefore holds at most `limit` tasks, possibly fewer and even none, with a cursor
 * for the rest whenever the index may hold more.
 */
import { parseTaskId, taskAddress } from '../kernel/ids.js';
import { withReceipts } from '../kernel/receipts.js';
import type { Clock, IndexPartition, ListPosition, Task, TaskIndex, TaskStatus, TaskStore } from '../kernel/task.js';

export const LIST_LIMITS = { defaultLimit: 50, maxLimit: 100 } as const;

export interface TaskListQuery {
  readonly bizId?: string;
  readonly bizType?: string;
  readonly status?: TaskStatus;
  readonly limit: number;
  readonly after?: ListPosition;
}

export interface ListPorts {
  readonly taskIndex: TaskIndex;
  /** Where the receipts are that tell which listed tasks were delivered (receipts.ts). */
  readonly taskStore: Pick<TaskStore, 'receiptsOf'>;
  readonly clock: Clock;
  readonly bucketCount: number;
  readonly shardCount: number;
}

interface ListingPlan {
  /** How many partitions the listing walks, one after the other. */
  readonly shards: number;
  partition(shard: number): IndexPartition;
}

/** A bizId names few tasks, so it is one partition; a bizType is spread over the write shards. */
function planFor(tenantId: string, query: Pick<TaskListQuery, 'bizId' | 'bizType'>, shardCount: number): ListingPlan {
  const { bizId, bizType } = query;
  if (bizId !== undefined) return { shards: 1, partition: () => ({ index: 'byBizId', tenantId, bizId }) };
  if (bizType !== undefined) {
    return { shards: shardCount, partition: (shard) => ({ index: 'byBizType', tenantId, bizType, shard }) };
  }
  throw new Error('a task listing needs a bizId or a bizType');
}

/**
 * The cursor is the position only (shard, last id), never an index key: the partition is
 * always rebuilt from the caller's own tenant, so no cursor can lead out of it.
 */
export function encodeCursor(position: ListPosition): string {
  return Buffer.from(JSON.stringify({ s: position.shard, a: position.afterId })).toString('base64url');
}

/** The position a cursor names, or undefined if this listing could not have issued it. */
export function decodeCursor(
  cursor: string,
  query: Pick<TaskListQuery, 'bizId' | 'bizType'>,
  shardCount: number,
): ListPosition | undefined {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (decoded === null || typeof decoded !== 'object') return undefined;
  const { s: shard, a: afterId } = decoded as { s?: unknown; a?: unknown };
  const shards = query.bizId !== undefined ? 1 : shardCount;
  if (typeof shard !== 'number' || !Number.isInteger(shard) || shard < 0 || shard >= shards) return undefined;
  if (afterId === undefined) return { shard };
  const location = parseTaskId(afterId, shardCount);
  // In the bizType index an id lives in its own write shard's partition; anywhere else it was not listed from there.
  if (!location || (shards > 1 && location.shard !== shard)) return undefined;
  const position = { shard, afterId: afterId as string };
  return encodeCursor(position) === cursor ? position : undefined;
}

/** One page of the tenant's tasks matching the query, and where the next page starts, if anywhere. */
export async function listTasks(
  ports: ListPorts,
  tenantId: string,
  query: TaskListQuery,
): Promise<{ tasks: Task[]; next?: ListPosition }> {
  const plan = planFor(tenantId, query, ports.shardCount);
  const ids: string[] = [];
  let next: ListPosition | undefined = query.after ?? { shard: 0 };
  while (next && ids.length < query.limit) {
    const shard: number = next.shard;
    const afterId: string | undefined = next.afterId;
    const page = await ports.taskIndex.page(plan.partition(shard), query.limit - ids.length, afterId);
    ids.push(...page.ids);
    const last: string | undefined = page.ids.at(-1) ?? afterId;
    if (page.more) next = { shard, ...(last !== undefined && { afterId: last }) };
    else next = shard + 1 < plan.shards ? { shard: shard + 1 } : undefined;
  }
  const addresses = ids.flatMap((id) => {
    const location = parseTaskId(id, ports.shardCount);
    return location ? [taskAddress(id, location, ports.bucketCount)] : [];
  });
  const read = await ports.taskIndex.getMany(addresses);
  // The status filter applies to each task as its receipt shows it.
  const tasks = (await withReceipts(ports.taskStore, read, ports.clock.now())).filter(
    (task) =>
      task.tenantId === tenantId &&
      (query.status === undefined || task.status === query.status) &&
      (query.bizType === undefined || task.bizType === query.bizType),
  );
  return { tasks, ...(next && { next }) };
}
