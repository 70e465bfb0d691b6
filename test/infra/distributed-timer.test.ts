import { App, Stack, aws_lambda as lambda, aws_logs as logs, RemovalPolicy } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { DEFAULT_API_THROTTLE, DistributedTimer } from '../../lib';
import { ENV } from '../../lib/topology';

/** A stack of another app, holding the construct; bundling is skipped, it is proven elsewhere. */
function appStack(): Stack {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  return new Stack(app, 'OrdersService', { env: { account: '123456789012', region: 'eu-west-1' } });
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
    template.hasResourceProperties('AWS::SQS::Queue', { RedrivePolicy: Match.objectLike({ maxReceiveCount: 105 }) });
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
    for (const resource of [timer.table, timer.queues.delivery, timer.functions.callback, timer.alarmTopic, timer.dashboard]) {
      expect(resource).toBeDefined();
    }
    expect(stack.resolve(timer.apiUrl)).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/^TimerHttpApi/), 'ApiEndpoint'] });
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

  it.each([
    [{ shardCount: 0 }, 'shardCount must be a whole number from 1 to 1024, got 0'],
    [{ shardCount: 2048 }, 'shardCount must be a whole number from 1 to 1024, got 2048'],
    [{ shardCount: 1.5 }, 'shardCount must be a whole number from 1 to 1024, got 1.5'],
    [{ bucketCount: 10 }, 'bucketCount must be a whole number from 60'],
    [{ apiThrottle: { burstLimit: 10.5 } }, 'apiThrottle.burstLimit must be a whole number from 0'],
    [{ apiThrottle: { rateLimit: -1 } }, 'apiThrottle.rateLimit must be a number of requests a second, at least 0'],
  ])('refuses %o, naming the property', (props, message) => {
    // Act & Assess
    expect(() => new DistributedTimer(appStack(), 'Timer', props)).toThrow(message);
  });
});
