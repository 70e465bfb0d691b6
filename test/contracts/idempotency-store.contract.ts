import { describe, expect, it } from 'vitest';

import type { IdempotencyRecord, IdempotencyScope, IdempotencyStore } from '../../functions/core/kernel/task.js';

const EXPIRES_AT = 1_800_000_000;
const record = (
  key: string,
  taskId: string,
  fingerprint = 'f-1',
  { scope = 'task', tenantId = 'acme' }: { scope?: IdempotencyScope; tenantId?: string } = {},
): IdempotencyRecord => ({
  scope,
  tenantId,
  key,
  taskId,
  fingerprint,
  claimedAtMs: 1_700_000_000_000,
});

/** What submit relies on: of any number of claims on one key, the first wins and the rest see its record. */
export function idempotencyStoreContract(name: string, makeStore: () => Promise<IdempotencyStore>): void {
  describe(`Contract: IdempotencyStore (${name})`, () => {
    it('gives a key to its first claim and shows every later claim the holder', async () => {
      // Prepare
      const store = await makeStore();
      const first = record('order-1', 'TASK-A');

      // Act
      const won = await store.claim(first, EXPIRES_AT);
      const lost = await store.claim(record('order-1', 'TASK-B', 'f-2'), EXPIRES_AT);

      // Assess
      expect(won).toEqual({ claimed: true, holder: first });
      expect(lost).toEqual({ claimed: false, holder: first });
    });

    it('lets exactly one of many concurrent claims on a key win, and keeps keys apart', async () => {
      // Prepare
      const store = await makeStore();
      const claims = Array.from({ length: 8 }, (_, index) => record('race', `TASK-${index}`));

      // Act
      const results = await Promise.all(claims.map((claim) => store.claim(claim, EXPIRES_AT)));
      const other = await store.claim(record('other', 'TASK-X'), EXPIRES_AT);

      // Assess
      const winners = results.filter((result) => result.claimed);
      expect(winners).toHaveLength(1);
      expect(new Set(results.map((result) => result.holder.taskId))).toEqual(new Set([winners[0]?.holder.taskId]));
      expect(other.claimed).toBe(true);
    });

    it("keeps a tenant's submit keys apart from its schedule keys and from every other tenant's", async () => {
      // Prepare
      const store = await makeStore();
      await store.claim(record('order-1', 'TASK-A'), EXPIRES_AT);

      // Act
      const asSchedule = await store.claim(record('order-1', 'SCHEDULE-A', 'f-2', { scope: 'schedule' }), EXPIRES_AT);
      const otherTenant = await store.claim(record('order-1', 'TASK-B', 'f-3', { tenantId: 'acme-2' }), EXPIRES_AT);
      const otherTenantSchedule = await store.claim(
        record('order-1', 'SCHEDULE-B', 'f-4', { scope: 'schedule', tenantId: 'acme-2' }),
        EXPIRES_AT,
      );

      // Assess
      expect([asSchedule.claimed, otherTenant.claimed, otherTenantSchedule.claimed]).toEqual([true, true, true]);
    });
  });
}
