import { describe, expect, it } from 'vitest';

import { LeasedRequestCounter } from '../../functions/core/request-leases.js';
import { FakeRequestCounter } from './fakes.js';

const SECOND = 1_780_000_000;

describe('Class: LeasedRequestCounter', () => {
  it('writes the shared counter about ten times a second, however many requests it admits', async () => {
    // Prepare
    const shared = new FakeRequestCounter();
    const counter = new LeasedRequestCounter(shared);

    // Act: 2,000 requests in one second against a limit of 5,000.
    const admitted = await Promise.all(Array.from({ length: 2000 }, () => counter.admit('acme', SECOND, 5000)));

    // Assess
    expect(admitted.every(Boolean)).toBe(true);
    expect(shared.calls).toBe(4);
  });

  it('never admits more than the limit across instances, and stops writing once the second is full', async () => {
    // Prepare: three api instances share one counter.
    const shared = new FakeRequestCounter();
    const instances = Array.from({ length: 3 }, () => new LeasedRequestCounter(shared));

    // Act: 900 requests each against a limit of 1,000.
    const admitted = (
      await Promise.all(
        instances.flatMap((instance) => Array.from({ length: 900 }, () => instance.admit('acme', SECOND, 1000))),
      )
    ).filter(Boolean).length;
    const callsWhenFull = shared.calls;
    const afterFull = await Promise.all(instances.map((instance) => instance.admit('acme', SECOND, 1000)));

    // Assess: every admitted request was counted in the shared store; refusals cost no more writes.
    expect(admitted).toBe(1000);
    expect(shared.counts.get(`acme@${SECOND}`)).toBe(1000);
    expect(callsWhenFull).toBeLessThan(40);
    expect(afterFull).toEqual([false, false, false]);
    expect(shared.calls).toBe(callsWhenFull);
  });

  it('starts a new lease each second and keeps subjects apart', async () => {
    // Prepare
    const shared = new FakeRequestCounter();
    const counter = new LeasedRequestCounter(shared);

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
