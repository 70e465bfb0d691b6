/**
 * The one description of the service's moving parts that both worlds read: the CDK
 * stack turns it into AWS resources, the local runtime into dynalite tables, fauxqs
 * queues, pollers and timers, and the handlers' config loader into typed settings.
 * Nothing here imports aws-cdk-lib or an AWS SDK, so the Lambda bundles stay small.
 */
import { AWS_LIMITS } from './aws-limits.js';

/** Environment variable names shared by the stack (which sets them) and the handlers (which read them). */
export const ENV = {
  tableName: 'TIMER_TABLE_NAME',
  tickQueueUrl: 'TIMER_TICK_QUEUE_URL',
  deliveryQueueUrl: 'TIMER_DELIVERY_QUEUE_URL',
  expressQueueUrl: 'TIMER_EXPRESS_QUEUE_URL',
  deliveryDlqUrl: 'TIMER_DELIVERY_DLQ_URL',
  bucketCount: 'TIMER_BUCKET_COUNT',
  shardCount: 'TIMER_SHARD_COUNT',
  lookaheadSeconds: 'TIMER_LOOKAHEAD_SECONDS',
  maxAttempts: 'TIMER_MAX_ATTEMPTS',
  backoffBaseSeconds: 'TIMER_BACKOFF_BASE_SECONDS',
  backoffMaxSeconds: 'TIMER_BACKOFF_MAX_SECONDS',
  webhookTimeoutMs: 'TIMER_WEBHOOK_TIMEOUT_MS',
  allowInsecureTargets: 'TIMER_ALLOW_INSECURE_TARGETS',
  retentionDays: 'TIMER_RETENTION_DAYS',
  sweepMaxSecondsPerRun: 'TIMER_SWEEP_MAX_SECONDS_PER_RUN',
  sweepGraceSeconds: 'TIMER_SWEEP_GRACE_SECONDS',
  overdueGraceSeconds: 'TIMER_OVERDUE_GRACE_SECONDS',
  maxHorizonDays: 'TIMER_MAX_HORIZON_DAYS',
  tickEverySecond: 'TIMER_TICK_EVERY_SECOND',
  /** The deployment's account and partition, to turn a bare event bus name into the ARN the allow-list holds. */
  awsAccount: 'TIMER_AWS_ACCOUNT',
  awsPartition: 'TIMER_AWS_PARTITION',
  /** Comma-separated ARNs of the queues tasks may target; unset (local mode) means any, empty means none. */
  allowedQueueArns: 'TIMER_ALLOWED_QUEUE_ARNS',
  /** Comma-separated ARNs of the event buses tasks may target; unset (local mode) means any, empty means none. */
  allowedEventBusArns: 'TIMER_ALLOWED_EVENT_BUS_ARNS',
} as const;

export type EnvName = (typeof ENV)[keyof typeof ENV];

/** Service settings a deployment may choose; each has a default that suits a payments-grade timer. */
export interface TimerSettings {
  /** Buckets `floor(dueAt s) mod N`; 10,000,000 s is about 115 days, as in the WeChat Pay timer. */
  readonly bucketCount: number;
  /**
   * Partitions per second, so a hot second spreads over this many DynamoDB partition keys; the
   * byBizType index is sharded by the same number. May grow, never shrink (ids carry the shard).
   */
  readonly shardCount: number;
  /** How many seconds ahead of now the scanner may claim, so deliveries can be on time. */
  readonly lookaheadSeconds: number;
  /** Delivery attempts before a task ends FAILED and its message goes to the DLQ. */
  readonly maxAttempts: number;
  /** First retry delay; each further attempt doubles it up to `backoffMaxSeconds`. */
  readonly backoffBaseSeconds: number;
  readonly backoffMaxSeconds: number;
  /** Total time a webhook may take to answer before the attempt counts as failed. */
  readonly webhookTimeoutMs: number;
  /**
   * Whether http:// webhooks, webhooks on loopback and private addresses, and non-AWS queue
   * URLs are accepted (local mode only).
   */
  readonly allowInsecureTargets: boolean;
  /** Days a finished (DELIVERED, FAILED, CANCELLED) task stays readable before TTL removes it. */
  readonly retentionDays: number;
  /** The most seconds one sweep examines for being claimed but never finished; it resumes where the last left off. */
  readonly sweepMaxSecondsPerRun: number;
  /** How long a claimed second may stay unfinished before the sweeper re-scans it (beyond any live scan). */
  readonly sweepGraceSeconds: number;
  /**
   * How long after its due time a task no callback has claimed is taken for lost and enqueued
   * again (counted as MissedTasks). Ten minutes, as in the payment timers this design follows:
   * long enough that a busy but healthy delivery queue never trips it.
   */
  readonly overdueGraceSeconds: number;
  /** How many days ahead a task may be due; at most LIMITS.horizonDays (366). */
  readonly maxHorizonDays: number;
  /**
   * Dense mode: the ticker ticks every second of each minute and scans take every second as
   * occupied, so the api writes no occupancy index entry. That entry costs close to a write per
   * single submit once due times are spread out; the ticks cost a fixed amount a day whatever the
   * load (docs/architecture.md, "Dense mode"), so dense mode pays only at high volume. Safe to turn
   * on at any time; never turn it off while tasks submitted under it are pending, for the index
   * knows nothing of them.
   */
  readonly tickEverySecond: boolean;
}

export const DEFAULT_SETTINGS: TimerSettings = {
  bucketCount: 10_000_000,
  // Sized for a billion tasks a day with 20,000 due in one second: each task's key takes its
  // create and outcome, 40,000 writes over 80 keys, 500 each, half a partition's 1,000
  // (`npm run plan -- --per-day 1e9 --peak 20000` asks for 50; the rest is room for the leases of
  // late arrivals and retries). A busy second costs 80 Queries.
  shardCount: 80,
  lookaheadSeconds: 2,
  maxAttempts: 8,
  backoffBaseSeconds: 5,
  backoffMaxSeconds: 900,
  webhookTimeoutMs: 10_000,
  allowInsecureTargets: false,
  retentionDays: 30,
  sweepMaxSecondsPerRun: 3600,
  sweepGraceSeconds: 90,
  overdueGraceSeconds: 600,
  maxHorizonDays: 366,
  tickEverySecond: false,
};

export type FunctionName = 'api' | 'ticker' | 'scanner' | 'callback' | 'sweeper';

export interface FunctionSpec {
  /** Entry file, relative to the repository root. */
  readonly entry: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /**
   * Concurrency set aside for this function alone (Lambda's `ReservedConcurrentExecutions`): it is
   * both a floor no other function can take and a ceiling. Unset, the function shares what the
   * reservations leave of the account's pool.
   */
  readonly reservedConcurrency?: number;
  /** Settings and resources this function reads from its environment. */
  readonly env: readonly EnvName[];
}

/**
 * The account's concurrent executions (Lambda's default quota), which the reservations and the
 * event source mappings' caps are planned against. AWS keeps at least 100 of it unreserved.
 */
export const ACCOUNT_CONCURRENCY = AWS_LIMITS.lambda.accountConcurrency;

const coreEnv = [ENV.tableName, ENV.bucketCount, ENV.shardCount] as const;
const allowListEnv = [ENV.allowedQueueArns, ENV.allowedEventBusArns] as const;

const FUNCTION_SPECS = {
  api: {
    entry: 'functions/api/handler.ts',
    timeoutSeconds: 10,
    memoryMb: 512,
    // Submits must not be starved by deliveries. The stage admits 1,000 requests a second and a
    // submit takes some 50 ms (one conditional put), a batch some 200 ms: 200 carries the full
    // stage rate at 200 ms a request, so the api is throttled only when DynamoDB itself is slow.
    reservedConcurrency: 200,
    env: [
      ...coreEnv,
      ...allowListEnv,
      ENV.deliveryQueueUrl,
      ENV.expressQueueUrl,
      ENV.tickQueueUrl,
      ENV.lookaheadSeconds,
      ENV.allowInsecureTargets,
      ENV.retentionDays,
      ENV.maxHorizonDays,
      ENV.awsAccount,
      ENV.awsPartition,
      ENV.tickEverySecond,
    ],
  },
  ticker: {
    entry: 'functions/ticker/handler.ts',
    timeoutSeconds: 10,
    memoryMb: 256,
    env: [...coreEnv, ENV.tickQueueUrl, ENV.lookaheadSeconds, ENV.tickEverySecond],
  },
  scanner: {
    entry: 'functions/scanner/handler.ts',
    timeoutSeconds: 60,
    memoryMb: 512,
    // Deliveries wait on the scanner, so a delivery or api surge must never take its concurrency.
    // A scan takes well under a second unless its second is hot, so 50 covers a backlog of fifty
    // seconds scanned at once (a restart's catch-up) and leaves 950 of the account's 1,000 unreserved.
    reservedConcurrency: 50,
    env: [...coreEnv, ENV.deliveryQueueUrl, ENV.expressQueueUrl, ENV.lookaheadSeconds, ENV.tickEverySecond],
  },
  callback: {
    entry: 'functions/callback/handler.ts',
    timeoutSeconds: 30,
    memoryMb: 512,
    env: [
      ...coreEnv,
      ...allowListEnv,
      ENV.deliveryQueueUrl,
      ENV.expressQueueUrl,
      ENV.deliveryDlqUrl,
      // A schedule's occurrence stores its successor as the api stores a task: index, tick, late-arrival hand-off.
      ENV.tickQueueUrl,
      ENV.lookaheadSeconds,
      ENV.tickEverySecond,
      ENV.maxAttempts,
      ENV.backoffBaseSeconds,
      ENV.backoffMaxSeconds,
      ENV.webhookTimeoutMs,
      ENV.allowInsecureTargets,
      ENV.retentionDays,
    ],
  },
  sweeper: {
    entry: 'functions/sweeper/handler.ts',
    timeoutSeconds: 120,
    memoryMb: 512,
    env: [
      ...coreEnv,
      ENV.deliveryQueueUrl,
      ENV.expressQueueUrl,
      ENV.sweepMaxSecondsPerRun,
      ENV.sweepGraceSeconds,
      ENV.overdueGraceSeconds,
      ENV.tickEverySecond,
    ],
  },
} as const satisfies Record<FunctionName, FunctionSpec>;

/**
 * Each function's code, sizing and environment. `env` keeps each function's own list as a type,
 * so its config (functions/commons/config.ts) is derived from the list: adding a variable to a
 * function is one edit, here.
 */
export const FUNCTIONS: { readonly [F in FunctionName]: FunctionSpec & Pick<(typeof FUNCTION_SPECS)[F], 'env'> } =
  FUNCTION_SPECS;

/** The variables a function reads from its environment, as FUNCTIONS lists them. */
export type FunctionEnvName<F extends FunctionName> = (typeof FUNCTIONS)[F]['env'][number];

/**
 * The function URL, when a deployment asks for one, runs the api's code as a function of its own,
 * with the api's environment and role and this reserved concurrency. The URL has no stage throttle
 * and takes anonymous requests, so this is its bound: a flood through it is throttled here and
 * never takes the concurrency the HTTP API's api function needs. 50 carries some 1,000 requests a
 * second at 50 ms each, the HTTP API stage's default rate; with it, the reservations (api, scanner,
 * URL) leave 700 of the account's 1,000: the callback's two mappings (450 and 200) and 50 for the
 * ticker and the sweeper.
 */
export const FUNCTION_URL = { fn: 'api', reservedConcurrency: 50 } as const satisfies {
  readonly fn: FunctionName;
  readonly reservedConcurrency: number;
};

export interface QueueSpec {
  readonly name: string;
  readonly visibilityTimeoutSeconds: number;
  readonly retentionSeconds: number;
  /** The function the queue feeds, with the event source mapping's batch settings. */
  readonly consumer?: {
    readonly fn: FunctionName;
    readonly batchSize: number;
    readonly maxBatchingWindowSeconds: number;
    /**
     * The most batches the event source mapping invokes at once (its `MaximumConcurrency`, 2 to
     * 1,000). Lambda scales the mapping up to this under a backlog; a cap below the function's
     * concurrency keeps the mapping from being throttled and leaves the rest to other callers.
     */
    readonly maxConcurrency: number;
  };
}

/**
 * Queues. Visibility timeouts follow the Lambda guidance of six times the consumer's
 * timeout, and the delivery queue's also outlasts a delivery lease so a message is
 * never re-delivered while another consumer may still be calling the target.
 */
export const QUEUES = {
  tick: {
    name: 'tick',
    visibilityTimeoutSeconds: 6 * FUNCTIONS.scanner.timeoutSeconds,
    // A tick only says "scan now"; a stale one is worthless, so it expires quickly and has no DLQ.
    retentionSeconds: 300,
    // Equal to the scanner's reserved concurrency: more would only be throttled.
    consumer: { fn: 'scanner', batchSize: 1, maxBatchingWindowSeconds: 0, maxConcurrency: 50 },
  },
  delivery: {
    name: 'delivery',
    visibilityTimeoutSeconds: 6 * FUNCTIONS.callback.timeoutSeconds,
    retentionSeconds: 14 * 24 * 3600,
    // A batch is held until its latest task's due time. Batches of 10 (no window) held about a
    // second each carried some 10 tasks a second per instance: 1,000 instances, the most a mapping
    // runs, were below a billion a day's average of 11,600 a second. Batches of up to 100,
    // gathered for up to a second, carry some 60 each, so 450 carry about 27,000 a second and a
    // 20,000-task second needs some 350. Messages surface a second earlier to pay for the window
    // (task-kernel.ts's delaySecondsUntil). The api (200) and the scanner (50) have reservations, leaving
    // 750 unreserved; this cap and the express queue's (200) leave 100 of those to the ticker and
    // the sweeper and to headroom, however deep a delivery surge runs.
    consumer: { fn: 'callback', batchSize: 100, maxBatchingWindowSeconds: 1, maxConcurrency: 450 },
  },
  // Messages whose task goes sooner than a delivery-queue message can bring it on time
  // (task-kernel.ts's goesExpress): a schedule's next occurrence a second away, a late arrival, a
  // retry due now. On the delivery queue they waited out its batching window behind messages
  // surfaced for later tasks, so a per-second schedule fell seconds behind at every busy minute
  // (quick scale model: p50 2-23 s late). Here the mapping invokes as soon as one is there, in
  // batches of up to ten (one receive), each held a second or so at most: the cap carries some
  // 2,000 such messages a second, two tenants' 1,000 per-second schedules each (the scale model's
  // steady state; at its 1/100, a cap of 1 carried half of them and the chains ran 3.5 s late).
  express: {
    name: 'express',
    visibilityTimeoutSeconds: 6 * FUNCTIONS.callback.timeoutSeconds,
    retentionSeconds: 14 * 24 * 3600,
    consumer: { fn: 'callback', batchSize: 10, maxBatchingWindowSeconds: 0, maxConcurrency: 200 },
  },
  deliveryDlq: {
    name: 'delivery-dlq',
    visibilityTimeoutSeconds: 30,
    retentionSeconds: 14 * 24 * 3600,
  },
} as const satisfies Record<string, QueueSpec>;

/**
 * How long a callback holds a task exclusively while calling its target: twice the
 * function timeout, so a live invocation never loses it, and well under the delivery
 * queue's visibility timeout, so a crashed invocation's message comes back after the
 * lease has lapsed and can take it over.
 */
export const DELIVERY_LEASE_MS = 2 * FUNCTIONS.callback.timeoutSeconds * 1000;

/**
 * How long a webhook's name resolution and TCP connect may take, within `webhookTimeoutMs`:
 * a receiver that cannot be reached in 3 s is down, and waiting longer only delays the retry.
 */
export const WEBHOOK_CONNECT_TIMEOUT_MS = 3000;

/** A delivery message that surfaces at most this early is held in memory; an earlier one goes back to the queue. */
export const MAX_EARLY_WAIT_MS = 5000;

/** A sweep stops re-scanning after this long, well inside its function timeout; the next run continues. */
export const SWEEPER_BUDGET_MS = 60_000;

/**
 * Seconds with tasks that no tick-driven scanner claimed this long after they were due are
 * claimed by the sweeper: a tick claims its second `lookaheadSeconds` before it is due, so
 * ten seconds past due means the tick was lost, not slow.
 */
export const SWEEPER_CATCH_UP_GRACE_SECONDS = 10;

/**
 * Scanner invocations stop after this long, between seconds or between send chunks of a busy one,
 * leaving the seconds not finished to the sweeper; the rest of the function timeout covers the chunk in hand.
 */
export const SCANNER_BUDGET_MS = 40_000;

/**
 * Receives before SQS moves a delivery message to the DLQ: the net for a poison message, one
 * whose processing keeps crashing or timing out. A message is received once when all goes
 * well, since every "come back later" (a retry's backoff, an early message, a throttled or
 * deferred task) is a new message and the received one is deleted; the callback dead-letters a
 * task whose attempts ran out itself. Only a crash, a timeout, a throttled lease write or a
 * batch Lambda turned away brings the same message back. A message moved by SQS leaves its task
 * PENDING, so it must take sustained failure, not a hot minute: at the 180 s visibility
 * timeout, 20 receives are an hour.
 */
export const DELIVERY_MAX_RECEIVE_COUNT = 20;

/** Schedules: the ticker fans one minute out into per-second ticks; the sweeper repairs missed seconds. */
export const SCHEDULES = {
  ticker: { fn: 'ticker', everySeconds: 60 },
  sweeper: { fn: 'sweeper', everySeconds: 60 },
} as const satisfies Record<string, { fn: FunctionName; everySeconds: number }>;

/** HTTP API routes, as API Gateway route keys; the local gateway matches the same list. */
export const API_ROUTES = [
  'POST /v1/tasks',
  'POST /v1/tasks/batch',
  'GET /v1/tasks',
  'GET /v1/tasks/{id}',
  'PATCH /v1/tasks/{id}',
  'DELETE /v1/tasks/{id}',
  'PUT /v1/biz-types/{bizType}',
  'GET /v1/biz-types/{bizType}',
  'GET /v1/biz-types',
  'DELETE /v1/biz-types/{bizType}',
  'POST /v1/schedules',
  'GET /v1/schedules',
  'GET /v1/schedules/{id}',
  'PATCH /v1/schedules/{id}',
  'DELETE /v1/schedules/{id}',
  'GET /v1/openapi.json',
] as const;

export type ApiRouteKey = (typeof API_ROUTES)[number];

/**
 * A secondary index of the task table. Keys are written once, when the task is created,
 * and nothing else is projected, so the status transitions that follow (lease, outcome,
 * cancel) never write the index: at a billion tasks a day each such write would cost as
 * much as the task's own.
 */
export interface IndexSpec {
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey: string;
  readonly projection: 'KEYS_ONLY';
}

/** The table's key and TTL attribute names, and its business-query indexes. */
export const TABLE = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'expiresAt',
  indexes: {
    /** `<tenant>#<bizId>`, by due time: the few tasks of one business object (an order, a coupon). */
    byBizId: { name: 'byBizId', partitionKey: 'bizIdKey', sortKey: 'sk', projection: 'KEYS_ONLY' },
    /**
     * `<tenant>#<bizType>#<shard>`, by due time: a bizType is few keys carrying many tasks, so the
     * task's write shard spreads it as the table's own keys are spread, and a listing walks the shards.
     */
    byBizType: { name: 'byBizType', partitionKey: 'bizTypeKey', sortKey: 'sk', projection: 'KEYS_ONLY' },
  },
} as const satisfies { indexes: Record<string, IndexSpec> } & Record<string, unknown>;

/** Maps settings and resource locations to the environment a function is given. */
export function environmentFor(
  fn: FunctionName,
  settings: TimerSettings,
  resources: Partial<Record<EnvName, string>>,
): Record<string, string> {
  // Every setting is named by its ENV key, so each one's variable is ENV[key].
  const values: Partial<Record<EnvName, string>> = {};
  for (const key of Object.keys(DEFAULT_SETTINGS) as Array<keyof TimerSettings>) {
    values[ENV[key]] = String(settings[key]);
  }
  Object.assign(values, resources);
  const env: Record<string, string> = {};
  for (const name of FUNCTIONS[fn].env) {
    const value = values[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/**
 * CloudWatch metrics the handlers publish as embedded metric format (log lines, so no
 * PutMetricData calls are paid for) and the stack's alarms and dashboard read. Powertools
 * adds the `service` dimension to every one.
 */
export const METRICS = {
  namespace: 'DistributedTimer',
  dimensions: { service: 'distributed-timer' },
  /** api: tasks stored (Count). */
  tasksCreated: 'TasksCreated',
  /** api: late arrivals the api enqueued itself (Count). */
  tasksEnqueuedDirect: 'TasksEnqueuedDirect',
  /** scanner: seconds claimed and scanned (Count). */
  secondsScanned: 'SecondsScanned',
  /** scanner: tasks sent to the delivery queue (Count). */
  tasksEnqueued: 'TasksEnqueued',
  /** scanner: tasks found in one second (Count, one value per second: its distribution shows hot seconds). */
  tasksPerSecond: 'TasksPerSecond',
  /** callback: records per invocation (Count). */
  deliveryBatchSize: 'DeliveryBatchSize',
  /** callback: successful deliveries (Count). */
  tasksDelivered: 'TasksDelivered',
  /** callback: delivery time minus dueAt, one value per delivery (Milliseconds). */
  deliveryLatenessMs: 'DeliveryLatenessMs',
  /** callback: attempts that failed, whether retried or not (Count). */
  deliveryAttemptsFailed: 'DeliveryAttemptsFailed',
  /** callback: attempts put off because their bizType's callback rate was used up for the second (Count). */
  deliveriesThrottled: 'DeliveriesThrottled',
  /** callback: tasks whose attempts ran out, now FAILED and in the DLQ (Count). */
  tasksFailed: 'TasksFailed',
  /** sweeper: tasks it had to enqueue because the normal path missed them (Count). Any is an incident. */
  missedTasks: 'MissedTasks',
  /** sweeper: now minus the scan cursor (Seconds); negative while scanners run ahead. */
  scannerLagSeconds: 'ScannerLagSeconds',
  /** sweeper: now minus its watermark (Seconds): how far back seconds are not yet known to be finished. */
  unsweptSeconds: 'UnsweptSeconds',
  /** sweeper: how far the overdue check trails its intended overdueGraceSeconds behind now (Seconds). */
  overdueCheckLagSeconds: 'OverdueCheckLagSeconds',
} as const;

/** Alarm thresholds, shared by the stack and its runbook. */
export const ALARM_THRESHOLDS = {
  /** Scanners this far behind real time deliver late; the lookahead keeps healthy lag near -lookahead. */
  scannerLagSeconds: 30,
  /** The sweeper's grace plus two runs; beyond this it is not keeping up or not running. */
  unsweptSeconds: 300,
  /** Beyond this, lost messages are not being looked for: tasks could wait without any alarm saying so. */
  overdueCheckLagSeconds: 300,
  /** Share of delivery attempts failing over five minutes. */
  deliveryFailureRate: 0.1,
} as const;
