import type { Clock } from '../../functions/core/kernel/task.js';

/** A time of day to the millisecond (UTC, HH:MM:SS.mmm), as test reports and timelines show it. */
export const clockTime = (ms: number): string => new Date(ms).toISOString().slice(11, 23);

/** A clock that moves only when told to; `sleep` moves it, so waits end at once and exactly on time. */
export class ManualClock implements Clock {
  readonly sleeps: number[] = [];

  constructor(public nowMs: number) {}

  now(): number {
    return this.nowMs;
  }

  set(ms: number): void {
    this.nowMs = ms;
  }

  advance(ms: number): void {
    this.nowMs += ms;
  }

  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.nowMs += Math.max(0, ms);
  }
}
