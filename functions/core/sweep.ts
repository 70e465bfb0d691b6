import { secondOf } from './clock';
import type { ScanPorts } from './scan';
import { scanSecond } from './scan';

export interface SweepSettings {
  /** How far behind the cursor to look. */
  readonly windowSeconds: number;
  /**
   * Seconds due within this long before now may still be in a live scan, so they are left
   * alone. While scanners drain a backlog, a second just behind the cursor can be older than
   * this and still in flight; re-scanning it then only sends duplicates, which leases absorb.
   */
  readonly graceSeconds: number;
}

export interface SweepReport {
  readonly rescanned: number[];
  readonly enqueued: number;
  /** Now minus the cursor: how far the scanners are behind real time (negative while they run ahead). */
  readonly lagSeconds: number;
}

/**
 * Re-scans seconds that were claimed but never recorded as finished: a scanner that
 * crashed, timed out or failed to enqueue after its claim. Re-scanning a second that
 * did finish only sends duplicates, which the callback's lease turns into no-ops.
 */
export async function sweepUnfinishedSeconds(ports: ScanPorts, settings: SweepSettings): Promise<SweepReport> {
  const state = await ports.clockStore.read();
  const nowSecond = secondOf(ports.clock.now());
  if (!state) return { rescanned: [], enqueued: 0, lagSeconds: 0 };
  const lagSeconds = nowSecond - state.cursor;
  const to = Math.min(state.cursor - 1, nowSecond - settings.graceSeconds);
  const from = Math.max(state.startedAt, to - settings.windowSeconds + 1);
  if (to < from) return { rescanned: [], enqueued: 0, lagSeconds };
  const finished = await ports.clockStore.scannedSeconds(from, to);
  const rescanned: number[] = [];
  let enqueued = 0;
  for (let second = from; second <= to; second++) {
    if (finished.has(second)) continue;
    enqueued += (await scanSecond(ports, second)).enqueued;
    rescanned.push(second);
  }
  return { rescanned, enqueued, lagSeconds };
}
