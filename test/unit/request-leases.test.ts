import { describe, expect, it } from 'vitest';

import {
  LeasedRequestCounter,
  MAX_COUNTER_SHARES,
  shareOf,
  sharesOf,
} from '../../functions/core/tenants/request-leases.js';
import type { CounterSubject } from '../../functions/core/tenants/tenants.js';
import { FakeRequestCounter } from './fakes.js';

const SECOND = 1_780_000_000;

const ACME = { tenantId: 'acme' };

/** Counts of `subject` in `second` over all its counter shares. */
const counted = (shared: FakeRequestCounter, subject: CounterSubject, second: number, limit: number) =>
  Array.from({ length: sharesOf(limit) }, (_, share) => shared.countOf({ ...subject, share }, second)).reduce(
    (sum, count) => sum + count,
    0,
  );

/** The shares the shared counter is asked for, in order. */
function sharesAsked(shared: FakeRequestCounter): Array<number | undefined> {
  const asked: Array<number | undefined> = [];
  const admit = shared.admit.bind(shared);
  shared.admit = (subject, second, limit, count) => {
    asked.push(subject.share);
    return admit(subject, second, limit, count);
  };
  return asked;
}

describe('Class: LeasedRequestCounter', () => {
  it('sizes its leases to its own demand, so a steady instance writes the shared counter about once a second', async () => {
    // Prepare
    const shared = new FakeRequestCounter();
    const counter = new LeasedRequestCounter(shared, 0);
    const callsPerSecond: number[] = [];

    // Act: 50 requests a second for three seconds, against a limit of 12,800 (shares of 200).
    for (let second = SECOND; second < SECOND + 3; second++) {
      const before = shared.calls;
      const admitted = await Promise.all(Array.from({ length: 50 }, () => counter.admit(ACME, second, 12_800)));
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

    // Act: 900 requests each against a limit of 1,000, arriving ten at a time on each instance.
    let admitted = 0;
    for (let wave = 0; wave < 90; wave++) {
      const results = await Promise.all(
        instances.flatMap((instance) => Array.from({ length: 10 }, () => instance.admit(ACME, SECOND, 1000))),
      );
      admitted += results.filter(Boolean).length;
    }
    const callsWhenFull = shared.calls;
    const afterFull = await Promise.all(instances.map((instance) => instance.admit(ACME, SECOND, 1000)));

    // Assess: every admitted request was counted in the shared store, in fewer writes than counts
    // (each instance drains every share a lease at a time, a lease at most half a share's 15 or
    // 16, and hears each share refuse once: 192 of the writes); refusals cost no more writes.
    expect(admitted).toBe(1000);
    expect(counted(shared, ACME, SECOND, 1000)).toBe(1000);
    expect(callsWhenFull).toBeLessThan(admitted * 0.7);
    expect(afterFull).toEqual([false, false, false]);
    expect(shared.calls).toBe(callsWhenFull);
  });

  it("spreads many instances' leases over the counter's shares, so no one item takes a write from each", async () => {
    // Prepare: two instances on each share of a 200 limit, each admitting one request a second.
    const shared = new FakeRequestCounter();
    const shares = sharesOf(200);
    const instances = Array.from(
      { length: 2 * shares },
      (_, index) => new LeasedRequestCounter(shared, index % shares),
    );
    const asked = sharesAsked(shared);

    // Act
    await Promise.all(instances.map((instance) => instance.admit(ACME, SECOND, 200)));

    // Assess
    const perShare = new Map<number | undefined, number>();
    for (const share of asked) perShare.set(share, (perShare.get(share) ?? 0) + 1);
    expect([...perShare.values()]).toEqual(Array.from({ length: shares }, () => 2));
  });

  it('takes each lease from the next share, so even a lone instance spreads its writes over all of them', async () => {
    // Prepare
    const shared = new FakeRequestCounter();
    const counter = new LeasedRequestCounter(shared, 3);
    const asked = sharesAsked(shared);
    const shares = sharesOf(200);

    // Act: one request a second for as many seconds as there are shares.
    for (let second = SECOND; second < SECOND + shares; second++) await counter.admit(ACME, second, 200);

    // Assess
    expect(asked).toEqual(Array.from({ length: shares }, (_, step) => (3 + step) % shares));
  });

  it('spreads a limit over shares of about 8 counts, up to 64 shares, and the parts add up to it', () => {
    expect([1, 8, 9, 200, 512, 513, 100_000].map(sharesOf)).toEqual([1, 1, 2, 25, 64, MAX_COUNTER_SHARES, 64]);
    for (const limit of [1, 3, 8, 200, 1001, 100_000]) {
      const parts = Array.from({ length: sharesOf(limit) }, (_, share) => shareOf(limit, share));
      expect(parts.reduce((sum, part) => sum + part, 0)).toBe(limit);
      expect(Math.max(...parts) - Math.min(...parts)).toBeLessThanOrEqual(1);
    }
  });

  it('refuses a request once it has found three shares full, and the next request asks the shares after them', async () => {
    // Prepare: another instance has taken every count of a 200 limit but those of the last share.
    const shared = new FakeRequestCounter();
    const shares = sharesOf(200);
    for (let share = 0; share < shares - 1; share++) {
      await shared.admit({ ...ACME, share }, SECOND, shareOf(200, share), shareOf(200, share));
    }
    const counter = new LeasedRequestCounter(shared, 0);
    const asked = sharesAsked(shared);

    // Act
    const refused = await counter.admit(ACME, SECOND, 200);
    const callsForOne = asked.length;
    const results = [];
    for (let request = 0; request < shares; request++) results.push(await counter.admit(ACME, SECOND, 200));

    // Assess: one single-count ask on each of three full shares for the first request; the later
    // requests walk on to the last share's counts, and are then refused.
    expect(refused).toBe(false);
    expect(callsForOne).toBe(3);
    expect(results.filter(Boolean)).toHaveLength(shareOf(200, shares - 1));
    expect(counted(shared, ACME, SECOND, 200)).toBe(200);
  });

  it('starts a new lease each second and keeps subjects apart', async () => {
    // Prepare
    const shared = new FakeRequestCounter();
    const counter = new LeasedRequestCounter(shared, 5);

    // Act
    const first = await Promise.all(Array.from({ length: 3 }, () => counter.admit(ACME, SECOND, 3)));
    const refused = await counter.admit(ACME, SECOND, 3);
    const nextSecond = await counter.admit(ACME, SECOND + 1, 3);
    const otherSubject = await counter.admit({ tenantId: 'rival' }, SECOND, 3);

    // Assess
    expect(first).toEqual([true, true, true]);
    expect([refused, nextSecond, otherSubject]).toEqual([false, true, true]);
  });
});
