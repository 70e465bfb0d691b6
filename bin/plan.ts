/**
 * `npm run plan -- --per-day 1e9 --peak 20000`: a capacity and cost plan for a deployment, for
 * single submits and for batches, from the per-task usage `npm run bench:requests` measured
 * (docs/requests.json; the quotas from the heavier full bench, docs/benchmarks.json) and the cost
 * model the bench prices with. Prints the shard count to deploy with, the writes a hot second
 * puts on one partition key, Lambda concurrency, SQS throughput and the monthly bill in both
 * DynamoDB capacity modes. The fixed resources (alarms, dashboard, KMS key) are counted from the
 * stack synthesized here, so the plan prices what `cdk deploy` would create.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

import { AWS_LIMITS } from '../functions/contract/aws-limits.js';
import { ACCOUNT_CONCURRENCY, FUNCTIONS, QUEUES } from '../functions/contract/topology.js';
import {
  type CapacityMode,
  type CostBreakdown,
  idleMonth,
  MONTHLY_PRICE_BY_RESOURCE_TYPE,
  type Plan,
  plan,
  PRICES,
  total,
  TRACED_SHARE_UNDER_LOAD,
} from '../lib/construct/plan/cost-model.js';
import { defaultCostOptions, type MeasuredBenchReport, measuredQuotas } from '../lib/construct/plan/measured-quotas.js';
import {
  idleUsage,
  REQUESTS_REPORT,
  type RequestsReport,
  secondsPerInvocation,
  usageOfPhase,
} from '../lib/construct/plan/measured-usage.js';
import { timerStackInventory } from '../lib/construct/plan/stack-inventory.js';
import { fmt, markdownTable } from '../lib/construct/plan/table-format.js';
import { DEFAULT_API_THROTTLE } from '../lib/construct/timer/api.js';

const { values } = parseArgs({
  options: {
    'per-day': { type: 'string', default: '1e9' },
    peak: { type: 'string', default: '20000' },
    'webhook-ms': { type: 'string' },
    'average-delay-days': { type: 'string' },
    'retention-days': { type: 'string' },
    utilization: { type: 'string', default: '0.7' },
    tracing: { type: 'string', default: 'on' },
    report: { type: 'string', default: 'docs/benchmarks.json' },
    requests: { type: 'string', default: REQUESTS_REPORT },
  },
});

const report = JSON.parse(await readFile(values.report ?? 'docs/benchmarks.json', 'utf8')) as MeasuredBenchReport;
const requests = JSON.parse(await readFile(values.requests ?? REQUESTS_REPORT, 'utf8')) as RequestsReport;
const defaults = defaultCostOptions(report);
const webhookMs = Number(values['webhook-ms'] ?? defaults.webhookMs);
const averageDelayDays = Number(values['average-delay-days'] ?? defaults.averageDelayDays);
const retentionDays = Number(values['retention-days'] ?? defaults.retentionDays);
const perDay = Number(values['per-day']);
const peakPerSecond = Number(values.peak);
const utilization = Number(values.utilization);
if (values.tracing !== 'on' && values.tracing !== 'off') throw new Error('--tracing takes on or off');
const tracing = values.tracing === 'on';

// The idle cost is that of the deployment measured: dense mode, which ticks and scans every second.
const idle = idleMonth(
  idleUsage(
    { ...requests.idlePerSecond, tasks: 0, seconds: 1 },
    webhookMs,
    report.cost.idleMonth.running.metrics / PRICES.cloudWatch.metricMonth,
  ),
  timerStackInventory(),
  'on-demand',
  tracing ? 1 : 0,
);
// The running total counts its metrics already.
const idleMonthly = total(idle.running) + idle.fixed;

/** The two ways of submitting that are planned for, each with the front door that suits it. */
const submits = [
  { name: 'batched', phase: requests.phases.batch, frontDoor: 'api-gateway' },
  { name: 'single', phase: requests.phases.single, frontDoor: 'function-url' },
] as const;
const plans = submits.map(({ name, phase, frontDoor }) => {
  const usage = usageOfPhase(requests, phase, { webhookMs, averageDelayDays, retentionDays, frontDoor });
  const perTask = (request: string) => (phase.requests[request] ?? 0) / phase.tasks;
  return {
    name,
    frontDoor,
    phase,
    result: plan({
      perDay,
      peakPerSecond,
      usage,
      // The outcome: the update a task's own item takes in the second it is delivered.
      deliveryWritesPerTask: Math.round(perTask('DynamoDB.UpdateItem')),
      scanReadUnitsPerTask: phase.readUnits / phase.tasks,
      callbackSecondsPerInvocation: secondsPerInvocation(phase, 'callback', webhookMs),
      callbackBatchSize: QUEUES.delivery.consumer.batchSize,
      apiSecondsPerInvocation: secondsPerInvocation(phase, 'api', webhookMs),
      tasksPerApiRequest: phase.tasksPerRequest,
      idleMonthly,
      targetUtilization: utilization,
      tracedShare: tracing ? TRACED_SHARE_UNDER_LOAD : 0,
    }),
  };
});
const [batched, single] = plans as [(typeof plans)[number], (typeof plans)[number]];
/** The cost table's columns: single submits first, as most callers send them. */
const columns = [single, batched];

const quotasFor = (entry: (typeof plans)[number]) =>
  measuredQuotas(report, { perDay, peakPerSecond, tasksPerApiRequest: entry.phase.tasksPerRequest });
const quotas = [quotasFor(single), quotasFor(batched)];

const money = (dollars: number, digits = 2) => `$${fmt(dollars, digits)}`;
/** The resources with a monthly charge, as "17 AWS::CloudWatch::Alarm, 1 AWS::KMS::Key". */
const pricedResources = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([type]) => type in MONTHLY_PRICE_BY_RESOURCE_TYPE)
    .map(([type, count]) => `${count} ${type}`)
    .join(', ');
const both = (value: (result: Plan) => string) => [value(single.result), value(batched.result)];
const perMillionTotal = (entry: (typeof plans)[number], mode: CapacityMode) =>
  total(entry.result.byMode[mode].perMillion);
const lines = [
  `Plan for ${fmt(perDay)} timers a day (${fmt(single.result.averagePerSecond)}/s on average), ${fmt(peakPerSecond)} due in the busiest second.`,
  `Per-task usage measured by npm run bench:requests on ${requests.measuredAt} (dense mode, tickEverySecond; ${fmt(single.phase.tasks)} tasks each way), ` +
    `priced with webhooks answering in ${webhookMs} ms, ${averageDelayDays} day(s) to due, ${retentionDays} days kept after. ` +
    `Single submits come in through the api's function URL (functionUrl), batches of ${batched.phase.tasksPerRequest} through the HTTP API; X-Ray tracing ${tracing ? 'on (the default; --tracing off prices the tracing: false prop)' : 'off (the tracing: false prop)'}.`,
  '',
  markdownTable(
    ['capacity', 'single submits', `batches of ${batched.phase.tasksPerRequest}`],
    [
      ['shard count to deploy with (ShardCount; may grow, never shrink)', ...both((r) => String(r.shardCount))],
      ['write units on one task key in the hot second (create, outcome)', ...both((r) => fmt(r.writesPerKeyAtPeak))],
      ['shards the byBizType index alone needs (it uses the task shards)', ...both((r) => String(r.indexShardCount))],
      [
        'index writes on one byBizType key, one bizType creating at the peak',
        ...both((r) => fmt(r.indexWritesPerKeyAtPeak)),
      ],
      ['scanner shard Queries per busy second', ...both((r) => String(r.shardCount))],
      [
        'their floor a month on demand, every second busy (a read unit each)',
        ...both((r) => money(r.scanQueryFloorMonthly)),
      ],
      ['read units on one partition key in the hot second', ...both((r) => fmt(r.readUnitsPerKeyAtPeak, 1))],
      ['callback concurrency at the peak', ...both((r) => fmt(r.callbackConcurrencyAtPeak))],
      ['api concurrency at the peak', ...both((r) => fmt(r.apiConcurrencyAtPeak))],
      ['delivery queue requests/s at the peak', ...both((r) => fmt(r.sqsRequestsPerSecondAtPeak))],
      ['provisioned write capacity (average ÷ target utilization)', ...both((r) => fmt(r.provisionedWriteCapacity))],
      ['provisioned read capacity', ...both((r) => fmt(r.provisionedReadCapacity))],
    ],
  ),
  '',
  markdownTable(
    [
      'limit (with headroom; docs/limits.md says how to set or request each)',
      'single submits',
      `batches of ${batched.phase.tasksPerRequest}`,
      'AWS default',
    ],
    [
      [
        'API stage throttle (construct prop apiThrottle: rateLimit / burstLimit)',
        ...quotas.map((q) => `${fmt(q.apiThrottle.rateLimit)} / ${fmt(q.apiThrottle.burstLimit)}`),
        `${fmt(DEFAULT_API_THROTTLE.rateLimit)} / ${fmt(DEFAULT_API_THROTTLE.burstLimit)} (the construct's)`,
      ],
      [
        'api reserved concurrency (construct prop apiReservedConcurrency; functionUrlReservedConcurrency for the URL)',
        ...quotas.map((q) => fmt(q.apiReservedConcurrency)),
        `${FUNCTIONS.api.reservedConcurrency} (the construct's)`,
      ],
      [
        'API Gateway requests/s in the region (quota to request; none through the function URL)',
        ...quotas.map((q) => fmt(q.apiGatewayRequestsPerSecond)),
        fmt(AWS_LIMITS.apiGateway.requestsPerSecond),
      ],
      [
        'Lambda concurrent executions (quota to request)',
        ...quotas.map((q) => fmt(q.lambdaConcurrency)),
        fmt(ACCOUNT_CONCURRENCY),
      ],
      [
        'table write request units/s at the busiest second (quota to request)',
        ...quotas.map((q) => fmt(q.tableWriteUnitsPerSecond)),
        fmt(AWS_LIMITS.dynamodb.tableWriteUnitsPerSecond),
      ],
    ],
  ),
  '',
  markdownTable(
    ['$ per million timers', 'single, provisioned', 'single, on demand', 'batched, provisioned', 'batched, on demand'],
    [
      ...(Object.keys(single.result.byMode['on-demand'].perMillion) as Array<keyof CostBreakdown>).map((component) => [
        component,
        ...columns.flatMap((entry) =>
          (['provisioned', 'on-demand'] as const).map((mode) =>
            money(entry.result.byMode[mode].perMillion[component], 3),
          ),
        ),
      ]),
      [
        'total',
        ...columns.flatMap((entry) =>
          (['provisioned', 'on-demand'] as const).map((mode) => money(perMillionTotal(entry, mode), 3)),
        ),
      ],
    ],
  ),
  '',
  ...columns.map(
    (entry) =>
      `Monthly, ${entry.name}: ${money(entry.result.byMode.provisioned.monthly, 0)} provisioned, ${money(entry.result.byMode['on-demand'].monthly, 0)} on demand (each with ${money(idleMonthly)} of fixed and idle cost). Recommended: ${entry.result.recommendedMode}.`,
  ),
  `Fixed resources in the synthesized stack: ${pricedResources(timerStackInventory())}, ${money(idle.fixed)} a month.`,
  `EventBridge Scheduler for the same timers: ${money(perDay * 30 * PRICES.schedulerInvocation)} a month in scheduled invocations alone ($1.00 per million), before the targets it invokes.`,
  '',
  `per million timers: batched ${money(perMillionTotal(batched, 'provisioned'))} provisioned, ${money(perMillionTotal(batched, 'on-demand'))} on demand; single ${money(perMillionTotal(single, 'provisioned'))} provisioned, ${money(perMillionTotal(single, 'on-demand'))} on demand`,
];
process.stdout.write(`${lines.join('\n')}\n`);
