import { describe, expect, it } from 'vitest';

import { MAX_MISSING_ENTRIES, ttlCache } from '../../functions/core/kernel/ttl-cache.js';
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

describe('Function: ttlCache under a flood of missing keys', () => {
  const FLOOD = 20_000;

  it('keeps every found entry, and remembers at most MAX_MISSING_ENTRIES missing keys, the latest', async () => {
    // Prepare: one key that exists, read once.
    const clock = new ManualClock(1_000_000);
    const cache = ttlCache(clock, 30_000);
    const loads: string[] = [];
    const read = (key: string) =>
      cache(key, async () => {
        loads.push(key);
        return key === 'real' ? 'found' : undefined;
      });
    await read('real');

    // Act: 20,000 distinct keys that do not exist, then the real one and the newest and oldest made-up ones again.
    for (let index = 0; index < FLOOD; index++) await read(`made-up-${index}`);
    loads.length = 0;
    const real = await read('real');
    await read(`made-up-${FLOOD - 1}`);
    await read(`made-up-${FLOOD - MAX_MISSING_ENTRIES}`);
    await read('made-up-0');

    // Assess: the real entry and the latest MAX_MISSING_ENTRIES missing keys answer from memory; older ones are read again.
    expect(real).toBe('found');
    expect(loads).toEqual(['made-up-0']);
  });
});
