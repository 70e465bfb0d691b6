import { describe, expect, it } from 'vitest';

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

  it('gives up on a hung peer all the same: a stall extends a wait by at most its own length once', async () => {
    const elapsedMs = await firedAfter(200, () => blockFor(1000));
    // Waiting again for all 800 ms it was late would end at 1,800 ms or later.
    expect(elapsedMs).toBeGreaterThanOrEqual(1000 + 200 - 1);
    expect(elapsedMs).toBeLessThan(1000 + 200 + 500);
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
