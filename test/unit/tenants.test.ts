import { describe, expect, it, vi } from 'vitest';

import {
  activeSigningSecrets,
  type ApiKeyRecord,
  authenticate,
  cachedTenantDirectory,
  issueApiKey,
  type Keyring,
  keyringOf,
  newApiKey,
  newKeyring,
  newTenant,
  parseApiKey,
  type ReadOptions,
  type Tenant,
  TENANT_CACHE_TTL_MS,
  type TenantDirectory,
  tenantIdProblem,
  type TenantStore,
  withRotatedSecret,
} from '../../functions/core/tenants/tenants.js';
import { ManualClock } from './fakes.js';

const NOW_MS = Date.UTC(2026, 10, 21, 12, 0, 0);
const HOUR_MS = 3_600_000;
const KEYRING = newKeyring(NOW_MS);

function directoryWith(
  issued: ReturnType<typeof newApiKey>,
  options: { revoked?: boolean; keyring?: Keyring } = {},
): TenantDirectory {
  const tenant = newTenant(issued.record.tenantId, NOW_MS);
  return {
    keyring: async () => options.keyring ?? KEYRING,
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
    const { apiKey, record } = newApiKey(KEYRING, 'acme-payments', NOW_MS);

    // Act
    const parsed = parseApiKey(apiKey);

    // Assess
    expect(parsed).toMatchObject({ tenantId: 'acme-payments', keyId: record.keyId });
    expect(parsed?.secret).toHaveLength(43);
    expect(parsed?.tag).toHaveLength(11);
    expect(apiKey).not.toContain(record.secretHash);
  });

  it('splits a key issued before tags, which has none', () => {
    // Prepare
    const { apiKey } = newApiKey(KEYRING, 'acme', NOW_MS);
    const untagged = apiKey.slice(0, -12);

    // Act
    const parsed = parseApiKey(untagged);

    // Assess
    expect(parsed).toMatchObject({ tenantId: 'acme', secret: parseApiKey(apiKey)?.secret });
    expect(parsed?.tag).toBeUndefined();
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
  const issued = newApiKey(KEYRING, 'acme', NOW_MS);
  const secretEnd = issued.apiKey.length - 13;

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
    [
      'a wrong secret',
      `Bearer ${issued.apiKey.slice(0, secretEnd - 1)}xx${issued.apiKey.slice(secretEnd + 1)}`,
      'invalid',
    ],
    ['a wrong tag', `Bearer ${issued.apiKey.slice(0, -2)}xx`, 'invalid'],
    ['a key of another keyring', `Bearer ${newApiKey(newKeyring(NOW_MS), 'acme', NOW_MS).apiKey}`, 'invalid'],
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

  it('keeps two keys apart whose tenant and key id would read alike joined into one text', async () => {
    // Prepare: the store has a key under each pair.
    const getApiKey = vi.fn(async (tenantId: string, keyId: string) => ({ tenantId, keyId }));
    const store = { getTenant: vi.fn(), getApiKey } as unknown as TenantStore;
    const directory = cachedTenantDirectory(store, new ManualClock(NOW_MS), 30_000);

    // Act
    const first = await directory.apiKey('a#b', 'c');
    const second = await directory.apiKey('a', 'b#c');

    // Assess
    expect(first).toMatchObject({ tenantId: 'a#b', keyId: 'c' });
    expect(second).toMatchObject({ tenantId: 'a', keyId: 'b#c' });
  });

  it("still answers a real tenant's key from memory after a flood of 20,000 made-up key ids", async () => {
    // Prepare: a real key, read once.
    const issued = newApiKey(KEYRING, 'acme', NOW_MS);
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

/** Tenants and keys in memory, counting every read the api's path could make. */
class CountingTenantStore implements TenantStore {
  readonly tenants = new Map<string, Tenant>();
  readonly keys = new Map<string, ApiKeyRecord>();
  keyringRecord: Keyring | undefined;
  reads = { tenant: 0, apiKey: 0, keyring: 0, lists: 0 };

  async createTenant(tenant: Tenant) {
    if (this.tenants.has(tenant.id)) return false;
    this.tenants.set(tenant.id, tenant);
    return true;
  }
  async getTenant(id: string) {
    this.reads.tenant++;
    return this.tenants.get(id);
  }
  async listTenants() {
    this.reads.lists++;
    return [...this.tenants.values()];
  }
  async updateTenant(tenant: Tenant) {
    this.tenants.set(tenant.id, tenant);
    return true;
  }
  async putApiKey(record: ApiKeyRecord) {
    this.keys.set(`${record.tenantId}#${record.keyId}`, record);
  }
  async getApiKey(tenantId: string, keyId: string) {
    this.reads.apiKey++;
    return this.keys.get(`${tenantId}#${keyId}`);
  }
  async listApiKeys(tenantId: string) {
    this.reads.lists++;
    return [...this.keys.values()].filter((key) => key.tenantId === tenantId);
  }
  async revokeApiKey(tenantId: string, keyId: string, nowMs: number) {
    const key = this.keys.get(`${tenantId}#${keyId}`);
    if (key) this.keys.set(`${tenantId}#${keyId}`, { ...key, revokedAtMs: nowMs });
    return key !== undefined;
  }
  async getKeyring() {
    this.reads.keyring++;
    return this.keyringRecord;
  }
  async createKeyring(keyring: Keyring) {
    if (this.keyringRecord) return false;
    this.keyringRecord = keyring;
    return true;
  }
}

/** A key text that parses, for a key id nobody issued: `tag` says whether it carries a (made-up) tag. */
function madeUpKey(index: number, tag: boolean): string {
  const keyId = [...index.toString(32).padStart(12, '0')]
    .map((digit) => '0123456789abcdefghjkmnpqrstvwxyz'[parseInt(digit, 32)])
    .join('');
  return `tk_acme_${keyId}_${'s'.repeat(43)}${tag ? `_${'t'.repeat(11)}` : ''}`;
}

describe('Function: authenticate under a flood of made-up keys', () => {
  const FLOOD = 20_000;

  async function tenantWithKey() {
    const store = new CountingTenantStore();
    await store.createTenant(newTenant('acme', NOW_MS));
    const issued = await issueApiKey(store, 'acme', NOW_MS);
    const directory = cachedTenantDirectory(store, new ManualClock(NOW_MS), TENANT_CACHE_TTL_MS);
    expect(await authenticate(directory, `Bearer ${issued.apiKey}`)).toMatchObject({ ok: true });
    store.reads = { tenant: 0, apiKey: 0, keyring: 0, lists: 0 };
    return { store, issued, directory };
  }

  it('refuses 20,000 distinct well-formed made-up keys without a single read', async () => {
    // Prepare: a real tenant whose key was used once, so the keyring is loaded.
    const { store, directory } = await tenantWithKey();

    // Act: half look like keys from before tags, half carry a tag nobody issued.
    const answers = new Set<string>();
    for (let index = 0; index < FLOOD; index++) {
      const result = await authenticate(directory, `Bearer ${madeUpKey(index, index % 2 === 1)}`);
      answers.add(result.ok ? 'ok' : result.reason);
    }

    // Assess
    expect([...answers]).toEqual(['invalid']);
    expect(store.reads).toEqual({ tenant: 0, apiKey: 0, keyring: 0, lists: 0 });
  });

  it("still serves a real tenant's key from memory after the flood", async () => {
    // Prepare
    const { store, issued, directory } = await tenantWithKey();
    for (let index = 0; index < FLOOD; index++) {
      await authenticate(directory, `Bearer ${madeUpKey(index, index % 2 === 1)}`);
    }
    store.reads = { tenant: 0, apiKey: 0, keyring: 0, lists: 0 };

    // Act
    const result = await authenticate(directory, `Bearer ${issued.apiKey}`);

    // Assess
    expect(result).toMatchObject({ ok: true, keyId: issued.record.keyId });
    expect(store.reads).toEqual({ tenant: 0, apiKey: 0, keyring: 0, lists: 0 });
  });
});

describe('Function: keyringOf', () => {
  it('lists the live keys issued before it, which keep working untagged; revoked ones and later untagged ones do not', async () => {
    // Prepare: two keys from before tags (the text then ended with the secret), one of them revoked.
    const store = new CountingTenantStore();
    await store.createTenant(newTenant('acme', NOW_MS));
    const before = newApiKey(KEYRING, 'acme', NOW_MS);
    const revoked = newApiKey(KEYRING, 'acme', NOW_MS);
    for (const { record } of [before, revoked]) await store.putApiKey(record);
    await store.revokeApiKey('acme', revoked.record.keyId, NOW_MS);
    const untagged = (issued: typeof before) => `Bearer ${issued.apiKey.slice(0, -12)}`;

    // Act: the first use makes the keyring; then a key reaches the table without a tag, as an older CLI would write it.
    const directory = cachedTenantDirectory(store, new ManualClock(NOW_MS), TENANT_CACHE_TTL_MS);
    const old = await authenticate(directory, untagged(before));
    const later = newApiKey(KEYRING, 'acme', NOW_MS);
    await store.putApiKey(later.record);
    const afterKeyring = await authenticate(directory, untagged(later));
    const revokedAnswer = await authenticate(directory, untagged(revoked));

    // Assess
    expect(old).toMatchObject({ ok: true, keyId: before.record.keyId });
    expect([afterKeyring, revokedAnswer]).toEqual([
      { ok: false, reason: 'invalid' },
      { ok: false, reason: 'invalid' },
    ]);
    expect(store.keyringRecord?.untaggedKeys).toEqual(new Set([`acme_${before.record.keyId}`]));
  });

  it('answers the keyring another maker stored first', async () => {
    // Prepare: another instance stores its keyring between this one's read and its write.
    const store = new CountingTenantStore();
    const theirs = newKeyring(NOW_MS);
    const create = store.createKeyring.bind(store);
    store.createKeyring = async (keyring) => (await create(theirs)) && create(keyring);

    // Act
    const ours = await keyringOf(store, NOW_MS);

    // Assess
    expect(ours).toBe(theirs);
  });
});
