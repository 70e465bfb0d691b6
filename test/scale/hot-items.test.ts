/**
 * Invariant 8 as growth: no DynamoDB item's request rate may grow with the submission rate or
 * the number of tenants, unless its items are one per task (a task's own item, its request's
 * idempotency key). Each item class's busiest item and busiest partition key are measured at
 * LOW and at HIGH single submits a second over FEW tenants, and at LOW over MANY tenants; a class
 * that is clearly busier at the higher load grows with it, and at a billion timers a day (11,600
 * submits a second, thousands of tenants) passes DynamoDB's 1,000 writes or 3,000 reads a second
 * per item or key. One rate alone cannot tell a per-submit item from a per-instance one; two can,
 * as a slope.
 *
 * The fleet is this machine's, not the plan's: the HIGH run starts 25 to 62 api environments,
 * the LOW run 1 to 43 (more the busier the machine). What an environment asks once (in its init
 * and first invocation, and a first read it does not repeat: the clock, the KEYRING, a tenant and
 * its key, kept for their cache's 30 s) rises with the fleet, not the load, so it is judged
 * apart: its units per start on each class's busiest key, times the 100 environments a second
 * Lambda may add to a function, must stay under the partition's limit, the bound at any scale.
 * The rest (writes, and every read of what an environment reads more than once) must not grow.
 */
import { describe, expect, it } from 'vitest';

import { rampedAtMs, runScaleScenario } from '../../bench/scale-scenario.js';
import { AWS_LIMITS } from '../../functions/contract/aws-limits.js';

/** Item classes whose items are one per task or per request: many items, each asked for a few times. */
const PER_TASK = new Set(['B', 'IDEM']);
/**
 * 20, not 30: a busy machine's 120/s run reaches some 60 accepted in its busiest second, and the
 * slower run's busiest second overshoots its rate, so at 30 the two fell under twice the load.
 */
const LOW = 20;
const HIGH = 120;
const FEW = 10;
const MANY = 100;
/** Submits run this long, the first RAMP_SECONDS rising to the rate, so cold starts spread as a rising load spreads them. */
const SUBMIT_SECONDS = 5;
const RAMP_SECONDS = 3;
/** Tasks due after a run that are looked up by GET: enough to see they are kept, few enough to cost no time. */
const LOOKUPS_AFTER_RUN = 20;

/**
 * The busiest item of each class in requests a second (`item CLOCK`), and the busiest partition
 * key of each class in units a second (`key RATE write`: one key holds a tenant's counter share),
 * with `rate` single submits a second over `tenantCount` tenants.
 */
async function peakByClass(rate: number, tenantCount: number) {
  const tenants = Array.from({ length: tenantCount }, (_, index) => (index === 0 ? 'dev' : `tenant${index}`));
  const count = Math.round(rate * (SUBMIT_SECONDS - RAMP_SECONDS / 2));
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
      runMs: SUBMIT_SECONDS * 1000,
      drainMs: 0,
      lookupsAfterRun: LOOKUPS_AFTER_RUN,
    },
    // AWS's own limits (k = 1), so nothing throttles and every request is counted once.
    { k: 1 },
  );
  const tally = Object.values(result.tenants);
  const accepted = tally.reduce((sum, tenant) => sum + tenant.submitted - tenant.rejected, 0);
  const lost = tally.reduce((sum, tenant) => sum + tenant.lost, 0);
  const { hottestItemByClass, hottestKeyByClass, unitsPerStartByClass, startsByFunction } = result.model.dynamodb;
  const peaks: Record<string, number> = {
    ...Object.fromEntries(Object.entries(hottestItemByClass).map(([name, peak]) => [`item ${name}`, peak])),
    ...Object.fromEntries(
      Object.entries(hottestKeyByClass).flatMap(([name, byKind]) =>
        Object.entries(byKind).map(([kind, peak]) => [`key ${name} ${kind}`, peak]),
      ),
    ),
  };
  return {
    accepted,
    load: result.peakAcceptedPerSecond,
    lost,
    apiEnvironments: result.lambda.api?.environments ?? 0,
    peaks,
    unitsPerStartByClass,
    startsByFunction,
  };
}

/**
 * The load ratio the faster run must reach for a verdict: at twice the load, an item asked for
 * per submit is twice as busy while a flat one is not, and the threshold between them (at least
 * half as much again, plus the floor) clears the busiest second's jitter.
 */
const MIN_LOAD_RATIO = 2;

/**
 * The classes whose busiest item is clearly busier at the higher load: by more than the square
 * root of the load ratio (halfway, in proportion, between an item whose rate is its own and one
 * that grows with the load), and never by less than half as much again, plus 3 requests a second
 * for the busiest second's jitter. The load is the accepted submits in the busiest second, not
 * the planned rate, which a busy machine falls short of. The scanner's CLOCK writes, whose rate
 * is their own, stay at 1.
 */
function growing(
  low: { load: number; peaks: Record<string, number> },
  high: { load: number; peaks: Record<string, number> },
): Record<string, string> {
  const factor = Math.max(1.5, Math.sqrt(high.load / Math.max(1, low.load)));
  return Object.fromEntries(
    Object.entries(high.peaks)
      .filter(([name, peak]) => !PER_TASK.has(name.split(' ')[1] ?? '') && peak > (low.peaks[name] ?? 0) * factor + 3)
      .map(([name, peak]) => [name, `${low.peaks[name] ?? 0} → ${peak} a second`]),
  );
}

/** The most environments Lambda adds a second to one function. */
const STARTS_PER_SECOND = AWS_LIMITS.lambda.newEnvironmentsPer10Seconds / 10;
const PARTITION_LIMIT = {
  read: AWS_LIMITS.dynamodb.partitionReadUnitsPerSecond,
  write: AWS_LIMITS.dynamodb.partitionWriteUnitsPerSecond,
} as const;

/**
 * What environments' starts cost each class's busiest partition key at full scale: its units per
 * start (the most in any run) times the environments Lambda may add a second to each function.
 * Lambda adds no faster than that, however large the fleet or the load, so this is the bound.
 */
function startBounds(runs: ReadonlyArray<{ unitsPerStartByClass: Record<string, Record<'read' | 'write', number>> }>) {
  const classes = [...new Set(runs.flatMap((run) => Object.keys(run.unitsPerStartByClass)))].sort();
  return classes.flatMap((name) =>
    (['read', 'write'] as const).flatMap((kind) => {
      const perStart = Math.max(...runs.map((run) => run.unitsPerStartByClass[name]?.[kind] ?? 0));
      if (perStart === 0) return [];
      const bound = perStart * STARTS_PER_SECOND;
      return [{ name: `${name} ${kind}`, perStart, bound, over: bound >= PARTITION_LIMIT[kind] }];
    }),
  );
}

describe('Hot items: growth with the load', () => {
  it('has no item class, other than per-task items, whose busiest item grows with the submission rate or the tenant count', async () => {
    // Act
    const base = await peakByClass(LOW, FEW);
    const faster = await peakByClass(HIGH, FEW);
    const wider = await peakByClass(LOW, MANY);

    // Assess: the faster run carried enough more load for a verdict (a machine that falls behind
    // sends less, which would hide a slope, never invent one), and no class grew.
    const runs = [base, faster, wider];
    const classes = [...new Set(runs.flatMap((run) => Object.keys(run.peaks)))].sort();
    const bounds = startBounds(runs);
    const starts = (run: (typeof runs)[number]) =>
      Object.entries(run.startsByFunction)
        .map(([fn, count]) => `${fn} ${count}`)
        .join(', ');
    process.stdout.write(
      [
        `hot items after environments' starts, busiest second at ${LOW}/s ${FEW} tenants | ${HIGH}/s | ${MANY} tenants (accepted ${runs.map((run) => run.accepted).join(' | ')}, at most ${runs.map((run) => run.load).join(' | ')} a second, api environments ${runs.map((run) => run.apiEnvironments).join(' | ')}):`,
        ...classes.map((name) => `  ${name}: ${runs.map((run) => run.peaks[name] ?? 0).join(' | ')}`),
        `environments' starts (${runs.map(starts).join(' | ')}), busiest key's units per start, at ${STARTS_PER_SECOND} starts a second per function:`,
        ...bounds.map(
          ({ name, perStart, bound }) =>
            `  ${name}: ${perStart.toFixed(2)} a start, at most ${bound.toFixed(0)} a second of ${PARTITION_LIMIT[name.endsWith('read') ? 'read' : 'write']}`,
        ),
      ].join('\n') + '\n',
    );
    expect(faster.load, 'the faster run reached too little of its rate for a verdict').toBeGreaterThanOrEqual(
      MIN_LOAD_RATIO * base.load,
    );
    expect([base.lost, faster.lost, wider.lost]).toEqual([0, 0, 0]);
    expect(bounds.filter((bound) => bound.over).map((bound) => bound.name)).toEqual([]);
    expect({ withRate: growing(base, faster), withTenants: growing(base, wider) }).toEqual({
      withRate: {},
      withTenants: {},
    });
  }, 90_000);
});
