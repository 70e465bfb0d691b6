/**
 * Invariant 8 as growth: no DynamoDB item's request rate may grow with the submission rate or
 * the number of tenants, unless its items are one per task (a task's own item, its request's
 * idempotency key). Each item class's busiest item is measured at 50 and at 200 single submits
 * a second over 10 tenants, and at 50 a second over 100 tenants; a class whose busiest item takes
 * clearly more requests a second at the higher load grows with it, and at a billion timers a day
 * (11,600 submits a second, thousands of tenants) passes DynamoDB's 1,000 writes or 3,000 reads
 * a second per item. One rate alone cannot tell a per-submit item from a per-instance one; two
 * can, as a slope.
 */
import { describe, expect, it } from 'vitest';

import { rampedAtMs, runScaleScenario } from '../../bench/scale-scenario.js';

/** Item classes whose items are one per task or per request: many items, each asked for a few times. */
const PER_TASK = new Set(['B', 'IDEM']);
const SUBMIT_SECONDS = 10;
/** Rises to the rate over this long, so the api's cold starts are spread as a rising load spreads them. */
const RAMP_SECONDS = 4;

/**
 * The busiest item of each class in requests a second (`item CLOCK`), and the busiest partition
 * key of each class in units a second (`key TENANTS read`: one key holds every tenant's item),
 * with `rate` single submits a second over `tenantCount` tenants.
 */
async function peakByClass(
  rate: number,
  tenantCount: number,
): Promise<{ accepted: number; peaks: Record<string, number> }> {
  const tenants = Array.from({ length: tenantCount }, (_, index) => (index === 0 ? 'dev' : `tenant${index}`));
  const count = Math.round(rate * SUBMIT_SECONDS);
  // Due an hour out: the growth measured is the submits', not the deliveries'.
  const tasks = Array.from({ length: count }, (_, index) => {
    const submitAtMs = rampedAtMs(index, rate, RAMP_SECONDS);
    return { tenant: tenants[index % tenantCount] ?? '', submitAtMs, dueAtMs: submitAtMs + 3_600_000 };
  });
  const result = await runScaleScenario(
    {
      name: `growth-${rate}-${tenantCount}`,
      tenants: Object.fromEntries(tenants.map((tenant) => [tenant, 'ok' as const])),
      submit: 'single',
      tasks,
      runMs: (SUBMIT_SECONDS + RAMP_SECONDS) * 1000,
      drainMs: 0,
    },
    // AWS's own limits (k = 1), so nothing throttles and every request is counted once.
    { k: 1 },
  );
  const accepted = Object.values(result.tenants).reduce((sum, tenant) => sum + tenant.submitted - tenant.rejected, 0);
  const { hottestItemByClass, hottestKeyByClass } = result.model.dynamodb;
  const peaks = {
    ...Object.fromEntries(Object.entries(hottestItemByClass).map(([name, peak]) => [`item ${name}`, peak])),
    ...Object.fromEntries(
      Object.entries(hottestKeyByClass).flatMap(([name, peaks]) =>
        Object.entries(peaks).map(([kind, peak]) => [`key ${name} ${kind}`, peak]),
      ),
    ),
  };
  return { accepted, peaks };
}

/**
 * The classes whose busiest item takes more than half as much again (and 3 requests a second
 * more) at the higher load: a load 4 or 10 times the lower one makes a per-submit or per-tenant
 * item several times busier, while an item with a rate of its own stays within noise.
 */
function growing(low: Record<string, number>, high: Record<string, number>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(high)
      .filter(([name, peak]) => !PER_TASK.has(name.split(' ')[1] ?? '') && peak > (low[name] ?? 0) * 1.5 + 3)
      .map(([name, peak]) => [name, `${low[name] ?? 0} → ${peak} a second`]),
  );
}

describe('Hot items: growth with the load', () => {
  it('has no item class, other than per-task items, whose busiest item grows with the submission rate or the tenant count', async () => {
    // Act
    const base = await peakByClass(50, 10);
    const faster = await peakByClass(200, 10);
    const wider = await peakByClass(50, 100);

    // Assess: the faster run carried at least twice the load (a machine that falls behind sends
    // less, which would hide a slope, never invent one), and no class grew.
    process.stdout.write(
      `hot items by class: 50/s 10 tenants ${JSON.stringify(base)}; 200/s ${JSON.stringify(faster)}; 100 tenants ${JSON.stringify(wider)}\n`,
    );
    expect(faster.accepted).toBeGreaterThanOrEqual(2 * base.accepted);
    expect({ withRate: growing(base.peaks, faster.peaks), withTenants: growing(base.peaks, wider.peaks) }).toEqual({
      withRate: {},
      withTenants: {},
    });
  }, 240_000);
});
