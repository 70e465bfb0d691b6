import { describe, expect, it, vi } from 'vitest';

import { systemTimer } from '../../functions/core/kernel/timers.js';

/** Blocks this thread, as a long GC or a starved CPU would: no timer or socket callback runs meanwhile. */
function blockFor(ms: number): void {
  const untilMs = Date.now() + ms;
  while (Date.now() < untilMs) {
    // Busy.
  }
}

/** Starts a systemTimer and resolves with when it fired, in ms after the start. */
function firedAfter(ms: number, whileWaiting: () => void = () => undefined): Promise<number> {
  const startedAtMs = Date.now();
  return new Promise((resolve) => {
    systemTimer(ms, () => resolve(Date.now() - startedAtMs));
    whileWaiting();
  });
}

describe('Function: systemTimer', () => {
  it('waits again, as long as it was late, when a stall of the process made it fire late', async () => {
    // 200 ms asked, 350 ms blocked: it comes due 150 ms late and waits 150 ms more, for what arrived meanwhile.
    const elapsedMs = await firedAfter(200, () => blockFor(350));
    expect(elapsedMs).toBeGreaterThanOrEqual(350 + 150 - 1);
  });

  it('gives up on a hung peer all the same: a stall extends a wait by at most its own length once', () => {
    // On fake timers, as an upper bound on real time fails on a busy machine, not on a wrong timer.
    vi.useFakeTimers();
    try {
      // Prepare
      const startedAtMs = Date.now();
      let firedAfterMs: number | undefined;
      systemTimer(200, () => (firedAfterMs = Date.now() - startedAtMs));

      // Act: the process stalls until 1,000 ms, so the timer due at 200 runs 800 ms late. Moving
      // the clock moves the pending timers with it, as a blocked event loop holds them.
      vi.setSystemTime(startedAtMs + 800);
      vi.advanceTimersByTime(200);
      vi.advanceTimersByTime(2000);

      // Assess: it waited again its own 200 ms, not the 800 it was late (which ends at 1,800).
      expect(firedAfterMs).toBe(1200);
    } finally {
      vi.useRealTimers();
    }
  });

  it('never fires once stopped', async () => {
    let fired = false;
    const stop = systemTimer(50, () => {
      fired = true;
    });
    stop();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(fired).toBe(false);
  });
});
