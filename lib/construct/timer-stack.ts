import { CfnOutput, CfnParameter, type RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib/core';
import type { Construct } from 'constructs';

import { DEFAULT_SETTINGS } from '../../functions/contract/topology.js';
import { MAX_SHARDS } from '../../functions/core/kernel/ids.js';
import { ALLOW_LISTS, type AllowListSpec } from '../../functions/core/targets/allowed-targets.js';
import { DistributedTimer, type DistributedTimerProps } from './distributed-timer.js';

export interface TimerStackProps extends StackProps {
  /**
   * Deployment settings other than the bucket and shard counts, which are stack parameters.
   * @default DEFAULT_SETTINGS from functions/contract/topology.ts
   */
  readonly settings?: DistributedTimerProps['settings'];
  /**
   * What happens to the task table when the stack is deleted.
   * @default RemovalPolicy.RETAIN — tasks are customer data
   */
  readonly tableRemovalPolicy?: RemovalPolicy;
  /**
   * Steady requests per second and burst size every API route accepts before answering 429.
   * @default DEFAULT_API_THROTTLE — 1,000 requests a second, bursts of 2,000
   */
  readonly apiThrottle?: DistributedTimerProps['apiThrottle'];
  /**
   * Whether the api function also gets a function URL (stack output `FunctionUrl`): the same
   * routes without API Gateway's per-request charge, stage throttle or access logs.
   * @default false
   */
  readonly functionUrl?: DistributedTimerProps['functionUrl'];
  /**
   * Whether the ticker, scanner, callback and sweeper run with active X-Ray tracing (the api
   * runs untraced: the construct's apiTracing).
   * @default true
   */
  readonly tracing?: DistributedTimerProps['tracing'];
}

/** The ARNs one kind of target may have, comma-separated; empty, the default, allows none. */
function allowListParameter(stack: Stack, spec: AllowListSpec, grant: string): CfnParameter {
  return new CfnParameter(stack, spec.parameter, {
    type: 'CommaDelimitedList',
    default: '',
    // The pattern applies to each entry, and the empty default is one empty entry.
    allowedPattern: `^$|${spec.pattern.source}`,
    constraintDescription: `each entry must be an ARN such as ${spec.example}`,
    description: `ARNs (IAM wildcards allowed) of the ${spec.target} targets tasks may name; the callback may ${grant} exactly these. Empty: none.`,
  });
}

/**
 * The deployable service: a `DistributedTimer` whose bucket count, shard count and alarm
 * email are stack parameters, and whose endpoints are stack outputs. Apps of your own can
 * use the construct directly instead.
 */
export class TimerStack extends Stack {
  readonly timer: DistributedTimer;

  constructor(scope: Construct, id: string, props: TimerStackProps = {}) {
    super(scope, id, props);
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
    const alarmEmail = new CfnParameter(this, 'AlarmEmail', {
      type: 'String',
      default: '',
      description: 'Email address to receive alarm notifications (it must confirm the subscription). Empty: none.',
    });

    const allowedQueueArns = allowListParameter(this, ALLOW_LISTS.queue, 'send to');
    const allowedEventBusArns = allowListParameter(this, ALLOW_LISTS.eventBus, 'put events on');

    // "Default" keeps the construct out of the resources' logical ids, so they stay as they were.
    this.timer = new DistributedTimer(this, 'Default', {
      ...props,
      bucketCount: bucketCount.valueAsNumber,
      shardCount: shardCount.valueAsNumber,
      alarmEmail: alarmEmail.valueAsString,
      allowedQueueArns: allowedQueueArns.valueAsList,
      allowedEventBusArns: allowedEventBusArns.valueAsList,
    });

    const { timer } = this;
    new CfnOutput(this, 'ApiUrl', {
      value: timer.apiUrl,
      description: 'Base URL of the timer API (POST {ApiUrl}/v1/tasks)',
    });
    if (timer.functionUrl) {
      new CfnOutput(this, 'FunctionUrl', {
        value: timer.functionUrl.url,
        description:
          "Base URL of the api function's URL, ending with '/' (POST {FunctionUrl}v1/tasks): the same API without API Gateway's charge, throttle or access logs",
      });
    }
    new CfnOutput(this, 'TableName', { value: timer.table.tableName });
    new CfnOutput(this, 'DeliveryQueueUrl', {
      value: timer.queues.delivery.queueUrl,
      description: 'Where npm run dlq:redrive moves dead letters back to',
    });
    new CfnOutput(this, 'DeliveryDlqUrl', {
      value: timer.queues.deliveryDlq.queueUrl,
      description: 'Tasks whose attempts ran out',
    });
    new CfnOutput(this, 'CallbackRoleArn', {
      value: timer.callbackRole.roleArn,
      description:
        'Sends to target queues and buses: allow it in the key policy of an SSE-KMS queue, and in the policy of a queue or bus in another account',
    });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: timer.alarmTopic.topicArn,
      description: 'Subscribe on-call tooling here for alarm notifications',
    });
    new CfnOutput(this, 'DashboardName', { value: timer.dashboard.dashboardName });
  }
}
