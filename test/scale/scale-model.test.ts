/**
 * The scale model in npm test: a small 1/100 run of batched submits (scenario (b) of
 * `npm run scale`, in smaller batches at a fifth of its rate) with every limit on. Any DynamoDB throttle means
 * one key class (a single item, such as a counter every request writes) took more than its
 * partition's share: the hot-item regression the model exists to catch.
 */
import { describe, expect, it } from 'vitest';

import { runScaleScenario, type ScenarioResult } from '../../bench/scale-scenario.js';

const K = 100;
const TENANTS = { dev: 'ok', acme: 'ok' } as const;

/**
 * Two tenants, four batches of 25 each, one every 3 s; each task due 15 to 25 s after the start.
 * Batches of 25, not 100: on a busy machine a local batch of 100 can outlast the api's 10 s timeout.
 */
const tasks = Object.keys(TENANTS).flatMap((tenant) =>
  Array.from({ length: 100 }, (_, index) => ({
    tenant,
    submitAtMs: Math.floor(index / 25) * 3_000,
    dueAtMs: 15_000 + (index % 11) * 1_000,
  })),
);

describe('Scale model 1/100: batched submits', () => {
  it('throttles no key class, and delivers every task once, signed, and never early', async () => {
    // Act
    const result: ScenarioResult = await runScaleScenario(
      { name: 'test', tenants: TENANTS, submit: 'batch', tasks, runMs: 25_000, drainMs: 15_000 },
      { k: K },
    );

    // Assess
    const throttlesByKeyClass = Object.fromEntries(
      Object.entries(result.model.dynamodb.byKeyClass).map(([name, usage]) => [name, usage.throttles]),
    );
    expect(throttlesByKeyClass).toEqual(Object.fromEntries(Object.keys(throttlesByKeyClass).map((name) => [name, 0])));
    expect(result.model.dynamodb.tableThrottles).toEqual({ read: 0, write: 0 });
    for (const tenant of Object.values(result.tenants)) {
      // The whole tally in the message: a rejection shows whether 429s or 5xx answers came before it.
      expect(tenant, JSON.stringify(tenant)).toMatchObject({
        unsent: 0,
        rejected: 0,
        dueWithinRun: 100,
        lost: 0,
        early: 0,
        duplicates: 0,
      });
      expect(tenant.badSignatures).toBe(0);
    }
  }, 90_000);
});
