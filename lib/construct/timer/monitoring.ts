import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Aws, CfnCondition, Duration, Fn, RemovalPolicy, Token } from 'aws-cdk-lib/core';
import type { Construct } from 'constructs';

import { ALARM_THRESHOLDS, type FunctionName, FUNCTIONS, METRICS } from '../../../functions/contract/topology.js';
import { capitalized } from './construct-helpers.js';

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

export interface TimerMonitoringProps {
  /** The queue whose depth says tasks have failed for good. */
  readonly deliveryDlq: sqs.IQueue;
  /** Each function, alarmed on its errors and throttles. */
  readonly functions: Record<FunctionName, lambda.IFunction>;
  /** The API, alarmed on its 5xx answers. */
  readonly api: HttpApi;
  /**
   * An address subscribed to the alarm topic (it must confirm). A string or a token; an
   * empty value subscribes nobody.
   * @default no subscription
   */
  readonly alarmEmail?: string;
}

/**
 * The alarms on the service's own metrics (functions/contract/topology.ts METRICS and
 * ALARM_THRESHOLDS), its DLQ, its API and each function, the topic they notify and the on-call
 * dashboard: a metric factory (`timerMetric`), an alarm factory (`alarm`) and the alarms and
 * dashboard built from them. A part of `DistributedTimer` that adds its resources to the timer's
 * own scope (see there why it is not a construct of its own).
 */
export class TimerMonitoring {
  /** Receives every alarm's ALARM and OK notifications. */
  readonly alarmTopic: sns.Topic;
  readonly alarms: Record<TimerAlarmKey, cloudwatch.Alarm>;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(
    private readonly scope: Construct,
    watched: TimerMonitoringProps,
  ) {
    this.alarmTopic = this.createAlarmTopic(watched.alarmEmail);
    this.alarms = this.createAlarms(watched);
    this.dashboard = this.createDashboard();
  }

  /**
   * The topic alarms notify. It is encrypted with a key of its own because CloudWatch
   * cannot use the AWS managed aws/sns key: a topic encrypted with that key silently drops
   * every alarm notification.
   */
  private createAlarmTopic(alarmEmail: string | undefined): sns.Topic {
    const cloudWatch = new iam.ServicePrincipal('cloudwatch.amazonaws.com');
    const key = new kms.Key(this.scope, 'AlarmTopicKey', {
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
    const topic = new sns.Topic(this.scope, 'AlarmTopic', {
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
    const subscription = new sns.CfnSubscription(this.scope, 'AlarmEmailSubscription', {
      topicArn: topic.topicArn,
      protocol: 'email',
      endpoint: alarmEmail,
    });
    // A token (a stack parameter, say) may still turn out empty at deploy time.
    if (Token.isUnresolved(alarmEmail)) {
      subscription.cfnOptions.condition = new CfnCondition(this.scope, 'HasAlarmEmail', {
        expression: Fn.conditionNot(Fn.conditionEquals(alarmEmail, '')),
      });
    }
    return topic;
  }

  /** An alarm that notifies the alarm topic when it fires and when it recovers. */
  private alarm(id: string, spec: AlarmSpec): cloudwatch.Alarm {
    const periods = spec.periods ?? 1;
    const alarm = new cloudwatch.Alarm(this.scope, id, {
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
  private createAlarms(watched: TimerMonitoringProps): Record<TimerAlarmKey, cloudwatch.Alarm> {
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
        metric: watched.deliveryDlq.metricApproximateNumberOfMessagesVisible({
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
        metric: watched.api.metricServerError({ statistic: cloudwatch.Stats.SUM, period: ONE_MINUTE }),
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
          metric: metric(watched.functions[name]),
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
    const dashboard = new cloudwatch.Dashboard(this.scope, 'Dashboard', { defaultInterval: Duration.hours(3) });
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
}
