import type { Clock, ClockState, ClockStore } from './task.js';

export const secondOf = (ms: number): number => Math.floor(ms / 1000);

export const DAY_SECONDS = 24 * 3600;

/** How long a second's scan marker, or a recheck flag, is kept: the sweeper looks no further back than this. */
export const MARKER_RETENTION_SECONDS = 3 * DAY_SECONDS;

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

/**
 * The clock-skew bound the whole design assumes: how far apart any two functions' clocks may be
 * (docs/architecture.md, "One clock-skew bound"). Every rule that compares one function's clock
 * with another's uses it: which seconds a scanner may already have claimed (claimableThrough), and
 * whether a cancel or a reschedule's intent was stored before a first attempt, which takes no lease,
 * could read its task (storedBeforeFirstAttempt, UNLEASED_CANCEL_MARGIN_MS). Lambda hosts keep time
 * with the Amazon Time Sync Service, whose error bound is about a millisecond, and local mode runs
 * on one clock: half a second is hundreds of times the error, yet short enough that a task can be
 * cancelled until two seconds before it fires (with the callback's read-ahead, FIRST_ATTEMPT_READ_AHEAD_MS).
 */
export const CLOCK_SKEW_MS = 500;

/**
 * The last second a scanner claims at `nowMs` on its own clock. A tick surfaces `lookaheadSeconds`
 * before its second by the clock of the function that sent it (see tickFor); the scanner's clock
 * may run up to CLOCK_SKEW_MS behind that one, so it reaches that far ahead too. Otherwise a
 * scanner a millisecond behind would claim one second short, and the tick's second would wait for
 * the sweeper's catch-up. Claiming early is harmless: the callback waits out the rest (invariant 2).
 */
export function scanThrough(nowMs: number, lookaheadSeconds: number): number {
  return secondOf(nowMs + CLOCK_SKEW_MS) + lookaheadSeconds;
}

/**
 * The last second any claimant can have claimed by `nowMs` on the caller's clock: a scanner's
 * clock runs at most CLOCK_SKEW_MS ahead of ours, and it claims through scanThrough of its own
 * now. Seconds after it are certainly unclaimed, so a task due in them is found by the scan that
 * claims its second, without a read of the cursor (one item that every submit would read:
 * invariant 8).
 */
export function claimableThrough(nowMs: number, lookaheadSeconds: number): number {
  return scanThrough(nowMs + CLOCK_SKEW_MS, lookaheadSeconds);
}

/** Clock stores whose clock this instance has seen running, or is starting. */
const started = new WeakMap<ClockStore, Promise<unknown>>();

/**
 * Makes sure the clock runs, once per instance and store: a submit must not write a task
 * due after a cursor that does not exist yet, or the clock could later start past it.
 */
export function ensureClockStarted(clockStore: ClockStore, clock: Clock): Promise<unknown> {
  const known = started.get(clockStore);
  if (known) return known;
  const starting = readClock(clockStore, clock);
  started.set(clockStore, starting);
  starting.catch(() => started.delete(clockStore));
  return starting;
}

/** A minute of seconds: the most one claim takes, so a crash strands at most that much for the sweeper. */
export const MAX_CLAIM_SECONDS = 60;

export const minuteOf = (second: number): number => Math.floor(second / 60);

export type Claim =
  { readonly claimed: true; readonly from: number; readonly through: number } | { readonly claimed: false };

/** Contention is expected while a backlog drains in parallel; this bounds one call's retries. */
const MAX_CLAIM_CONFLICTS = 20;

/**
 * Claims the unclaimed seconds up to `through` (at most MAX_CLAIM_SECONDS of them) with one
 * conditional write on the cursor, the optimistic lock: of any number of racing claimants
 * exactly one advances it from a given value, and the losers re-read and claim what follows,
 * so concurrent scanners share out a backlog instead of repeating it. Empty seconds cost
 * nothing more than being inside the range: the claimant learns which seconds have tasks
 * only after the claim, from the occupancy index (see scanRange for why that order).
 */
export async function claimSeconds(options: { clockStore: ClockStore; clock: Clock; through: number }): Promise<Claim> {
  const { clockStore, clock, through } = options;
  if ((cursorsSeen.get(clockStore) ?? Number.NEGATIVE_INFINITY) > through) return { claimed: false };
  for (let conflicts = 0; conflicts < MAX_CLAIM_CONFLICTS; conflicts++) {
    const { cursor } = await readClock(clockStore, clock);
    sawCursor(clockStore, cursor);
    if (cursor > through) return { claimed: false };
    const last = Math.min(through, cursor + MAX_CLAIM_SECONDS - 1);
    if (await clockStore.advance(cursor, last)) {
      sawCursor(clockStore, last + 1);
      return { claimed: true, from: cursor, through: last };
    }
  }
  return { claimed: false };
}

/**
 * The highest cursor this instance has read or moved the clock to, for each store. The cursor
 * only moves forward (advance is conditional on its value), so this is a floor under it: a claim
 * through a second below it would find nothing to claim, and is answered without a read. The
 * api ticks a second once for each occupancy slot that learns of it late, so one second may
 * start up to OCCUPANCY_SLOTS scanner runs; those that land on a warm instance in the same second
 * cost the CLOCK item no read.
 */
const cursorsSeen = new WeakMap<ClockStore, number>();

function sawCursor(clockStore: ClockStore, cursor: number): void {
  if (cursor > (cursorsSeen.get(clockStore) ?? Number.NEGATIVE_INFINITY)) cursorsSeen.set(clockStore, cursor);
}
