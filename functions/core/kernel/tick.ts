import { AWS_LIMITS } from '../../contract/aws-limits.js';
import { minuteOf, secondOf } from './clock.js';
import type { Clock, OccupancyIndex } from './task.js';

export interface Tick {
  /** The occupied second this tick is for; scanners claim by the clock, so this is for logs and lag. */
  readonly second: number;
  readonly delaySeconds: number;
}

export interface TickQueue {
  send(ticks: readonly Tick[]): Promise<void>;
}

/** Seconds the SQS DelaySeconds attribute can hold. */
const MAX_TICK_DELAY_SECONDS = AWS_LIMITS.sqs.maxDelaySeconds;

/**
 * The tick for an occupied second. It surfaces `lookaheadSeconds` before the second by this
 * clock, never earlier, so the scanner it starts takes the second in: that scanner claims through
 * scanThrough of its own now, which reaches CLOCK_SKEW_MS further for a clock behind this one.
 * SQS delays are whole seconds, so this rounds up: a tick rounded down could surface just
 * under a second too early, claim up to the second before, and leave this one to the sweeper.
 */
export function tickFor(second: number, nowMs: number, lookaheadSeconds: number): Tick {
  const delayMs = (second - lookaheadSeconds) * 1000 - nowMs;
  return { second, delaySeconds: Math.min(MAX_TICK_DELAY_SECONDS, Math.max(0, Math.ceil(delayMs / 1000))) };
}

/**
 * Runs once a minute (EventBridge rules fire at most that often) and plans the current and
 * the coming minute: it marks each planned in the occupancy index, which hands back the
 * seconds that have tasks (every second, in dense mode), and sends one tick per such second,
 * delayed by SQS. Otherwise empty seconds get no tick and cost nothing. A minute is planned once: a run that finds it planned (by the
 * previous run, or a duplicate of this one) sends nothing for it. Seconds that become occupied
 * after their minute was planned are ticked by the api that occupies them; a lost tick
 * delays its second until the sweeper's catch-up, never loses it.
 */
export async function planTicks(options: {
  occupancy: OccupancyIndex;
  tickQueue: TickQueue;
  clock: Clock;
  lookaheadSeconds: number;
}): Promise<Tick[]> {
  const nowMs = options.clock.now();
  const thisMinute = minuteOf(secondOf(nowMs));
  const ticks: Tick[] = [];
  for (const minute of [thisMinute, thisMinute + 1]) {
    const seconds = await options.occupancy.plan(minute);
    for (const second of seconds ?? []) ticks.push(tickFor(second, nowMs, options.lookaheadSeconds));
  }
  if (ticks.length > 0) await options.tickQueue.send(ticks);
  return ticks;
}
