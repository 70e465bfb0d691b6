import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';

import { DynamoRequestCounter } from '../../functions/adapters/dynamo/request-counter.js';
import { tenantKey, tenantListingKey, tenantToItem } from '../../functions/adapters/dynamo/table-schema.js';
import { DynamoTenantStore } from '../../functions/adapters/dynamo/tenant-store.js';
import { newApiKey, newKeyring, newTenant, withRotatedSecret } from '../../functions/core/tenants/tenants.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';

const emulators = emulatorsFixture();
let store: DynamoTenantStore;
let counter: DynamoRequestCounter;

beforeAll(async () => {
  const options = { client: emulators.clients().dynamo, tableName: emulators.tableName };
  store = new DynamoTenantStore(options);
  counter = new DynamoRequestCounter(options);
});

const NOW_MS = Date.UTC(2026, 10, 21, 12);

describe('Class: DynamoTenantStore (on dynalite)', () => {
  it('creates a tenant once, lists it, and keeps its keys under it', async () => {
    // Prepare
    const tenant = newTenant('acme', NOW_MS, { allowedHosts: ['*.acme.example'] });
    const keyring = newKeyring(NOW_MS);
    const first = newApiKey(keyring, 'acme', NOW_MS, 'ci');
    const second = newApiKey(keyring, 'acme', NOW_MS);

    // Act
    const created = await store.createTenant(tenant);
    const again = await store.createTenant(newTenant('acme', NOW_MS + 1));
    await store.putApiKey(first.record);
    await store.putApiKey(second.record);
    const revoked = await store.revokeApiKey('acme', first.record.keyId, NOW_MS + 5);
    const revokedMissing = await store.revokeApiKey('acme', 'nosuchkey000', NOW_MS);

    // Assess
    expect([created, again, revoked, revokedMissing]).toEqual([true, false, true, false]);
    expect(await store.getTenant('acme')).toEqual(tenant);
    expect((await store.listTenants()).map((listed) => listed.id)).toContain('acme');
    const keys = await store.listApiKeys('acme');
    expect(keys.map((key) => key.keyId).sort()).toEqual([first.record.keyId, second.record.keyId].sort());
    expect(await store.getApiKey('acme', first.record.keyId)).toMatchObject({ label: 'ci', revokedAtMs: NOW_MS + 5 });
  });

  it('stores one keyring: a second maker is refused and reads the first', async () => {
    // Prepare: a key issued before the keyring, which carries no tag.
    const untagged = newApiKey(newKeyring(NOW_MS), 'initech', NOW_MS).record;
    const first = newKeyring(NOW_MS, [untagged]);

    // Act
    const before = await store.getKeyring();
    const created = await store.createKeyring(first);
    const again = await store.createKeyring(newKeyring(NOW_MS + 1));

    // Assess
    expect([before, created, again]).toEqual([undefined, true, false]);
    expect(await store.getKeyring()).toEqual(first);
    expect((await store.getKeyring())?.untaggedKeys).toEqual(new Set([`initech_${untagged.keyId}`]));
  });

  it('applies a change only over the version it was made from', async () => {
    // Prepare
    await store.createTenant(newTenant('globex', NOW_MS));
    const read = await store.getTenant('globex');
    if (!read) throw new Error('tenant missing');

    // Act: two rotations made from the same read race; only the first lands.
    const winner = await store.updateTenant(withRotatedSecret(read, NOW_MS, 1000));
    const loser = await store.updateTenant(withRotatedSecret(read, NOW_MS, 1000));

    // Assess
    expect([winner, loser]).toEqual([true, false]);
    expect((await store.getTenant('globex'))?.signingSecrets).toHaveLength(2);
  });
});

describe('Class: DynamoRequestCounter (on dynalite)', () => {
  it('admits up to the limit per tenant and second, and starts again the next second', async () => {
    // Act
    const first = await Promise.all(Array.from({ length: 8 }, () => counter.admit({ tenantId: 'acme' }, 1000, 5)));
    const other = await counter.admit({ tenantId: 'globex' }, 1000, 5);
    const next = await counter.admit({ tenantId: 'acme' }, 1001, 5);

    // Assess
    expect(first.filter(Boolean)).toHaveLength(5);
    expect([other, next]).toEqual([true, true]);
  });

  it('keeps each tenant in a partition of its own, which every instance reads, and only its id in the listing', async () => {
    // Prepare
    const { dynamo: client } = emulators.clients();
    const tenant = newTenant('hooli', NOW_MS);

    // Act
    await store.createTenant(tenant);
    const own = await client.send(new GetCommand({ TableName: emulators.tableName, Key: tenantKey('hooli') }));
    const entry = await client.send(new GetCommand({ TableName: emulators.tableName, Key: tenantListingKey('hooli') }));

    // Assess: the listing partition, which all tenants share, is not where a tenant is read.
    expect(own.Item).toMatchObject({ pk: 'TENANT#hooli', id: 'hooli', version: tenant.version });
    expect(entry.Item).toEqual({ pk: 'TENANTS', sk: 'hooli', id: 'hooli' });
    expect(await store.getTenant('hooli', { consistent: false })).toEqual(tenant);
  });

  it('reads a tenant stored whole in the listing, as before, keeps it on create, and moves it on its next change', async () => {
    // Prepare: the layout before each tenant had a partition of its own.
    const { dynamo: client } = emulators.clients();
    const old = newTenant('initrode', NOW_MS);
    await client.send(
      new PutCommand({
        TableName: emulators.tableName,
        Item: { ...tenantToItem(old), ...tenantListingKey('initrode') },
      }),
    );

    // Act
    const read = await store.getTenant('initrode');
    const listed = (await store.listTenants()).find((tenant) => tenant.id === 'initrode');
    const createdAgain = await store.createTenant(newTenant('initrode', NOW_MS + 1));
    const stale = await store.updateTenant({ ...old, name: 'stale', version: old.version + 2 });
    const changed = await store.updateTenant({ ...old, name: 'Initrode', version: old.version + 1 });
    const own = await client.send(new GetCommand({ TableName: emulators.tableName, Key: tenantKey('initrode') }));

    // Assess
    expect([read, listed]).toEqual([old, old]);
    expect([createdAgain, stale, changed]).toEqual([false, false, true]);
    expect(own.Item).toMatchObject({ name: 'Initrode', version: old.version + 1 });
    expect(await store.getTenant('initrode')).toMatchObject({ name: 'Initrode' });
    expect((await store.listTenants()).find((tenant) => tenant.id === 'initrode')).toMatchObject({ name: 'Initrode' });
  });
});
