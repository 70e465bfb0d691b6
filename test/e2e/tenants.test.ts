/**
 * Tenants over real HTTP in local mode: one tenant's key can neither observe nor touch
 * another's tasks, keys are checked on every route, and each tenant's request rate is
 * limited on its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { issueApiKey, newTenant } from '../../functions/core/tenants/tenants.js';
import type { LocalTimer } from '../../lib/local/runtime.js';
import { startTestTimer } from '../support/local-timer-fixture.js';

let timer: LocalTimer;
let otherKey: string;

beforeAll(async () => {
  timer = await startTestTimer();
  await timer.tenantStore.createTenant(newTenant('globex', Date.now()));
  const issued = await issueApiKey(timer.tenantStore, 'globex', Date.now());
  otherKey = issued.apiKey;
});

afterAll(async () => {
  await timer?.stop();
});

async function api(apiKey: string | undefined, method: string, path: string, body?: unknown) {
  const response = await fetch(`${timer.apiUrl}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      ...(apiKey !== undefined && { authorization: `Bearer ${apiKey}` }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

const aTask = (idempotencyKey?: string) => ({
  delaySeconds: 3600,
  target: { type: 'http', url: 'https://hooks.example.com/timer' },
  payload: { secret: 'only for the owner' },
  ...(idempotencyKey && { idempotencyKey }),
});

describe('End to end: tenant isolation', () => {
  it("answers another tenant's task id exactly as an unknown id, for reads and cancels, and leaves the task alone", async () => {
    // Prepare
    const created = await api(timer.apiKey, 'POST', '/v1/tasks', aTask());
    const id = String(created.body.id);
    const unknownId = `${id.slice(0, 12)}${'0'.repeat(14)}`;

    // Act
    const read = await api(otherKey, 'GET', `/v1/tasks/${id}`);
    const cancel = await api(otherKey, 'DELETE', `/v1/tasks/${id}`);
    const unknown = await api(otherKey, 'GET', `/v1/tasks/${unknownId}`);
    const owner = await api(timer.apiKey, 'GET', `/v1/tasks/${id}`);

    // Assess
    expect(read.status).toBe(404);
    expect(cancel.status).toBe(404);
    const shape = (body: Record<string, unknown>) => ({
      ...body,
      detail: String(body.detail).replace(/"[^"]+"/, '"…"'),
    });
    expect(shape(read.body)).toEqual(shape(unknown.body));
    expect(JSON.stringify(read.body)).not.toContain('only for the owner');
    expect(owner.body).toMatchObject({ id, status: 'PENDING', payload: { secret: 'only for the owner' } });
  });

  it('keeps idempotency keys apart: the same key from two tenants makes two tasks', async () => {
    // Act
    const ours = await api(timer.apiKey, 'POST', '/v1/tasks', aTask('order-42'));
    const theirs = await api(otherKey, 'POST', '/v1/tasks', aTask('order-42'));

    // Assess
    expect(ours.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(ours.body.id);
  });

  it('refuses a missing, forged or revoked key with 401 on every route', async () => {
    // Prepare: a key revoked before it was ever used, so no api cache can still hold it.
    const revoked = await issueApiKey(timer.tenantStore, 'globex', Date.now());
    await timer.tenantStore.revokeApiKey('globex', revoked.record.keyId, Date.now());
    // The last character of the secret changed, before `_<tag>`: the tag still vouches for the key id.
    const secretEnd = otherKey.length - 13;
    const forged = `${otherKey.slice(0, secretEnd)}${otherKey[secretEnd] === 'A' ? 'B' : 'A'}${otherKey.slice(secretEnd + 1)}`;

    // Act
    const answers = await Promise.all(
      [undefined, forged, revoked.apiKey, 'tk_dev_000000000000_short'].flatMap((key) => [
        api(key, 'POST', '/v1/tasks', aTask()),
        api(key, 'GET', '/v1/openapi.json'),
      ]),
    );

    // Assess
    expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(401));
    expect(answers.every((answer) => answer.headers.get('www-authenticate') === 'Bearer')).toBe(true);
  });

  it("limits each tenant's requests per second on its own", async () => {
    // Prepare
    await timer.tenantStore.createTenant(newTenant('tiny', Date.now(), { rateLimitPerSecond: 3 }));
    const tiny = await issueApiKey(timer.tenantStore, 'tiny', Date.now());

    // Act: ten requests at once, and the dev tenant's requests at the same time.
    const [limited, unaffected] = await Promise.all([
      Promise.all(Array.from({ length: 10 }, () => api(tiny.apiKey, 'GET', '/v1/openapi.json'))),
      Promise.all(Array.from({ length: 10 }, () => api(timer.apiKey, 'GET', '/v1/openapi.json'))),
    ]);

    // Assess: at most 3 a second get through (the burst may straddle a second boundary).
    const refused = limited.filter((answer) => answer.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(4);
    expect(refused.every((answer) => answer.headers.get('retry-after') === '1')).toBe(true);
    expect(unaffected.every((answer) => answer.status === 200)).toBe(true);
  });
});
