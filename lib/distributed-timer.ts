import {
  Aws,
  CfnCondition,
  aws_cloudwatch as cloudwatch,
  aws_cloudwatch_actions as cloudwatchActions,
  Duration,
  aws_events as events,
  Fn,
  aws_iam as iam,
  aws_kms as kms,
  aws_lambda as lambda,
  aws_logs as logs,
  RemovalPolicy,
  aws_sns as sns,
  aws_sqs as sqs,
  aws_events_targets as targets,
  Token,
  Tokenization,
  Validations,
  Stack,
} from 'aws-cdk-lib';
import { AccessLogField, AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpMethod, LogGroupLogDestination, type ThrottleSettings } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AttributeType, Billing, ProjectionType, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { Construct, type IConstruct } from 'constructs';
import { BUNDLE_HANDLER, functionCode } from './bundles.js';
import { ALLOW_LISTS, type AllowListSpec } from '../functions/core/allowed-targets.js';
import { MAX_SHARDS } from '../functions/core/ids.js';

import {
  ALARM_THRESHOLDS,
  API_ROUTES,
  DEFAULT_SETTINGS,
  deliveryMaxReceiveCount,
  ENV,
  type EnvName,
  environmentFor,
  FUNCTIONS,
  type FunctionName,
  METRICS,
  QUEUES,
  type QueueSpec,
  SCHEDULES,
  TABLE,
  type TimerSettings,
} from '../functions/contract/topology.js';

/** Fewer buckets than a minute's seconds would put a task's whole minute in one partition key set. */
const MIN_BUCKETS = 60;

/**
 * What every route of the API accepts before it answers 429: 1,000 requests a second, in bursts
 * of up to 2,000. That is a tenth of the account's regional API Gateway quota (10,000/s), so one
 * runaway caller cannot starve the account's other APIs, and about 50 concurrent api functions
 * at 50 ms a request, far from Lambda's default limit of 1,000. Batches of 100 still admit
 * 100,000 tasks a second, well above the 20,000-a-second peak the design plans for; a workload
 * of single POSTs above 1,000 tasks a second needs a higher `apiThrottle`. TimerClient retries
 * a 429 with the same idempotency key, so throttling never creates a second task.
 */
export const DEFAULT_API_THROTTLE = { rateLimit: 1000, burstLimit: 2000 } as const satisfies ThrottleSettings;

/**
 * One JSON object per API request. The route key, not the path, so task ids stay out of the
 * logs; `integrationError` says why the api function failed when API Gateway answers 5xx.
 */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: AccessLogField.contextRequestId(),
    ip: AccessLogField.contextIdentitySourceIp(),
    requestTime: AccessLogField.contextRequestTime(),
    routeKey: AccessLogField.contextRouteKey(),
    status: AccessLogField.contextStatus(),
    latency: AccessLogField.contextResponseLatency(),
    responseLength: AccessLogField.contextResponseLength(),
    integrationError: AccessLogField.contextIntegrationErrorMessage(),
  }),
);

/**
 * Acknowledges a cdk-nag (AwsSolutions) rule on one resource: the CloudFormation resource of
 * `construct`, never a scope above it, so the acknowledgement cannot hide a finding elsewhere.
 */
function acknowledgeNagRule(construct: IConstruct, rule: string, reason: string): void {
  Validations.of(construct.node.defaultChild ?? construct).acknowledge({ id: `AwsSolutions-${rule}`, reason });
}

/** Construct ids are PascalCase; topology keys are camelCase. */
const capitalized = (name: string): string => `${name[0]?.toUpperCase()}${name.slice(1)}`;

/** Every alarm description ends with a link to its section here; the infra tests check each anchor exists. */
const RUNBOOK = 'docs/runbook.md';

const ONE_MINUTE = Duration.minutes(1);

type TimerMetricKey = Exclude<keyof typeof METRICS, 'namespace' | 'dimensions'>;

/** A metric the handlers publish, by its key in METRICS, so no metric name is typed twice. */
function timerMetric(key: TimerMetricKey, statistic: string, label?: string, period = ONE_MINUTE): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRICS.namespace,
    metricName: METRICS[key],
    dimensionsMap: METRICS.dimensions,
    statistic,
    period,
    label,
  });
}

/** The alarms the stack creates; each function has an `Errors` and a `Throttles` alarm. */
export type TimerAlarmKey =
  | 'missedTasks'
  | 'deliveryDlqNotEmpty'
  | 'scannerLag'
  | 'unsweptSeconds'
  | 'overdueCheckLag'
  | 'deliveryFailureRate'
  | 'apiServerErrors'
  | `${FunctionName}${'Errors' | 'Throttles'}`;

/** One alarm: it fires when `metric` is above `threshold` for `periods` periods in a row. */
interface AlarmSpec {
  readonly metric: cloudwatch.IMetric;
  readonly threshold: number;
  /**
   * Consecutive breaching periods before the alarm fires.
   * @default 1
   */
  readonly periods?: number;
  readonly treatMissingData: cloudwatch.TreatMissingData;
  /** What the alarm means, for whoever receives it. */
  readonly description: string;
  /** The anchor of the alarm's section in the runbook. */
  readonly runbookAnchor: string;
}

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
   * @default 16
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

/** A list as one environment value; a list token (a stack parameter) is joined at deploy time. */
function commaSeparated(list: readonly string[]): string {
  return Token.isUnresolved(list) ? Fn.join(',', [...list]) : list.join(',');
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
    const logGroup = (id: string) =>
      new logs.LogGroup(this, id, {
        retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
      });

    this.table = new TableV2(this, 'Tasks', {
      partitionKey: { name: TABLE.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE.sortKey, type: AttributeType.STRING },
      billing: Billing.onDemand(),
      timeToLiveAttribute: TABLE.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // The AWS managed key (aws/dynamodb): KMS encryption with every use in CloudTrail, and no key
      // policy to get wrong. A customer managed key would buy revocation and cross-account sharing,
      // which nothing here needs, at the price of a key whose disabling or deletion locks a retained
      // table of customer data.
      encryption: TableEncryptionV2.awsManagedKey(),
      removalPolicy: props.tableRemovalPolicy ?? RemovalPolicy.RETAIN,
      globalSecondaryIndexes: Object.values(TABLE.indexes).map((index) => ({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
        sortKey: { name: index.sortKey, type: AttributeType.STRING },
        projectionType: ProjectionType[index.projection],
      })),
    });

    const queue = (key: keyof typeof QUEUES, deadLetterQueue?: sqs.DeadLetterQueue) => {
      const spec: QueueSpec = QUEUES[key];
      return new sqs.Queue(this, `${capitalized(key)}Queue`, {
        visibilityTimeout: Duration.seconds(spec.visibilityTimeoutSeconds),
        retentionPeriod: Duration.seconds(spec.retentionSeconds),
        // SSE-SQS: encrypted at rest with keys SQS manages, so KMS, its grants and its request quota are
        // not in the delivery path. The messages hold only task ids; payloads stay in the table.
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        ...(deadLetterQueue && { deadLetterQueue }),
      });
    };
    const deliveryDlq = queue('deliveryDlq');
    this.queues = {
      tick: queue('tick'),
      delivery: queue('delivery', { queue: deliveryDlq, maxReceiveCount: deliveryMaxReceiveCount(settings) }),
      deliveryDlq,
    };
    acknowledgeNagRule(
      this.queues.tick,
      'SQS3',
      'A tick only says "scan now" and is worthless minutes later, so it expires after 5 minutes instead of ' +
        'going to a DLQ: a second whose tick kept failing is re-scanned by the sweeper, and the scanner-lag ' +
        'and unswept-seconds alarms say so. A DLQ would only collect stale ticks, and redriving them would scan nothing new.',
    );

    const resources: Partial<Record<EnvName, string>> = {
      [ENV.tableName]: this.table.tableName,
      [ENV.tickQueueUrl]: this.queues.tick.queueUrl,
      [ENV.deliveryQueueUrl]: this.queues.delivery.queueUrl,
      [ENV.deliveryDlqUrl]: this.queues.deliveryDlq.queueUrl,
      [ENV.bucketCount]: bucketCount,
      [ENV.shardCount]: shardCount,
      [ENV.allowedQueueArns]: commaSeparated(allowedQueueArns),
      [ENV.allowedEventBusArns]: commaSeparated(allowedEventBusArns),
      [ENV.awsAccount]: Stack.of(this).account,
      [ENV.awsPartition]: Stack.of(this).partition,
    };
    const roles = {} as Record<FunctionName, iam.Role>;
    const fn = (name: FunctionName) => {
      const spec = FUNCTIONS[name];
      const functionLogs = logGroup(`${capitalized(name)}Logs`);
      // A role of its own rather than AWSLambdaBasicExecutionRole, whose log actions reach every log
      // group in the account.
      const role = new iam.Role(this, `${capitalized(name)}FunctionRole`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `The distributed timer's ${name} function`,
      });
      functionLogs.grantWrite(role);
      roles[name] = role;
      return new lambda.Function(this, `${capitalized(name)}Function`, {
        code: functionCode(name),
        handler: BUNDLE_HANDLER,
        runtime: lambda.Runtime.NODEJS_24_X,
        architecture: props.architecture ?? lambda.Architecture.ARM_64,
        memorySize: spec.memoryMb,
        timeout: Duration.seconds(spec.timeoutSeconds),
        environment: environmentFor(name, settings, resources),
        role,
        logGroup: functionLogs,
        // Powertools Tracer writes a segment per invocation and a subsegment per AWS call.
        tracing: lambda.Tracing.ACTIVE,
      });
    };
    this.functions = {
      api: fn('api'),
      ticker: fn('ticker'),
      scanner: fn('scanner'),
      callback: fn('callback'),
      sweeper: fn('sweeper'),
    };
    this.callbackRole = roles.callback;
    for (const role of Object.values(roles)) {
      const policy = role.node.tryFindChild('DefaultPolicy');
      if (policy) {
        acknowledgeNagRule(
          policy,
          'IAM5[Resource::*]',
          'Active tracing grants xray:PutTraceSegments and xray:PutTelemetryRecords, which take no resource-level ' +
            'permissions (the X-Ray service authorization reference lists none): "*" is the only resource they accept.',
        );
      }
    }
    this.grantLeastPrivilege();
    this.grantTargets('AllowedQueues', ['sqs:SendMessage'], allowedQueueArns);
    this.grantTargets('AllowedEventBuses', ['events:PutEvents'], allowedEventBusArns);

    for (const [key, spec] of Object.entries(QUEUES) as Array<[keyof typeof QUEUES, QueueSpec]>) {
      if (!spec.consumer) continue;
      this.functions[spec.consumer.fn].addEventSource(
        new SqsEventSource(this.queues[key], {
          batchSize: spec.consumer.batchSize,
          maxBatchingWindow:
            spec.consumer.maxBatchingWindowSeconds > 0
              ? Duration.seconds(spec.consumer.maxBatchingWindowSeconds)
              : undefined,
          reportBatchItemFailures: true,
        }),
      );
    }
    for (const [key, schedule] of Object.entries(SCHEDULES)) {
      new events.Rule(this, `${capitalized(key)}Schedule`, {
        description: `Invokes the ${schedule.fn} every ${schedule.everySeconds} seconds`,
        schedule: events.Schedule.rate(Duration.seconds(schedule.everySeconds)),
        targets: [new targets.LambdaFunction(this.functions[schedule.fn])],
      });
    }

    this.api = new HttpApi(this, 'HttpApi', { description: 'Distributed timer API v1', createDefaultStage: false });
    // The $default stage, made here because the one HttpApi makes itself takes no throttle or access logs.
    this.api.addStage('DefaultStage', {
      autoDeploy: true,
      throttle: apiThrottle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(logGroup('ApiAccessLogs')),
        format: ACCESS_LOG_FORMAT,
      },
    });
    const integration = new HttpLambdaIntegration('ApiIntegration', this.functions.api);
    for (const routeKey of API_ROUTES) {
      const [method, path] = routeKey.split(' ') as [keyof typeof HttpMethod, string];
      const noAuthorizerReason =
        `${routeKey} is authenticated by the api function itself, which resolves the caller's API key to its tenant ` +
        "and lets it see and change only that tenant's tasks. That check reads the task table anyway; an API " +
        'Gateway authorizer would be a second copy of it, and a Lambda authorizer a second invocation per request.';
      for (const route of this.api.addRoutes({ path, methods: [HttpMethod[method]], integration })) {
        acknowledgeNagRule(route, 'APIG4', noAuthorizerReason);
      }
    }

    this.alarmTopic = this.createAlarmTopic(props.alarmEmail);
    this.alarms = this.createAlarms();
    this.dashboard = this.createDashboard();

    this.apiUrl = this.api.apiEndpoint;
  }

  /**
   * The topic alarms notify. It is encrypted with a key of its own because CloudWatch
   * cannot use the AWS managed aws/sns key: a topic encrypted with that key silently drops
   * every alarm notification.
   */
  private createAlarmTopic(alarmEmail: string | undefined): sns.Topic {
    const cloudWatch = new iam.ServicePrincipal('cloudwatch.amazonaws.com');
    const key = new kms.Key(this, 'AlarmTopicKey', {
      description: 'Encrypts the distributed timer alarm topic',
      enableKeyRotation: true,
      // The key protects notifications in flight only; nothing stored needs it after the stack is gone.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [cloudWatch],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
      }),
    );
    const topic = new sns.Topic(this, 'AlarmTopic', {
      displayName: 'Distributed timer alarms',
      masterKey: key,
      enforceSSL: true,
    });
    // enforceSSL gives the topic a policy of its own, which replaces the default one that let
    // this account's alarms publish; so say again that they may.
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [cloudWatch],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: {
          ArnLike: { 'aws:SourceArn': `arn:${Aws.PARTITION}:cloudwatch:${Aws.REGION}:${Aws.ACCOUNT_ID}:alarm:*` },
          StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID },
        },
      }),
    );
    if (alarmEmail === undefined || alarmEmail === '') return topic;
    const subscription = new sns.CfnSubscription(this, 'AlarmEmailSubscription', {
      topicArn: topic.topicArn,
      protocol: 'email',
      endpoint: alarmEmail,
    });
    // A token (a stack parameter, say) may still turn out empty at deploy time.
    if (Token.isUnresolved(alarmEmail)) {
      subscription.cfnOptions.condition = new CfnCondition(this, 'HasAlarmEmail', {
        expression: Fn.conditionNot(Fn.conditionEquals(alarmEmail, '')),
      });
    }
    return topic;
  }

  /** An alarm that notifies the alarm topic when it fires and when it recovers. */
  private alarm(id: string, spec: AlarmSpec): cloudwatch.Alarm {
    const periods = spec.periods ?? 1;
    const alarm = new cloudwatch.Alarm(this, id, {
      metric: spec.metric,
      threshold: spec.threshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: periods,
      datapointsToAlarm: periods,
      treatMissingData: spec.treatMissingData,
      alarmDescription: `${spec.description} Runbook: ${RUNBOOK}#${spec.runbookAnchor}`,
    });
    const notify = new cloudwatchActions.SnsAction(this.alarmTopic);
    alarm.addAlarmAction(notify);
    alarm.addOkAction(notify);
    return alarm;
  }

  /** Alarms on the service's own metrics (functions/contract/topology.ts METRICS), its DLQ, its API and each function. */
  private createAlarms(): Record<TimerAlarmKey, cloudwatch.Alarm> {
    const { BREACHING, NOT_BREACHING } = cloudwatch.TreatMissingData;
    const fiveMinutes = Duration.minutes(5);
    const service = {
      missedTasks: this.alarm('MissedTasksAlarm', {
        metric: timerMetric('missedTasks', 'Sum'),
        threshold: 0,
        // Nothing published means nothing missed; a sweeper that stopped shows in the scanner lag alarm.
        treatMissingData: NOT_BREACHING,
        description:
          'The sweeper enqueued tasks the normal path (a scanner, or the api for a late arrival) had missed; they are delivered late. Any is an incident.',
        runbookAnchor: 'missed-tasks',
      }),
      deliveryDlqNotEmpty: this.alarm('DeliveryDlqNotEmptyAlarm', {
        metric: this.queues.deliveryDlq.metricApproximateNumberOfMessagesVisible({
          statistic: cloudwatch.Stats.MAXIMUM,
          period: ONE_MINUTE,
        }),
        threshold: 0,
        // SQS stops reporting only for an empty, idle queue; a queue that holds messages keeps reporting.
        treatMissingData: NOT_BREACHING,
        description:
          'Delivery dead letters are waiting: tasks FAILED after their last attempt, or messages SQS moved after maxReceiveCount receives.',
        runbookAnchor: 'delivery-dlq-not-empty',
      }),
      scannerLag: this.alarm('ScannerLagAlarm', {
        metric: timerMetric('scannerLagSeconds', cloudwatch.Stats.MAXIMUM),
        threshold: ALARM_THRESHOLDS.scannerLagSeconds,
        periods: 2,
        // The sweeper publishes the lag every minute; silence means the sweeper is not running.
        treatMissingData: BREACHING,
        description: `Scanners are more than ${ALARM_THRESHOLDS.scannerLagSeconds} s behind real time, so deliveries are late, or the sweeper that measures the lag is not running.`,
        runbookAnchor: 'scanner-lag',
      }),
      unsweptSeconds: this.alarm('UnsweptSecondsAlarm', {
        metric: timerMetric('unsweptSeconds', cloudwatch.Stats.MAXIMUM),
        threshold: ALARM_THRESHOLDS.unsweptSeconds,
        periods: 3,
        // A silent sweeper already fires the scanner lag alarm; one cause should page once.
        treatMissingData: NOT_BREACHING,
        description: `The sweeper's watermark is more than ${ALARM_THRESHOLDS.unsweptSeconds} s behind: claimed seconds are not yet known to be finished, and tasks in them may wait.`,
        runbookAnchor: 'unswept-seconds',
      }),
      overdueCheckLag: this.alarm('OverdueCheckLagAlarm', {
        metric: timerMetric('overdueCheckLagSeconds', cloudwatch.Stats.MAXIMUM),
        threshold: ALARM_THRESHOLDS.overdueCheckLagSeconds,
        periods: 3,
        // As with unswept seconds, a silent sweeper already pages through the scanner lag alarm.
        treatMissingData: NOT_BREACHING,
        description: `The sweeper's check for lost messages is more than ${ALARM_THRESHOLDS.overdueCheckLagSeconds} s behind schedule: a task whose message was lost would wait unnoticed.`,
        runbookAnchor: 'overdue-check-lag',
      }),
      deliveryFailureRate: this.alarm('DeliveryFailureRateAlarm', {
        metric: new cloudwatch.MathExpression({
          // When every attempt fails nothing is delivered, and a missing term would hide a rate of 1.
          expression: 'failed / (FILL(delivered, 0) + failed)',
          usingMetrics: {
            failed: timerMetric('deliveryAttemptsFailed', cloudwatch.Stats.SUM, undefined, fiveMinutes),
            delivered: timerMetric('tasksDelivered', cloudwatch.Stats.SUM, undefined, fiveMinutes),
          },
          label: 'Share of delivery attempts failing',
          period: fiveMinutes,
        }),
        threshold: ALARM_THRESHOLDS.deliveryFailureRate,
        // No attempts, no rate.
        treatMissingData: NOT_BREACHING,
        description: `More than ${ALARM_THRESHOLDS.deliveryFailureRate * 100}% of delivery attempts failed over five minutes; tasks are retrying with backoff.`,
        runbookAnchor: 'delivery-failure-rate',
      }),
      apiServerErrors: this.alarm('ApiServerErrorsAlarm', {
        metric: this.api.metricServerError({ statistic: cloudwatch.Stats.SUM, period: ONE_MINUTE }),
        threshold: 0,
        treatMissingData: NOT_BREACHING,
        description: 'The API answered 5xx: callers got an error and may have retried.',
        runbookAnchor: 'api-5xx-errors',
      }),
    };

    const perFunction = {
      Errors: {
        metric: (fn: lambda.IFunction) => fn.metricErrors({ statistic: cloudwatch.Stats.SUM, period: ONE_MINUTE }),
        means: 'threw or timed out',
        runbookAnchor: 'function-errors',
      },
      Throttles: {
        metric: (fn: lambda.IFunction) => fn.metricThrottles({ statistic: cloudwatch.Stats.SUM, period: ONE_MINUTE }),
        means: 'was throttled: Lambda turned invocations away for lack of concurrency',
        runbookAnchor: 'function-throttles',
      },
    };
    const functionAlarms = (Object.keys(FUNCTIONS) as FunctionName[]).flatMap((name) =>
      Object.entries(perFunction).map(([kind, { metric, means, runbookAnchor }]) => {
        const alarm = this.alarm(`${capitalized(name)}Function${kind}Alarm`, {
          metric: metric(this.functions[name]),
          threshold: 0,
          // No invocations, nothing failed.
          treatMissingData: NOT_BREACHING,
          description: `The ${name} function ${means}.`,
          runbookAnchor,
        });
        return [`${name}${kind}`, alarm] as const;
      }),
    );
    return { ...service, ...Object.fromEntries(functionAlarms) } as Record<TimerAlarmKey, cloudwatch.Alarm>;
  }

  /** One page for the on-call: throughput, lateness, the scanner and sweeper, the DLQ and every alarm's state. */
  private createDashboard(): cloudwatch.Dashboard {
    const graph = (title: string, left: cloudwatch.IMetric[], leftAnnotations?: cloudwatch.HorizontalAnnotation[]) =>
      new cloudwatch.GraphWidget({ title, left, leftAnnotations, width: 12, height: 6 });
    const perMinute = (key: TimerMetricKey, label: string) => timerMetric(key, cloudwatch.Stats.SUM, label);
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(3) });
    dashboard.addWidgets(
      graph('Tasks per minute', [
        perMinute('tasksCreated', 'created'),
        perMinute('tasksEnqueued', 'enqueued by scanners'),
        perMinute('tasksEnqueuedDirect', 'enqueued directly by the api'),
        perMinute('tasksDelivered', 'delivered'),
        perMinute('tasksFailed', 'failed (dead-lettered)'),
      ]),
      graph('Delivery lateness (ms)', [
        timerMetric('deliveryLatenessMs', cloudwatch.Stats.p(50), 'p50'),
        timerMetric('deliveryLatenessMs', cloudwatch.Stats.p(99), 'p99'),
      ]),
    );
    dashboard.addWidgets(
      graph(
        'Scanner lag, unswept seconds, overdue check lag (s)',
        [
          timerMetric('scannerLagSeconds', cloudwatch.Stats.MAXIMUM, 'scanner lag'),
          timerMetric('unsweptSeconds', cloudwatch.Stats.MAXIMUM, 'unswept seconds'),
          timerMetric('overdueCheckLagSeconds', cloudwatch.Stats.MAXIMUM, 'overdue check lag'),
        ],
        [
          { value: ALARM_THRESHOLDS.scannerLagSeconds, label: 'lag alarm' },
          { value: ALARM_THRESHOLDS.unsweptSeconds, label: 'unswept alarm' },
        ],
      ),
      graph('Delivery DLQ depth', [this.alarms.deliveryDlqNotEmpty.metric]),
    );
    dashboard.addWidgets(
      graph('Missed tasks', [perMinute('missedTasks', 'missed tasks')]),
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: Object.values(this.alarms), width: 12, height: 6 }),
    );
    return dashboard;
  }

  /** Each function gets the table actions and queues its code uses, and nothing else. */
  private grantLeastPrivilege(): void {
    const { api, ticker, scanner, callback, sweeper } = this.functions;
    // Table.grant would add every index to every grant; only the api reads the indexes.
    const onTable = (fn: lambda.IFunction, ...actions: string[]) =>
      fn.addToRolePolicy(new iam.PolicyStatement({ actions, resources: [this.table.tableArn] }));
    onTable(
      api,
      'dynamodb:PutItem',
      'dynamodb:BatchWriteItem',
      'dynamodb:GetItem',
      'dynamodb:UpdateItem',
      'dynamodb:Query',
      'dynamodb:BatchGetItem',
    );
    // Listing a tenant's tasks queries the business-query indexes, then reads the tasks with BatchGetItem.
    api.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: Object.values(TABLE.indexes).map((index) => `${this.table.tableArn}/index/${index.name}`),
      }),
    );
    // DELETE /v1/biz-types/{bizType}: the api deletes only in bizType settings' partitions; tasks are never deleted, they expire.
    api.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:DeleteItem'],
        resources: [this.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${TABLE.bizTypePartitionPrefix}*`] } },
      }),
    );
    onTable(scanner, 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query');
    // GetItem reads the tenant (signing secrets) and a rescheduled task's predecessor.
    onTable(callback, 'dynamodb:UpdateItem', 'dynamodb:GetItem');
    onTable(sweeper, 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query');
    this.queues.delivery.grantSendMessages(api);
    this.queues.delivery.grantSendMessages(scanner);
    this.queues.delivery.grantSendMessages(sweeper);
    this.queues.tick.grantSendMessages(ticker);
    // The api ticks seconds it adds to a minute the ticker already planned; the ticker marks minutes planned.
    this.queues.tick.grantSendMessages(api);
    onTable(ticker, 'dynamodb:UpdateItem');
    this.queues.deliveryDlq.grantSendMessages(callback);
    this.queues.delivery.grant(callback, 'sqs:ChangeMessageVisibility');
  }

  /**
   * Lets the callback perform `actions` on exactly the allowed `arns`, and on nothing when there
   * are none. A statement without resources is invalid IAM, so a list known only at deploy time
   * (a stack parameter) gets a policy of its own, created only when the list is not empty.
   */
  private grantTargets(id: string, actions: string[], arns: readonly string[]): void {
    const statement = new iam.PolicyStatement({ actions, resources: [...arns] });
    if (!Token.isUnresolved(arns)) {
      if (arns.length > 0) this.callbackRole.addToPrincipalPolicy(statement);
      return;
    }
    const policy = new iam.Policy(this, `${id}Policy`, { statements: [statement] });
    this.callbackRole.attachInlinePolicy(policy);
    (policy.node.defaultChild as iam.CfnPolicy).cfnOptions.condition = new CfnCondition(this, `Has${id}`, {
      expression: Fn.conditionNot(Fn.conditionEquals(Fn.join(',', [...arns]), '')),
    });
  }
}
