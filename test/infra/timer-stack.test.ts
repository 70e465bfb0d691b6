import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  ACCOUNT_CONCURRENCY,
  ALARM_THRESHOLDS,
  API_ROUTES,
  DEFAULT_SETTINGS,
  DELIVERY_MAX_RECEIVE_COUNT,
  ENV,
  FUNCTION_URL,
  FUNCTIONS,
  METRICS,
  QUEUES,
  TABLE,
} from '../../functions/contract/topology.js';
import { ALLOW_LISTS } from '../../functions/core/targets/allowed-targets.js';
import { DEFAULT_API_THROTTLE } from '../../lib/construct/distributed-timer.js';
import { TimerStack } from '../../lib/construct/timer-stack.js';
import { actionsOf as statementActions, allStatements, statementsOfRole } from '../support/iam-template.js';
import { templateApp } from '../support/template-app.js';

type Resource = { Type: string; Properties: Record<string, unknown> };

/**
 * The stack as `bin/timer.ts` deploys it, bundling skipped (test/e2e/synthesized-stack.test.ts
 * synthesizes with it, and runs the bundles). The one template test with CDK's built-in
 * CloudFormation validation on (test/support/template-app.ts), and strict: a finding, such as a
 * property CloudFormation's schema does not know or a value of the wrong type, fails the
 * synthesis rather than warning.
 */
function synthesize(outdir: string): Template {
  const app = new App({
    outdir,
    context: { 'aws:cdk:bundling-stacks': [], '@aws-cdk/core:validateAgainstDefaultRules': true },
  });
  return Template.fromStack(new TimerStack(app, 'Timer'));
}

let assemblyDir: string;
let template: Template;

beforeAll(() => {
  assemblyDir = mkdtempSync(join(tmpdir(), 'timer-template-'));
  template = synthesize(assemblyDir);
});

afterAll(() => {
  rmSync(assemblyDir, { recursive: true, force: true });
});

/** The logical id of the function whose environment names this entry's table and queues. */
function functionIdFor(name: keyof typeof FUNCTIONS): string {
  const ids = Object.keys(template.findResources('AWS::Lambda::Function')).filter((id) =>
    id.toLowerCase().startsWith(`${name}function`),
  );
  expect(ids).toHaveLength(1);
  return ids[0] as string;
}

/** The logical id of a function's role. */
function roleIdOf(name: keyof typeof FUNCTIONS): string {
  const fn = template.findResources('AWS::Lambda::Function')[functionIdFor(name)] as Resource;
  return (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
}

/** Every IAM statement granted to a function's role, across its policies. */
const statementsOf = (name: keyof typeof FUNCTIONS) => statementsOfRole(template, roleIdOf(name));

/** Every IAM action granted to a function's role, across its policies. */
function actionsOf(name: keyof typeof FUNCTIONS): string[] {
  return statementsOf(name).flatMap(statementActions);
}

describe('Stack: TimerStack', () => {
  it("passes CDK's built-in CloudFormation validation (every resource against CloudFormation's schemas) with no finding", () => {
    // Act
    const report = JSON.parse(readFileSync(join(assemblyDir, 'validation-report.json'), 'utf8')) as {
      pluginReports: unknown[];
    };

    // Assess
    expect(report.pluginReports).toEqual([]);
  });

  it('stores tasks in one on-demand table with pk/sk, TTL on expiresAt and point-in-time recovery', () => {
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', 1);
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      // Keys only: status transitions never write an index (see TABLE in functions/contract/topology.ts).
      GlobalSecondaryIndexes: Object.values(TABLE.indexes).map((index) => ({
        IndexName: index.name,
        KeySchema: [
          { AttributeName: index.partitionKey, KeyType: 'HASH' },
          { AttributeName: index.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: 'KEYS_ONLY' },
      })),
      Replicas: [Match.objectLike({ PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } })],
    });
  });

  it('encrypts the table with the AWS managed KMS key', () => {
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
    });
  });

  it('makes the bucket count and shard count stack parameters with the documented defaults', () => {
    template.hasParameter('BucketCount', { Type: 'Number', Default: DEFAULT_SETTINGS.bucketCount });
    template.hasParameter('ShardCount', { Type: 'Number', Default: DEFAULT_SETTINGS.shardCount, MaxValue: 1024 });
  });

  it('redrives delivery messages to the DLQ after maxReceiveCount receives', () => {
    const queues = template.findResources('AWS::SQS::Queue') as Record<string, Resource>;
    const [dlqId] = Object.entries(queues).find(([id]) => id.startsWith('DeliveryDlqQueue')) ?? [];
    expect(dlqId).toBeDefined();
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: QUEUES.delivery.visibilityTimeoutSeconds,
      RedrivePolicy: {
        deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
        maxReceiveCount: DELIVERY_MAX_RECEIVE_COUNT,
      },
    });
  });

  it('encrypts every queue, the DLQ included, and refuses non-TLS access to it', () => {
    const queues = template.findResources('AWS::SQS::Queue') as Record<string, Resource>;
    expect(Object.keys(queues)).toHaveLength(Object.keys(QUEUES).length);
    for (const [queueId, queue] of Object.entries(queues)) {
      expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: queueId }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            {
              Effect: 'Deny',
              Principal: { AWS: '*' },
              Action: 'sqs:*',
              Resource: { 'Fn::GetAtt': [queueId, 'Arn'] },
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            },
          ]),
        },
      });
    }
  });

  it('feeds ticks to the scanner one at a time and deliveries to the callback in batches, both with partial batch failures', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: functionIdFor('scanner') },
      BatchSize: QUEUES.tick.consumer.batchSize,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: functionIdFor('callback') },
      BatchSize: QUEUES.delivery.consumer.batchSize,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('reserves concurrency for the api and the scanner so no delivery surge can starve them, and no more than the account allows', () => {
    const functions = template.findResources('AWS::Lambda::Function');
    const reserved = (name: keyof typeof FUNCTIONS) =>
      (functions[functionIdFor(name)] as Resource).Properties.ReservedConcurrentExecutions;
    expect(reserved('api')).toBe(FUNCTIONS.api.reservedConcurrency);
    expect(reserved('scanner')).toBe(FUNCTIONS.scanner.reservedConcurrency);
    // The callback, ticker and sweeper share the unreserved pool; the callback is held by its mapping's cap.
    for (const name of ['callback', 'ticker', 'sweeper'] as const) expect(reserved(name)).toBeUndefined();
    const unreserved =
      ACCOUNT_CONCURRENCY - Object.values(FUNCTIONS).reduce((sum, spec) => sum + (spec.reservedConcurrency ?? 0), 0);
    // Lambda refuses reservations that leave fewer than 100 unreserved, and the callback's cap must fit what is left.
    expect(unreserved).toBeGreaterThanOrEqual(100 + QUEUES.delivery.consumer.maxConcurrency);
  });

  it("caps each queue's event source mapping so the callback cannot take the whole pool and the scanner is not throttled", () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: functionIdFor('callback') },
      ScalingConfig: { MaximumConcurrency: QUEUES.delivery.consumer.maxConcurrency },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: functionIdFor('scanner') },
      ScalingConfig: { MaximumConcurrency: FUNCTIONS.scanner.reservedConcurrency },
    });
  });

  it('runs the ticker and the sweeper every minute', () => {
    for (const name of ['ticker', 'sweeper'] as const) {
      template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(1 minute)',
        Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [functionIdFor(name), 'Arn'] } })],
      });
    }
  });

  it('deploys five functions on the current Node.js runtime for arm64 with the topology timeouts', () => {
    for (const [name, spec] of Object.entries(FUNCTIONS) as Array<
      [keyof typeof FUNCTIONS, (typeof FUNCTIONS)['api']]
    >) {
      const fn = template.findResources('AWS::Lambda::Function')[functionIdFor(name)] as Resource;
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Timeout: spec.timeoutSeconds,
        MemorySize: spec.memoryMb,
      });
      // The topology lists the service's own settings; Powertools' switches (the tracer's off-switch
      // on a function deployed untraced) follow the construct's tracing props instead.
      const variables = Object.keys(
        (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables,
      ).filter((name) => !name.startsWith('POWERTOOLS_'));
      expect(variables.sort()).toEqual([...spec.env].sort());
    }
  });

  it('passes the shard and bucket parameters to the functions that compute task locations', () => {
    const fn = template.findResources('AWS::Lambda::Function')[functionIdFor('scanner')] as Resource;
    expect((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables).toMatchObject({
      [ENV.shardCount]: { Ref: 'ShardCount' },
      [ENV.bucketCount]: { Ref: 'BucketCount' },
    });
  });

  it('grants each function only the table actions its code performs', () => {
    // The ticker only marks minutes planned in the occupancy index (UpdateItem, returning the old item).
    expect(actionsOf('ticker').filter((action) => action.startsWith('dynamodb:'))).toEqual(['dynamodb:UpdateItem']);
    // BatchGetItem: a batch's tasks are read together; GetItem: a rescheduled task's predecessor, or an
    // occurrence's schedule, is read before the task is delivered; PutItem: an occurrence stores its
    // schedule's next occurrence; Query: delivery receipts only (their partitions' leading keys).
    expect(actionsOf('callback').filter((action) => action.startsWith('dynamodb:'))).toEqual([
      'dynamodb:UpdateItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:BatchGetItem',
      'dynamodb:Query',
    ]);
    expect(actionsOf('api')).toEqual(
      expect.arrayContaining([
        'dynamodb:PutItem',
        'dynamodb:BatchWriteItem',
        'dynamodb:GetItem',
        'dynamodb:Query',
        'dynamodb:BatchGetItem',
      ]),
    );
    expect(actionsOf('scanner')).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:UpdateItem']));
    // The sweeper re-scans seconds (Query, PutItem marker) and moves its watermark (UpdateItem).
    expect(actionsOf('sweeper')).toEqual(
      expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem']),
    );
    for (const name of Object.keys(FUNCTIONS) as Array<keyof typeof FUNCTIONS>) {
      if (name !== 'api') expect(actionsOf(name)).not.toContain('dynamodb:DeleteItem');
      expect(actionsOf(name)).not.toContain('dynamodb:Scan');
      expect(actionsOf(name)).not.toContain('dynamodb:*');
    }
  });

  it('lets the api delete only bizType settings and schedules, never a task: DeleteItem is held to their partitions', () => {
    const deletes = statementsOf('api').filter((statement) =>
      statementActions(statement).includes('dynamodb:DeleteItem'),
    );
    expect(deletes).toHaveLength(1);
    expect(deletes[0]).toMatchObject({
      Action: 'dynamodb:DeleteItem',
      Condition: {
        'ForAllValues:StringLike': {
          'dynamodb:LeadingKeys': ['BIZTYPES#*', 'SCHEDULES#*'],
        },
      },
    });
  });

  it('lets only the callback move exhausted tasks to the DLQ', () => {
    expect(actionsOf('callback')).toContain('sqs:SendMessage');
    expect(actionsOf('api')).not.toContain('sqs:ReceiveMessage');
    expect(actionsOf('ticker')).not.toContain('sqs:ReceiveMessage');
  });

  it('lets the api send ticks, for seconds it adds to a minute the ticker already planned', () => {
    const tickQueueArn = JSON.stringify({ 'Fn::GetAtt': [idOf('AWS::SQS::Queue', 'TickQueue'), 'Arn'] });
    const sends = statementsOf('api').filter(
      (statement) =>
        statementActions(statement).includes('sqs:SendMessage') && JSON.stringify(statement.Resource) === tickQueueArn,
    );
    expect(sends).toHaveLength(1);
  });

  it('gives each function a role of its own that writes only its own log group, with no AWS managed policy', () => {
    for (const name of Object.keys(FUNCTIONS) as Array<keyof typeof FUNCTIONS>) {
      const role = template.findResources('AWS::IAM::Role')[roleIdOf(name)] as Resource;
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      const fn = template.findResources('AWS::Lambda::Function')[functionIdFor(name)] as Resource;
      const logGroupId = (fn.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;
      const logStatements = statementsOf(name).filter((statement) =>
        statementActions(statement).some((action) => action.startsWith('logs:')),
      );
      expect(logStatements).toEqual([
        {
          Effect: 'Allow',
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: { 'Fn::GetAtt': [logGroupId, 'Arn'] },
        },
      ]);
    }
  });

  it('grants no IAM action on every resource but the X-Ray writes, which have no resource-level permissions', () => {
    const wildcards = allStatements(template).filter((statement) => JSON.stringify(statement.Resource).includes('*'));
    expect(new Set(wildcards.flatMap(statementActions))).toEqual(
      new Set(['xray:PutTraceSegments', 'xray:PutTelemetryRecords']),
    );
  });

  it('makes the allowed target queues and event buses stack parameters, empty (none) by default', () => {
    for (const { parameter, pattern } of Object.values(ALLOW_LISTS)) {
      template.hasParameter(parameter, {
        Type: 'CommaDelimitedList',
        Default: '',
        AllowedPattern: `^$|${pattern.source}`,
      });
    }
  });

  it('grants the callback sqs:SendMessage and events:PutEvents on exactly the allowed ARNs, and only when any are given', () => {
    // Prepare
    const targetStatements = statementsOf('callback').filter((statement) =>
      statementActions(statement).some((action) => action === 'events:PutEvents' || action === 'sqs:SendMessage'),
    );

    // Assess: the service's own queues aside (retries go back to the delivery or express queue, dead
    // letters to the DLQ, a schedule's next occurrence may need a tick), the targets are the parameters' lists, each in a policy that exists only while its
    // list is not empty (a statement with no resources is invalid).
    const ownQueues = ['DeliveryQueue', 'ExpressQueue', 'DeliveryDlqQueue', 'TickQueue'].map((name) =>
      JSON.stringify({ 'Fn::GetAtt': [idOf('AWS::SQS::Queue', name), 'Arn'] }),
    );
    expect(targetStatements.filter((statement) => !ownQueues.includes(JSON.stringify(statement.Resource)))).toEqual([
      {
        Effect: 'Allow',
        Action: 'sqs:SendMessage',
        Resource: { Ref: 'AllowedQueueArns' },
        policyCondition: 'HasAllowedQueues',
      },
      {
        Effect: 'Allow',
        Action: 'events:PutEvents',
        Resource: { Ref: 'AllowedEventBusArns' },
        policyCondition: 'HasAllowedEventBuses',
      },
    ]);
    for (const [condition, parameter] of [
      ['HasAllowedQueues', 'AllowedQueueArns'],
      ['HasAllowedEventBuses', 'AllowedEventBusArns'],
    ] as const) {
      template.hasCondition(condition, {
        'Fn::Not': [{ 'Fn::Equals': [{ 'Fn::Join': [',', { Ref: parameter }] }, ''] }],
      });
    }
    for (const name of Object.keys(FUNCTIONS).filter((name) => name !== 'callback') as Array<keyof typeof FUNCTIONS>) {
      expect(actionsOf(name)).not.toContain('events:PutEvents');
    }
  });

  it('tells the api and the callback the allowed ARNs, comma-separated', () => {
    for (const name of ['api', 'callback'] as const) {
      const fn = template.findResources('AWS::Lambda::Function')[functionIdFor(name)] as Resource;
      expect((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables).toMatchObject({
        [ENV.allowedQueueArns]: { 'Fn::Join': [',', { Ref: 'AllowedQueueArns' }] },
        [ENV.allowedEventBusArns]: { 'Fn::Join': [',', { Ref: 'AllowedEventBusArns' }] },
      });
    }
  });

  it('outputs the callback role, which SSE-KMS target queues and targets in other accounts must allow', () => {
    template.hasOutput('CallbackRoleArn', { Value: { 'Fn::GetAtt': [roleIdOf('callback'), 'Arn'] } });
  });

  it('routes exactly the v1 contract to the api function', () => {
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route')) as Resource[];
    expect(routes.map((route) => route.Properties.RouteKey).sort()).toEqual([...API_ROUTES].sort());
  });

  it('keeps no signing secret of its own, since each tenant has one in the task table', () => {
    template.resourceCountIs('AWS::SecretsManager::Secret', 0);
    for (const name of Object.keys(FUNCTIONS) as Array<keyof typeof FUNCTIONS>) {
      expect(actionsOf(name).filter((action) => action.startsWith('secretsmanager:'))).toEqual([]);
    }
    expect(Object.keys(template.toJSON().Outputs)).not.toContain('SigningSecretArn');
  });

  it('logs every API request as JSON to a log group with retention', () => {
    // Prepare
    const stages = Object.values(template.findResources('AWS::ApiGatewayV2::Stage')) as Resource[];
    const logGroupId = idOf('AWS::Logs::LogGroup', 'ApiAccessLogs');

    // Assess
    expect(stages).toHaveLength(1);
    const settings = stages[0]?.Properties.AccessLogSettings as { DestinationArn: unknown; Format: string };
    expect(settings.DestinationArn).toEqual({ 'Fn::GetAtt': [logGroupId, 'Arn'] });
    expect(JSON.parse(settings.Format)).toMatchObject({
      requestId: '$context.requestId',
      ip: '$context.identity.sourceIp',
      routeKey: '$context.routeKey',
      status: '$context.status',
      latency: '$context.responseLatency',
    });
    expect((template.findResources('AWS::Logs::LogGroup')[logGroupId] as Resource).Properties.RetentionInDays).toBe(30);
  });

  it('throttles every route of the default stage with the documented defaults', () => {
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: {
        ThrottlingRateLimit: DEFAULT_API_THROTTLE.rateLimit,
        ThrottlingBurstLimit: DEFAULT_API_THROTTLE.burstLimit,
      },
    });
  });

  it('outputs the API URL', () => {
    const [apiId] = Object.keys(template.findResources('AWS::ApiGatewayV2::Api'));
    template.hasOutput('ApiUrl', { Value: { 'Fn::GetAtt': [apiId, 'ApiEndpoint'] } });
  });

  it('outputs the function URL, on a function of its own with its own reserved concurrency, only when the stack is asked for one', () => {
    // Prepare
    const app = templateApp();

    // Act
    const withUrl = Template.fromStack(new TimerStack(app, 'TimerWithUrl', { functionUrl: true }));

    // Assess
    const [urlId] = Object.keys(withUrl.findResources('AWS::Lambda::Url'));
    const urlFunctionIds = Object.keys(withUrl.findResources('AWS::Lambda::Function')).filter((id) =>
      id.startsWith('UrlFunction'),
    );
    expect(urlFunctionIds).toHaveLength(1);
    withUrl.hasResourceProperties('AWS::Lambda::Url', {
      AuthType: 'NONE',
      TargetFunctionArn: { 'Fn::GetAtt': [urlFunctionIds[0], 'Arn'] },
    });
    expect(withUrl.toJSON().Resources[urlFunctionIds[0] ?? '']?.Properties.ReservedConcurrentExecutions).toBe(
      FUNCTION_URL.reservedConcurrency,
    );
    // The api function behind the HTTP API keeps its logical id and its reservation.
    expect(withUrl.toJSON().Resources[functionIdFor('api')]?.Properties.ReservedConcurrentExecutions).toBe(
      FUNCTIONS.api.reservedConcurrency,
    );
    withUrl.hasOutput('FunctionUrl', { Value: { 'Fn::GetAtt': [urlId, 'FunctionUrl'] } });
    template.resourceCountIs('AWS::Lambda::Url', 0);
    expect(Object.keys(template.toJSON().Outputs)).not.toContain('FunctionUrl');
  });
});

/** Every alarm in the template, by logical id. */
function alarms(): Record<string, Resource> {
  return template.findResources('AWS::CloudWatch::Alarm') as Record<string, Resource>;
}

/** The one logical id of a resource type whose id starts with `prefix`. */
function idOf(type: string, prefix: string): string {
  const ids = Object.keys(template.findResources(type)).filter((id) => id.startsWith(prefix));
  expect(ids).toHaveLength(1);
  return ids[0] as string;
}

/** The alarms whose single metric is `metricName` in `namespace`. */
function alarmsOn(namespace: string, metricName: string): Resource[] {
  return Object.values(alarms()).filter(
    (alarm) => alarm.Properties.Namespace === namespace && alarm.Properties.MetricName === metricName,
  );
}

/** The anchors GitHub gives a document's `##` and `###` headings: lowercase, punctuation dropped, spaces to '-'. */
function headingAnchors(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^#{2,3} +(.+?) *$/gm)].map(([, heading]) =>
      (heading as string)
        .toLowerCase()
        .replace(/[^\p{L}\p{N}_ -]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('Stack: TimerStack monitoring', () => {
  it('sends every alarm and its recovery to one encrypted alarm topic', () => {
    // Prepare
    const topicId = idOf('AWS::SNS::Topic', 'AlarmTopic');

    // Assess
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    const all = Object.values(alarms());
    expect(all.length).toBeGreaterThan(0);
    for (const alarm of all) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
    template.hasOutput('AlarmTopicArn', { Value: { Ref: topicId } });
  });

  it('lets CloudWatch publish to the TLS-only topic and use its key, which the aws/sns key would not allow', () => {
    // Prepare
    const topicId = idOf('AWS::SNS::Topic', 'AlarmTopic');
    const cloudWatch = { Service: 'cloudwatch.amazonaws.com' };

    // Assess
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topicId }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({ Effect: 'Allow', Principal: cloudWatch, Action: 'sns:Publish' }),
        ]),
      },
    });
    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: cloudWatch,
            Action: Match.arrayWith(['kms:Decrypt', 'kms:GenerateDataKey*']),
          }),
        ]),
      },
    });
  });

  it('subscribes the AlarmEmail address only when one is given', () => {
    // Prepare
    const subscriptions = Object.values(template.findResources('AWS::SNS::Subscription')) as Array<
      Resource & { Condition?: string }
    >;

    // Assess
    template.hasParameter('AlarmEmail', { Type: 'String', Default: '' });
    expect(subscriptions).toHaveLength(1);
    const [subscription] = subscriptions;
    expect(subscription?.Properties).toMatchObject({ Protocol: 'email', Endpoint: { Ref: 'AlarmEmail' } });
    expect(subscription?.Condition).toBeDefined();
    template.hasCondition(subscription?.Condition as string, {
      'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'AlarmEmail' }, ''] }],
    });
  });

  it('alarms on the first missed task, reading the metric the sweeper publishes', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: METRICS.namespace,
      MetricName: METRICS.missedTasks,
      Dimensions: [{ Name: 'service', Value: METRICS.dimensions.service }],
      Statistic: 'Sum',
      Period: 60,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 1,
    });
  });

  it('alarms as soon as the delivery DLQ holds a message', () => {
    // Prepare
    const dlqId = idOf('AWS::SQS::Queue', 'DeliveryDlqQueue');

    // Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlqId, 'QueueName'] } }],
      Statistic: 'Maximum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('treats a silent sweeper as scanner lag, since it publishes the lag every minute', () => {
    // Act
    const [lag, ...others] = alarmsOn(METRICS.namespace, METRICS.scannerLagSeconds);

    // Assess
    expect(others).toEqual([]);
    expect(lag?.Properties).toMatchObject({
      Statistic: 'Maximum',
      Threshold: ALARM_THRESHOLDS.scannerLagSeconds,
      EvaluationPeriods: 2,
      DatapointsToAlarm: 2,
      TreatMissingData: 'breaching',
    });
  });

  it('alarms when the sweep watermark stays behind for three minutes', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: METRICS.unsweptSeconds,
      Statistic: 'Maximum',
      Threshold: ALARM_THRESHOLDS.unsweptSeconds,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 3,
    });
  });

  it('computes the delivery failure rate with metric math over five minutes', () => {
    // Act
    const [rate, ...others] = Object.values(alarms()).filter((alarm) =>
      ((alarm.Properties.Metrics ?? []) as Array<{ Expression?: string }>).some((query) => query.Expression),
    );

    // Assess
    expect(others).toEqual([]);
    expect(rate?.Properties).toMatchObject({
      Threshold: ALARM_THRESHOLDS.deliveryFailureRate,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    });
    const queries = rate?.Properties.Metrics as Array<{
      Id: string;
      Expression?: string;
      MetricStat?: { Metric: { MetricName: string }; Period: number; Stat: string };
    }>;
    const idOfMetric = (name: string) => queries.find((query) => query.MetricStat?.Metric.MetricName === name);
    const failed = idOfMetric(METRICS.deliveryAttemptsFailed);
    const delivered = idOfMetric(METRICS.tasksDelivered);
    expect(failed?.MetricStat).toMatchObject({ Period: 300, Stat: 'Sum' });
    expect(delivered?.MetricStat).toMatchObject({ Period: 300, Stat: 'Sum' });
    const expression = queries.find((query) => query.Expression)?.Expression;
    expect(expression).toContain(`${failed?.Id} /`);
    expect(expression).toContain(delivered?.Id);
  });

  it('alarms on any 5xx answer from the API', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/ApiGateway',
      MetricName: '5xx',
      Dimensions: [{ Name: 'ApiId', Value: { Ref: idOf('AWS::ApiGatewayV2::Api', 'HttpApi') } }],
      Statistic: 'Sum',
      Threshold: 0,
    });
  });

  it('has an Errors and a Throttles alarm for each of the five functions', () => {
    for (const metricName of ['Errors', 'Throttles']) {
      // Act
      const watched = alarmsOn('AWS/Lambda', metricName).map(
        (alarm) => (alarm.Properties.Dimensions as Array<{ Value: { Ref: string } }>)[0]?.Value.Ref,
      );

      // Assess
      const names = Object.keys(FUNCTIONS) as Array<keyof typeof FUNCTIONS>;
      expect(watched).toHaveLength(5);
      expect(watched.sort()).toEqual(names.map(functionIdFor).sort());
    }
  });

  it('links every alarm to a section of docs/runbook.md that exists', () => {
    // Prepare
    const runbook = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'runbook.md'), 'utf8');
    const anchors = headingAnchors(runbook);

    // Act
    const descriptions = Object.values(alarms()).map((alarm) => alarm.Properties.AlarmDescription as string);

    // Assess
    expect(descriptions).toHaveLength(17);
    for (const description of descriptions) {
      const [, anchor] = description.match(/Runbook: docs\/runbook\.md#([\w-]+)$/) ?? [];
      expect(anchor, description).toBeDefined();
      expect([...anchors], description).toContain(anchor);
    }
  });

  it('shows lateness percentiles and every alarm on the dashboard', () => {
    // Prepare
    const [dashboard, ...others] = Object.values(template.findResources('AWS::CloudWatch::Dashboard')) as Resource[];

    // Act: the body is a join of JSON text and references (alarm ARNs, the region), kept here as their JSON.
    const parts = (dashboard?.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1];
    const body = parts.map((part) => (typeof part === 'string' ? part : JSON.stringify(part))).join('');

    // Assess
    expect(others).toEqual([]);
    expect(body).toMatch(new RegExp(`"${METRICS.deliveryLatenessMs}"[^\\]]*"stat":"p99"`));
    for (const alarmId of Object.keys(alarms())) expect(body).toContain(alarmId);
  });
});
