import { secondOf } from './clock';
import type { Clock } from './task';

export interface Tick {
  /** The second this tick is meant to start; scanners claim by the clock, so this is for logs and lag. */
  readonly second: number;
  readonly delaySeconds: number;
}

export interface TickQueue {
  send(ticks: readonly Tick[]): Promise<void>;
}

/**
 * EventBridge rules fire at most once a minute, so one run fans out a tick for each
 * second of the coming minute, delayed by SQS. A lost or doubled tick is harmless:
 * the next one claims whatever seconds are due.
 */
export async function fanOutTicks(options: { tickQueue: TickQueue; clock: Clock; count: number }): Promise<Tick[]> {
  const first = secondOf(options.clock.now());
  const ticks = Array.from({ length: options.count }, (_, delaySeconds) => ({
    second: first + delaySeconds,
    delaySeconds,
  }));
  await options.tickQueue.send(ticks);
  return ticks;
}
