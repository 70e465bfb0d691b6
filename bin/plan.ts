/**
 * `npm run plan -- --per-day 1e9 --peak 20000`: a capacity and cost plan for a deployment, for
 * single submits and for batches, keyed or not, through either front door, from the per-task
 * usage `npm run bench:requests` measured
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
  COMPONENT_NAMES,
  type CostBreakdown,
  idleMonth,
  MONTHLY_PRICE_BY_RESOURCE_TYPE,
  type Plan,
  plan,
  PRICES,
  tieredAverage,
  total,
  TRACED_SHARE_UNDER_LOAD,
} from '../lib/construct/plan/cost-model.js';
import { defaultCostOptions, type MeasuredBenchReport, measuredQuotas } from '../lib/construct/plan/measured-quotas.js';
import {
  idleUsage,
  REQUESTS_REPORT,
  type RequestsReport,
  scanReadUnitsPerTask,
  secondsPerInvocation,
  type TargetMix,
  unmeasured,
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
    'index-entries': { type: 'string', default: '2' },
    targets: { type: 'string', default: 'http=1' },
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
if (!['on', 'off', 'all'].includes(values.tracing ?? ''))
  throw new Error('--tracing takes on (all but the api, the default), all (apiTracing: true) or off (tracing: false)');
const tracing = values.tracing !== 'off';
const apiTraced = values.tracing === 'all';
const indexEntries = Number(values['index-entries']);
if (![0, 1, 2].includes(indexEntries)) throw new Error('--index-entries takes 0, 1 or 2 (bizId, bizType or both)');
const targets = parseTargetMix(values.targets ?? 'http=1');

/** `http=0.8,sqs=0.1,eventbridge=0.1`: the share of deliveries to each target type. */
function parseTargetMix(text: string): TargetMix {
  const mix = { http: 0, sqs: 0, eventbridge: 0 };
  for (const part of text.split(',')) {
    const [type, share] = part.split('=');
    if (!type || !(type in mix) || share === undefined || !(Number(share) >= 0))
      throw new Error(`--targets takes shares like http=0.8,sqs=0.1,eventbridge=0.1, not ${part}`);
    mix[type as keyof TargetMix] = Number(share);
  }
  if (Math.abs(mix.http + mix.sqs + mix.eventbridge - 1) > 1e-9) throw new Error('--targets shares must add up to 1');
  return mix;
}

const inventory = timerStackInventory();
// The idle cost is that of the deployment measured: dense mode, which ticks and scans every second.
const idle = idleMonth(
  idleUsage(
    { ...requests.idlePerSecond, tasks: 0, seconds: 1 },
    webhookMs,
    report.cost.idleMonth.running.metrics / PRICES.cloudWatch.metricMonth,
  ),
  inventory,
  'on-demand',
  tracing ? 1 : 0,
);
// The running total counts its metrics already.
const idleMonthly = total(idle.running) + idle.fixed;

/**
 * The ways of submitting that are planned for. The HTTP API is the front door a deployment has by
 * default; the function URL (`functionUrl: true`) is priced beside it for single submits. The
 * TypeScript client sends an idempotencyKey with every task unless told one, and batches what a
 * busy caller schedules (lib/client/client.ts): at a billion a day, keyed batches are what it sends.
 */
const submits = [
  { name: 'batched', label: 'batches of 100', phase: requests.phases.batch, frontDoor: 'api-gateway' },
  { name: 'single', label: 'single', phase: requests.phases.single, frontDoor: 'api-gateway' },
  { name: 'single-url', label: 'single, function URL', phase: requests.phases.single, frontDoor: 'function-url' },
  {
    name: 'keyed-batched',
    label: 'keyed batches (our client)',
    phase: requests.phases.keyedBatch,
    frontDoor: 'api-gateway',
  },
  { name: 'keyed-single', label: 'keyed single', phase: requests.phases.keyedSingle, frontDoor: 'api-gateway' },
] as const;
/** The ways the report measured: an older report has no keyed phases. */
const measured = submits.flatMap((submit) => (submit.phase ? [{ ...submit, phase: submit.phase }] : []));
/**
 * The outcome: the update a task's own item takes in the second it is delivered. Delivery is the
 * same however a task came in, and a batch's UpdateItems are nearly all delivery's (its rate-limit
 * lease is one per hundred tasks); a single submit's own UpdateItem is its lease, taken at submit.
 */
const deliveryWritesPerTask = Math.round(
  (requests.phases.batch.requests['DynamoDB.UpdateItem'] ?? 0) / requests.phases.batch.tasks,
);
const plans = measured.map(({ name, label, phase, frontDoor }) => {
  const usage = usageOfPhase(requests, phase, {
    webhookMs,
    averageDelayDays,
    retentionDays,
    frontDoor,
    indexEntries,
    targets,
    traced: (fn) => fn !== 'api' || apiTraced,
  });
  return {
    name,
    label,
    frontDoor,
    phase,
    result: plan({
      perDay,
      peakPerSecond,
      usage,
      deliveryWritesPerTask,
      // Without a dense second, what the phase's own Queries read: an underestimate.
      scanReadUnitsPerTask: requests.denseSecond ? scanReadUnitsPerTask(requests) : phase.readUnits / phase.tasks,
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
type Entry = (typeof plans)[number];
const byName = (name: Entry['name']) => plans.find((entry) => entry.name === name);
const [batched, single, singleUrl] = [byName('batched'), byName('single'), byName('single-url')] as [
  Entry,
  Entry,
  Entry,
];
const clientDefault = byName('keyed-batched');
const notMeasured = unmeasured(requests);

const quotasFor = (entry: Entry) =>
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
const perMillionTotal = (entry: Entry, mode: CapacityMode) => total(entry.result.byMode[mode].perMillion);
const costTable = (mode: CapacityMode) =>
  markdownTable(
    [
      `$ per million timers, ${mode === 'provisioned' ? 'provisioned' : 'on demand'}`,
      ...plans.map((entry) => entry.label),
    ],
    [
      ...(Object.keys(COMPONENT_NAMES) as Array<keyof CostBreakdown>).map((component) => [
        COMPONENT_NAMES[component],
        ...plans.map((entry) => money(entry.result.byMode[mode].perMillion[component], 3)),
      ]),
      ['total', ...plans.map((entry) => money(perMillionTotal(entry, mode), 3))],
    ],
  );
/** What a delivery adds for its target type, per million deliveries: a webhook's egress (priced as if every delivery were one), a queue's SendMessage, a bus's PutEvents. */
const webhookBytes = requests.webhookRequestBytes ?? 0;
const targetPrices = [
  `webhook ${money((webhookBytes / 1e9) * tieredAverage(PRICES.dataTransferOut, (webhookBytes * perDay * 30) / 1e9) * 1e6, 3)} of egress (${requests.webhookRequestBytes === undefined ? 'not measured' : `${fmt(webhookBytes)} bytes a call`})`,
  `SQS ${money(PRICES.sqsRequest * 1e6)} (SendMessage)`,
  `EventBridge ${money(PRICES.eventBridgeEvent * 1e6)} (PutEvents)`,
].join(', ');
const lines = [
  `Plan for ${fmt(perDay)} timers a day (${fmt(single.result.averagePerSecond)}/s on average), ${fmt(peakPerSecond)} due in the busiest second.`,
  `Per-task usage measured by npm run bench:requests on ${requests.measuredAt} (dense mode, tickEverySecond; ${fmt(single.phase.tasks)} tasks each way), ` +
    `priced with webhooks answering in ${webhookMs} ms, ${averageDelayDays} day(s) to due, ${retentionDays} days kept after. ` +
    `Submits come in through the HTTP API (single ones through the function URL too, where functionUrl is set); keyed ones carry an idempotencyKey, as the TypeScript client's do by default; X-Ray tracing ${{ on: 'on for all but the api (the default; --tracing all prices apiTracing: true, --tracing off tracing: false)', all: 'on for every function (apiTracing: true)', off: 'off (tracing: false)' }[values.tracing as 'on' | 'all' | 'off']}.`,
  '',
  markdownTable(
    ['capacity', 'single submits', `batches of ${batched.phase.tasksPerRequest}`],
    [
      ['shard count to deploy with (ShardCount; may grow, never shrink)', ...both((r) => String(r.shardCount))],
      [
        "write units on one task key in the hot second (creates; a delivered task's outcome is a receipt)",
        ...both((r) => fmt(r.writesPerKeyAtPeak)),
      ],
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
      [
        'table read request units/s at the busiest second (quota to request)',
        ...quotas.map((q) => fmt(q.tableReadUnitsPerSecond)),
        fmt(AWS_LIMITS.dynamodb.tableReadUnitsPerSecond),
      ],
    ],
  ),
  '',
  costTable('provisioned'),
  '',
  costTable('on-demand'),
  '',
  `Targets: ${Object.entries(targets)
    .map(([type, share]) => `${type} ${fmt(share * 100)}%`)
    .join(', ')} of deliveries (--targets); each adds per million deliveries: ${targetPrices}. ` +
    `Index entries: ${indexEntries} a task (--index-entries; a bizId and a bizType make 2). ` +
    (requests.denseSecond
      ? `Scan reads measured at ${requests.denseSecond.tasksPerShard} tasks per shard-second: ${fmt(scanReadUnitsPerTask(requests), 3)} read units a task.`
      : ''),
  ...(notMeasured.length > 0
    ? [
        `Not measured in ${values.requests ?? REQUESTS_REPORT} (made before they were), so priced as nothing here: ${notMeasured.join(', ')}. npm run bench:requests -- --publish measures them.`,
      ]
    : []),
  ...[single, batched].map(
    (entry) =>
      `Monthly, ${entry.name}: ${money(entry.result.byMode.provisioned.monthly, 0)} provisioned, ${money(entry.result.byMode['on-demand'].monthly, 0)} on demand (each with ${money(idleMonthly)} of fixed and idle cost). Recommended: ${entry.result.recommendedMode}.`,
  ),
  `Fixed resources in the synthesized stack: ${pricedResources(inventory)}, ${money(idle.fixed)} a month.`,
  `EventBridge Scheduler for the same timers: ${money(perDay * 30 * PRICES.schedulerInvocation)} a month in scheduled invocations alone ($1.00 per million), before the targets it invokes.`,
  '',
  `single through the function URL (functionUrl: true): ${money(perMillionTotal(singleUrl, 'provisioned'))} provisioned, ${money(perMillionTotal(singleUrl, 'on-demand'))} on demand per million timers`,
  clientDefault
    ? `our client by default: ${money(perMillionTotal(clientDefault, 'provisioned'))} provisioned, ${money(perMillionTotal(clientDefault, 'on-demand'))} on demand per million timers`
    : 'our client by default: not measured (keyed submits) per million timers',
  `per million timers: batched ${money(perMillionTotal(batched, 'provisioned'))} provisioned, ${money(perMillionTotal(batched, 'on-demand'))} on demand; single ${money(perMillionTotal(single, 'provisioned'))} provisioned, ${money(perMillionTotal(single, 'on-demand'))} on demand`,
];
process.stdout.write(`${lines.join('\n')}\n`);
