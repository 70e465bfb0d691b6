import type { HttpApi, ThrottleSettings } from 'aws-cdk-lib/aws-apigatewayv2';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Billing, type TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { RemovalPolicy, Token, Tokenization } from 'aws-cdk-lib/core';
import { Construct } from 'constructs';

import {
  DEFAULT_SETTINGS,
  FUNCTION_URL,
  type FunctionName,
  FUNCTIONS,
  QUEUES,
  type TimerSettings,
} from '../../functions/contract/topology.js';
import { MAX_SHARDS } from '../../functions/core/kernel/ids.js';
import { ALLOW_LISTS, type AllowListSpec } from '../../functions/core/targets/allowed-targets.js';
import { DEFAULT_API_THROTTLE, TimerApi } from './timer/api.js';
import { type TimerAlarmKey, TimerMonitoring } from './timer/monitoring.js';
import { TimerPipeline } from './timer/pipeline.js';
import { TimerStorage } from './timer/storage.js';

export { DEFAULT_API_THROTTLE } from './timer/api.js';
export type { TimerAlarmKey } from './timer/monitoring.js';

/** Fewer buckets than a minute's seconds would put a task's whole minute in one partition key set. */
const MIN_BUCKETS = 60;

export interface DistributedTimerProps {
  /**
   * Deployment settings other than the bucket and shard counts.
   * @default DEFAULT_SETTINGS from functions/contract/topology.ts
   */
  readonly settings?: Partial<Omit<TimerSettings, 'bucketCount' | 'shardCount' | 'allowInsecureTargets'>>;
  /**
   * N in bucket = floor(dueAt seconds) mod N. A number, or a token such as a stack
   * parameter's `valueAsNumber`. Fix it before the first task: changing it strands tasks.
   * @default 10,000,000 (about 115 days)
   */
  readonly bucketCount?: number;
  /**
   * Partitions each second is spread over (a partition takes about 1,000 writes/s), at most
   * 1,024. A number or a token. Fix it before the first task: changing it strands tasks.
   * `npm run plan` says what a given load needs.
   * @default 80 — sized for 1e9 timers a day with 20,000 due in one second
   */
  readonly shardCount?: number;
  /**
   * An address subscribed to the alarm topic (it must confirm). A string or a token; an
   * empty value subscribes nobody.
   * @default no subscription
   */
  readonly alarmEmail?: string;
  /**
   * What happens to the task table when the construct is removed.
   * @default RemovalPolicy.RETAIN — tasks are customer data
   */
  readonly tableRemovalPolicy?: RemovalPolicy;
  /**
   * The functions' processor architecture.
   * @default lambda.Architecture.ARM_64 — cheaper per GB-second for the same work
   */
  readonly architecture?: lambda.Architecture;
  /**
   * How long the functions' logs and the API's access logs are kept.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Steady requests per second (`rateLimit`) and burst size (`burstLimit`) every route of the
   * API accepts before answering 429. A limit left out keeps its default.
   * @default DEFAULT_API_THROTTLE — 1,000 requests a second, bursts of 2,000
   */
  readonly apiThrottle?: ThrottleSettings;
  /**
   * Whether the api's code also gets a Lambda function URL (`functionUrl`), a second front door
   * to the same routes that costs nothing beyond the invocation, where the HTTP API adds $0.90-1.00 per
   * million requests. It authenticates by API key like the HTTP API, but has neither its stage
   * throttle (`apiThrottle`) nor its access logs. It runs on a function of its own (`urlFunction`),
   * whose reserved concurrency (`functionUrlReservedConcurrency`) bounds it, so a flood through the
   * URL never takes the api function's concurrency, which the HTTP API needs. Off by default, so
   * that a deployment opens a public endpoint without those only when it asks for one.
   * @default false — the HTTP API is the only endpoint
   */
  readonly functionUrl?: boolean;
  /**
   * The URL function's reserved concurrency, when `functionUrl` is set: the URL's only throttle,
   * and a floor no delivery surge can take. At about 50 ms a request, 50 carries some 1,000 single
   * submits a second; more needs more, within the account's concurrency quota (docs/limits.md).
   * @default FUNCTION_URL.reservedConcurrency — 50
   */
  readonly functionUrlReservedConcurrency?: number;
  /**
   * The api function's reserved concurrency: a floor no delivery surge can take and a ceiling
   * it cannot pass. At about 80 ms a request, 200 carries some 2,500 requests a second; single
   * submits at a billion a day need more (`npm run plan -- --batch 1` says how many), and the
   * account's concurrency quota raised to fit it (docs/limits.md).
   * @default FUNCTIONS.api.reservedConcurrency — 200
   */
  readonly apiReservedConcurrency?: number;
  /**
   * The task table's capacity. On demand scales to the account's per-table quota (40,000 read and
   * 40,000 write request units a second unless raised); `Billing.onDemand({ maxReadRequestUnits,
   * maxWriteRequestUnits })` caps what a runaway client can spend, and `Billing.provisioned(…)`
   * buys a steady billion-a-day load for less. A cap below the load throttles submits (503) and
   * delays deliveries: size it from docs/limits.md.
   * @default Billing.onDemand() — no ceiling below the account's table quota
   */
  readonly tableBilling?: Billing;
  /**
   * The most delivery batches (of up to 100 tasks gathered for up to a second, each held until its
   * latest task is due) the callback runs at once: its SQS event source mapping's maximum
   * concurrency, 2 to 1,000. The default, with the express mapping's 200, suits Lambda's default
   * quota of 1,000 concurrent executions and carries some 27,000 tasks a second; raise it only
   * after raising that quota (docs/limits.md), or deliveries take the pool the ticker and sweeper need.
   * @default QUEUES.delivery.consumer.maxConcurrency — 450
   */
  readonly deliveryMaxConcurrency?: number;
  /**
   * Whether the ticker, scanner, callback and sweeper run with active X-Ray tracing (a trace per
   * sampled invocation, a subsegment per AWS call). Lambda samples at a fixed rate, one request a
   * second and 5% of the rest, at $5.00 per million traces; X-Ray's sampling rules do not apply to
   * it. Turn it off to keep logs and metrics only.
   * @default true
   */
  readonly tracing?: boolean;
  /**
   * Whether the api runs with active X-Ray tracing too. Off by default: each single submit is an
   * invocation of its own, so tracing it costs about $0.25 per million submits at a billion a day
   * (`npm run plan` prices it), for traces of one PutItem each.
   * @default false
   */
  readonly apiTracing?: boolean;
  /**
   * The SQS queues tasks may target, as ARNs (IAM wildcards allowed), or a list token such as
   * a CommaDelimitedList parameter's `valueAsList`. The callback may send to exactly these and
   * the api refuses other queues. A queue encrypted with a customer managed KMS key must also
   * let `callbackRole` use kms:GenerateDataKey and kms:Decrypt in its key policy, and a queue
   * in another account must allow `callbackRole` sqs:SendMessage in its queue policy.
   * @default none — no task may target a queue
   */
  readonly allowedQueueArns?: string[];
  /**
   * The EventBridge event buses tasks may target, as ARNs (IAM wildcards allowed) or a list
   * token. The callback may put events on exactly these and the api refuses other buses. A bus
   * in another account must allow `callbackRole` events:PutEvents in its resource policy.
   * @default none — no task may target an event bus
   */
  readonly allowedEventBusArns?: string[];
}

/** Rejects a literal number that is not whole or is outside its range; a token is checked by whatever supplies it. */
/** Which functions run traced: the api only when asked, the others unless `tracing` is false. */
function tracingOf(props: DistributedTimerProps): Record<FunctionName, boolean> {
  const others = props.tracing ?? true;
  return { api: props.apiTracing ?? false, ticker: others, scanner: others, callback: others, sweeper: others };
}

function checkedWholeNumber(name: string, value: number, min: number, max: number): number {
  if (!Token.isUnresolved(value) && (!Number.isInteger(value) || value < min || value > max)) {
    throw new Error(`DistributedTimer: ${name} must be a whole number from ${min} to ${max}, got ${value}`);
  }
  return value;
}

/**
 * Rejects a literal entry that is not an ARN of the kind the list holds; entries only known at
 * deploy time are checked by the stack parameter's pattern.
 */
function checkedArns(name: string, arns: readonly string[], spec: AllowListSpec): readonly string[] {
  const literals = Token.isUnresolved(arns) ? [] : arns.filter((arn) => !Token.isUnresolved(arn));
  for (const arn of literals) {
    if (!spec.pattern.test(arn)) {
      throw new Error(`DistributedTimer: ${name} must hold ARNs such as ${spec.example}, got "${arn}"`);
    }
  }
  return arns;
}

/** The stage throttle: each limit given, else its default; the rate may be fractional, the burst may not. */
function checkedThrottle(throttle: ThrottleSettings = {}): Required<ThrottleSettings> {
  const rateLimit = throttle.rateLimit ?? DEFAULT_API_THROTTLE.rateLimit;
  if (!Token.isUnresolved(rateLimit) && !(rateLimit >= 0)) {
    throw new Error(
      `DistributedTimer: apiThrottle.rateLimit must be a number of requests a second, at least 0, got ${rateLimit}`,
    );
  }
  const burstLimit = throttle.burstLimit ?? DEFAULT_API_THROTTLE.burstLimit;
  return {
    rateLimit,
    burstLimit: checkedWholeNumber('apiThrottle.burstLimit', burstLimit, 0, Number.MAX_SAFE_INTEGER),
  };
}

/**
 * The timer service: API Gateway → api Lambda → DynamoDB buckets; a per-minute rule
 * fanning out per-second ticks to the scanner; SQS with a DLQ → callback Lambda;
 * a per-minute sweeper. Queue settings, batch sizes, timeouts, schedules and
 * environment names all come from functions/contract/topology.ts, which local mode reads too, and so do
 * the metric names and thresholds of the alarms, which notify `alarmTopic` and link
 * their section of docs/runbook.md.
 */
export class DistributedTimer extends Construct {
  readonly table: TableV2;
  readonly queues: Record<keyof typeof QUEUES, sqs.Queue>;
  readonly functions: Record<FunctionName, lambda.Function>;
  readonly api: HttpApi;
  /** Base URL of the API; tasks are created at `${apiUrl}/v1/tasks`. */
  readonly apiUrl: string;
  /**
   * The function URL, when `functionUrl` is set: a base URL for the same routes, ending
   * with '/' (tasks are created at `${functionUrl.url}v1/tasks`).
   */
  readonly functionUrl?: lambda.FunctionUrl;
  /** The api's code behind the function URL, with its own reserved concurrency, when `functionUrl` is set. */
  readonly urlFunction?: lambda.Function;
  /**
   * The role the callback sends to target queues and event buses with: what the key policy of
   * an SSE-KMS target queue, and the policies of targets in other accounts, must allow.
   */
  readonly callbackRole: iam.IRole;
  /** Receives every alarm's ALARM and OK notifications; `alarmEmail` subscribes an address to it. */
  readonly alarmTopic: sns.Topic;
  /** Every alarm, by key, so a deployment can add actions of its own (a pager, a chat channel). */
  readonly alarms: Record<TimerAlarmKey, cloudwatch.Alarm>;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: DistributedTimerProps = {}) {
    super(scope, id);
    const settings: TimerSettings = { ...DEFAULT_SETTINGS, ...props.settings, allowInsecureTargets: false };
    const bucketCount = Tokenization.stringifyNumber(
      checkedWholeNumber(
        'bucketCount',
        props.bucketCount ?? DEFAULT_SETTINGS.bucketCount,
        MIN_BUCKETS,
        Number.MAX_SAFE_INTEGER,
      ),
    );
    const shardCount = Tokenization.stringifyNumber(
      checkedWholeNumber('shardCount', props.shardCount ?? DEFAULT_SETTINGS.shardCount, 1, MAX_SHARDS),
    );
    const apiThrottle = checkedThrottle(props.apiThrottle);
    const allowedQueueArns = checkedArns('allowedQueueArns', props.allowedQueueArns ?? [], ALLOW_LISTS.queue);
    const allowedEventBusArns = checkedArns(
      'allowedEventBusArns',
      props.allowedEventBusArns ?? [],
      ALLOW_LISTS.eventBus,
    );
    const logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;

    // Each concern is a part that adds its resources to this construct's own scope, the way
    // cdk-monitoring-constructs' Monitoring classes add alarms to the facade's scope, rather than a
    // construct of its own. CDK derives a resource's logical id from its construct path, so a
    // Storage or Pipeline scope in between would give every resource a new id, and CloudFormation
    // would replace them all on the next deploy: the retained task table would be orphaned with its
    // tasks and an empty one created. Parts keep every id, and the order resources are created in,
    // exactly as the single constructor had them. ('Default' hides one scope from the ids, but only
    // one per parent; TimerStack already spends it on this construct.)
    this.table = new TimerStorage(this, {
      removalPolicy: props.tableRemovalPolicy ?? RemovalPolicy.RETAIN,
      billing: props.tableBilling ?? Billing.onDemand(),
    }).table;
    const pipeline = new TimerPipeline(this, {
      table: this.table,
      settings,
      bucketCount,
      shardCount,
      allowedQueueArns,
      allowedEventBusArns,
      architecture: props.architecture ?? lambda.Architecture.ARM_64,
      logRetention,
      apiReservedConcurrency: checkedWholeNumber(
        'apiReservedConcurrency',
        props.apiReservedConcurrency ?? FUNCTIONS.api.reservedConcurrency ?? 0,
        1,
        Number.MAX_SAFE_INTEGER,
      ),
      ...(props.functionUrl && {
        functionUrlReservedConcurrency: checkedWholeNumber(
          'functionUrlReservedConcurrency',
          props.functionUrlReservedConcurrency ?? FUNCTION_URL.reservedConcurrency,
          1,
          Number.MAX_SAFE_INTEGER,
        ),
      }),
      deliveryMaxConcurrency: checkedWholeNumber(
        'deliveryMaxConcurrency',
        props.deliveryMaxConcurrency ?? QUEUES.delivery.consumer.maxConcurrency,
        2,
        1000,
      ),
      tracing: tracingOf(props),
    });
    this.queues = pipeline.queues;
    this.functions = pipeline.functions;
    this.callbackRole = pipeline.callbackRole;
    this.urlFunction = pipeline.urlFunction;
    const frontDoors = new TimerApi(this, {
      handler: this.functions.api,
      throttle: apiThrottle,
      logRetention,
      urlHandler: this.urlFunction,
    });
    this.api = frontDoors.api;
    this.functionUrl = frontDoors.functionUrl;
    const monitoring = new TimerMonitoring(this, {
      deliveryDlq: this.queues.deliveryDlq,
      functions: this.functions,
      api: this.api,
      alarmEmail: props.alarmEmail,
    });
    this.alarmTopic = monitoring.alarmTopic;
    this.alarms = monitoring.alarms;
    this.dashboard = monitoring.dashboard;

    this.apiUrl = this.api.apiEndpoint;
  }
}
