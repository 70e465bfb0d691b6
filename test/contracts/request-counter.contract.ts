import { describe, expect, it } from 'vitest';

import type { RequestCounter } from '../../functions/core/tenants.js';

const SECOND = 1_780_000_000;

/** What rate limits rely on: at most `limit` admissions per subject and second, however many callers race. */
export function requestCounterContract(name: string, makeCounter: () => Promise<RequestCounter>): void {
  describe(`Contract: RequestCounter (${name})`, () => {
    it('admits exactly the limit of concurrent requests in one second, counted apart per subject and second', async () => {
      // Prepare
      const counter = await makeCounter();

      // Act
      const racing = await Promise.all(Array.from({ length: 6 }, () => counter.admit('acme', SECOND, 4)));
      const nextSecond = await counter.admit('acme', SECOND + 1, 4);
      const otherSubject = await counter.admit('rival', SECOND, 4);

      // Assess
      expect(racing.filter(Boolean)).toHaveLength(4);
      expect([nextSecond, otherSubject]).toEqual([true, true]);
    });

    it('counts several requests at once only while they fit under the limit, counting nothing otherwise', async () => {
      // Prepare
      const counter = await makeCounter();

      // Act
      const firstSix = await counter.admit('acme', SECOND, 10, 6);
      const fiveMore = await counter.admit('acme', SECOND, 10, 5);
      const lastFour = await counter.admit('acme', SECOND, 10, 4);
      const oneOver = await counter.admit('acme', SECOND, 10);

      // Assess
      expect([firstSix, fiveMore, lastFour, oneOver]).toEqual([true, false, true, false]);
    });
  });
}
