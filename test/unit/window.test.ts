import { describe, expect, it } from 'vitest';

import {
  dueAtForFireTime,
  MAX_WINDOW_SECONDS,
  planFireAt,
  windowPositionDealer,
} from '../../functions/core/kernel/window.js';

const DUE_AT_MS = 1_790_000_000_000;

describe('Function: planFireAt', () => {
  it('fires a task without a window at its dueAt', () => {
    // Act
    const fireAtMs = planFireAt(DUE_AT_MS, undefined, 0.5);

    // Assess
    expect(fireAtMs).toBe(DUE_AT_MS);
  });

  it('plans within [dueAt, dueAt + window], reaching both ends and never before dueAt', () => {
    // Prepare
    const window = { seconds: MAX_WINDOW_SECONDS };
    const dealWindowPosition = windowPositionDealer();

    // Act
    const first = planFireAt(DUE_AT_MS, window, 0);
    const last = planFireAt(DUE_AT_MS, window, 1 - Number.EPSILON);
    const dealt = Array.from({ length: 10_000 }, () => planFireAt(DUE_AT_MS, window, dealWindowPosition()));

    // Assess
    expect(first).toBe(DUE_AT_MS);
    expect(last).toBe(DUE_AT_MS + MAX_WINDOW_SECONDS * 1000);
    for (const fireAtMs of dealt) {
      expect(Number.isInteger(fireAtMs)).toBe(true);
      expect(fireAtMs).toBeGreaterThanOrEqual(DUE_AT_MS);
      expect(fireAtMs).toBeLessThanOrEqual(DUE_AT_MS + MAX_WINDOW_SECONDS * 1000);
    }
  });

  it("spreads a hot second's 1,000 tasks with a 60 s window evenly over the 60 s, none early", () => {
    // Prepare: 1,000 tasks due within one second, as one instance plans them.
    const dueTimes = Array.from({ length: 1000 }, (_, index) => DUE_AT_MS + index);
    const dealWindowPosition = windowPositionDealer();

    // Act
    const offsets = dueTimes.map((dueAtMs) => planFireAt(dueAtMs, { seconds: 60 }, dealWindowPosition()) - dueAtMs);

    // Assess: the dealt positions are evenly spread from any start, so these bounds hold every
    // run; independent random offsets would put 167 ± 12 in a slice and 17 ± 4 in a second.
    expect(Math.min(...offsets)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...offsets)).toBeLessThanOrEqual(60_000);
    const slices = countBy(offsets, 10_000, 6);
    for (const count of slices) {
      expect(count).toBeGreaterThanOrEqual(150); // 15%: a fair share is 16.7%
      expect(count).toBeLessThanOrEqual(185); // 18.5%
    }
    const seconds = countBy(offsets, 1000, 61);
    for (const count of seconds.slice(0, 60)) {
      expect(count).toBeGreaterThanOrEqual(12);
      expect(count).toBeLessThanOrEqual(22);
    }
  });

  it('spreads the positions one instance deals over the unit interval, whatever came before', () => {
    // Prepare: positions dealt for other windows first move the sequence on.
    const dealWindowPosition = windowPositionDealer();
    for (let index = 0; index < 137; index++) dealWindowPosition();

    // Act
    const positions = Array.from({ length: 200 }, () => dealWindowPosition());

    // Assess: every tenth of [0, 1) holds 20 of 200, give or take 3.
    for (const count of countBy(positions, 0.1, 10)) {
      expect(count).toBeGreaterThanOrEqual(17);
      expect(count).toBeLessThanOrEqual(23);
    }
  });
});

describe('Function: dueAtForFireTime', () => {
  it("keeps the request's dueAt while the fire time lies within its window", () => {
    // Act
    const dueAtMs = dueAtForFireTime(DUE_AT_MS + 30_000, DUE_AT_MS, { seconds: 60 });

    // Assess
    expect(dueAtMs).toBe(DUE_AT_MS);
  });

  it('moves a dueAt that a retried delaySeconds resolved later back to the fire time, so the task is never early', () => {
    // Act
    const windowed = dueAtForFireTime(DUE_AT_MS + 30_000, DUE_AT_MS + 45_000, { seconds: 60 });
    const plain = dueAtForFireTime(DUE_AT_MS, DUE_AT_MS + 5000, undefined);

    // Assess
    expect(windowed).toBe(DUE_AT_MS + 30_000);
    expect(plain).toBe(DUE_AT_MS);
  });

  it('moves a dueAt that lies more than the window before the fire time up to the window', () => {
    // Act
    const dueAtMs = dueAtForFireTime(DUE_AT_MS + 30_000, DUE_AT_MS - 90_000, { seconds: 60 });

    // Assess
    expect(dueAtMs).toBe(DUE_AT_MS - 30_000);
  });
});

/** How many of `values` fall in each of `count` consecutive slices of `width`, from 0. */
function countBy(values: readonly number[], width: number, count: number): number[] {
  const counts = new Array<number>(count).fill(0);
  for (const value of values) counts[Math.min(count - 1, Math.floor(value / width))]! += 1;
  return counts;
}
