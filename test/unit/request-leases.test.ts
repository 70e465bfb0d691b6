import { describe, expect, it } from 'vitest';

import { COUNTER_SHARES, LeasedRequestCounter, shareOf } from '../../functions/core/tenants/request-leases.js';
import { FakeRequestCounter } from './fakes.js';

const SECOND = 1_780_000_000;

/** Counts of `subject` in `second` over all its counter shares. */
const counted = (shared: FakeRequestCounter, subject: string, second: number) =>
  Array.from({ length: COUNTER_SHARES }, (_, share) => shared.counts.get(`${subject}#${share}@${second}`) ?? 0).reduce(
    (sum, count) => sum + count,
    0,
  );

describe('Class: LeasedRequestCounter', () => {
  it('sizes its leases to its own demand, so a steady instance writes the shared counter about once a second', async () => {
    // Prepare
    const shared = new FakeRequestCounter();
    const counter = new LeasedRequestCounter(shared, 0);
    const callsPerSecond: number[] = [];

    // Act: 50 requests a second for three seconds, against a limit of 5,000.
    for (let second = SECOND; second < SECOND + 3; second++) {
      const before = shared.calls;
      const admitted = await Promise.all(Array.from({ length: 50 }, () => counter.admit('acme', second, 5000)));
      expect(admitted.every(Boolean)).toBe(true);
      callsPerSecond.push(shared.calls - before);
    }

    // Assess: 1 + 2 + 4 + 8 + 16 + 32 counts in the first second, then one lease of 50.
    expect(callsPerSecond).toEqual([6, 1, 1]);
  });

  it('never admits more than the limit across instances, and stops writing once every share is full', async () => {
    // Prepare: three api instances share one counter, each leasing from a share of its own.
    const shared = new FakeRequestCounter();
    const instances = [0, 1, 2].map((share) => new LeasedRequestCounter(shared, share));

    // Act: 900 requests each against a limit of 1,000.
    const admitted = (
      await Promise.all(
        instances.flatMap((instance) => Array.from({ length: 900 }, () => instance.admit('acme', SECOND, 1000))),
      )
    ).filter(Boolean).length;
    const callsWhenFull = shared.calls;
    const afterFull = await Promise.all(instances.map((instance) => instance.admit('acme', SECOND, 1000)));

    // Assess: every admitted request was counted in the shared store, in far fewer writes than
    // requests (each instance drains every share, a lease at a time); refusals cost no more writes.
    expect(admitted).toBe(1000);
    expect(counted(shared, 'acme', SECOND)).toBe(1000);
    expect(callsWhenFull).toBeLessThan(admitted / 5);
    expect(afterFull).toEqual([false, false, false]);
    expect(shared.calls).toBe(callsWhenFull);
  });

  it("spreads many instances' leases over the counter's shares, so no one item takes a write from each", async () => {
    // Prepare: 40 instances, five on each share, each admitting one request a second.
    const shared = new FakeRequestCounter();
    const instances = Array.from(
      { length: 40 },
      (_, index) => new LeasedRequestCounter(shared, index % COUNTER_SHARES),
    );
    const keysCalled: string[] = [];
    const admit = shared.admit.bind(shared);
    shared.admit = (subject, second, limit, count) => {
      keysCalled.push(subject);
      return admit(subject, second, limit, count);
    };

    // Act
    await Promise.all(instances.map((instance) => instance.admit('acme', SECOND, 200)));

    // Assess
    const perKey = new Map<string, number>();
    for (const key of keysCalled) perKey.set(key, (perKey.get(key) ?? 0) + 1);
    expect([...perKey.values()]).toEqual(Array.from({ length: COUNTER_SHARES }, () => 5));
  });

  it('takes each lease from the next share, so even a lone instance spreads its writes over all of them', async () => {
    // Prepare
    const shared = new FakeRequestCounter();
    const counter = new LeasedRequestCounter(shared, 3);

    // Act: one request a second for as many seconds as there are shares.
    for (let second = SECOND; second < SECOND + COUNTER_SHARES; second++) await counter.admit('acme', second, 200);

    // Assess
    const shares = [...shared.counts.keys()].map((key) => Number(key.split('@')[0]?.split('#')[1]));
    expect(shares).toEqual(Array.from({ length: COUNTER_SHARES }, (_, step) => (3 + step) % COUNTER_SHARES));
  });

  it('splits the limit over the shares so that the parts add up to it', () => {
    for (const limit of [1, 3, 8, 200, 1001]) {
      const parts = Array.from({ length: COUNTER_SHARES }, (_, share) => shareOf(limit, share));
      expect(parts.reduce((sum, part) => sum + part, 0)).toBe(limit);
      expect(Math.max(...parts) - Math.min(...parts)).toBeLessThanOrEqual(1);
    }
  });

  it('starts a new lease each second and keeps subjects apart', async () => {
    // Prepare
    const shared = new FakeRequestCounter();
    const counter = new LeasedRequestCounter(shared, 5);

    // Act
    const first = await Promise.all(Array.from({ length: 3 }, () => counter.admit('acme', SECOND, 3)));
    const refused = await counter.admit('acme', SECOND, 3);
    const nextSecond = await counter.admit('acme', SECOND + 1, 3);
    const otherSubject = await counter.admit('rival', SECOND, 3);

    // Assess
    expect(first).toEqual([true, true, true]);
    expect([refused, nextSecond, otherSubject]).toEqual([false, true, true]);
  });
});
