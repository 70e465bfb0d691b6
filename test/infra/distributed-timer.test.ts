import { aws_lambda as lambda, aws_logs as logs, type CfnElement, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Billing, Capacity } from 'aws-cdk-lib/aws-dynamodb';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';

import { DELIVERY_MAX_RECEIVE_COUNT, ENV, FUNCTION_URL, FUNCTIONS } from '../../functions/contract/topology.js';
import { DEFAULT_API_THROTTLE, DistributedTimer } from '../../lib/index.js';
import { actionsOf, statementsOfRole } from '../support/iam-template.js';
import { templateApp } from '../support/template-app.js';

/** The logical id of a construct's CloudFormation resource. */
const logicalIdOf = (stack: Stack, construct: IConstruct) =>
  stack.getLogicalId(construct.node.defaultChild as CfnElement);

/** A stack of another app, holding the construct. */
function appStack(): Stack {
  return new Stack(templateApp(), 'OrdersService', { env: { account: '123456789012', region: 'eu-west-1' } });
}

describe('Construct: DistributedTimer', () => {
  it('synthesizes inside another app with literal settings, and exposes what that app wires to', () => {
    // Prepare
    const stack = appStack();

    // Act
    const timer = new DistributedTimer(stack, 'Timer', {
      shardCount: 32,
      bucketCount: 86_400,
      alarmEmail: 'oncall@example.com',
      settings: { maxAttempts: 5 },
      architecture: lambda.Architecture.X86_64,
      tableRemovalPolicy: RemovalPolicy.DESTROY,
      logRetention: logs.RetentionDays.ONE_WEEK,
      apiThrottle: { rateLimit: 2.5 },
    });
    const template = Template.fromStack(stack);

    // Assess
    template.hasResourceProperties('AWS::Lambda::Function', {
      Architectures: ['x86_64'],
      Environment: { Variables: Match.objectLike({ [ENV.shardCount]: '32', [ENV.bucketCount]: '86400' }) },
    });
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: Match.objectLike({ maxReceiveCount: DELIVERY_MAX_RECEIVE_COUNT }),
    });
    // A limit left out keeps its default.
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingRateLimit: 2.5, ThrottlingBurstLimit: DEFAULT_API_THROTTLE.burstLimit },
    });
    for (const logGroup of Object.values(template.findResources('AWS::Logs::LogGroup'))) {
      expect(logGroup.Properties.RetentionInDays).toBe(7);
    }
    // A literal address needs no condition.
    const subscriptions = template.findResources('AWS::SNS::Subscription');
    expect(Object.values(subscriptions)).toEqual([
      expect.objectContaining({ Properties: expect.objectContaining({ Endpoint: 'oncall@example.com' }) }),
    ]);
    expect(Object.values(subscriptions)[0]).not.toHaveProperty('Condition');
    for (const resource of [
      timer.table,
      timer.queues.delivery,
      timer.functions.callback,
      timer.alarmTopic,
      timer.dashboard,
    ]) {
      expect(resource).toBeDefined();
    }
    expect(stack.resolve(timer.apiUrl)).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/^TimerHttpApi/), 'ApiEndpoint'],
    });
    expect(Object.keys(timer.alarms)).toContain('missedTasks');
  });

  it('subscribes nobody when no alarm email is given', () => {
    // Prepare
    const stack = appStack();

    // Act
    new DistributedTimer(stack, 'Timer');

    // Assess
    Template.fromStack(stack).resourceCountIs('AWS::SNS::Subscription', 0);
  });

  it('grants the callback exactly the literal allowed ARNs and passes them on comma-separated', () => {
    // Prepare
    const stack = appStack();
    const queues = ['arn:aws:sqs:eu-west-1:123456789012:orders', 'arn:aws:sqs:*:123456789012:jobs-*'];
    const bus = 'arn:aws:events:eu-west-1:123456789012:event-bus/billing';

    // Act
    const timer = new DistributedTimer(stack, 'Timer', { allowedQueueArns: queues, allowedEventBusArns: [bus] });
    const template = Template.fromStack(stack);

    // Assess
    const statements = statementsOfRole(template, logicalIdOf(stack, timer.callbackRole));
    expect(statements).toEqual(
      expect.arrayContaining([
        { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: queues },
        { Effect: 'Allow', Action: 'events:PutEvents', Resource: bus },
      ]),
    );
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({ [ENV.allowedQueueArns]: queues.join(','), [ENV.allowedEventBusArns]: bus }),
      },
    });
    expect(Object.keys(template.toJSON().Conditions ?? {})).toEqual([]);
  });

  it('turns dense mode on from settings for every function that records, plans or reads occupied seconds', () => {
    // Prepare
    const stack = appStack();

    // Act
    const dense = new DistributedTimer(stack, 'Timer', { settings: { tickEverySecond: true } });
    const template = Template.fromStack(stack);

    // Assess
    const functions = template.findResources('AWS::Lambda::Function');
    const variablesOf = (fn: keyof typeof FUNCTIONS) =>
      (functions[logicalIdOf(stack, dense.functions[fn])]?.Properties.Environment as { Variables: object }).Variables;
    // The callback stores a schedule's next occurrence as the api stores a task, so it records seconds too.
    for (const fn of ['api', 'ticker', 'scanner', 'sweeper', 'callback'] as const) {
      expect(variablesOf(fn)).toMatchObject({ [ENV.tickEverySecond]: 'true' });
    }
  });

  it('keeps the occupancy index unless told otherwise', () => {
    // Prepare
    const stack = appStack();

    // Act
    const timer = new DistributedTimer(stack, 'Timer');
    const template = Template.fromStack(stack);

    // Assess
    const ticker = template.findResources('AWS::Lambda::Function')[logicalIdOf(stack, timer.functions.ticker)];
    expect(ticker?.Properties.Environment.Variables).toMatchObject({ [ENV.tickEverySecond]: 'false' });
  });

  it('grants no target at all when no ARNs are allowed, and says so with empty lists', () => {
    // Prepare
    const stack = appStack();

    // Act
    const timer = new DistributedTimer(stack, 'Timer');
    const template = Template.fromStack(stack);

    // Assess
    const statements = statementsOfRole(template, logicalIdOf(stack, timer.callbackRole));
    expect(statements.flatMap(actionsOf)).not.toContain('events:PutEvents');
    // Only the service's own queues: retries go back to the delivery queue (or the express queue,
    // when due at once), dead letters to the DLQ, and a schedule's next occurrence may need a tick.
    const sends = statements.filter((statement) => actionsOf(statement).includes('sqs:SendMessage'));
    expect(sends.map((statement) => statement.Resource)).toEqual(
      expect.arrayContaining([
        { 'Fn::GetAtt': [logicalIdOf(stack, timer.queues.delivery), 'Arn'] },
        { 'Fn::GetAtt': [logicalIdOf(stack, timer.queues.express), 'Arn'] },
        { 'Fn::GetAtt': [logicalIdOf(stack, timer.queues.deliveryDlq), 'Arn'] },
        { 'Fn::GetAtt': [logicalIdOf(stack, timer.queues.tick), 'Arn'] },
      ]),
    );
    expect(sends).toHaveLength(4);
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [ENV.allowedQueueArns]: '', [ENV.allowedEventBusArns]: '' }) },
    });
  });

  it("sets the table's capacity (an on-demand ceiling or provisioned) and the callback's and api's concurrency from props", () => {
    // Prepare
    const capped = appStack();
    const provisioned = appStack();

    // Act
    const cappedTimer = new DistributedTimer(capped, 'Timer', {
      tableBilling: Billing.onDemand({ maxReadRequestUnits: 20_000, maxWriteRequestUnits: 30_000 }),
      deliveryMaxConcurrency: 1000,
      apiReservedConcurrency: 2750,
    });
    const provisionedTimer = new DistributedTimer(provisioned, 'Timer', {
      tableBilling: Billing.provisioned({
        readCapacity: Capacity.fixed(5000),
        writeCapacity: Capacity.autoscaled({ maxCapacity: 40_000 }),
      }),
    });

    // Assess
    Template.fromStack(capped).hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      BillingMode: 'PAY_PER_REQUEST',
      WriteOnDemandThroughputSettings: { MaxWriteRequestUnits: 30_000 },
      Replicas: [Match.objectLike({ ReadOnDemandThroughputSettings: { MaxReadRequestUnits: 20_000 } })],
    });
    Template.fromStack(provisioned).hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      BillingMode: 'PROVISIONED',
    });
    // A deployment that raised its Lambda quota lets the callback's mapping scale to the SQS maximum.
    Template.fromStack(capped).hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 1,
      ScalingConfig: { MaximumConcurrency: 1000 },
    });
    // Single submits at a billion a day need more api instances than the default reservation (npm run plan).
    const reservationOfApi = (stack: Stack, timer: DistributedTimer) =>
      Template.fromStack(stack).toJSON().Resources[logicalIdOf(stack, timer.functions.api)].Properties
        .ReservedConcurrentExecutions;
    expect(reservationOfApi(capped, cappedTimer)).toBe(2750);
    expect(reservationOfApi(provisioned, provisionedTimer)).toBe(FUNCTIONS.api.reservedConcurrency);
  });

  it('traces every function but the api with X-Ray by default, the api when apiTracing is set, and none when tracing is false', () => {
    // Prepare
    const traced = appStack();
    const apiTraced = appStack();
    const untraced = appStack();

    // Act
    const timer = new DistributedTimer(traced, 'Timer');
    const withApi = new DistributedTimer(apiTraced, 'Timer', { apiTracing: true });
    new DistributedTimer(untraced, 'Timer', { tracing: false });

    // Assess
    const propertiesOf = (stack: Stack, fn: lambda.Function) =>
      Template.fromStack(stack).toJSON().Resources[logicalIdOf(stack, fn)].Properties;
    for (const [name, fn] of Object.entries(timer.functions)) {
      const properties = propertiesOf(traced, fn);
      if (name === 'api') {
        // No TracingConfig: Lambda's default, which records no trace of its own.
        expect(properties.TracingConfig).toBeUndefined();
        expect(properties.Environment.Variables.POWERTOOLS_TRACE_ENABLED).toBe('false');
      } else {
        expect(properties.TracingConfig).toEqual({ Mode: 'Active' });
        expect(properties.Environment.Variables).not.toHaveProperty('POWERTOOLS_TRACE_ENABLED');
      }
    }
    expect(propertiesOf(apiTraced, withApi.functions.api).TracingConfig).toEqual({ Mode: 'Active' });
    const functionsOf = (stack: Stack) =>
      Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function'));
    for (const fn of functionsOf(untraced)) {
      expect(fn.Properties.TracingConfig).toBeUndefined();
      expect(fn.Properties.Environment.Variables.POWERTOOLS_TRACE_ENABLED).toBe('false');
    }
  });

  it("logs every function as JSON, with Lambda's own lines at WARN and the functions' at INFO", () => {
    // Prepare
    const stack = appStack();

    // Act
    new DistributedTimer(stack, 'Timer', { functionUrl: true });

    // Assess
    const functions = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function'));
    expect(functions).toHaveLength(6);
    for (const fn of functions) {
      expect(fn.Properties.LoggingConfig).toMatchObject({
        LogFormat: 'JSON',
        SystemLogLevel: 'WARN',
        ApplicationLogLevel: 'INFO',
      });
    }
  });

  it('gives the api code a public URL (auth NONE, the api checks the key) only when functionUrl is set', () => {
    // Prepare
    const withUrl = appStack();
    const without = appStack();

    // Act
    const timer = new DistributedTimer(withUrl, 'Timer', { functionUrl: true });
    const plain = new DistributedTimer(without, 'Timer');

    // Assess
    const urlFunction = timer.urlFunction;
    if (!urlFunction) throw new Error('functionUrl: true made no URL function');
    const urlArn = { 'Fn::GetAtt': [logicalIdOf(withUrl, urlFunction), 'Arn'] };
    const template = Template.fromStack(withUrl);
    template.resourceCountIs('AWS::Lambda::Url', 1);
    template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE', TargetFunctionArn: urlArn });
    expect(Object.values(template.findResources('AWS::Lambda::Url'))[0]?.Properties).not.toHaveProperty('Cors');
    // Lambda lets a public URL through only with both statements: the URL's, and the invoke it makes.
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunctionUrl',
      FunctionName: urlArn,
      Principal: '*',
      FunctionUrlAuthType: 'NONE',
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      FunctionName: urlArn,
      Principal: '*',
      InvokedViaFunctionUrl: true,
    });
    expect(timer.functionUrl?.authType).toBe(lambda.FunctionUrlAuthType.NONE);
    // The HTTP API stays, with its stage throttle: the URL is a second door, not a replacement.
    template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);

    const plainTemplate = Template.fromStack(without);
    plainTemplate.resourceCountIs('AWS::Lambda::Url', 0);
    expect(
      Object.values(plainTemplate.findResources('AWS::Lambda::Permission')).filter(
        (permission) => permission.Properties.Principal === '*',
      ),
    ).toEqual([]);
    expect(plain.functionUrl).toBeUndefined();
    expect(plain.urlFunction).toBeUndefined();
  });

  it("bounds the function URL by its own function's reserved concurrency, which the HTTP API's api function does not share", () => {
    // Prepare
    const defaults = appStack();
    const sized = appStack();
    const without = appStack();

    // Act
    const timer = new DistributedTimer(defaults, 'Timer', { functionUrl: true });
    const sizedTimer = new DistributedTimer(sized, 'Timer', { functionUrl: true, functionUrlReservedConcurrency: 120 });
    const plain = new DistributedTimer(without, 'Timer');

    // Assess: the URL runs the api's code on a function of its own, reserved apart from the api's.
    const template = Template.fromStack(defaults);
    const functions = template.findResources('AWS::Lambda::Function');
    const urlId = logicalIdOf(defaults, timer.urlFunction as lambda.Function);
    const apiId = logicalIdOf(defaults, timer.functions.api);
    expect(urlId).not.toBe(apiId);
    expect(functions[urlId]?.Properties.ReservedConcurrentExecutions).toBe(FUNCTION_URL.reservedConcurrency);
    expect(functions[apiId]?.Properties.ReservedConcurrentExecutions).toBe(FUNCTIONS.api.reservedConcurrency);
    expect(functions[urlId]?.Properties.Environment).toEqual(functions[apiId]?.Properties.Environment);
    expect(functions[urlId]?.Properties.Role).toEqual(functions[apiId]?.Properties.Role);
    const sizedFunctions = Template.fromStack(sized).findResources('AWS::Lambda::Function');
    const sizedUrlId = logicalIdOf(sized, sizedTimer.urlFunction as lambda.Function);
    expect(sizedFunctions[sizedUrlId]?.Properties.ReservedConcurrentExecutions).toBe(120);
    // Every resource of a stack without the URL keeps its logical id: turning the URL on only adds.
    const plainIds = Object.keys(Template.fromStack(without).toJSON().Resources);
    expect(plainIds.filter((id) => !(id in template.toJSON().Resources))).toEqual([]);
    expect(logicalIdOf(without, plain.functions.api)).toBe(apiId);
  });

  it.each([
    [{ shardCount: 0 }, 'shardCount must be a whole number from 1 to 1024, got 0'],
    [{ shardCount: 2048 }, 'shardCount must be a whole number from 1 to 1024, got 2048'],
    [{ shardCount: 1.5 }, 'shardCount must be a whole number from 1 to 1024, got 1.5'],
    [{ bucketCount: 10 }, 'bucketCount must be a whole number from 60'],
    [{ apiThrottle: { burstLimit: 10.5 } }, 'apiThrottle.burstLimit must be a whole number from 0'],
    [{ apiThrottle: { rateLimit: -1 } }, 'apiThrottle.rateLimit must be a number of requests a second, at least 0'],
    [{ deliveryMaxConcurrency: 1001 }, 'deliveryMaxConcurrency must be a whole number from 2 to 1000, got 1001'],
    [{ apiReservedConcurrency: 0 }, 'apiReservedConcurrency must be a whole number from 1'],
    [
      { allowedQueueArns: ['https://sqs.eu-west-1.amazonaws.com/123456789012/orders'] },
      'allowedQueueArns must hold ARNs such as arn:aws:sqs:us-east-1:123456789012:orders, got "https://sqs.',
    ],
    [
      { allowedEventBusArns: ['billing'] },
      'allowedEventBusArns must hold ARNs such as arn:aws:events:us-east-1:123456789012:event-bus/default, got "billing"',
    ],
  ])('refuses %o, naming the property', (props, message) => {
    // Act & Assess
    expect(() => new DistributedTimer(appStack(), 'Timer', props)).toThrow(message);
  });
});
