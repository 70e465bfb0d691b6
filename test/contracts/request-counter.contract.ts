import { describe, expect, it } from 'vitest';

import type { RateLimiter, RequestCounter } from '../../functions/core/tenants/tenants.js';

const SECOND = 1_780_000_000;

/** What rate limits rely on: at most `limit` admissions per subject and second, however many callers race. */
export function rateLimiterContract(name: string, makeCounter: () => Promise<RateLimiter>): void {
  describe(`Contract: RateLimiter (${name})`, () => {
    it('admits exactly the limit of concurrent requests in one second, counted apart per subject and second', async () => {
      // Prepare
      const counter = await makeCounter();

      // Act
      const racing = await Promise.all(Array.from({ length: 6 }, () => counter.admit({ tenantId: 'acme' }, SECOND, 4)));
      const nextSecond = await counter.admit({ tenantId: 'acme' }, SECOND + 1, 4);
      const otherSubject = await counter.admit({ tenantId: 'rival' }, SECOND, 4);

      // Assess
      expect(racing.filter(Boolean)).toHaveLength(4);
      expect([nextSecond, otherSubject]).toEqual([true, true]);
    });
  });
}

/** A shared counter, which also counts several requests at once (what leases are taken with). */
export function requestCounterContract(name: string, makeCounter: () => Promise<RequestCounter>): void {
  rateLimiterContract(name, makeCounter);
  describe(`Contract: RequestCounter (${name})`, () => {
    it('counts several requests at once only while they fit under the limit, counting nothing otherwise', async () => {
      // Prepare
      const counter = await makeCounter();

      // Act
      const firstSix = await counter.admit({ tenantId: 'acme' }, SECOND, 10, 6);
      const fiveMore = await counter.admit({ tenantId: 'acme' }, SECOND, 10, 5);
      const lastFour = await counter.admit({ tenantId: 'acme' }, SECOND, 10, 4);
      const oneOver = await counter.admit({ tenantId: 'acme' }, SECOND, 10);

      // Assess
      expect([firstSix, fiveMore, lastFour, oneOver]).toEqual([true, false, true, false]);
    });

    it('refuses a count larger than the limit even in a second nothing was counted in yet', async () => {
      // Prepare
      const counter = await makeCounter();

      // Act
      const overZero = await counter.admit({ tenantId: 'acme' }, SECOND, 0);
      const overTwo = await counter.admit({ tenantId: 'acme' }, SECOND, 2, 3);

      // Assess
      expect([overZero, overTwo]).toEqual([false, false]);
    });
  });
}
