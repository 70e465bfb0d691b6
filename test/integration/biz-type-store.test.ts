import { describe, expect, it } from 'vitest';

import type { BizTypeSettings } from '../../functions/core/submit/biz-types.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';

const emulators = emulatorsFixture();

const settings = (tenantId: string, bizType: string, overrides: Partial<BizTypeSettings> = {}): BizTypeSettings => ({
  tenantId,
  bizType,
  updatedAtMs: 1_780_000_000_000,
  ...overrides,
});

describe('Adapter: DynamoBizTypeStore on dynalite', () => {
  it("creates, replaces, lists and deletes a tenant's settings, and never shows them to another tenant", async () => {
    // Prepare
    const { bizTypeStore: store } = emulators.stores();
    const target = { type: 'http', url: 'https://hooks.example.com/orders' } as const;

    // Act
    await store.put(settings('acme', 'order-close', { defaultTarget: target, maxAttempts: 3 }));
    await store.put(settings('acme', 'order-close', { maxAttempts: 7, callbackRateLimitPerSecond: 50 }));
    await store.put(settings('acme', 'coupon'));
    await store.put(settings('globex', 'order-close', { maxAttempts: 1 }));
    const replaced = await store.get('acme', 'order-close');
    const listed = await store.list('acme');
    const deleted = await store.delete('acme', 'coupon');
    const deletedAgain = await store.delete('acme', 'coupon');
    const othersDelete = await store.delete('acme', 'never-made');

    // Assess
    expect(replaced).toEqual(settings('acme', 'order-close', { maxAttempts: 7, callbackRateLimitPerSecond: 50 }));
    expect(listed.map((entry) => entry.bizType).sort()).toEqual(['coupon', 'order-close']);
    expect(listed.every((entry) => entry.tenantId === 'acme')).toBe(true);
    expect([deleted, deletedAgain, othersDelete]).toEqual([true, false, false]);
    expect(await store.get('globex', 'order-close')).toMatchObject({ maxAttempts: 1 });
    expect(await store.list('acme')).toHaveLength(1);
  });

  it('admits at most the limit per bizType and second, counted apart per tenant and bizType', async () => {
    // Prepare
    const { callbackCounter } = emulators.stores();
    const second = 1_780_000_000;

    // Act
    const ours = await Promise.all(
      Array.from({ length: 8 }, () => callbackCounter.admit({ tenantId: 'acme', bizType: 'order-close' }, second, 5)),
    );
    const theirs = await callbackCounter.admit({ tenantId: 'globex', bizType: 'order-close' }, second, 5);
    const next = await callbackCounter.admit({ tenantId: 'acme', bizType: 'order-close' }, second + 1, 5);

    // Assess
    expect(ours.filter(Boolean)).toHaveLength(5);
    expect([theirs, next]).toEqual([true, true]);
  });
});
