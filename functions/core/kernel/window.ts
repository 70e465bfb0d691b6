/**
 * Flexible windows. A task submitted with `window: { seconds: N }` fires at a time planned
 * within [dueAt, dueAt + N s], never before dueAt, so that a hot second's tasks (a million
 * timers set for midnight) go out spread over the window instead of all in one second. The
 * plan is made once, at submit: the task id encodes the fire time (ids.ts), so the task is
 * stored, scanned and delivered at that time like any other, and nothing downstream needs to
 * know about windows. The task keeps the caller's dueAt for its notification and its view.
 */
import { randomInt } from 'node:crypto';

import type { TaskWindow } from '../../contract/wire.js';

/**
 * The widest window: 15 minutes. Wide enough to flatten any hot second (20,000 tasks over 900 s
 * are 22 a second), narrow enough that a task still fires close to the time it was set for.
 */
export const MAX_WINDOW_SECONDS = 900;

/**
 * The fractional part of the golden ratio. Adding it over and over (mod 1) gives the most
 * evenly spread sequence there is: any run of n consecutive positions lands in each part of
 * [0, 1) within a handful of its fair share (n × the part's length), where n independent
 * random picks stray by about √n (a 60 s window with 1,000 tasks: ±4 a second rather than ±12).
 */
const GOLDEN_STEP = (Math.sqrt(5) - 1) / 2;

/**
 * Deals positions (0 ≤ p < 1) within a window in turn, as `shardDealer` deals shards: one dealer
 * per execution environment, so the tasks one environment plans for a window, a batch above
 * all, spread over it evenly, which random offsets would only do on average. Each starts at a
 * random place, so environments do not plan the same offsets and their tasks together stay spread.
 */
export function windowPositionDealer(start = randomInt(2 ** 32) / 2 ** 32): () => number {
  let position = start;
  return function dealWindowPosition() {
    position = (position + GOLDEN_STEP) % 1;
    return position;
  };
}

/**
 * When a task due at `dueAtMs` fires: at `dueAtMs` without a window, else at `position` (0 ≤ p
 * < 1) of the window, to the millisecond, in [dueAtMs, dueAtMs + seconds × 1000]. Never before
 * dueAtMs. The position defaults to the next one this instance deals; the schedules that create
 * occurrence tasks plan through here as well (by way of `submitTasks`).
 */
export function planFireAt(dueAtMs: number, window: TaskWindow | undefined, position: number): number {
  if (window === undefined) return dueAtMs;
  return dueAtMs + Math.floor(position * (window.seconds * 1000 + 1));
}

/**
 * The dueAt to record for a task whose fire time an earlier attempt of the same request fixed
 * (the id an idempotency key or a reschedule's intent recorded). A request given as
 * `delaySeconds` resolves to a later dueAt each time it is retried, so the request's own is
 * kept only as far as the fire time stays within [dueAt, dueAt + window]: never before dueAt.
 */
export function dueAtForFireTime(fireAtMs: number, requestedDueAtMs: number, window: TaskWindow | undefined): number {
  const earliest = fireAtMs - (window?.seconds ?? 0) * 1000;
  return Math.min(fireAtMs, Math.max(requestedDueAtMs, earliest));
}
