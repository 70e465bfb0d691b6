/** The run behind `npm run scale` (bench/scale.ts says what it does), loaded once its flags are read. */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';

import { format, resolveConfig } from 'prettier';

import { SCHEDULE_SHARES } from '../functions/adapters/dynamo/table-schema.js';
import { AWS_LIMITS } from '../functions/contract/aws-limits.js';
import { DEFAULT_SETTINGS, type TimerSettings } from '../functions/contract/topology.js';
import { MAX_SCHEDULES_PER_TENANT } from '../functions/core/schedules/schedules.js';
import { measuredQuotas } from '../lib/construct/plan/measured-quotas.js';
import { fmt, markdownTable } from '../lib/construct/plan/table-format.js';
import { SHARD_KEY_CLASSES, tablePartitions } from '../lib/local/limits/dynamodb-throughput.js';
import { scaledLambdaLimits } from '../lib/local/limits/scale-model.js';
import type { BenchReport } from './render.js';
import { progress } from './report.js';
import { flags } from './scale-flags.js';
import {
  hottestFraction,
  type PlannedSchedule,
  type PlannedTask,
  rampedAtMs,
  runScaleScenario,
  type ScenarioResult,
  type ScenarioSpec,
  type TargetKind,
  throttledRequests,
} from './scale-scenario.js';
import type { WebhookBehaviour } from './webhook-receiver.js';
const HOT_SECOND_ONLY = flags['hot-second'] ?? false;

const K = Number(flags.k ?? (HOT_SECOND_ONLY ? 10 : 100));
const QUICK = flags.quick ?? false;
const TASKS_PER_DAY = 1e9;
/** The tasks due in the busiest second, at full scale. */
const PEAK_PER_SECOND = 20_000;
const RATE = TASKS_PER_DAY / 86_400 / K;
/** How long tasks are submitted for, in scenarios (a), (b) and (d). */
const SUBMIT_SECONDS = QUICK ? 30 : 120;
/**
 * Submits rise linearly from nothing to the average rate over this long, as a day's traffic
 * rises, instead of stepping onto a deployment whose every function is cold: a step makes each
 * of the api's first instances a cold start at once (in the model, its whole scaled reservation
 * in the first second), which a deployment already carrying this load never meets.
 */
const RAMP_SECONDS = 20;
/** The share of tasks due "in a few minutes": soon enough to come due within the run and be measured. */
const WITHIN_RUN_SHARE = Number(flags['within-run'] ?? 0.3);
/** The "few minutes" delays run from 5 s to this, so the last of them falls due this long after submits end. */
const SOON_MAX_SECONDS = QUICK ? 30 : 120;
const HOT_SECOND_TASKS = Math.max(1, Math.round(PEAK_PER_SECOND / K));
/** The hot second falls due this long after its first submit, time enough to submit it all. */
const HOT_SECOND_LEAD_SECONDS = QUICK ? 15 : 30;
/** Deliveries may arrive this long after the last measured due time before the missing ones count as lost. */
const DRAIN_SECONDS = QUICK ? 30 : 60;

const log = (line: string) => process.stderr.write(`${line}\n`);

/**
 * The deployment the model runs: sized by `npm run plan` for the same shape, every submit a
 * single task (the most API requests and api invocations), so its stage throttle, api
 * reservation and raised quotas are the ones a deployer following the plan would have.
 */
const benchReport = JSON.parse(await readFile('docs/benchmarks.json', 'utf8')) as BenchReport;
const QUOTAS = measuredQuotas(benchReport, {
  perDay: TASKS_PER_DAY,
  peakPerSecond: PEAK_PER_SECOND,
  tasksPerApiRequest: 1,
});
/**
 * Keys a design constant spreads (SHARD_KEY_CLASSES) are measured at k ≤ 10, where a hot second
 * puts enough tasks on each for their counts to mean something (issue 23's item 6). Beyond it they
 * are judged from arithmetic at full scale: the hot second created in one second (as a flash sale
 * makes it) puts its share of 20,000 creates on each task key, and as many index entries on each
 * byBizType key when one bizType takes them all; a tenant's schedules at their limit, every one
 * firing every second, write their shares (scheduleShareFractionAtFullScale).
 */
const JUDGE_SHARD_KEYS = K <= 10;
/** The deployment's shards, over which the hot second's creates are judged at full scale. */
const SHARD_COUNT = DEFAULT_SETTINGS.shardCount;
/**
 * The shards the model runs with. Where shard keys are measured, the deployment's: a key's load
 * and its limit are then both divided by k. Above k = 10, where they are judged at full scale
 * instead, the shards are divided by k too (1 at 1/100): the scanner Queries every shard of every
 * second, 80 Queries a second whatever the load, so with the deployment's shards the model's
 * scanner made its full-scale rate of requests, and read units (at least one a Query), for a
 * hundredth of the tasks, on the event loop every function shares.
 */
const MODEL_SHARD_COUNT = JUDGE_SHARD_KEYS ? SHARD_COUNT : Math.max(1, Math.round(SHARD_COUNT / K));
/**
 * The deployment's settings: dense mode, as a billion a day is priced (`npm run bench:requests`
 * measures it) and as docs/configuration.md advises above about 230,000 single submits a day, on
 * MODEL_SHARD_COUNT shards. The sparse occupancy index's items are watched for growth by
 * test/scale/hot-items.test.ts.
 */
const SETTINGS: Partial<TimerSettings> = { tickEverySecond: true, shardCount: MODEL_SHARD_COUNT };
/** A stored task's bytes as the long-horizon bench measured them, plus DynamoDB's 100 bytes of overhead. */
const storedTasks = benchReport.longHorizon.storage.byKind.B;
const TASK_BYTES = (storedTasks ? storedTasks.bytes / storedTasks.items : 1024) + 100;
/** The partitions of a table holding a billion tasks a day for `retentionDays`, at its raised throughput. */
const PARTITIONS = tablePartitions({
  bytes: TASKS_PER_DAY * DEFAULT_SETTINGS.retentionDays * TASK_BYTES,
  writeUnitsPerSecond: QUOTAS.tableWriteUnitsPerSecond,
  readUnitsPerSecond: QUOTAS.tableReadUnitsPerSecond,
});
/** How long an invocation lasts in the model, by function, where the plan sizes it by a cloud duration rather than this machine's. */
const CLOUD_DURATION_MS: Partial<Record<string, number>> = scaledLambdaLimits(K, QUOTAS).cloudDurationMs ?? {};
const quotaLine = `Deployment as \`npm run plan -- --per-day 1e9 --peak 20000\` sizes it for single submits: API stage throttle ${fmt(QUOTAS.apiThrottle.rateLimit)}/s (burst ${fmt(QUOTAS.apiThrottle.burstLimit)}), api reserved concurrency ${fmt(QUOTAS.apiReservedConcurrency)}, and AWS quotas raised to ${fmt(QUOTAS.apiGatewayRequestsPerSecond)} API requests/s, ${fmt(QUOTAS.lambdaConcurrency)} concurrent executions, ${fmt(QUOTAS.tableWriteUnitsPerSecond)} table write units/s and ${fmt(QUOTAS.tableReadUnitsPerSecond)} table read units/s; all divided by k.`;

/** A seeded generator (mulberry32), so two runs submit the same plan. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * The due-time mix: WITHIN_RUN_SHARE of tasks in a few minutes (5 s to SOON_MAX_SECONDS), the
 * rest split between half an hour (± 1 minute) and a day (± 1 hour). Only the first come due
 * within a run of minutes; the others are the load that a day's traffic keeps in the table.
 */
function delayMs(next: () => number): number {
  const pick = next();
  if (pick < WITHIN_RUN_SHARE) return 5_000 + next() * (SOON_MAX_SECONDS - 5) * 1000;
  if (pick < WITHIN_RUN_SHARE + (1 - WITHIN_RUN_SHARE) / 2) return 30 * 60_000 + (next() * 2 - 1) * 60_000;
  return 86_400_000 + (next() * 2 - 1) * 3_600_000;
}

/** Tasks a batch submit carries. */
const BATCH_SIZE = 100;

/**
 * Tasks at the average rate over SUBMIT_SECONDS (after a ramp of RAMP_SECONDS). Single submits
 * go round-robin over the tenants. In batches, each run of a hundred tasks is one tenant's batch,
 * sent when its hundredth task is ready, and the batches go round-robin: at full scale some 116
 * batches a second arrive from callers that do not wait for each other, so batches are spread
 * over time. Round-robin by task would have every tenant fill its batch at the same moment, and
 * put all their batches into one second of every few, a burst of several times the average
 * rate that only the model's division of the rate by k creates.
 */
function averageRate(tenants: readonly string[], submit: 'single' | 'batch', seed: number): PlannedTask[] {
  const next = random(seed);
  const count = Math.round(RATE * SUBMIT_SECONDS);
  const perTenantTurn = submit === 'single' ? 1 : BATCH_SIZE;
  const planned = Array.from({ length: count }, (_, index) => {
    const readyAtMs = rampedAtMs(index, RATE, RAMP_SECONDS);
    const tenant = tenants[Math.floor(index / perTenantTurn) % tenants.length] ?? '';
    return { tenant, readyAtMs, dueAtMs: readyAtMs + delayMs(next) };
  });
  if (submit === 'single')
    return planned.map(({ tenant, readyAtMs, dueAtMs }) => ({ tenant, submitAtMs: readyAtMs, dueAtMs }));
  return planned.map((task, index) => {
    const lastOfBatch = planned[Math.min(count - 1, Math.floor(index / BATCH_SIZE) * BATCH_SIZE + BATCH_SIZE - 1)];
    const submitAtMs = lastOfBatch?.readyAtMs ?? task.readyAtMs;
    return { tenant: task.tenant, submitAtMs, dueAtMs: Math.max(task.dueAtMs, submitAtMs + 5_000) };
  });
}

const HEALTHY: Record<string, WebhookBehaviour> = { dev: 'ok', acme: 'ok', globex: 'ok' };

/** Scenario (e)'s tenants: `dev` and 99 more, each with its own key, secret and webhook path. */
const STEADY_TENANT_COUNT = Number(flags.tenants ?? 100);
const STEADY_TENANTS: Record<string, WebhookBehaviour> = Object.fromEntries(
  Array.from({ length: STEADY_TENANT_COUNT }, (_, index) => [
    index === 0 ? 'dev' : `t${String(index).padStart(3, '0')}`,
    'ok',
  ]),
);
/**
 * (e)'s submits rise to the average rate over a minute, not (a)-(d)'s 20 s: the callback's event
 * source mapping starts at 5/k batches and adds 300/k a minute, and here a batch of 100 takes 1 to
 * 3 s, so the mapping needs about a minute to reach what the full rate needs. With the 20 s ramp,
 * deliveries outran it from 20 s in and the quick run measured that cold start's backlog
 * throughout (p50 lateness 20 to 50 s in every span), not a steady state.
 */
const STEADY_RAMP_SECONDS = 60;
/** Every task of (e) falls due 5 s to this long after it is ready, so the run sees them all come due. */
const STEADY_MAX_DELAY_SECONDS = QUICK ? 20 : 50;
/** (e) submits at the average rate (after the ramp) until this long after its start. */
const STEADY_SUBMIT_END_SECONDS = QUICK ? 120 : 240;
/**
 * From the ramp's end plus the longest delay, every second's due tasks were submitted at the full
 * rate; until the submits end plus the shortest delay, every second is fully covered.
 */
const STEADY_WINDOW = {
  fromMs: (STEADY_RAMP_SECONDS + STEADY_MAX_DELAY_SECONDS) * 1000,
  toMs: (STEADY_SUBMIT_END_SECONDS + 5) * 1000,
};
/** (e)'s hot second: minute 2 of the full run; in --quick, 100 s in, inside its shorter steady window. */
const STEADY_HOT_SECOND_AT = QUICK ? 100 : 120;
const STEADY_TARGET_SHARES: ReadonlyArray<readonly [TargetKind, number]> = [
  ['sqs', 0.1],
  ['eventbridge', 0.1],
];
const BIZ_TYPES = ['order.expiry', 'cart.reminder', 'invoice.due', 'trial.end', 'session.timeout'];
/**
 * Schedules: each tenant keeps the per-tenant limit divided by k (1,000 / k), since one tenant's
 * schedules share its schedule partition keys (SCHEDULE_SHARES), whose limit the model divides by k. Those of the first
 * STEADY_SECOND_SCHEDULE_TENANTS tenants fire every second (the SCHEDULES key's worst case at the
 * limit); the rest every minute, their minutes spread over its seconds. Every tenant at a second
 * would be 1,000/k × 100 occurrences a second, some nine times the task rate, which this machine does not carry.
 */
const SCHEDULES_PER_TENANT = Math.max(1, Math.round(MAX_SCHEDULES_PER_TENANT / K));
/**
 * The tenants that keep schedules. In --quick a sample of 10: with all 100, the first run's 1,000
 * creates in 20 s (and their retries) took the api's whole scaled reservation on this machine, and
 * its batches waited a minute to be accepted; and a minute's schedule fires once or twice in a quick run.
 */
const SCHEDULE_TENANT_COUNT = Math.min(STEADY_TENANT_COUNT, QUICK ? 10 : STEADY_TENANT_COUNT);
const STEADY_SECOND_SCHEDULE_TENANTS = Math.min(2, SCHEDULE_TENANT_COUNT);
/** Schedules fire from this long after the start, once the last is created. */
const SCHEDULES_FROM_SECONDS = 25;
/** The receiver's concurrency per host (each tenant's path): 100 / k, at least 4; each request takes 10 ms to answer. */
const RECEIVER_LIMITS = { concurrencyPerHost: Math.max(4, Math.ceil(100 / K)), serviceMs: 10 };

/**
 * (e): the average rate in batches over many tenants, every task due 5 s to STEADY_MAX_DELAY_SECONDS
 * after it is ready, so once the ramp and the longest delay are past as many tasks fall due each
 * second as are submitted, with the hot second on top; a share of the tasks go to SQS and EventBridge.
 */
function steadyState(tenants: readonly string[], seed: number): PlannedTask[] {
  const next = random(seed);
  const count = Math.round(RATE * (STEADY_SUBMIT_END_SECONDS - STEADY_RAMP_SECONDS / 2));
  const targetOf = (): TargetKind => {
    let pick = next();
    for (const [kind, share] of STEADY_TARGET_SHARES) {
      if (pick < share) return kind;
      pick -= share;
    }
    return 'http';
  };
  const planned = Array.from({ length: count }, (_, index) => {
    const readyAtMs = rampedAtMs(index, RATE, STEADY_RAMP_SECONDS);
    const tenant = tenants[Math.floor(index / BATCH_SIZE) % tenants.length] ?? '';
    const dueAtMs = readyAtMs + 5_000 + next() * (STEADY_MAX_DELAY_SECONDS - 5) * 1000;
    return { tenant, readyAtMs, dueAtMs, target: targetOf() };
  });
  const steady = planned.map((task, index) => {
    const lastOfBatch = planned[Math.min(count - 1, Math.floor(index / BATCH_SIZE) * BATCH_SIZE + BATCH_SIZE - 1)];
    const submitAtMs = lastOfBatch?.readyAtMs ?? task.readyAtMs;
    return {
      tenant: task.tenant,
      submitAtMs,
      dueAtMs: Math.max(task.dueAtMs, submitAtMs + 5_000),
      target: task.target,
    };
  });
  const hotSubmitAtMs = (STEADY_HOT_SECOND_AT - HOT_SECOND_LEAD_SECONDS) * 1000;
  const hot = Array.from({ length: HOT_SECOND_TASKS }, (_, index) => ({
    // Each hundred is one tenant's batch, from tenants the steady batches are not using then.
    tenant: tenants[(Math.floor(index / BATCH_SIZE) + Math.floor(tenants.length / 2)) % tenants.length] ?? '',
    submitAtMs: hotSubmitAtMs,
    dueAtMs: STEADY_HOT_SECOND_AT * 1000,
    target: targetOf(),
    group: 'hot second',
  }));
  return [...steady, ...hot].map((task, index) => ({
    ...task,
    bizType: BIZ_TYPES[index % BIZ_TYPES.length] ?? '',
    bizId: `e-${index}`,
  }));
}

/** Schedules are created evenly over this long from the start, each tenant's taking turns with the others'. */
const SCHEDULES_CREATED_WITHIN_MS = 20_000;

/** (e)'s schedules: SCHEDULES_PER_TENANT for each of the first SCHEDULE_TENANT_COUNT tenants. */
function steadySchedules(tenants: readonly string[], runMs: number): PlannedSchedule[] {
  const keeping = tenants.slice(0, SCHEDULE_TENANT_COUNT);
  const total = keeping.length * SCHEDULES_PER_TENANT;
  return keeping.flatMap((tenant, tenantIndex) =>
    Array.from({ length: SCHEDULES_PER_TENANT }, (_, index) => {
      const everySecond = tenantIndex < STEADY_SECOND_SCHEDULE_TENANTS;
      const offset = everySecond ? 0 : (tenantIndex * SCHEDULES_PER_TENANT + index) % 60;
      return {
        tenant,
        rate: everySecond ? '1 second' : '1 minute',
        everyMs: everySecond ? 1000 : 60_000,
        createAtMs: ((index * keeping.length + tenantIndex) * SCHEDULES_CREATED_WITHIN_MS) / total,
        startAtMs: (SCHEDULES_FROM_SECONDS + offset) * 1000,
        endAtMs: runMs,
        bizType: 'schedule',
        bizId: `e-schedule-${tenant}-${index}`,
      };
    }),
  );
}
const steadyRunMs = (STEADY_SUBMIT_END_SECONDS + STEADY_MAX_DELAY_SECONDS + 1) * 1000;
/** The ramp's tasks take twice as long as at the full rate, so the submits end RAMP_SECONDS / 2 late. */
const averageRunMs = (SUBMIT_SECONDS + RAMP_SECONDS / 2 + SOON_MAX_SECONDS) * 1000;

const allScenarios: Array<ScenarioSpec & { readonly title: string }> = [
  {
    name: 'a',
    title: `(a) single submits at the average rate, ${fmt(RATE, 1)}/s`,
    tenants: HEALTHY,
    submit: 'single',
    tasks: averageRate(Object.keys(HEALTHY), 'single', 1),
    runMs: averageRunMs,
    drainMs: DRAIN_SECONDS * 1000,
  },
  {
    name: 'b',
    title: `(b) batches of 100 at the average rate, ${fmt(RATE, 1)}/s`,
    tenants: HEALTHY,
    submit: 'batch',
    tasks: averageRate(Object.keys(HEALTHY), 'batch', 2),
    runMs: averageRunMs,
    drainMs: DRAIN_SECONDS * 1000,
  },
  {
    name: 'c',
    title: `(c) ${fmt(HOT_SECOND_TASKS)} tasks due in one second`,
    tenants: HEALTHY,
    submit: 'batch',
    tasks: Array.from({ length: HOT_SECOND_TASKS }, (_, index) => ({
      tenant: Object.keys(HEALTHY)[index % 3] ?? '',
      submitAtMs: 0,
      dueAtMs: HOT_SECOND_LEAD_SECONDS * 1000,
    })),
    runMs: HOT_SECOND_LEAD_SECONDS * 1000,
    drainMs: DRAIN_SECONDS * 1000,
  },
  {
    name: 'd',
    title: `(d) batches at the average rate over four tenants; hanging's webhook never answers`,
    tenants: { ...HEALTHY, hanging: 'hang' },
    submit: 'batch',
    tasks: averageRate([...Object.keys(HEALTHY), 'hanging'], 'batch', 4),
    runMs: averageRunMs,
    drainMs: DRAIN_SECONDS * 1000,
  },
  {
    name: 'e',
    title: `(e) steady state: batches at ${fmt(RATE, 1)}/s all due within the run, over ${fmt(STEADY_TENANT_COUNT)} tenants, with ${fmt(HOT_SECOND_TASKS)} due at ${STEADY_HOT_SECOND_AT} s, schedules, SQS and EventBridge targets`,
    tenants: STEADY_TENANTS,
    submit: 'batch',
    tasks: steadyState(Object.keys(STEADY_TENANTS), 5),
    runMs: steadyRunMs,
    drainMs: DRAIN_SECONDS * 1000,
    schedules: steadySchedules(Object.keys(STEADY_TENANTS), steadyRunMs),
    receiver: RECEIVER_LIMITS,
    steadyWindowMs: STEADY_WINDOW,
  },
];
const chosen = HOT_SECOND_ONLY ? ['c'] : flags.only?.split(',').map((name) => name.trim());
const unknown = chosen?.filter((name) => !allScenarios.some((spec) => spec.name === name)) ?? [];
if (unknown.length > 0) throw new Error(`--only: no scenario ${unknown.join(', ')}; choose from a, b, c, d, e`);
const scenarios = chosen ? allScenarios.filter((spec) => chosen.includes(spec.name)) : allScenarios;

const ms = (value: number) => (Number.isNaN(value) ? '–' : fmt(value));

/** Tenants listed one a row; a scenario with more shows the first few and sums up the rest in one row. */
const TENANT_ROWS = 5;

function tenantTable(result: ScenarioResult): string {
  const entries = Object.entries(result.tenants);
  const shown = entries.length > TENANT_ROWS + 1 ? entries.slice(0, TENANT_ROWS) : entries;
  const rest = entries.slice(shown.length).map(([, t]) => t);
  const sum = (pick: (t: ScenarioResult['tenants'][string]) => number) => rest.reduce((total, t) => total + pick(t), 0);
  const worst = (pick: (t: ScenarioResult['tenants'][string]) => number) =>
    Math.max(...rest.map((t) => (Number.isNaN(pick(t)) ? 0 : pick(t))));
  const othersRow =
    rest.length === 0
      ? []
      : [
          [
            `${rest.length} others`,
            [...new Set(rest.map((t) => t.webhook))].join(', '),
            sum((t) => t.unsent),
            sum((t) => t.submitted),
            sum((t) => t.api429),
            sum((t) => t.api5xx),
            sum((t) => t.rejected),
            sum((t) => t.dueWithinRun),
            sum((t) => t.delivered),
            sum((t) => t.lost),
            sum((t) => t.checkedAfterRun),
            sum((t) => t.early),
            sum((t) => t.duplicates),
            sum((t) => t.badSignatures),
            sum((t) => t.attempts),
            `≤ ${ms(worst((t) => t.latenessMs.p50))}`,
            `≤ ${ms(worst((t) => t.latenessMs.p99))}`,
          ],
        ];
  return markdownTable(
    [
      'tenant',
      'webhook',
      'unsent',
      'submitted',
      '429s',
      '5xx',
      'rejected',
      'due in run',
      'delivered',
      'lost',
      'checked after run',
      'early',
      'duplicate',
      'bad signature',
      'attempts',
      'p50 late ms',
      'p99 late ms',
    ],
    [
      ...shown.map(([id, t]) => [
        id,
        t.webhook,
        t.unsent,
        t.submitted,
        t.api429,
        t.api5xx,
        t.rejected,
        t.dueWithinRun,
        t.delivered,
        t.lost,
        t.checkedAfterRun,
        t.early,
        t.duplicates,
        t.badSignatures,
        t.attempts,
        ms(t.latenessMs.p50),
        ms(t.latenessMs.p99),
      ]),
      ...othersRow,
    ],
  );
}

/** What only (e) has: deliveries by target, the steady window, the schedules and the receiver's host cap. */
function steadyLines(result: ScenarioResult): string[] {
  const { steady, schedules, receiver, byTarget, byGroup } = result;
  const targets = Object.entries(byTarget)
    .map(
      ([kind, t]) =>
        `${kind} ${t.delivered} of ${t.dueWithinRun} (lost ${t.lost}, early ${t.early}, p50 ${ms(t.latenessMs.p50)} ms, p99 ${ms(t.latenessMs.p99)} ms, max ${ms(t.latenessMs.max)} ms)`,
    )
    .join('; ');
  const perSecond = (counts: { mean: number; min: number; max: number }) =>
    `mean ${fmt(counts.mean, 1)}, min ${fmt(counts.min)}, max ${fmt(counts.max)}`;
  const groups = Object.entries(byGroup).map(
    ([group, t]) =>
      `- ${group}: ${t.delivered} of ${t.dueWithinRun} delivered (lost ${t.lost}, early ${t.early}), lateness p50 ${ms(t.latenessMs.p50)} ms, p99 ${ms(t.latenessMs.p99)} ms, max ${ms(t.latenessMs.max)} ms`,
  );
  return [
    ...(Object.keys(byTarget).length > 1 ? [`- delivered by target: ${targets}`] : []),
    ...groups,
    ...(steady
      ? [
          `- steady window ${steady.fromS}–${steady.toS} s: tasks planned due per second ${perSecond(steady.plannedDuePerSecond)}; first arrivals per second ${perSecond(steady.deliveredPerSecond)} (the max is the hot second's)`,
          `- lateness by due time (10 s spans from the start, p50/max ms): ${steady.latenessByDueSpan.map((span) => `${span.fromS} s ${ms(span.p50)}/${ms(span.max)}`).join(', ')}`,
        ]
      : []),
    ...(schedules
      ? [
          `- schedules: ${schedules.created} of ${schedules.planned} created (${schedules.refused} refused${
            Object.keys(schedules.refusedBecause).length > 0
              ? `: ${Object.entries(schedules.refusedBecause)
                  .map(([reason, count]) => `${count} × ${reason}`)
                  .join('; ')}`
              : ''
          }, ${schedules.api429} 429s, ${schedules.api5xx} 5xx); occurrences due within the run ${schedules.occurrencesDue} (${schedules.beforeCreated} more planned fell before their schedule's create was answered), delivered ${schedules.delivered}, lost ${schedules.lost}, early ${schedules.early}, duplicate ${schedules.duplicates}, unexpected ${schedules.unexpected}, bad signature ${schedules.badSignatures}; lateness p50 ${ms(schedules.latenessMs.p50)} ms, p99 ${ms(schedules.latenessMs.p99)} ms, max ${ms(schedules.latenessMs.max)} ms; by rate: ${Object.entries(
            schedules.byRate,
          )
            .map(
              ([rate, r]) =>
                `every ${rate.replace(/^1 /, '')} ${r.delivered} of ${r.occurrencesDue} (p50 ${ms(r.latenessMs.p50)} ms, p99 ${ms(r.latenessMs.p99)} ms)`,
            )
            .join(', ')}`,
          ...(schedules.lostSample.length > 0
            ? [
                `- lost occurrences (s from the start: due, its schedule's create answered): ${schedules.lostSample
                  .map((lost) => `every ${lost.rate.replace(/^1 /, '')} ${lost.dueS}/${lost.createdS}`)
                  .join(', ')}`,
              ]
            : []),
        ]
      : []),
    ...(receiver
      ? [
          `- webhook hosts (each tenant's path one host): cap ${receiver.concurrencyPerHost} at once, ${receiver.serviceMs} ms an answer; peak ${receiver.peakConcurrency} at once, ${receiver.waited} requests waited (at most ${receiver.peakWaiting} at once, longest ${fmt(receiver.maxWaitMs)} ms)`,
        ]
      : []),
  ];
}

function modelLines(result: ScenarioResult): string[] {
  const { dynamodb, api, sqs } = result.model;
  const classes = Object.entries(dynamodb.byKeyClass).sort(([a], [b]) => a.localeCompare(b));
  const hottest = dynamodb.hottestKey;
  const lambdaThrottles = Object.entries(result.lambda)
    .map(
      ([fn, stats]) =>
        `${fn} ${stats.throttles} throttled (${stats.scalingThrottles} for new environments), ${stats.timeouts} timed out, peak ${stats.peakConcurrency}${
          CLOUD_DURATION_MS[fn] === undefined
            ? ''
            : ` at ${fmt(CLOUD_DURATION_MS[fn])} ms an invocation (this machine: peak ${stats.machinePeakConcurrency})`
        }, mean ${fmt(stats.invocations && stats.durationMs / stats.invocations)} ms`,
    )
    .join('; ');
  const queues = Object.entries(sqs.queues)
    .map(
      ([url, usage]) =>
        `${url.slice(url.lastIndexOf('/') + 1)} peak ${usage.peakInFlight}/${fmt(sqs.inFlightCap)} (${usage.receivesAtCap} receives at the cap, ${usage.visibilityRefusals} visibility refusals)`,
    )
    .join(', ');
  return [
    `- DynamoDB throttled requests by key class: ${classes.map(([name, usage]) => `${name} ${usage.throttles}`).join(', ')}; table ${dynamodb.tableThrottles.read} reads and ${dynamodb.tableThrottles.write} writes (limits per key ${fmt(dynamodb.limits.partitionWrite)} WCU/s, ${fmt(dynamodb.limits.partitionRead)} RCU/s)${
      JUDGE_SHARD_KEYS
        ? ''
        : `; over their limit and let through, keys a design constant spreads being judged at full scale above k = 10: ${classes
            .filter(([name]) => SHARD_KEY_CLASSES.has(name))
            .map(([name, usage]) => `${name} ${usage.overLimit}`)
            .join(', ')}`
    }`,
    `- table's busiest second: ${fmt(dynamodb.tablePeakUnitsPerSecond.write, 1)} of ${fmt(dynamodb.limits.tableWrite)} write units, ${fmt(dynamodb.tablePeakUnitsPerSecond.read, 1)} of ${fmt(dynamodb.limits.tableRead)} read units`,
    `- hottest partition key: ${
      hottest
        ? `${hottest.index ? `index ${hottest.index} ` : ''}${hottest.value} (${hottest.kind}), ${fmt(hottest.peakUnitsPerSecond, 1)} units/s = ${fmt(hottest.fractionOfLimit * 100)}% of its limit`
        : 'none'
    }`,
    `- partitions (keys hashed into ${fmt(dynamodb.collisions?.partitions ?? 0)}): ${
      dynamodb.collisions
        ? `busiest at ${fmt(dynamodb.collisions.hottestFractionOfLimit * 100)}% of its limit; ${dynamodb.collisions.sharedSeconds} partition-seconds shared by two or more keys, at most ${dynamodb.collisions.mostKeysInOneSecond} keys in one, the busiest shared one ${fmt(dynamodb.collisions.peakSharedUnitsPerSecond, 1)} units/s (${dynamodb.collisions.busiestShared?.keys.join(', ') ?? ''})`
        : 'every key its own'
    }${
      JUDGE_SHARD_KEYS
        ? ''
        : `; without the task-shard keys (judged at full scale, see the summary), the hottest key or partition is at ${fmt(hottestFraction(result, false) * 100)}%`
    }`,
    `- hottest item: ${
      dynamodb.hottestItem
        ? `${dynamodb.hottestItem.key}, ${fmt(dynamodb.hottestItem.peakRequestsPerSecond)} requests in its busiest second`
        : 'none'
    }`,
    `- API Gateway: ${api.throttled} of ${api.requests} requests answered 429 (${fmt(api.ratePerSecond)}/s, burst ${fmt(api.burst)}); submits answered for good in p50 ${ms(result.submitMs.p50)} ms, p99 ${ms(result.submitMs.p99)} ms, max ${ms(result.submitMs.max)} ms (retries included), at most ${fmt(result.peakAcceptedPerSecond)} tasks accepted in one second`,
    `- Lambda: ${lambdaThrottles}`,
    `- SQS in flight: ${queues}`,
    `- EventBridge PutEvents: ${result.model.eventBridge.throttled} of ${result.model.eventBridge.requests} requests throttled (${fmt(result.model.eventBridge.entriesPerSecond)} entries/s; busiest second ${fmt(result.model.eventBridge.peakEntriesPerSecond)})`,
    ...steadyLines(result),
    `- this process's event loop held up: p99 ${fmt(result.eventLoopDelayMs.p99)} ms, longest ${fmt(result.eventLoopDelayMs.max)} ms`,
    `- latest deliveries (lateness, accepted how long before due): ${
      result.latest
        .map((late) => {
          const retried = late.attempt > 1 ? `, attempt ${late.attempt} after: ${late.earlierErrors?.join('; ')}` : '';
          return `${fmt(late.latenessMs)} ms (${fmt(late.leadMs / 1000, 1)} s${retried})`;
        })
        .join(', ') || 'none'
    }`,
  ];
}

function scenarioMarkdown(result: ScenarioResult, title: string): string {
  return [`### ${title}`, '', `${fmt(result.seconds)} s.`, '', tenantTable(result), '', ...modelLines(result), ''].join(
    '\n',
  );
}

interface Summary {
  readonly throttled: number;
  readonly lost: number;
  readonly early: number;
  /** The worst scenario's p99 lateness over the answering webhooks. */
  readonly p99LatenessMs: number;
  /** The hottest key's or partition's busiest second, as a fraction of its limit, over every scenario. */
  readonly hottestFraction: number;
}

/** A key or partition this close to its limit fails the verdict: at 100% with no throttle the model was lucky. */
const HOT_FRACTION = 0.9;
const SHARD_KEY_FRACTION_AT_FULL_SCALE =
  (PEAK_PER_SECOND * Math.ceil(TASK_BYTES / 1024)) / SHARD_COUNT / AWS_LIMITS.dynamodb.partitionWriteUnitsPerSecond;
/**
 * A tenant's schedule shares at full scale: MAX_SCHEDULES_PER_TENANT schedules firing every
 * second, each occurrence writing its schedule once (at the write units the run's SCHEDULES keys
 * took per occurrence delivered or schedule created), over SCHEDULE_SHARES keys.
 */
function scheduleShareFractionAtFullScale(results: readonly ScenarioResult[]): number {
  const measured = results.flatMap((result) => {
    const keys = result.model.dynamodb.byKeyClass.SCHEDULES;
    return keys && result.schedules
      ? [{ units: keys.writeUnits, writes: result.schedules.delivered + result.schedules.created }]
      : [];
  });
  const writes = measured.reduce((sum, { writes: count }) => sum + count, 0);
  if (writes === 0) return 0;
  const unitsPerWrite = measured.reduce((sum, { units }) => sum + units, 0) / writes;
  return (
    (MAX_SCHEDULES_PER_TENANT * unitsPerWrite) / SCHEDULE_SHARES / AWS_LIMITS.dynamodb.partitionWriteUnitsPerSecond
  );
}
/** On time, by invariant 3. */
const P99_LATENESS_LIMIT_MS = 1000;
const { mappingInitialConcurrency: MAPPING_START, mappingScaleUpPerMinute: MAPPING_RAMP } = AWS_LIMITS.lambda;

/** Why the run fails, if it does. */
function failures(summary: Summary): string[] {
  return [
    summary.throttled > 0 && `${summary.throttled} throttled`,
    summary.lost > 0 && `${summary.lost} lost`,
    summary.early > 0 && `${summary.early} early`,
    summary.p99LatenessMs >= P99_LATENESS_LIMIT_MS && `p99 lateness ${Math.round(summary.p99LatenessMs)} ms`,
    summary.hottestFraction >= HOT_FRACTION && `hottest key at ${fmt(summary.hottestFraction * 100)}% of its limit`,
  ].filter((reason): reason is string => reason !== false);
}

function summarise(results: readonly ScenarioResult[]): Summary {
  const healthy = results.flatMap((result) => Object.values(result.tenants).filter((t) => t.webhook === 'ok'));
  const all = results.flatMap((result) => Object.values(result.tenants));
  const schedules = results.flatMap((result) => (result.schedules ? [result.schedules] : []));
  const p99 = (latenessMs: { p99: number }) => (Number.isNaN(latenessMs.p99) ? 0 : latenessMs.p99);
  return {
    throttled: results.reduce((sum, result) => sum + throttledRequests(result), 0),
    lost: [...healthy, ...schedules].reduce((sum, t) => sum + t.lost, 0),
    early: [...all, ...schedules].reduce((sum, t) => sum + t.early, 0),
    p99LatenessMs: Math.max(...[...healthy, ...schedules].map((t) => p99(t.latenessMs))),
    hottestFraction: Math.max(
      JUDGE_SHARD_KEYS ? 0 : SHARD_KEY_FRACTION_AT_FULL_SCALE,
      JUDGE_SHARD_KEYS ? 0 : scheduleShareFractionAtFullScale(results),
      ...results.map((result) => hottestFraction(result, JUDGE_SHARD_KEYS)),
    ),
  };
}

const METHOD = `## Method

A 1/${K} scale model of AWS's limits (docs/local-mode.md, "A scale model of AWS's limits") runs in
front of dynalite and fauxqs: DynamoDB's per-partition-key and per-table units, SQS's in-flight cap,
API Gateway's stage throttle, and Lambda's concurrency (the account pool, reservations and event
source mapping caps divided by ${K}, at least 1). The load is divided by ${K} as well: a billion
tasks a day is ${fmt(RATE, 1)} submits a second. Time is not scaled. The timer runs in dense mode
(\`tickEverySecond\`), as the plan prices a billion a day.

${quotaLine} AWS's default quotas (10,000 API requests a second, 1,000 concurrent executions,
40,000 table write units a second) do not carry a billion single submits a day: docs/limits.md says
what to request.

Each scenario runs on a fresh local timer (so the model's report is its own); (a) to (d) with tenants \`dev\`,
\`acme\` and \`globex\`, each with its own API key and its own path on a local webhook receiver that
checks every arrival's Standard Webhooks signature against that tenant's secret and compares its
arrival with the task's \`dueAt\`. Submits answered 429 or 5xx are retried up to 5 times with
exponential backoff, as a client would, and counted. A request more than 5 s behind its planned
time is not sent at all and counted as unsent: the machine running the model fell behind, and
sending late would measure a lower rate than the one planned.

Due times: ${fmt(WITHIN_RUN_SHARE * 100)}% of tasks fall due in 5 s to ${SOON_MAX_SECONDS} s (the only ones
that come due within a run of minutes, and so the ones measured), the rest half an hour (± 1 min)
or a day (± 1 h) out: load the table keeps, not load the run delivers. Submits rise linearly to the
average rate over the first ${RAMP_SECONDS} s, as a day's traffic rises, rather than step onto a deployment
whose functions are all cold. A ${SUBMIT_SECONDS} s submit window at ${fmt(RATE, 1)}/s so measures about
${fmt(RATE * SUBMIT_SECONDS * WITHIN_RUN_SHARE)} deliveries per scenario.
In batches, every hundred tasks are one tenant's batch, the tenants taking turns, so batches arrive
spread out as those of a full-scale fleet of callers do; a task is never due sooner than 5 s after
its batch is sent. The hot second (c) is ${fmt(HOT_SECOND_TASKS)} tasks submitted at once, due
${HOT_SECOND_LEAD_SECONDS} s later. In (d) a fourth tenant, \`hanging\`, gets a quarter of the tasks and
its webhook never answers, so every attempt waits out the ${DEFAULT_SETTINGS.webhookTimeoutMs / 1000} s
webhook timeout and is retried.

(e) is a steady state. ${fmt(STEADY_TENANT_COUNT)} tenants (\`dev\` and ${fmt(STEADY_TENANT_COUNT - 1)} more, each with its own
API key, secret and webhook path) submit batches of 100 at ${fmt(RATE, 1)}/s (after a ramp of ${STEADY_RAMP_SECONDS} s, longer than (a) to (d)'s: the callback's event source mapping starts at
${fmt(MAPPING_START / K, 2)} batches and adds ${fmt(MAPPING_RAMP / K, 1)} a minute, and here a batch of 100 takes 1 to 3 s, so it needs about a
minute to reach what the full rate needs; with a 20 s ramp the quick run measured that cold start's backlog
throughout, p50 lateness 20 to 50 s) until
${STEADY_SUBMIT_END_SECONDS} s, and every task falls due 5 s to ${STEADY_MAX_DELAY_SECONDS} s after it is ready, drawn uniformly, so
all of them come due within the run and are measured. From ${STEADY_WINDOW.fromMs / 1000} s (the ramp and the longest delay past)
to ${STEADY_WINDOW.toMs / 1000} s (the last submits and the shortest delay), as many tasks fall due each second as are
submitted: the report gives the planned and the delivered counts per second in that window. On top,
${fmt(HOT_SECOND_TASKS)} tasks (the hot second of (c)) fall due at ${STEADY_HOT_SECOND_AT} s${QUICK ? ' (minute 2 in the full run; in --quick 100 s, inside its shorter window)' : ' (minute 2)'}, submitted
${HOT_SECOND_LEAD_SECONDS} s before in ${fmt(Math.ceil(HOT_SECOND_TASKS / BATCH_SIZE))} batches of up to 100, each one tenant's. Every task carries a bizType (one of ${BIZ_TYPES.length}) and a bizId of its
own; ${STEADY_TARGET_SHARES.map(([kind, share]) => `${fmt(share * 100)}% go to ${kind === 'sqs' ? 'an SQS queue' : 'an EventBridge bus'}`).join(' and ')} instead of the
tenant's webhook. The harness reads the queue straight from fauxqs (lateness by each message's
SentTimestamp) and the local EventBridge sink's events (by their arrival); EventBridge's PutEvents
quota (${fmt(AWS_LIMITS.eventBridge.putEventsPerSecond)} entries a second in us-east-1) is divided by k like the rest.
${SCHEDULE_TENANT_COUNT === STEADY_TENANT_COUNT ? 'Each tenant' : `The first ${SCHEDULE_TENANT_COUNT} tenants (a sample in --quick: all ${fmt(STEADY_TENANT_COUNT)} tenants' creates in 20 s, with their retries, took the api's whole scaled reservation on a 2-core machine, and a minute's schedule fires only once or twice in a quick run) each`} create${SCHEDULE_TENANT_COUNT === STEADY_TENANT_COUNT ? 's' : ''} ${fmt(SCHEDULES_PER_TENANT)} schedules (POST /v1/schedules, at most 4 at once) in the first ${SCHEDULES_CREATED_WITHIN_MS / 1000} s: the per-tenant limit
of ${fmt(MAX_SCHEDULES_PER_TENANT)} divided by k, since a tenant's schedules share its ${SCHEDULE_SHARES} schedule partition keys, whose limit
the model divides by k. The first ${STEADY_SECOND_SCHEDULE_TENANTS} tenants' schedules fire every second from ${SCHEDULES_FROM_SECONDS} s, the worst case of those keys;
the others' fire every minute, spread over its seconds (every tenant at one a second would be
${fmt(SCHEDULES_PER_TENANT * STEADY_TENANT_COUNT)} occurrences a second, more than this machine carries beside the tasks). Each occurrence
is found by its schedule id and occurrence time, and judged like a task: lost, early, duplicate,
lateness. A schedule fires from its creation on, so occurrences are due from the first one its
create's answer names; those planned before it (a create answered after its startAt) are counted apart.
The receiver caps each tenant's host (its path) at ${RECEIVER_LIMITS.concurrencyPerHost} requests at once (100/k, at
least 4), each answered after ${RECEIVER_LIMITS.serviceMs} ms; requests over the cap wait their turn, and the report gives the peak.

Lost: due within the run and never reached the receiver by ${DRAIN_SECONDS} s after the last measured
due time, or accepted, due after the run, and not found by GET once it ended; in (e), also a
schedule's occurrence due within the run that never arrived. Early: reached it
before its \`dueAt\`. Duplicate: reached it again after it answered 2xx. Lateness: first arrival
minus \`dueAt\`. Throttled: requests the model refused (DynamoDB, every key class and the table;
API Gateway's 429s; invocations Lambda throttled for concurrency or new environments, listed per
function; SQS's OverLimit receives and visibility refusals; EventBridge's PutEvents throttles) and
submits or schedule creates answered 5xx or refused.
The DynamoDB model hashes keys into the ${fmt(PARTITIONS)} partitions of a table holding a billion
tasks a day for ${DEFAULT_SETTINGS.retentionDays} days; a key or partition at ${fmt(HOT_FRACTION * 100)}% of its limit
or more fails the run, as does a p99 lateness of ${fmt(P99_LATENESS_LIMIT_MS)} ms or more. Task-shard keys (the buckets'
\`B#\` keys and the byBizType index's) take what the design's ${SHARD_COUNT} shards deal them, and a tenant's
\`SCHEDULES#\` keys what its ${SCHEDULE_SHARES} shares hold, constants the model does not divide by k: at 1/100 a
handful of tasks or schedules falls on each, and one more in a second is a tenth of its limit. They are judged
measured at k ≤ 10, and above it at full scale, from the hot second (${fmt(PEAK_PER_SECOND)} creates in one second
dealt over the shards) and from a tenant's ${fmt(MAX_SCHEDULES_PER_TENANT)} schedules all firing every second; there the
model meters them but does not refuse them, and the partitions are judged without them.${
  JUDGE_SHARD_KEYS
    ? ''
    : ` There, too, the
model runs ${SHARD_COUNT}/k shards (${MODEL_SHARD_COUNT} at 1/${K}): the scanner Queries every shard of every second, so
with ${SHARD_COUNT} it made the deployment's full rate of Queries, and their read units, for 1/k of the tasks.`
}

## What the model leaves out

- **Lambda's separate machines.** Local mode runs every function on one Node.js event loop, beside
  the load (the webhook receivers have a process of their own, as the emulators do), on a machine of ${cpus().length} cores. A pause of that loop (a garbage collection,
  a busy second) holds every invocation at once, and the requests that queued meanwhile start
  together: a burst of concurrency no fleet of separate environments would see. So the api's
  concurrency is counted as a rate: the invocations started in each second times the
  ${fmt(QUOTAS.apiSecondsPerRequest * 1000)} ms the plan sizes the reservation with (its measured CPU at Lambda's share of a vCPU,
  and its calls at cloud latencies), not the invocations this machine had running; the
  machine's own peak is shown beside it. The other functions' concurrency is this machine's: the scanner's and the
  sweeper's invocations come one a tick, and the callback's are the mapping's to cap.
- **The cloud's latencies.** Every DynamoDB and SQS call goes through the model's proxy to dynalite or
  fauxqs on the same cores: milliseconds to tens of milliseconds, against about 6 and 12 ms in the
  cloud, so invocations last longer, and hold more concurrency, than the plan assumes.
- **A warm deployment.** Each scenario starts cold: the callback's event source mapping at its first
  ${fmt(MAPPING_START / K, 2)} batches (one, at least) and adding ${fmt(MAPPING_RAMP / K, 1)} a minute, as AWS adds ${MAPPING_START} and ${MAPPING_RAMP} to a new
  mapping. A deployment carrying a billion a day has scaled already. In (d) the hanging webhook meets
  that cold mapping: each call to it holds its invocation for the webhook timeout (calls are never
  abandoned, so a receiver is never called twice for one attempt), and with one to three batches in
  flight that holds back every tenant until each environment's circuit breaker has learned.
- **Constants that do not scale.** Limits are divided by ${K}; the design's own counts are not (80
  shards, 32 occupancy slots, up to 64 counter shares a tenant, 100 records a callback batch). A key
  whose load a constant bounds (a second's scanner runs, at most one per slot) weighs ${K} times as
  much against its limit here. And a callback batch is ${K} times as large a share of the load: where
  a billion a day keeps dozens of batches in flight, each invocation's pauses (waiting out its
  records' due times, or held by a hanging call) filled by the others', the model at ${K} keeps a
  few at most, and at 100 one: a pause then holds up every delivery behind it. Much of (d)'s
  lateness is this.
- **Sparse mode.** The default occupancy index is not run at this rate; its items are held to the
  growth test (\`test/scale/hot-items.test.ts\`), which runs the defaults.
- **What AWS does not publish.** Partition splits for heat, adaptive capacity, SQS's internal
  throughput and API Gateway's own latency are not modelled: a key is throttled at its documented
  limit, never earlier or later.
`;

const startedAt = new Date();
log(`scale model 1/${K}${QUICK ? ' (quick)' : ''}: ${fmt(RATE, 1)} tasks/s, ${scenarios.length} scenarios`);
log(quotaLine);
const results: ScenarioResult[] = [];
for (const spec of scenarios) {
  const result = await runScaleScenario(spec, {
    k: K,
    quotas: QUOTAS,
    partitions: PARTITIONS,
    shardKeysLimited: JUDGE_SHARD_KEYS,
    settings: SETTINGS,
    showProgress: (status) => progress(`scenario ${spec.name}`, status),
  });
  results.push(result);
  process.stdout.write(`\n${scenarioMarkdown(result, spec.title)}\n`);
}
const summary = summarise(results);
const report = {
  startedAt: startedAt.toISOString(),
  k: K,
  quick: QUICK,
  ratePerSecond: RATE,
  withinRunShare: WITHIN_RUN_SHARE,
  submitSeconds: SUBMIT_SECONDS,
  summary,
  scenarios: results,
};
const markdown = [
  `# Scale model 1/${K}`,
  '',
  `Run ${startedAt.toISOString()}${QUICK ? ' (--quick)' : ''}. Generated by \`npm run scale\`.`,
  '',
  METHOD,
  '## Results',
  '',
  ...results.map((result, index) => scenarioMarkdown(result, scenarios[index]?.title ?? result.name)),
  `Summary: throttled ${summary.throttled}, lost ${summary.lost}, early ${summary.early}, worst p99 lateness ${fmt(summary.p99LatenessMs)} ms, hottest key ${fmt(summary.hottestFraction * 100)}% of its limit${JUDGE_SHARD_KEYS ? '' : ` (task-shard keys, B and byBizType, judged at full scale: ${fmt(SHARD_KEY_FRACTION_AT_FULL_SCALE * 100)}% in the hot second, ${fmt(PEAK_PER_SECOND / SHARD_COUNT)} creates on each of ${SHARD_COUNT} shards; a tenant's schedule shares at ${fmt(scheduleShareFractionAtFullScale(results) * 100)}% with ${fmt(MAX_SCHEDULES_PER_TENANT)} schedules firing every second over ${SCHEDULE_SHARES} shares; measured, they are listed above)`}.`,
  '',
].join('\n');
await mkdir('reports', { recursive: true });
const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
await writeFile(join('reports', `scale-${stamp}.json`), `${JSON.stringify(report, null, 2)}\n`);
await writeFile(join('reports', `scale-${stamp}.md`), markdown);
if (flags.publish) {
  // Formatted as the repository's prettier check wants them, so a published run passes the lint.
  const config = await resolveConfig(join('docs', 'scale.md'));
  await writeFile(join('docs', 'scale.json'), await format(JSON.stringify(report), { ...config, parser: 'json' }));
  await writeFile(join('docs', 'scale.md'), await format(markdown, { ...config, parser: 'markdown' }));
}
log(`reports/scale-${stamp}.md${flags.publish ? ', docs/scale.md' : ''}`);
const failed = failures(summary);
if (failed.length > 0) {
  log(`FAIL: ${failed.join(', ')}`);
  process.exitCode = 1;
}
process.stdout.write(
  `scale model 1/${K}: throttled ${summary.throttled}, lost ${summary.lost}, early ${summary.early}, p99 lateness ${Math.round(summary.p99LatenessMs)} ms, hottest key ${Math.round(summary.hottestFraction * 100)}%\n`,
);
