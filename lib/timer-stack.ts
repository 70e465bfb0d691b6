import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Aws,
  CfnOutput,
  CfnParameter,
  Duration,
  aws_events as events,
  aws_iam as iam,
  aws_lambda as lambda,
  aws_logs as logs,
  RemovalPolicy,
  Stack,
  type StackProps,
  aws_secretsmanager as secretsmanager,
  aws_sqs as sqs,
  aws_events_targets as targets,
} from 'aws-cdk-lib';
import { HttpApi, HttpMethod } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AttributeType, Billing, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Construct } from 'constructs';
import { MAX_SHARDS } from '../functions/core/ids';
import {
  API_ROUTES,
  DEFAULT_SETTINGS,
  deliveryMaxReceiveCount,
  ENV,
  type EnvName,
  environmentFor,
  FUNCTIONS,
  type FunctionName,
  QUEUES,
  type QueueSpec,
  SCHEDULES,
  TABLE,
  type TimerSettings,
} from './topology';

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface TimerStackProps extends StackProps {
  /**
   * Deployment settings other than the bucket and shard counts, which are stack parameters.
   * @default DEFAULT_SETTINGS from lib/topology.ts
   */
  readonly settings?: Partial<Omit<TimerSettings, 'bucketCount' | 'shardCount' | 'allowInsecureTargets'>>;
  /**
   * What happens to the task table when the stack is deleted.
   * @default RemovalPolicy.RETAIN — tasks are customer data
   */
  readonly tableRemovalPolicy?: RemovalPolicy;
}

/**
 * The timer service: API Gateway → api Lambda → DynamoDB buckets; a per-minute rule
 * fanning out per-second ticks to the scanner; SQS with a DLQ → callback Lambda;
 * a per-minute sweeper. Queue settings, batch sizes, timeouts, schedules and
 * environment names all come from lib/topology.ts, which local mode reads too.
 */
export class TimerStack extends Stack {
  readonly table: TableV2;
  readonly queues: Record<keyof typeof QUEUES, sqs.Queue>;
  readonly functions: Record<FunctionName, NodejsFunction>;
  readonly api: HttpApi;
  readonly signingSecret: secretsmanager.Secret;

  constructor(scope: Construct, id: string, props: TimerStackProps = {}) {
    super(scope, id, props);
    const settings: TimerSettings = { ...DEFAULT_SETTINGS, ...props.settings, allowInsecureTargets: false };

    const bucketCount = new CfnParameter(this, 'BucketCount', {
      type: 'Number',
      default: DEFAULT_SETTINGS.bucketCount,
      minValue: 60,
      description:
        'N in bucket = floor(dueAt seconds) mod N. Fix it before the first task: changing it strands tasks already stored.',
    });
    const shardCount = new CfnParameter(this, 'ShardCount', {
      type: 'Number',
      default: DEFAULT_SETTINGS.shardCount,
      minValue: 1,
      maxValue: MAX_SHARDS,
      description:
        'Partitions each second is spread over (a partition takes about 1,000 writes/s). Fix it before the first task: changing it strands tasks.',
    });

    this.table = new TableV2(this, 'Tasks', {
      partitionKey: { name: TABLE.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE.sortKey, type: AttributeType.STRING },
      billing: Billing.onDemand(),
      timeToLiveAttribute: TABLE.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryptionV2.awsManagedKey(),
      removalPolicy: props.tableRemovalPolicy ?? RemovalPolicy.RETAIN,
    });

    const queue = (key: keyof typeof QUEUES, deadLetterQueue?: sqs.DeadLetterQueue) => {
      const spec: QueueSpec = QUEUES[key];
      return new sqs.Queue(this, `${key[0]?.toUpperCase()}${key.slice(1)}Queue`, {
        visibilityTimeout: Duration.seconds(spec.visibilityTimeoutSeconds),
        retentionPeriod: Duration.seconds(spec.retentionSeconds),
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

    this.signingSecret = new secretsmanager.Secret(this, 'WebhookSigningSecret', {
      description: 'Signs webhook deliveries (Standard Webhooks). Set a whsec_… value to share it with receivers.',
      generateSecretString: { excludePunctuation: true, includeSpace: false, passwordLength: 48 },
    });

    const resources: Partial<Record<EnvName, string>> = {
      [ENV.tableName]: this.table.tableName,
      [ENV.tickQueueUrl]: this.queues.tick.queueUrl,
      [ENV.deliveryQueueUrl]: this.queues.delivery.queueUrl,
      [ENV.deliveryDlqUrl]: this.queues.deliveryDlq.queueUrl,
      [ENV.signingSecretArn]: this.signingSecret.secretArn,
      [ENV.bucketCount]: bucketCount.valueAsString,
      [ENV.shardCount]: shardCount.valueAsString,
    };
    const fn = (name: FunctionName) => {
      const spec = FUNCTIONS[name];
      return new NodejsFunction(this, `${name[0]?.toUpperCase()}${name.slice(1)}Function`, {
        entry: join(projectRoot, spec.entry),
        projectRoot,
        depsLockFilePath: join(projectRoot, 'package-lock.json'),
        runtime: lambda.Runtime.NODEJS_24_X,
        architecture: lambda.Architecture.ARM_64,
        memorySize: spec.memoryMb,
        timeout: Duration.seconds(spec.timeoutSeconds),
        environment: environmentFor(name, settings, resources),
        logGroup: new logs.LogGroup(this, `${name[0]?.toUpperCase()}${name.slice(1)}Logs`, {
          retention: logs.RetentionDays.ONE_MONTH,
          removalPolicy: RemovalPolicy.DESTROY,
        }),
        bundling: {
          minify: true,
          sourceMap: true,
          format: OutputFormat.ESM,
          target: 'node22',
          mainFields: ['module', 'main'],
          // Some dependencies are CommonJS and call require(); ESM bundles need it provided.
          banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
        },
      });
    };
    this.functions = {
      api: fn('api'),
      ticker: fn('ticker'),
      scanner: fn('scanner'),
      callback: fn('callback'),
      sweeper: fn('sweeper'),
    };
    this.grantLeastPrivilege();

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
      new events.Rule(this, `${key[0]?.toUpperCase()}${key.slice(1)}Schedule`, {
        description: `Invokes the ${schedule.fn} every ${schedule.everySeconds} seconds`,
        schedule: events.Schedule.rate(Duration.seconds(schedule.everySeconds)),
        targets: [new targets.LambdaFunction(this.functions[schedule.fn])],
      });
    }

    this.api = new HttpApi(this, 'HttpApi', { description: 'Distributed timer API v1' });
    const integration = new HttpLambdaIntegration('ApiIntegration', this.functions.api);
    for (const routeKey of API_ROUTES) {
      const [method, path] = routeKey.split(' ') as [keyof typeof HttpMethod, string];
      this.api.addRoutes({ path, methods: [HttpMethod[method]], integration });
    }

    new CfnOutput(this, 'ApiUrl', {
      value: this.api.apiEndpoint,
      description: 'Base URL of the timer API (POST {ApiUrl}/v1/tasks)',
    });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'DeliveryDlqUrl', {
      value: this.queues.deliveryDlq.queueUrl,
      description: 'Tasks whose attempts ran out',
    });
    new CfnOutput(this, 'SigningSecretArn', {
      value: this.signingSecret.secretArn,
      description: 'Webhook signing secret',
    });
  }

  /** Each function gets the table actions and queues its code uses, and nothing else. */
  private grantLeastPrivilege(): void {
    const { api, ticker, scanner, callback, sweeper } = this.functions;
    this.table.grant(api, 'dynamodb:PutItem', 'dynamodb:BatchWriteItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem');
    this.table.grant(scanner, 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query');
    this.table.grant(callback, 'dynamodb:UpdateItem');
    this.table.grant(sweeper, 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query');
    this.queues.delivery.grantSendMessages(api);
    this.queues.delivery.grantSendMessages(scanner);
    this.queues.delivery.grantSendMessages(sweeper);
    this.queues.tick.grantSendMessages(ticker);
    this.queues.deliveryDlq.grantSendMessages(callback);
    this.queues.delivery.grant(callback, 'sqs:ChangeMessageVisibility');
    this.signingSecret.grantRead(callback);
    // Targets are the callers' queues and event buses, which may be any in this account.
    callback.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['sqs:SendMessage'],
        resources: [`arn:${Aws.PARTITION}:sqs:*:${Aws.ACCOUNT_ID}:*`],
      }),
    );
    callback.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['events:PutEvents'],
        resources: [`arn:${Aws.PARTITION}:events:*:${Aws.ACCOUNT_ID}:event-bus/*`],
      }),
    );
  }
}
