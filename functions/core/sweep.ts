import { secondOf } from './clock';
import type { ScanPorts } from './scan';
import { scanSecond } from './scan';

export interface SweepSettings {
  /** The most seconds one run examines, so a long outage is caught up over several runs. */
  readonly maxSecondsPerRun: number;
  /**
   * Seconds due within this long before now may still be in a live scan, so they are left
   * alone. While scanners drain a backlog, a second just behind the cursor can be older than
   * this and still in flight; re-scanning it then only sends duplicates, which leases absorb.
   */
  readonly graceSeconds: number;
  /** A run stops re-scanning after this long and leaves the rest to the next run. */
  readonly budgetMs: number;
}

export interface SweepReport {
  readonly rescanned: number[];
  readonly enqueued: number;
  /** Now minus the cursor: how far the scanners are behind real time (negative while they run ahead). */
  readonly lagSeconds: number;
  /** Now minus the sweep watermark: how far back seconds are not yet known to be finished. */
  readonly unsweptSeconds: number;
}

/**
 * Re-scans seconds that were claimed but never recorded as finished: a scanner that
 * crashed, timed out or failed to enqueue after its claim. It works from a persisted
 * watermark, every second up to which is known to be finished, and moves it only over
 * seconds it has seen finished or has re-scanned itself. However long scanners fail, no
 * claimed second is ever left behind; a failing re-scan holds the watermark, and the lag
 * shows in `unsweptSeconds`. Re-scanning a second that did finish only sends duplicates,
 * which the callback's lease turns into no-ops.
 */
export async function sweepUnfinishedSeconds(ports: ScanPorts, settings: SweepSettings): Promise<SweepReport> {
  const startedAtMs = ports.clock.now();
  const nowSecond = secondOf(startedAtMs);
  const state = await ports.clockStore.read();
  if (!state) return { rescanned: [], enqueued: 0, lagSeconds: 0, unsweptSeconds: 0 };
  const swept = (await ports.clockStore.sweptThrough()) ?? state.startedAt - 1;
  const to = Math.min(state.cursor - 1, nowSecond - settings.graceSeconds, swept + settings.maxSecondsPerRun);
  const rescanned: number[] = [];
  let enqueued = 0;
  let finishedThrough = swept;
  if (to > swept) {
    const finished = await ports.clockStore.scannedSeconds(swept + 1, to);
    try {
      for (let second = swept + 1; second <= to; second++) {
        if (!finished.has(second)) {
          if (ports.clock.now() - startedAtMs > settings.budgetMs) break;
          enqueued += (await scanSecond(ports, second)).enqueued;
          rescanned.push(second);
        }
        finishedThrough = second;
      }
    } finally {
      if (finishedThrough > swept) await ports.clockStore.recordSweptThrough(finishedThrough);
    }
  }
  return { rescanned, enqueued, lagSeconds: nowSecond - state.cursor, unsweptSeconds: nowSecond - finishedThrough };
}
