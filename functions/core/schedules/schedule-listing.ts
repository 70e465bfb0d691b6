/**
 * GET /v1/schedules: a tenant's schedules, all of them or those matching optional filters, a page
 * at a time in id order. The filters are applied to what was read, as a task listing's status
 * filter is: a page holds at most `limit` schedules, possibly fewer, with a cursor for the rest
 * whenever the partition may hold more.
 */
import { isScheduleId, type Schedule, type ScheduleStore } from './schedules.js';

export interface ScheduleFilter {
  readonly bizId?: string;
  readonly bizIdPrefix?: string;
  readonly bizType?: string;
  readonly paused?: boolean;
}

export interface SchedulePageQuery extends ScheduleFilter {
  readonly limit: number;
  /** The id the previous page ended with. */
  readonly afterId?: string;
}

function matches(schedule: Schedule, filter: ScheduleFilter): boolean {
  return (
    (filter.bizId === undefined || schedule.bizId === filter.bizId) &&
    (filter.bizIdPrefix === undefined || (schedule.bizId?.startsWith(filter.bizIdPrefix) ?? false)) &&
    (filter.bizType === undefined || schedule.bizType === filter.bizType) &&
    (filter.paused === undefined || schedule.paused === filter.paused)
  );
}

/**
 * The cursor names only the last id listed: the partition is always the caller's own, so no
 * cursor can lead into another tenant's schedules.
 */
export function encodeScheduleCursor(afterId: string): string {
  return Buffer.from(afterId).toString('base64url');
}

/** The id a cursor names, or undefined if no schedule listing could have issued it. */
export function decodeScheduleCursor(cursor: string): string | undefined {
  const afterId = Buffer.from(cursor, 'base64url').toString('utf8');
  return isScheduleId(afterId) && encodeScheduleCursor(afterId) === cursor ? afterId : undefined;
}

/** One page of the tenant's schedules matching the query, and the id the next page starts after, if any. */
export async function listSchedules(
  store: ScheduleStore,
  tenantId: string,
  query: SchedulePageQuery,
): Promise<{ schedules: Schedule[]; nextAfterId?: string }> {
  const schedules: Schedule[] = [];
  let afterId = query.afterId;
  let more = true;
  while (more && schedules.length < query.limit) {
    const page = await store.page(tenantId, query.limit - schedules.length, afterId);
    schedules.push(...page.schedules.filter((schedule) => matches(schedule, query)));
    afterId = page.schedules.at(-1)?.id ?? afterId;
    more = page.more && page.schedules.length > 0;
  }
  return { schedules, ...(more && afterId !== undefined && { nextAfterId: afterId }) };
}
