import type { Clock } from '../../functions/core/task';

/** A clock the test moves by hand; sleeping advances it instead of waiting. */
export class ManualClock implements Clock {
  constructor(private nowMs: number) {}

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
    this.nowMs += Math.max(0, ms);
  }
}
