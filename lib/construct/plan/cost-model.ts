/**
 * What the timer costs on AWS, from what a task costs in requests and compute (measured by
 * `npm run bench` on local mode) and AWS's published us-east-1 prices. Shared by the bench's
 * report and `npm run plan`, so both say the same thing. Free tiers are left out: at the
 * scales this is for they are noise, and leaving them out never flatters the result.
 */

/**
 * A price that falls with monthly volume: each tier's `price` applies up to its `upTo`, both in the
 * tier's unit (GB of 1e9 bytes for logs and data transfer, millions for requests).
 */
export type Tiers = ReadonlyArray<{ readonly upTo: number; readonly price: number }>;

/**
 * Published us-east-1 on-demand prices, in dollars, as checked on 2026-11-21 (PITR, Lambda's
 * tiered logs and data transfer out checked again on 2026-11-26). DynamoDB's on-demand
 * throughput prices are those in force since 1 November 2024 (halved that day).
 */
export const PRICES = {
  dynamo: {
    /** On demand, per write request unit (1 KB) and per read request unit (4 KB, strongly consistent). */
    writeRequestUnit: 0.625 / 1e6,
    readRequestUnit: 0.125 / 1e6,
    /** Provisioned, per write and read capacity unit-hour. */
    writeCapacityUnitHour: 0.00065,
    readCapacityUnitHour: 0.00013,
    /** Standard table class, per GB-month; DynamoDB counts 100 bytes of overhead per item. */
    storageGbMonth: 0.25,
    /** Point-in-time recovery (the table has it on), per GB-month of table size (indexes excluded). */
    pitrGbMonth: 0.2,
  },
  /** SQS standard queues, per request (each 64 KB of payload counts as one); an SQS target's SendMessage too. */
  sqsRequest: 0.4 / 1e6,
  lambda: {
    /** arm64, per GB-second and per invocation. */
    gbSecond: 0.0000133334,
    request: 0.2 / 1e6,
  },
  /** X-Ray, per trace recorded (the functions run with active tracing). */
  xrayTraceRecorded: 5.0 / 1e6,
  /** API Gateway HTTP API, per million requests: $1.00 for a month's first 300 million, $0.90 after. */
  httpApiRequests: [
    { upTo: 300, price: 1.0 },
    { upTo: Number.POSITIVE_INFINITY, price: 0.9 },
  ] satisfies Tiers,
  /** EventBridge custom events put on a bus (64 KB chunks): an EventBridge target's PutEvents. */
  eventBridgeEvent: 1.0 / 1e6,
  /** Data transfer out to the internet (webhook calls, the API's answers), tiered by the month's volume. */
  dataTransferOut: [
    { upTo: 10_000, price: 0.09 },
    { upTo: 50_000, price: 0.085 },
    { upTo: 150_000, price: 0.07 },
    { upTo: Number.POSITIVE_INFINITY, price: 0.05 },
  ] satisfies Tiers,
  /** EventBridge Scheduler, per scheduled invocation (after 14 million free a month). */
  schedulerInvocation: 1.0 / 1e6,
  cloudWatch: {
    /** Custom metric (EMF-created ones too), per metric-month, prorated by the hour it is sent in. */
    metricMonth: 0.3,
    /** Logs ingestion per GB, for logs other than Lambda's (none of this stack's are). */
    logsGb: 0.5,
    /** Lambda's logs (vended logs), tiered by the month's volume since 1 May 2025. */
    lambdaLogs: [
      { upTo: 10_000, price: 0.5 },
      { upTo: 30_000, price: 0.25 },
      { upTo: 50_000, price: 0.1 },
      { upTo: Number.POSITIVE_INFINITY, price: 0.05 },
    ] satisfies Tiers,
    /** Standard-resolution alarm per month. */
    alarmMonth: 0.1,
    /** Dashboard per month beyond an account's first three. */
    dashboardMonth: 3,
  },
  /** A customer managed KMS key (the alarm topic's), per month. */
  kmsKeyMonth: 1,
} as const;

/**
 * What a resource costs a month whether it is used or not, by CloudFormation type. Every other
 * type in the stack (queues, functions, log groups, API stages, roles, the table) has no charge
 * of its own and costs only by use, which the per-task and idle usage price.
 */
export const MONTHLY_PRICE_BY_RESOURCE_TYPE: Readonly<Record<string, number>> = {
  'AWS::CloudWatch::Alarm': PRICES.cloudWatch.alarmMonth,
  'AWS::CloudWatch::Dashboard': PRICES.cloudWatch.dashboardMonth,
  'AWS::KMS::Key': PRICES.kmsKeyMonth,
};

export const SECONDS_PER_MONTH = 30 * 24 * 3600;

/** The average price per unit of a month's `volume`; a volume of zero or less is priced at the first tier. */
export function tieredAverage(tiers: Tiers, volume: number): number {
  const first = tiers[0]?.price ?? 0;
  if (volume <= 0) return first;
  let dollars = 0;
  let from = 0;
  for (const { upTo, price } of tiers) {
    dollars += (Math.min(volume, upTo) - from) * price;
    if (volume <= upTo) break;
    from = upTo;
  }
  return dollars / volume;
}

/**
 * A keys-only index entry's billed size: the index's key pair (`tenant#bizId` or
 * `tenant#bizType#shard`, and the task's sort key), the table's key pair, and DynamoDB's 100
 * bytes of overhead. Under 1 KB, so writing one takes one write unit.
 */
export const INDEX_ENTRY_BYTES = 250;

/**
 * The share of invocations Lambda's active tracing records: one request a second, then 5% of the
 * rest, a fixed rate (X-Ray's sampling rules do not apply to Lambda). At the rates the per-task
 * price is for, the 5% is what counts; an idle deployment's few invocations a second are all
 * within the one a second.
 */
export const TRACED_SHARE_UNDER_LOAD = 0.05;

/** What one task costs on its way through, per task, as the bench measures it. */
export interface PerTaskUsage {
  /** DynamoDB write and read units (request units on demand, capacity-seconds provisioned). */
  readonly dynamoWriteUnits: number;
  readonly dynamoReadUnits: number;
  readonly sqsRequests: number;
  /** HTTP API requests: 1 for a single POST, 1/100 in full batches. */
  readonly apiRequests: number;
  readonly lambdaInvocations: number;
  /** Of those, the invocations of functions that run traced (all but the api, by default). */
  readonly tracedInvocations: number;
  /** Lambda GB-seconds of billed duration. */
  readonly lambdaGbSeconds: number;
  /** Log bytes ingested (the functions' JSON lines plus Lambda's own per-invocation lines). */
  readonly logBytes: number;
  /** Bytes kept in DynamoDB for as long as the task is retained (item plus 100 bytes overhead). */
  readonly storedBytes: number;
  /** How long a task's item is kept: its wait until due, plus retention after it ends. */
  readonly storedDays: number;
  /** Entries the task puts in the bizId and bizType indexes (one each it carries), kept as long as the task. */
  readonly indexEntries: number;
  /** Target calls with a price of their own: EventBridge PutEvents entries and SQS SendMessage requests. */
  readonly eventBridgeEvents: number;
  readonly targetSqsMessages: number;
  /** Bytes sent out of AWS to the internet: the webhook call and the API's answer. */
  readonly egressBytes: number;
}

export type CapacityMode = 'on-demand' | 'provisioned';

export interface CostBreakdown {
  readonly dynamoWrites: number;
  /** The bizId and bizType index entries: a write unit each, and their storage. */
  readonly indexWrites: number;
  readonly dynamoReads: number;
  readonly dynamoStorage: number;
  readonly pitr: number;
  readonly sqs: number;
  readonly apiGateway: number;
  readonly lambda: number;
  readonly logs: number;
  readonly tracing: number;
  readonly eventBridgeTargets: number;
  readonly sqsTargets: number;
  readonly egress: number;
}

/** What each component of a CostBreakdown is, as the plan names it. */
export const COMPONENT_NAMES: Readonly<Record<keyof CostBreakdown, string>> = {
  dynamoWrites: 'DynamoDB writes: task, receipt and outcome, clock, idempotency key',
  indexWrites: 'bizId and bizType index entries (1 WU each, and storage)',
  dynamoReads: 'DynamoDB reads: scan and overdue pass at a dense second, callback',
  dynamoStorage: 'DynamoDB storage: task and key items, until due and retention ends',
  pitr: 'point-in-time recovery ($0.20 per GB-month of table)',
  sqs: 'SQS: tick and delivery queues',
  apiGateway: 'HTTP API requests (tiered: $1.00, then $0.90 per million)',
  lambda: 'Lambda requests and GB-seconds',
  logs: 'Lambda logs (tiered: $0.50, $0.25, $0.10, $0.05 per GB)',
  tracing: 'X-Ray traces',
  eventBridgeTargets: 'EventBridge target: PutEvents ($1.00 per million)',
  sqsTargets: 'SQS target: SendMessage ($0.40 per million)',
  egress: 'data transfer out: webhook calls and API answers (tiered from $0.09 per GB)',
};

export const total = (breakdown: CostBreakdown): number =>
  Object.values(breakdown).reduce((sum, value) => sum + value, 0);

/** A per-task breakdown as dollars per million tasks. */
export function perMillion(breakdown: CostBreakdown): CostBreakdown {
  return Object.fromEntries(
    Object.entries(breakdown).map(([key, value]) => [key, value * 1e6]),
  ) as unknown as CostBreakdown;
}

/**
 * Dollars per task, by component. Provisioned capacity is priced at the average rate divided
 * by the auto scaling target utilization: the capacity paid for but not used is the price of
 * scaling on a target rather than per request. The tiered prices (logs, data transfer out, HTTP API requests) are
 * those of `tasksPerMonth` such tasks; left at 0 they are priced at their first, dearest tier.
 */
export function costPerTask(
  usage: PerTaskUsage,
  mode: CapacityMode,
  targetUtilization = 0.7,
  tracedShare = TRACED_SHARE_UNDER_LOAD,
  tasksPerMonth = 0,
): CostBreakdown {
  const { dynamo } = PRICES;
  const perUnitSecond = (hourPrice: number) => hourPrice / 3600 / targetUtilization;
  const writeUnit = mode === 'on-demand' ? dynamo.writeRequestUnit : perUnitSecond(dynamo.writeCapacityUnitHour);
  const gbMonths = (bytes: number) => (bytes / 1e9) * (usage.storedDays / 30);
  const tiered = (tiers: Tiers, bytes: number) => (bytes / 1e9) * tieredAverage(tiers, (bytes * tasksPerMonth) / 1e9);
  const apiRequestsPerMillion = tieredAverage(PRICES.httpApiRequests, (usage.apiRequests * tasksPerMonth) / 1e6);
  return {
    dynamoWrites: usage.dynamoWriteUnits * writeUnit,
    indexWrites: usage.indexEntries * (writeUnit + gbMonths(INDEX_ENTRY_BYTES) * dynamo.storageGbMonth),
    dynamoReads:
      usage.dynamoReadUnits *
      (mode === 'on-demand' ? dynamo.readRequestUnit : perUnitSecond(dynamo.readCapacityUnitHour)),
    dynamoStorage: gbMonths(usage.storedBytes) * dynamo.storageGbMonth,
    pitr: gbMonths(usage.storedBytes) * dynamo.pitrGbMonth,
    sqs: usage.sqsRequests * PRICES.sqsRequest,
    apiGateway: (usage.apiRequests * apiRequestsPerMillion) / 1e6,
    lambda: usage.lambdaInvocations * PRICES.lambda.request + usage.lambdaGbSeconds * PRICES.lambda.gbSecond,
    logs: tiered(PRICES.cloudWatch.lambdaLogs, usage.logBytes),
    tracing: usage.tracedInvocations * tracedShare * PRICES.xrayTraceRecorded,
    eventBridgeTargets: usage.eventBridgeEvents * PRICES.eventBridgeEvent,
    sqsTargets: usage.targetSqsMessages * PRICES.sqsRequest,
    egress: tiered(PRICES.dataTransferOut, usage.egressBytes),
  };
}

/** What an idle deployment does per hour, as the bench counts it. */
export interface IdleUsage {
  readonly dynamoWriteUnitsPerHour: number;
  readonly dynamoReadUnitsPerHour: number;
  readonly sqsRequestsPerHour: number;
  readonly lambdaInvocationsPerHour: number;
  readonly lambdaGbSecondsPerHour: number;
  readonly logBytesPerHour: number;
  /** Custom metrics published at least once an hour. */
  readonly metricsPublished: number;
}

/**
 * Lambda's SQS event source mappings long-poll each queue whether or not it has messages.
 * AWS does not publish the idle poller count; five pollers with 20 s long polls is the
 * commonly observed figure, so each consumed queue costs about 15 receives a minute idle.
 */
export const IDLE_POLLS_PER_QUEUE_PER_HOUR = 5 * 3 * 60;

/** A deployment's resources, counted by CloudFormation type (`AWS::CloudWatch::Alarm`: 17, …). */
export type ResourceInventory = Readonly<Record<string, number>>;

/** Counts a synthesized template's `Resources` by type, so what is priced is what would be deployed. */
export function resourceInventory(resources: Readonly<Record<string, { readonly Type: string }>>): ResourceInventory {
  const counts: Record<string, number> = {};
  for (const { Type } of Object.values(resources)) counts[Type] = (counts[Type] ?? 0) + 1;
  return counts;
}

/** What the resources with a monthly charge of their own cost a month, busy or idle. */
export function fixedMonthly(inventory: ResourceInventory): number {
  return Object.entries(inventory).reduce(
    (sum, [type, count]) => sum + count * (MONTHLY_PRICE_BY_RESOURCE_TYPE[type] ?? 0),
    0,
  );
}

export interface IdleMonth {
  /** What running costs with nothing due: requests, compute, logs and metrics. */
  readonly running: CostBreakdown & { readonly metrics: number };
  /** The resources with a monthly charge of their own: alarms, dashboard, KMS key. */
  readonly fixed: number;
}

/**
 * An idle deployment's month. Its few invocations a second all fall within X-Ray's one sampled
 * request a second, so with tracing on (`tracedShare` 1) each is a trace.
 */
export function idleMonth(
  usage: IdleUsage,
  inventory: ResourceInventory,
  mode: CapacityMode = 'on-demand',
  tracedShare = 1,
): IdleMonth {
  const hours = SECONDS_PER_MONTH / 3600;
  // Idle traffic is far below any sensible provisioned floor; on demand prices it honestly.
  const perTask = costPerTask(
    {
      dynamoWriteUnits: usage.dynamoWriteUnitsPerHour * hours,
      dynamoReadUnits: usage.dynamoReadUnitsPerHour * hours,
      sqsRequests: usage.sqsRequestsPerHour * hours,
      apiRequests: 0,
      lambdaInvocations: usage.lambdaInvocationsPerHour * hours,
      // Idle, only the schedules' functions run, and they run traced unless tracing is off.
      tracedInvocations: usage.lambdaInvocationsPerHour * hours,
      lambdaGbSeconds: usage.lambdaGbSecondsPerHour * hours,
      logBytes: usage.logBytesPerHour * hours,
      storedBytes: 0,
      storedDays: 0,
      indexEntries: 0,
      eventBridgeEvents: 0,
      targetSqsMessages: 0,
      egressBytes: 0,
    },
    mode,
    undefined,
    tracedShare,
  );
  return {
    running: { ...perTask, metrics: usage.metricsPublished * PRICES.cloudWatch.metricMonth },
    fixed: fixedMonthly(inventory),
  };
}

/** DynamoDB's published per-partition limits. */
export const PARTITION_LIMITS = { writeUnitsPerSecond: 1000, readUnitsPerSecond: 3000 } as const;
/** Plan shards so the hot second uses at most this share of a partition's write limit. */
const SHARD_HEADROOM = 0.8;
/** The write a task's create puts on its own key, besides the delivery writes. */
const CREATE_WRITES_PER_TASK = 1;
/** Keys-only index writes a create puts on one byBizType key: the index is written at create only. */
const INDEX_WRITES_PER_TASK = 1;

/** The fewest keys that keep `writesPerSecond` within SHARD_HEADROOM of a partition's write limit. */
const keysFor = (writesPerSecond: number): number =>
  Math.max(1, Math.ceil(writesPerSecond / (PARTITION_LIMITS.writeUnitsPerSecond * SHARD_HEADROOM)));

export interface PlanInput {
  readonly perDay: number;
  /** Tasks due in the busiest single second. */
  readonly peakPerSecond: number;
  readonly usage: PerTaskUsage;
  /** Writes each task makes to its own item in the second it is delivered (the outcome; a lease for retries). */
  readonly deliveryWritesPerTask: number;
  /** Read units the scanner's query of one second spends per task (whole items, 4 KB a unit). */
  readonly scanReadUnitsPerTask: number;
  /** Seconds a callback invocation takes and how many records it handles. */
  readonly callbackSecondsPerInvocation: number;
  readonly callbackBatchSize: number;
  /** Seconds an api invocation takes and how many tasks it takes in. */
  readonly apiSecondsPerInvocation: number;
  readonly tasksPerApiRequest: number;
  /** Fixed monthly costs at idle (running and resources), added once. */
  readonly idleMonthly: number;
  readonly targetUtilization?: number;
  /** The share of invocations X-Ray records: TRACED_SHARE_UNDER_LOAD with tracing on (the default), 0 off. */
  readonly tracedShare?: number;
}

export interface Plan {
  /**
   * Task shards: the hot second's tasks are counted with all their writes on their keys (create,
   * outcome), as when a burst of creates lands on the second being delivered.
   */
  readonly shardCount: number;
  readonly writesPerKeyAtPeak: number;
  /**
   * The write shards the byBizType index needs when one bizType takes every create at the peak
   * rate; the index is keyed by the task's write shard, so shardCount must be at least this.
   */
  readonly indexShardCount: number;
  /** Index writes on one `tenant#bizType#shard` key with that bizType taking creates at the peak rate. */
  readonly indexWritesPerKeyAtPeak: number;
  /**
   * What the scanner's shard Queries cost a month on demand, beyond the items they read, when every
   * second is busy: each strongly consistent Query reads at least one unit, and each busy second
   * takes one per shard. The price of more shards.
   */
  readonly scanQueryFloorMonthly: number;

  readonly readUnitsPerKeyAtPeak: number;
  readonly averagePerSecond: number;
  readonly callbackConcurrencyAtPeak: number;
  readonly apiConcurrencyAtPeak: number;
  /** SQS delivery-queue requests per second at the peak (sends, receives, deletes). */
  readonly sqsRequestsPerSecondAtPeak: number;
  readonly provisionedWriteCapacity: number;
  readonly provisionedReadCapacity: number;
  readonly byMode: Record<CapacityMode, { perMillion: CostBreakdown; monthly: number }>;
  readonly recommendedMode: CapacityMode;
}

/** Capacity and cost for a deployment of `perDay` timers with a hot second of `peakPerSecond`. */
export function plan(input: PlanInput): Plan {
  const utilization = input.targetUtilization ?? 0.7;
  const keyWritesPerTask = CREATE_WRITES_PER_TASK + input.deliveryWritesPerTask;
  const averagePerSecond = input.perDay / 86_400;
  // Creates are counted at the peak rate too: a flash of submits for "30 minutes from now" is how a hot second forms.
  const peakCreatesPerSecond = Math.max(averagePerSecond, input.peakPerSecond);
  const indexShardCount = keysFor(peakCreatesPerSecond * INDEX_WRITES_PER_TASK);
  const shardCount = Math.max(keysFor(input.peakPerSecond * keyWritesPerTask), indexShardCount);
  const tasksPerMonth = averagePerSecond * SECONDS_PER_MONTH;
  const modes: CapacityMode[] = ['on-demand', 'provisioned'];
  const byMode = Object.fromEntries(
    modes.map((mode) => {
      const perTask = costPerTask(input.usage, mode, utilization, input.tracedShare, tasksPerMonth);
      return [mode, { perMillion: perMillion(perTask), monthly: total(perTask) * tasksPerMonth + input.idleMonthly }];
    }),
  ) as Plan['byMode'];
  return {
    shardCount,
    writesPerKeyAtPeak: (input.peakPerSecond * keyWritesPerTask) / shardCount,
    indexShardCount,
    indexWritesPerKeyAtPeak: (peakCreatesPerSecond * INDEX_WRITES_PER_TASK) / shardCount,
    scanQueryFloorMonthly: shardCount * SECONDS_PER_MONTH * PRICES.dynamo.readRequestUnit,
    readUnitsPerKeyAtPeak: (input.peakPerSecond * input.scanReadUnitsPerTask) / shardCount,
    averagePerSecond,
    callbackConcurrencyAtPeak: Math.ceil(
      (input.peakPerSecond / input.callbackBatchSize) * input.callbackSecondsPerInvocation,
    ),
    apiConcurrencyAtPeak: Math.ceil((input.peakPerSecond / input.tasksPerApiRequest) * input.apiSecondsPerInvocation),
    sqsRequestsPerSecondAtPeak: (input.peakPerSecond / input.callbackBatchSize) * 3,
    provisionedWriteCapacity: Math.ceil(
      (averagePerSecond * (input.usage.dynamoWriteUnits + input.usage.indexEntries)) / utilization,
    ),
    provisionedReadCapacity: Math.ceil((averagePerSecond * input.usage.dynamoReadUnits) / utilization),
    byMode,
    recommendedMode: byMode.provisioned.monthly < byMode['on-demand'].monthly ? 'provisioned' : 'on-demand',
  };
}
