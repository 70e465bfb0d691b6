import type { Clock } from '../../functions/core/kernel/task.js';

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
