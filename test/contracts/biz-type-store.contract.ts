import { describe, expect, it } from 'vitest';

import type { BizTypeSettings, BizTypeStore } from '../../functions/core/submit/biz-types.js';

const settings = (tenantId: string, bizType: string, maxAttempts = 3): BizTypeSettings => ({
  tenantId,
  bizType,
  maxAttempts,
  defaultTarget: { type: 'http', url: 'https://hooks.example.com/timer' },
  updatedAtMs: 1_780_000_000_000,
});

/** What the api's bizType routes and submits rely on: settings kept per tenant, replaced whole, deleted once. */
export function bizTypeStoreContract(name: string, makeStore: () => Promise<BizTypeStore>): void {
  describe(`Contract: BizTypeStore (${name})`, () => {
    it("replaces a bizType's settings whole and never shows them to another tenant", async () => {
      // Prepare
      const store = await makeStore();
      await store.put(settings('acme', 'order'));
      await store.put(settings('acme', 'coupon'));
      await store.put(settings('rival', 'order'));

      // Act
      await store.put(settings('acme', 'order', 7));

      // Assess
      expect(await store.get('acme', 'order')).toEqual(settings('acme', 'order', 7));
      expect(await store.get('acme', 'invoice')).toBeUndefined();
      const byType = (a: BizTypeSettings, b: BizTypeSettings) => a.bizType.localeCompare(b.bizType);
      expect((await store.list('acme')).sort(byType)).toEqual([
        settings('acme', 'coupon'),
        settings('acme', 'order', 7),
      ]);
    });

    it('deletes settings that exist, and says so only once', async () => {
      // Prepare
      const store = await makeStore();
      await store.put(settings('acme', 'order'));

      // Act
      const deleted = await store.delete('acme', 'order');
      const again = await store.delete('acme', 'order');
      const stranger = await store.delete('rival', 'order');

      // Assess
      expect([deleted, again, stranger]).toEqual([true, false, false]);
      expect(await store.list('acme')).toEqual([]);
    });
  });
}
