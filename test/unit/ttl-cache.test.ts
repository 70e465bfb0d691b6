import { describe, expect, it } from 'vitest';

import { ttlCache } from '../../functions/core/ttl-cache.js';
import { ManualClock } from './fakes.js';

describe('Function: ttlCache', () => {
  it('keeps an entry no longer than ttlMs, and entries kept at one moment lapse at different times', async () => {
    // Prepare: 200 caches, as 200 instances started together, each remembering one key.
    const clock = new ManualClock(1_000_000);
    const caches = Array.from({ length: 200 }, () => ttlCache(clock, 30_000));
    const loads: number[] = [];
    const read = (cache: (typeof caches)[number], index: number) =>
      cache('key', async () => {
        loads.push(index);
        return index;
      });
    await Promise.all(caches.map(read));
    loads.length = 0;

    // Act: step through the ttl, a second at a time, reading every cache.
    const lapsedAt: number[] = [];
    for (let second = 1; second <= 30; second++) {
      clock.advance(1000);
      await Promise.all(caches.map(read));
      lapsedAt.push(loads.length);
      loads.length = 0;
    }

    // Assess: all lapsed by the ttl, none before three quarters of it, and never all in one second.
    expect(lapsedAt.reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(200);
    expect(lapsedAt.slice(0, 22).reduce((sum, count) => sum + count, 0)).toBe(0);
    expect(Math.max(...lapsedAt)).toBeLessThan(100);
  });
});
