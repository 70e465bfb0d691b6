import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';

import { sqsDeliveryQueue } from '../adapters/sqs-queues.js';
import { sqs } from '../commons/clients.js';
import { integerEnv, requireEnv } from '../commons/config.js';
import { createLogger } from '../commons/logger.js';
import { createMetrics } from '../commons/metrics.js';
import { tableFromEnv } from '../commons/stores.js';
import { tracer } from '../commons/tracer.js';
import { ENV, METRICS, SWEEPER_BUDGET_MS, SWEEPER_CATCH_UP_GRACE_SECONDS } from '../contract/topology.js';
import { sweep } from '../core/sweep.js';
import { systemClock } from '../core/task.js';

const logger = createLogger();
const metrics = createMetrics();

const ports = {
  ...tableFromEnv(),
  deliveryQueue: sqsDeliveryQueue(sqs, requireEnv(ENV.deliveryQueueUrl)),
  clock: systemClock,
};
const settings = {
  maxSecondsPerRun: integerEnv(ENV.sweepMaxSecondsPerRun),
  graceSeconds: integerEnv(ENV.sweepGraceSeconds),
  overdueGraceSeconds: integerEnv(ENV.overdueGraceSeconds),
  catchUpGraceSeconds: SWEEPER_CATCH_UP_GRACE_SECONDS,
  budgetMs: SWEEPER_BUDGET_MS,
};

/**
 * Runs every minute: re-scans seconds a scanner claimed but never finished, re-enqueues
 * tasks never attempted long after their due time, and reports how far behind things are.
 * Whatever it had to enqueue is a missed task: the normal path should have sent it.
 */
export const handler = middy()
  .use(captureLambdaHandler(tracer))
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics))
  .handler(async () => {
    const report = await sweep(ports, settings);
    const missed = report.caughtUp + report.enqueued + report.overdue;
    metrics.addMetric(METRICS.missedTasks, MetricUnit.Count, missed);
    metrics.addMetric(METRICS.scannerLagSeconds, MetricUnit.Seconds, report.lagSeconds);
    metrics.addMetric(METRICS.unsweptSeconds, MetricUnit.Seconds, report.unsweptSeconds);
    metrics.addMetric(METRICS.overdueCheckLagSeconds, MetricUnit.Seconds, report.overdueCheckLagSeconds);
    const facts = {
      caughtUp: report.caughtUp,
      rescanned: report.rescanned.length,
      enqueued: report.enqueued,
      overdue: report.overdue,
      lagSeconds: report.lagSeconds,
      unsweptSeconds: report.unsweptSeconds,
      overdueCheckLagSeconds: report.overdueCheckLagSeconds,
    };
    if (missed > 0 || report.rescanned.length > 0) logger.warn('sweep found missed work', facts);
    else logger.info('sweep finished', facts);
    // Metrics for the work done are published either way; a failure still fails the invocation, for the errors alarm.
    const [failure] = report.errors;
    if (failure !== undefined) throw failure;
    return report;
  });
