import { describe, expect, it } from 'vitest';

import { COUNTER_SHARES, LeasedRequestCounter, shareOf } from '../../functions/core/tenants/request-leases.js';
import type { CounterSubject } from '../../functions/core/tenants/tenants.js';
import { FakeRequestCounter } from './fakes.js';

const SECOND = 1_780_000_000;

const ACME = { tenantId: 'acme' };

/** Counts of `subject` in `second` over all its counter shares. */
const counted = (shared: FakeRequestCounter, subject: CounterSubject, second: number) =>
  Array.from({ length: COUNTER_SHARES }, (_, share) => shared.countOf({ ...subject, share }, second)).reduce(
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

    // Act: 50 requests a second for three seconds, against a limit of 5,000.
    for (let second = SECOND; second < SECOND + 3; second++) {
      const before = shared.calls;
      const admitted = await Promise.all(Array.from({ length: 50 }, () => counter.admit(ACME, second, 5000)));
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
        instances.flatMap((instance) => Array.from({ length: 900 }, () => instance.admit(ACME, SECOND, 1000))),
      )
    ).filter(Boolean).length;
    const callsWhenFull = shared.calls;
    const afterFull = await Promise.all(instances.map((instance) => instance.admit(ACME, SECOND, 1000)));

    // Assess: every admitted request was counted in the shared store, in far fewer writes than
    // requests (each instance drains every share, a lease at a time); refusals cost no more writes.
    expect(admitted).toBe(1000);
    expect(counted(shared, ACME, SECOND)).toBe(1000);
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
    const asked = sharesAsked(shared);

    // Act
    await Promise.all(instances.map((instance) => instance.admit(ACME, SECOND, 200)));

    // Assess
    const perShare = new Map<number | undefined, number>();
    for (const share of asked) perShare.set(share, (perShare.get(share) ?? 0) + 1);
    expect([...perShare.values()]).toEqual(Array.from({ length: COUNTER_SHARES }, () => 5));
  });

  it('takes each lease from the next share, so even a lone instance spreads its writes over all of them', async () => {
    // Prepare
    const shared = new FakeRequestCounter();
    const counter = new LeasedRequestCounter(shared, 3);
    const asked = sharesAsked(shared);

    // Act: one request a second for as many seconds as there are shares.
    for (let second = SECOND; second < SECOND + COUNTER_SHARES; second++) await counter.admit(ACME, second, 200);

    // Assess
    expect(asked).toEqual(Array.from({ length: COUNTER_SHARES }, (_, step) => (3 + step) % COUNTER_SHARES));
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
    const first = await Promise.all(Array.from({ length: 3 }, () => counter.admit(ACME, SECOND, 3)));
    const refused = await counter.admit(ACME, SECOND, 3);
    const nextSecond = await counter.admit(ACME, SECOND + 1, 3);
    const otherSubject = await counter.admit({ tenantId: 'rival' }, SECOND, 3);

    // Assess
    expect(first).toEqual([true, true, true]);
    expect([refused, nextSecond, otherSubject]).toEqual([false, true, true]);
  });
});
