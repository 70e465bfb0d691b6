/**
 * What the console shows, worked out from tasks as read: pure functions of the tasks and
 * the time, so they are tested without a table.
 */
import type { Target, Task, TaskStatus } from '../../../functions/core/kernel/task.js';
import { type Schedule, upcomingOccurrences } from '../../../functions/core/schedules/schedules.js';
import type { ConsoleDelivery, ConsoleSchedulesView, ConsoleTask, ConsoleTasksView, DueCounts } from './wire.js';

/** In the order a task goes through them. */
const STATUSES: readonly TaskStatus[] = ['PENDING', 'DELIVERING', 'DELIVERED', 'FAILED', 'CANCELLED'];
export const TASKS_SHOWN = 40;
export const DELIVERIES_SHOWN = 15;
export const UPCOMING_SECONDS = 60;
export const UPCOMING_MINUTES = 60;
export const LATENESS_WINDOW_MS = 120_000;
const PAYLOAD_PREVIEW_CHARS = 120;

function describeTarget(target: Target): string {
  switch (target.type) {
    case 'http':
      return target.url;
    case 'sqs':
      return `SQS ${target.queueUrl}`;
    case 'eventbridge':
      return `EventBridge bus ${target.eventBusName}`;
  }
}

function toConsoleTask(task: Task): ConsoleTask {
  return {
    id: task.id,
    tenantId: task.tenantId,
    status: task.status,
    dueAtMs: task.dueAtMs,
    target: describeTarget(task.target),
    payloadPreview:
      task.payloadJson.length > PAYLOAD_PREVIEW_CHARS
        ? `${task.payloadJson.slice(0, PAYLOAD_PREVIEW_CHARS)}…`
        : task.payloadJson,
    attempts: task.attempts,
    ...(task.bizType !== undefined && { bizType: task.bizType }),
    ...(task.bizId !== undefined && { bizId: task.bizId }),
    ...(task.deliveredAtMs !== undefined && { deliveredAtMs: task.deliveredAtMs }),
    ...(task.latenessMs !== undefined && { latenessMs: task.latenessMs }),
    ...(task.lastError !== undefined && { lastError: task.lastError }),
  };
}

type DeliveredTask = Task & { readonly deliveredAtMs: number; readonly latenessMs: number };

const isDelivered = (task: Task): task is DeliveredTask =>
  task.status === 'DELIVERED' && task.deliveredAtMs !== undefined && task.latenessMs !== undefined;

const toConsoleDelivery = (task: DeliveredTask): ConsoleDelivery => ({
  ...toConsoleTask(task),
  deliveredAtMs: task.deliveredAtMs,
  latenessMs: task.latenessMs,
});

/** How many of `tasks` are due in each of `periods` periods of `periodMs`, starting with the one that holds `nowMs`. */
function dueCounts(tasks: readonly Task[], nowMs: number, periodMs: number, periods: number): DueCounts {
  const firstStartMs = Math.floor(nowMs / periodMs) * periodMs;
  const counts = new Array<number>(periods).fill(0);
  for (const task of tasks) {
    const index = Math.floor((task.dueAtMs - firstStartMs) / periodMs);
    if (index >= 0 && index < periods) counts[index] = (counts[index] ?? 0) + 1;
  }
  return { firstStartMs, periodMs, counts };
}

/** The schedules of every tenant, those firing soonest first (paused and ended ones last), each with its next occurrences. */
export function schedulesView(schedules: readonly Schedule[], nowMs: number): ConsoleSchedulesView {
  const shown = schedules.map((schedule) => ({
    id: schedule.id,
    tenantId: schedule.tenantId,
    when: schedule.cron ?? `rate ${schedule.rate}`,
    timezone: schedule.timezone,
    paused: schedule.paused,
    ...(schedule.bizId !== undefined && { bizId: schedule.bizId }),
    target: describeTarget(schedule.target),
    nextOccurrencesMs: upcomingOccurrences(schedule),
  }));
  const firstOf = (schedule: (typeof shown)[number]) => schedule.nextOccurrencesMs[0] ?? Number.POSITIVE_INFINITY;
  return { nowMs, schedules: shown.sort((a, b) => firstOf(a) - firstOf(b)) };
}

/** The value below which `share` of the sorted values fall (nearest rank). */
function quantile(sorted: readonly number[], share: number): number | undefined {
  return sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)];
}

/** The console's view of the tasks read from the table at `nowMs`. */
export function tasksView(
  tasks: readonly Task[],
  nowMs: number,
  read: { itemsRead: number; complete: boolean },
): ConsoleTasksView {
  // The table is titled "due nearest to now": the one due closest to now, past or future, heads it; a tie puts the earlier first.
  const nearestFirst = [...tasks].sort(
    (a, b) => Math.abs(a.dueAtMs - nowMs) - Math.abs(b.dueAtMs - nowMs) || a.dueAtMs - b.dueAtMs,
  );
  const delivered = tasks.filter(isDelivered).sort((a, b) => b.deliveredAtMs - a.deliveredAtMs);
  const recent = delivered.filter((task) => task.deliveredAtMs > nowMs - LATENESS_WINDOW_MS).reverse();
  const recentLateness = recent.map((task) => task.latenessMs).sort((a, b) => a - b);
  // From the start of the current second: a PENDING task due before it is late (waiting for a retry), not upcoming.
  const upcomingFromMs = Math.floor(nowMs / 1000) * 1000;
  const upcoming = tasks.filter((task) => task.status === 'PENDING' && task.dueAtMs >= upcomingFromMs);
  const p50Ms = quantile(recentLateness, 0.5);
  const p99Ms = quantile(recentLateness, 0.99);
  return {
    nowMs,
    ...read,
    statusCounts: STATUSES.map((status) => ({ status, count: tasks.filter((task) => task.status === status).length })),
    tasks: nearestFirst.slice(0, TASKS_SHOWN).map(toConsoleTask),
    upcomingSeconds: dueCounts(upcoming, nowMs, 1000, UPCOMING_SECONDS),
    upcomingMinutes: dueCounts(upcoming, nowMs, 60_000, UPCOMING_MINUTES),
    deliveries: delivered.slice(0, DELIVERIES_SHOWN).map(toConsoleDelivery),
    lateness: {
      windowMs: LATENESS_WINDOW_MS,
      points: recent.map(({ deliveredAtMs, latenessMs }) => ({ deliveredAtMs, latenessMs })),
      ...(p50Ms !== undefined && { p50Ms }),
      ...(p99Ms !== undefined && { p99Ms }),
    },
  };
}
