import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { TimerStack } from '../../lib/timer-stack';
import { API_ROUTES, DEFAULT_SETTINGS, deliveryMaxReceiveCount, ENV, FUNCTIONS, QUEUES } from '../../lib/topology';

type Resource = { Type: string; Properties: Record<string, unknown> };

/** Bundling is skipped here (it is proven by the synth test below); these tests read the template. */
function synthesize(): Template {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return Template.fromStack(new TimerStack(app, 'Timer'));
}

let template: Template;

beforeAll(() => {
  template = synthesize();
});

/** The logical id of the function whose environment names this entry's table and queues. */
function functionIdFor(name: keyof typeof FUNCTIONS): string {
  const ids = Object.keys(template.findResources('AWS::Lambda::Function')).filter((id) =>
    id.toLowerCase().startsWith(`${name}function`),
  );
  expect(ids).toHaveLength(1);
  return ids[0] as string;
}

/** Every IAM action granted to a function's role, across its policies. */
function actionsOf(name: keyof typeof FUNCTIONS): string[] {
  const fn = template.findResources('AWS::Lambda::Function')[functionIdFor(name)] as Resource;
  const roleRef = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  const policies = Object.values(template.findResources('AWS::IAM::Policy')) as Resource[];
  return policies
    .filter((policy) => (policy.Properties.Roles as Array<{ Ref: string }>).some((role) => role.Ref === roleRef))
    .flatMap(
      (policy) => (policy.Properties.PolicyDocument as { Statement: Array<{ Action: string | string[] }> }).Statement,
    )
    .flatMap((statement) => (Array.isArray(statement.Action) ? statement.Action : [statement.Action]));
}

describe('Stack: TimerStack', () => {
  it('stores tasks in one on-demand table with pk/sk, TTL on expiresAt and point-in-time recovery', () => {
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', 1);
    template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      Replicas: [Match.objectLike({ PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } })],
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
        maxReceiveCount: deliveryMaxReceiveCount(DEFAULT_SETTINGS),
      },
    });
  });

  it('encrypts every queue and refuses non-TLS access to it', () => {
    const queues = Object.values(template.findResources('AWS::SQS::Queue')) as Resource[];
    expect(queues).toHaveLength(3);
    for (const queue of queues) expect(queue.Properties.SqsManagedSseEnabled).toBe(true);
    template.resourceCountIs('AWS::SQS::QueuePolicy', 3);
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
      const variables = Object.keys((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables);
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
    expect(actionsOf('ticker').filter((action) => action.startsWith('dynamodb:'))).toEqual([]);
    expect(actionsOf('callback').filter((action) => action.startsWith('dynamodb:'))).toEqual(['dynamodb:UpdateItem']);
    expect(actionsOf('api')).toEqual(
      expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:BatchWriteItem', 'dynamodb:GetItem']),
    );
    expect(actionsOf('scanner')).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:UpdateItem']));
    // The sweeper re-scans seconds (Query, PutItem marker) and moves its watermark (UpdateItem).
    expect(actionsOf('sweeper')).toEqual(
      expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem']),
    );
    for (const name of Object.keys(FUNCTIONS) as Array<keyof typeof FUNCTIONS>) {
      expect(actionsOf(name)).not.toContain('dynamodb:DeleteItem');
      expect(actionsOf(name)).not.toContain('dynamodb:Scan');
      expect(actionsOf(name)).not.toContain('dynamodb:*');
    }
  });

  it('lets only the callback move exhausted tasks to the DLQ and read the signing secret', () => {
    expect(actionsOf('callback')).toEqual(expect.arrayContaining(['sqs:SendMessage', 'secretsmanager:GetSecretValue']));
    expect(actionsOf('api')).not.toContain('secretsmanager:GetSecretValue');
    expect(actionsOf('api')).not.toContain('sqs:ReceiveMessage');
    expect(actionsOf('ticker')).not.toContain('sqs:ReceiveMessage');
  });

  it('routes exactly the v1 contract to the api function', () => {
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route')) as Resource[];
    expect(routes.map((route) => route.Properties.RouteKey).sort()).toEqual([...API_ROUTES].sort());
  });

  it('outputs the API URL', () => {
    const [apiId] = Object.keys(template.findResources('AWS::ApiGatewayV2::Api'));
    template.hasOutput('ApiUrl', { Value: { 'Fn::GetAtt': [apiId, 'ApiEndpoint'] } });
  });
});

describe('Command: cdk synth', () => {
  it('bundles every function with esbuild, offline, into an ESM file', () => {
    // Prepare
    const app = new App({ outdir: `${process.cwd()}/cdk.out/test-synth` });
    new TimerStack(app, 'Timer');

    // Act
    const assembly = app.synth();

    // Assess
    const artifact = assembly.getStackByName('Timer');
    const functions = Object.values(artifact.template.Resources as Record<string, Resource>).filter(
      (resource) => resource.Type === 'AWS::Lambda::Function',
    );
    expect(functions).toHaveLength(5);
    for (const fn of functions) expect(fn.Properties.Handler).toBe('index.handler');
  }, 120_000);
});
