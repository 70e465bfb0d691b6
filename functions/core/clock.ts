import type { Clock, ClockState, ClockStore } from './task';

export const secondOf = (ms: number): number => Math.floor(ms / 1000);

/**
 * Reads the cursor, starting the clock at the current second if it has never run.
 * Whoever starts it, every writer reads the clock after writing its task, so a task
 * due before the start is seen as "already claimed" and enqueued directly.
 */
export async function readClock(clockStore: ClockStore, clock: Clock): Promise<ClockState> {
  const existing = await clockStore.read();
  if (existing) return existing;
  await clockStore.start(secondOf(clock.now()));
  const started = await clockStore.read();
  if (!started) throw new Error('the CLOCK item vanished right after it was created');
  return started;
}

export type Claim = { readonly claimed: true; readonly second: number } | { readonly claimed: false };

/** Contention is expected while a backlog drains in parallel; this bounds one call's retries. */
const MAX_CLAIM_CONFLICTS = 20;

/**
 * Claims the next unclaimed second if it is due within the lookahead. The conditional
 * write on the cursor is the optimistic lock: of any number of racing scanners exactly
 * one advances it from a given value, and the losers re-read and try the next second,
 * so concurrent scanners share out a backlog instead of repeating it.
 */
export async function claimNextSecond(options: {
  clockStore: ClockStore;
  clock: Clock;
  lookaheadSeconds: number;
}): Promise<Claim> {
  const { clockStore, clock, lookaheadSeconds } = options;
  for (let conflicts = 0; conflicts < MAX_CLAIM_CONFLICTS; conflicts++) {
    const { cursor } = await readClock(clockStore, clock);
    if (cursor > secondOf(clock.now()) + lookaheadSeconds) return { claimed: false };
    if (await clockStore.advance(cursor)) return { claimed: true, second: cursor };
  }
  return { claimed: false };
}
