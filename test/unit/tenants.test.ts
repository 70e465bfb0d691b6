import { describe, expect, it, vi } from 'vitest';

import {
  activeSigningSecrets,
  authenticate,
  cachedTenantDirectory,
  newApiKey,
  newTenant,
  parseApiKey,
  type ReadOptions,
  type TenantDirectory,
  tenantIdProblem,
  type TenantStore,
  withRotatedSecret,
} from '../../functions/core/tenants.js';
import { ManualClock } from './fakes.js';

const NOW_MS = Date.UTC(2026, 10, 21, 12, 0, 0);
const HOUR_MS = 3_600_000;

function directoryWith(issued: ReturnType<typeof newApiKey>, options: { revoked?: boolean } = {}): TenantDirectory {
  const tenant = newTenant(issued.record.tenantId, NOW_MS);
  return {
    tenant: async (id) => (id === tenant.id ? tenant : undefined),
    apiKey: async (tenantId, keyId) =>
      tenantId === issued.record.tenantId && keyId === issued.record.keyId
        ? { ...issued.record, ...(options.revoked && { revokedAtMs: NOW_MS }) }
        : undefined,
  };
}

describe('Function: parseApiKey', () => {
  it('splits a key it issued into tenant, key id and secret', () => {
    // Prepare
    const { apiKey, record } = newApiKey('acme-payments', NOW_MS);

    // Act
    const parsed = parseApiKey(apiKey);

    // Assess
    expect(parsed).toMatchObject({ tenantId: 'acme-payments', keyId: record.keyId });
    expect(parsed?.secret).toHaveLength(43);
    expect(apiKey).not.toContain(record.secretHash);
  });

  it.each([
    '',
    'tk_acme',
    'tk_acme_0123456789ab_short',
    'TK_acme_0123456789ab_' + 'a'.repeat(43),
    `tk_Acme_0123456789ab_${'a'.repeat(43)}`,
  ])('refuses %j', (text) => {
    expect(parseApiKey(text)).toBeUndefined();
  });
});

describe('Function: tenantIdProblem', () => {
  it.each(['acme', 'a', 'acme-payments-2', 'x'.repeat(32)])('accepts %j', (id) => {
    expect(tenantIdProblem(id)).toBeUndefined();
  });

  it.each(['', 'Acme', '-acme', 'acme-', 'ac_me', 'x'.repeat(33), 'ac me'])(
    'refuses %j, saying what an id may hold',
    (id) => {
      expect(tenantIdProblem(id)).toMatch(/lowercase letters, digits and hyphens/);
    },
  );
});

describe('Function: authenticate', () => {
  const issued = newApiKey('acme', NOW_MS);

  it('finds the tenant of a valid bearer key', async () => {
    // Act
    const result = await authenticate(directoryWith(issued), `Bearer ${issued.apiKey}`);

    // Assess
    expect(result).toMatchObject({ ok: true, tenant: { id: 'acme' }, keyId: issued.record.keyId });
  });

  it.each([
    ['no header', undefined, 'missing'],
    ['another scheme', `Basic ${issued.apiKey}`, 'missing'],
    ['a malformed key', 'Bearer tk_acme_nope', 'invalid'],
    ['an unknown key id', `Bearer ${issued.apiKey.replace(issued.record.keyId, '0000000000zz')}`, 'invalid'],
    ['a wrong secret', `Bearer ${issued.apiKey.slice(0, -2)}xx`, 'invalid'],
    ["the key under another tenant's name", `Bearer ${issued.apiKey.replace('tk_acme_', 'tk_globex_')}`, 'invalid'],
  ])('answers %s as %s', async (_case, header, reason) => {
    // Act & Assess
    expect(await authenticate(directoryWith(issued), header)).toEqual({ ok: false, reason });
  });

  it('refuses a revoked key the same way as a wrong one', async () => {
    // Act & Assess
    expect(await authenticate(directoryWith(issued, { revoked: true }), `Bearer ${issued.apiKey}`)).toEqual({
      ok: false,
      reason: 'invalid',
    });
  });
});

describe('Function: withRotatedSecret', () => {
  it('signs with old and new during the overlap, then only with the new', () => {
    // Prepare
    const tenant = newTenant('acme', NOW_MS);
    const [old] = activeSigningSecrets(tenant, NOW_MS);

    // Act
    const rotated = withRotatedSecret(tenant, NOW_MS, 24 * HOUR_MS);

    // Assess
    const during = activeSigningSecrets(rotated, NOW_MS + HOUR_MS);
    expect(during).toHaveLength(2);
    expect(during[0]).toBe(old);
    expect(activeSigningSecrets(rotated, NOW_MS + 25 * HOUR_MS)).toEqual([during[1]]);
    expect(rotated.version).toBe(tenant.version + 1);
  });

  it('drops retired secrets and never lengthens a retirement already set', () => {
    // Prepare
    const once = withRotatedSecret(newTenant('acme', NOW_MS), NOW_MS, HOUR_MS);

    // Act: a second rotation with a longer overlap, and a third after the first retirement.
    const twice = withRotatedSecret(once, NOW_MS + 1000, 24 * HOUR_MS);
    const thrice = withRotatedSecret(twice, NOW_MS + 2 * HOUR_MS, 0);

    // Assess
    expect(twice.signingSecrets.map((entry) => entry.retiresAtMs)).toEqual([
      NOW_MS + HOUR_MS,
      NOW_MS + 1000 + 24 * HOUR_MS,
      undefined,
    ]);
    expect(activeSigningSecrets(thrice, NOW_MS + 2 * HOUR_MS)).toEqual([thrice.signingSecrets.at(-1)?.secret]);
  });
});

describe('Function: cachedTenantDirectory', () => {
  function countingStore() {
    const tenant = newTenant('acme', NOW_MS);
    const getTenant = vi.fn(async (id: string, _options?: ReadOptions) => (id === 'acme' ? tenant : undefined));
    return { store: { getTenant, getApiKey: vi.fn(async () => undefined) } as unknown as TenantStore, getTenant };
  }

  it('reads each tenant once per TTL, including tenants that do not exist', async () => {
    // Prepare
    const { store, getTenant } = countingStore();
    const clock = new ManualClock(NOW_MS);
    const directory = cachedTenantDirectory(store, clock, 30_000);

    // Act
    await directory.tenant('acme');
    await directory.tenant('acme');
    await directory.tenant('nobody');
    await directory.tenant('nobody');
    clock.advance(30_001);
    await directory.tenant('acme');

    // Assess: a tenant is read eventually consistent; one not found is read once more, strongly, before it is remembered as missing.
    expect(getTenant.mock.calls.map(([id, options]) => [id, options?.consistent])).toEqual([
      ['acme', false],
      ['nobody', false],
      ['nobody', true],
      ['acme', false],
    ]);
  });

  it('finds a tenant created a moment ago that an eventually consistent read does not see yet', async () => {
    // Prepare: the replica an eventual read reaches has not seen the new tenant.
    const { store, getTenant } = countingStore();
    getTenant.mockImplementation(async (id, options) =>
      id === 'acme' && options?.consistent !== false ? newTenant('acme', NOW_MS) : undefined,
    );
    const directory = cachedTenantDirectory(store, new ManualClock(NOW_MS), 30_000);

    // Act
    const found = await directory.tenant('acme');

    // Assess
    expect(found?.id).toBe('acme');
  });

  it("still answers a real tenant's key from memory after a flood of 20,000 made-up key ids", async () => {
    // Prepare: a real key, read once.
    const issued = newApiKey('acme', NOW_MS);
    const getApiKey = vi.fn(async (tenantId: string, keyId: string, _options?: ReadOptions) =>
      tenantId === 'acme' && keyId === issued.record.keyId ? issued.record : undefined,
    );
    const { store } = countingStore();
    const directory = cachedTenantDirectory({ ...store, getApiKey }, new ManualClock(NOW_MS), 30_000);
    await directory.apiKey('acme', issued.record.keyId);

    // Act
    for (let index = 0; index < 20_000; index++) await directory.apiKey('acme', `made-up-${index}`);
    getApiKey.mockClear();
    const record = await directory.apiKey('acme', issued.record.keyId);

    // Assess
    expect(record).toEqual(issued.record);
    expect(getApiKey).not.toHaveBeenCalled();
  });

  it('does not remember a failed read', async () => {
    // Prepare
    const { store, getTenant } = countingStore();
    getTenant.mockRejectedValueOnce(new Error('throttled'));
    const directory = cachedTenantDirectory(store, new ManualClock(NOW_MS), 30_000);

    // Act
    await expect(directory.tenant('acme')).rejects.toThrow('throttled');
    const second = await directory.tenant('acme');

    // Assess
    expect(second?.id).toBe('acme');
    expect(getTenant).toHaveBeenCalledTimes(2);
  });
});
