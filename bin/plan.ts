/**
 * `npm run plan -- --per-day 1e9 --peak 20000`: a capacity and cost plan for a deployment, from
 * the per-task usage the last published bench measured (docs/benchmarks.json) and the cost
 * model the bench prices with. Prints the shard count to deploy with, the writes a hot second
 * puts on one partition key, Lambda concurrency, SQS throughput and the monthly bill in both
 * DynamoDB capacity modes. The fixed resources (alarms, dashboard, KMS key) are counted from the
 * stack synthesized here, so the plan prices what `cdk deploy` would create.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';

import {
  type BenchReport,
  defaultCostOptions,
  measuredQuotas,
  referenceRun,
  secondsPerInvocation,
  usageOf,
} from '../bench/render.js';
import { fmt, markdownTable } from '../bench/report.js';
import { ACCOUNT_CONCURRENCY, FUNCTIONS, QUEUES } from '../functions/contract/topology.js';
import { type CostBreakdown, fixedMonthly, MONTHLY_PRICE_BY_RESOURCE_TYPE, plan, total } from '../lib/cost-model.js';
import { AWS_LIMITS } from '../lib/local/limits/aws-limits.js';
import { timerStackInventory } from '../lib/stack-inventory.js';
import { DEFAULT_API_THROTTLE } from '../lib/timer/api.js';

const { values } = parseArgs({
  options: {
    'per-day': { type: 'string', default: '1e9' },
    peak: { type: 'string', default: '20000' },
    'webhook-ms': { type: 'string' },
    batch: { type: 'string' },
    'average-delay-days': { type: 'string' },
    'retention-days': { type: 'string' },
    utilization: { type: 'string', default: '0.7' },
    report: { type: 'string', default: 'docs/benchmarks.json' },
  },
});

const report = JSON.parse(await readFile(values.report ?? 'docs/benchmarks.json', 'utf8')) as BenchReport;
const reference = referenceRun(report);
if (!reference)
  throw new Error(`${values.report} has no steady run that delivered everything; run npm run bench first`);
const defaults = defaultCostOptions(report);
const options = {
  webhookMs: Number(values['webhook-ms'] ?? defaults.webhookMs),
  tasksPerApiRequest: Number(values.batch ?? defaults.tasksPerApiRequest),
  averageDelayDays: Number(values['average-delay-days'] ?? defaults.averageDelayDays),
  retentionDays: Number(values['retention-days'] ?? defaults.retentionDays),
};
const usage = usageOf(report, reference, options);
// The report's idle running cost was measured; its fixed cost is re-priced from the stack as it is now.
const idleRunning = total(report.cost.idleMonth.running);
const inventory = timerStackInventory();
const fixed = fixedMonthly(inventory);
const perTask = (name: string) => (reference.run.requests[name] ?? 0) / reference.tasks;
const result = plan({
  perDay: Number(values['per-day']),
  peakPerSecond: Number(values.peak),
  usage,
  // The lease and the outcome: the updates a task's own item takes in the second it is delivered.
  deliveryWritesPerTask: Math.round(perTask('DynamoDB.UpdateItem')),
  scanReadUnitsPerTask: reference.run.readUnits / reference.tasks,
  callbackSecondsPerInvocation: secondsPerInvocation(reference, 'callback', options.webhookMs),
  callbackBatchSize: QUEUES.delivery.consumer.batchSize,
  apiSecondsPerInvocation: secondsPerInvocation(reference, 'api', options.webhookMs),
  tasksPerApiRequest: options.tasksPerApiRequest,
  // The idle month's running cost counts its metrics already.
  idleMonthly: idleRunning + fixed,
  targetUtilization: Number(values.utilization),
});

const quotas = measuredQuotas(report, {
  perDay: Number(values['per-day']),
  peakPerSecond: Number(values.peak),
  tasksPerApiRequest: options.tasksPerApiRequest,
});

const money = (dollars: number, digits = 2) => `$${fmt(dollars, digits)}`;
/** The resources with a monthly charge, as "17 AWS::CloudWatch::Alarm, 1 AWS::KMS::Key". */
const pricedResources = (counts: Record<string, number>) =>
  Object.entries(counts)
    .filter(([type]) => type in MONTHLY_PRICE_BY_RESOURCE_TYPE)
    .map(([type, count]) => `${count} ${type}`)
    .join(', ');
const lines = [
  `Plan for ${fmt(Number(values['per-day']))} timers a day (${fmt(result.averagePerSecond)}/s on average), ${fmt(Number(values.peak))} due in the busiest second.`,
  `Per-task usage from ${report.startedAt} (${reference.scenario}); webhooks answering in ${options.webhookMs} ms, batches of ${options.tasksPerApiRequest}, ${options.averageDelayDays} day(s) to due, ${options.retentionDays} days kept after.`,
  '',
  markdownTable(
    ['capacity', 'value'],
    [
      ['shard count to deploy with (ShardCount; may grow, never shrink)', String(result.shardCount)],
      ['write units on one task key in the hot second (create, lease, outcome)', fmt(result.writesPerKeyAtPeak)],
      ['shards the byBizType index alone needs (it uses the task shards)', String(result.indexShardCount)],
      ['index writes on one byBizType key, one bizType creating at the peak', fmt(result.indexWritesPerKeyAtPeak)],
      ['scanner shard Queries per busy second', String(result.shardCount)],
      ['their floor a month on demand, every second busy (a read unit each)', money(result.scanQueryFloorMonthly)],
      ['read units on one partition key in the hot second', fmt(result.readUnitsPerKeyAtPeak, 1)],
      ['callback concurrency at the peak', fmt(result.callbackConcurrencyAtPeak)],
      ['api concurrency at the peak', fmt(result.apiConcurrencyAtPeak)],
      ['delivery queue requests/s at the peak', fmt(result.sqsRequestsPerSecondAtPeak)],
      ['provisioned write capacity (average ÷ target utilization)', fmt(result.provisionedWriteCapacity)],
      ['provisioned read capacity', fmt(result.provisionedReadCapacity)],
    ],
  ),
  '',
  markdownTable(
    ['limit (with headroom; docs/limits.md says how to set or request each)', 'value', 'AWS default'],
    [
      [
        'API stage throttle (construct prop apiThrottle: rateLimit / burstLimit)',
        `${fmt(quotas.apiThrottle.rateLimit)} / ${fmt(quotas.apiThrottle.burstLimit)}`,
        `${fmt(DEFAULT_API_THROTTLE.rateLimit)} / ${fmt(DEFAULT_API_THROTTLE.burstLimit)} (the construct's)`,
      ],
      [
        'api reserved concurrency (construct prop apiReservedConcurrency)',
        fmt(quotas.apiReservedConcurrency),
        `${FUNCTIONS.api.reservedConcurrency} (the construct's)`,
      ],
      [
        'API Gateway requests/s in the region (quota to request)',
        fmt(quotas.apiGatewayRequestsPerSecond),
        fmt(AWS_LIMITS.apiGateway.requestsPerSecond),
      ],
      ['Lambda concurrent executions (quota to request)', fmt(quotas.lambdaConcurrency), fmt(ACCOUNT_CONCURRENCY)],
      [
        'table write request units/s at the busiest second (quota to request)',
        fmt(quotas.tableWriteUnitsPerSecond),
        fmt(AWS_LIMITS.dynamodb.tableWriteUnitsPerSecond),
      ],
    ],
  ),
  '',
  markdownTable(
    ['$ per million timers', 'on demand', `provisioned, auto scaling at ${Number(values.utilization) * 100}%`],
    [
      ...(Object.keys(result.byMode['on-demand'].perMillion) as Array<keyof CostBreakdown>).map((component) => [
        component,
        money(result.byMode['on-demand'].perMillion[component], 3),
        money(result.byMode.provisioned.perMillion[component], 3),
      ]),
      [
        'total',
        money(total(result.byMode['on-demand'].perMillion), 3),
        money(total(result.byMode.provisioned.perMillion), 3),
      ],
    ],
  ),
  '',
  `Monthly: ${money(result.byMode['on-demand'].monthly, 0)} on demand, ${money(result.byMode.provisioned.monthly, 0)} provisioned (each with ${money(idleRunning + fixed)} of fixed and idle cost). Recommended: ${result.recommendedMode}.`,
  `Fixed resources in the synthesized stack: ${pricedResources(inventory)}, ${money(fixed)} a month.`,
  `EventBridge Scheduler for the same timers: ${money(Number(values['per-day']) * 30 * 1e-6)} a month in scheduled invocations alone ($1.00 per million), before the targets it invokes.`,
];
process.stdout.write(`${lines.join('\n')}\n`);
