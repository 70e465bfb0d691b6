import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { CfnCondition, Duration, Fn, Stack, Token } from 'aws-cdk-lib/core';
import type { Construct } from 'constructs';

import {
  API_DELETABLE_PARTITION_PREFIXES,
  RECEIPT_PARTITION_PREFIX,
} from '../../../functions/adapters/dynamo/table-schema.js';
import {
  DELIVERY_MAX_RECEIVE_COUNT,
  ENV,
  environmentFor,
  type EnvName,
  FUNCTION_URL,
  type FunctionName,
  FUNCTIONS,
  QUEUES,
  type QueueSpec,
  SCHEDULES,
  TABLE,
  type TimerSettings,
} from '../../../functions/contract/topology.js';
import { BUNDLE_HANDLER, functionCode } from '../bundles.js';
import { acknowledgeNagRule, capitalized, timerLogGroup } from './construct-helpers.js';

/** A list as one environment value; a list token (a stack parameter) is joined at deploy time. */
function commaSeparated(list: readonly string[]): string {
  return Token.isUnresolved(list) ? Fn.join(',', [...list]) : list.join(',');
}

export interface TimerPipelineProps {
  /** The task table every function reads and writes. */
  readonly table: TableV2;
  /** Deployment settings, already merged with their defaults. */
  readonly settings: TimerSettings;
  /** N in bucket = floor(dueAt seconds) mod N, as the functions' environment value (a number or a token). */
  readonly bucketCount: string;
  /** Partitions each second is spread over, as the functions' environment value. */
  readonly shardCount: string;
  /** The SQS queues the callback may send to: ARNs, or a list token. */
  readonly allowedQueueArns: readonly string[];
  /** The EventBridge buses the callback may put events on: ARNs, or a list token. */
  readonly allowedEventBusArns: readonly string[];
  readonly architecture: lambda.Architecture;
  /** How long the functions' logs are kept. */
  readonly logRetention: logs.RetentionDays;
  /** The api function's reserved concurrency. */
  readonly apiReservedConcurrency: number;
  /** The function URL's own function's reserved concurrency; undefined makes no such function. */
  readonly functionUrlReservedConcurrency?: number;
  /** The most delivery batches the callback's event source mapping runs at once. */
  readonly deliveryMaxConcurrency: number;
  /** Whether each function runs with active X-Ray tracing. */
  readonly tracing: Readonly<Record<FunctionName, boolean>>;
}

/**
 * The path a task takes: the tick, delivery, express and dead-letter queues, the five functions with a
 * role and log group each, their least-privilege grants, the SQS event sources and the
 * per-minute schedules. Queue settings, batch sizes, timeouts, schedules and environment names
 * come from functions/contract/topology.ts. A part of `DistributedTimer` that adds its resources
 * to the timer's own scope (see there why it is not a construct of its own).
 */
export class TimerPipeline {
  readonly queues: Record<keyof typeof QUEUES, sqs.Queue>;
  readonly functions: Record<FunctionName, lambda.Function>;
  /** The api's code behind the function URL, with a reserved concurrency of its own; only when asked for. */
  readonly urlFunction?: lambda.Function;
  /** The role the callback sends to target queues and event buses with. */
  readonly callbackRole: iam.IRole;

  constructor(
    private readonly scope: Construct,
    props: TimerPipelineProps,
  ) {
    const queue = (key: keyof typeof QUEUES, deadLetterQueue?: sqs.DeadLetterQueue) => {
      const spec: QueueSpec = QUEUES[key];
      return new sqs.Queue(scope, `${capitalized(key)}Queue`, {
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
      delivery: queue('delivery', { queue: deliveryDlq, maxReceiveCount: DELIVERY_MAX_RECEIVE_COUNT }),
      express: queue('express', { queue: deliveryDlq, maxReceiveCount: DELIVERY_MAX_RECEIVE_COUNT }),
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
      [ENV.tableName]: props.table.tableName,
      [ENV.tickQueueUrl]: this.queues.tick.queueUrl,
      [ENV.deliveryQueueUrl]: this.queues.delivery.queueUrl,
      [ENV.expressQueueUrl]: this.queues.express.queueUrl,
      [ENV.deliveryDlqUrl]: this.queues.deliveryDlq.queueUrl,
      [ENV.bucketCount]: props.bucketCount,
      [ENV.shardCount]: props.shardCount,
      [ENV.allowedQueueArns]: commaSeparated(props.allowedQueueArns),
      [ENV.allowedEventBusArns]: commaSeparated(props.allowedEventBusArns),
      [ENV.awsAccount]: Stack.of(scope).account,
      [ENV.awsPartition]: Stack.of(scope).partition,
    };
    const roles = {} as Record<FunctionName, iam.Role>;
    /** `name`'s code, environment and settings as function `id`, with its role, log group and reservation. */
    const lambdaFunction = (
      id: string,
      name: FunctionName,
      role: iam.IRole,
      functionLogs: logs.ILogGroup,
      reservedConcurrentExecutions: number | undefined,
    ) => {
      const spec = FUNCTIONS[name];
      const traced = props.tracing[name];
      return new lambda.Function(scope, id, {
        code: functionCode(name),
        handler: BUNDLE_HANDLER,
        runtime: lambda.Runtime.NODEJS_24_X,
        architecture: props.architecture,
        memorySize: spec.memoryMb,
        timeout: Duration.seconds(spec.timeoutSeconds),
        environment: {
          ...environmentFor(name, props.settings, resources),
          // Without tracing the functions do not even load the tracer (functions/commons/tracer.ts).
          ...(!traced && { POWERTOOLS_TRACE_ENABLED: 'false' }),
        },
        role,
        logGroup: functionLogs,
        // A floor no other function can take (and a ceiling): the api and the scanner stay up
        // however hard a delivery surge or a tenant's hanging webhook presses on the account's pool.
        reservedConcurrentExecutions,
        // Powertools Tracer writes a segment per invocation and a subsegment per AWS call.
        tracing: traced ? lambda.Tracing.ACTIVE : lambda.Tracing.DISABLED,
        // Lambda drops what is below these levels before CloudWatch Logs bills it: at WARN its own
        // START and REPORT lines (about 350 bytes an invocation) go. The functions' EMF lines carry
        // no level, which Lambda takes as INFO, so metrics still arrive (test/unit/api-metrics.test.ts).
        loggingFormat: lambda.LoggingFormat.JSON,
        systemLogLevelV2: lambda.SystemLogLevel.WARN,
        applicationLogLevelV2: lambda.ApplicationLogLevel.INFO,
      });
    };
    const fn = (name: FunctionName) => {
      const functionLogs = timerLogGroup(scope, `${capitalized(name)}Logs`, props.logRetention);
      // A role of its own rather than AWSLambdaBasicExecutionRole, whose log actions reach every log
      // group in the account.
      const role = new iam.Role(scope, `${capitalized(name)}FunctionRole`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `The distributed timer's ${name} function`,
      });
      functionLogs.grantWrite(role);
      roles[name] = role;
      const reserved = name === 'api' ? props.apiReservedConcurrency : FUNCTIONS[name].reservedConcurrency;
      return lambdaFunction(`${capitalized(name)}Function`, name, role, functionLogs, reserved);
    };
    this.functions = {
      api: fn('api'),
      ticker: fn('ticker'),
      scanner: fn('scanner'),
      callback: fn('callback'),
      sweeper: fn('sweeper'),
    };
    if (props.functionUrlReservedConcurrency !== undefined) {
      // The api's role, so it may do exactly what the api does; its own logs and reservation.
      const urlLogs = timerLogGroup(scope, 'UrlLogs', props.logRetention);
      urlLogs.grantWrite(roles[FUNCTION_URL.fn]);
      this.urlFunction = lambdaFunction(
        'UrlFunction',
        FUNCTION_URL.fn,
        roles[FUNCTION_URL.fn],
        urlLogs,
        props.functionUrlReservedConcurrency,
      );
    }
    this.callbackRole = roles.callback;
    for (const [name, role] of Object.entries(roles) as Array<[FunctionName, iam.Role]>) {
      const policy = props.tracing[name] && role.node.tryFindChild('DefaultPolicy');
      if (policy) {
        acknowledgeNagRule(
          policy,
          'IAM5[Resource::*]',
          'Active tracing grants xray:PutTraceSegments and xray:PutTelemetryRecords, which take no resource-level ' +
            'permissions (the X-Ray service authorization reference lists none): "*" is the only resource they accept.',
        );
      }
    }
    this.grantLeastPrivilege(props.table);
    this.grantTargets('AllowedQueues', ['sqs:SendMessage'], props.allowedQueueArns);
    this.grantTargets('AllowedEventBuses', ['events:PutEvents'], props.allowedEventBusArns);

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
          maxConcurrency: key === 'delivery' ? props.deliveryMaxConcurrency : spec.consumer.maxConcurrency,
        }),
      );
    }
    for (const [key, schedule] of Object.entries(SCHEDULES)) {
      new events.Rule(scope, `${capitalized(key)}Schedule`, {
        description: `Invokes the ${schedule.fn} every ${schedule.everySeconds} seconds`,
        schedule: events.Schedule.rate(Duration.seconds(schedule.everySeconds)),
        targets: [new targets.LambdaFunction(this.functions[schedule.fn])],
      });
    }
  }

  /** Each function gets the table actions and queues its code uses, and nothing else. */
  private grantLeastPrivilege(table: TableV2): void {
    const { api, ticker, scanner, callback, sweeper } = this.functions;
    // Table.grant would add every index to every grant; only the api reads the indexes.
    const onTable = (fn: lambda.IFunction, ...actions: string[]) =>
      fn.addToRolePolicy(new iam.PolicyStatement({ actions, resources: [table.tableArn] }));
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
        resources: Object.values(TABLE.indexes).map((index) => `${table.tableArn}/index/${index.name}`),
      }),
    );
    // DELETE /v1/biz-types/{bizType} and /v1/schedules/{id}: the api deletes only in bizType settings' and schedules'
    // partitions; tasks are never deleted, they expire.
    api.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:DeleteItem'],
        resources: [table.tableArn],
        conditions: {
          'ForAllValues:StringLike': {
            'dynamodb:LeadingKeys': API_DELETABLE_PARTITION_PREFIXES.map((prefix) => `${prefix}*`),
          },
        },
      }),
    );
    // BatchGetItem reads a claimed range's occupancy slots, all of a minute's at once.
    onTable(
      scanner,
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:Query',
      'dynamodb:BatchGetItem',
    );
    // BatchGetItem reads a batch's tasks; GetItem reads the tenant (signing secrets), a rescheduled task's
    // predecessor and an occurrence's schedule; PutItem stores an occurrence's successor (and starts the
    // clock or flags a recheck, as the api does).
    onTable(callback, 'dynamodb:UpdateItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:BatchGetItem');
    // The callback queries only delivery receipts: a late first attempt's second, a leased retry's task.
    callback.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: [table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${RECEIPT_PARTITION_PREFIX}*`] } },
      }),
    );
    onTable(
      sweeper,
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:Query',
      'dynamodb:BatchGetItem',
    );
    // Each sender of delivery messages sends those whose task goes too soon to the express queue;
    // the callback sends a retry, or any task that must come back later, a new delayed message.
    for (const sender of [api, scanner, sweeper, callback]) {
      this.queues.delivery.grantSendMessages(sender);
      this.queues.express.grantSendMessages(sender);
    }
    this.queues.tick.grantSendMessages(ticker);
    // The api ticks seconds it adds to a minute the ticker already planned; the ticker marks minutes planned.
    this.queues.tick.grantSendMessages(api);
    // So does the callback, for the second of an occurrence's successor.
    this.queues.tick.grantSendMessages(callback);
    onTable(ticker, 'dynamodb:UpdateItem');
    this.queues.deliveryDlq.grantSendMessages(callback);
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
    const policy = new iam.Policy(this.scope, `${id}Policy`, { statements: [statement] });
    this.callbackRole.attachInlinePolicy(policy);
    (policy.node.defaultChild as iam.CfnPolicy).cfnOptions.condition = new CfnCondition(this.scope, `Has${id}`, {
      expression: Fn.conditionNot(Fn.conditionEquals(Fn.join(',', [...arns]), '')),
    });
  }
}
