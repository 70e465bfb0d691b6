import { MetricUnit } from '@aws-lambda-powertools/metrics';

import { sqsDeliveryQueue } from '../adapters/sqs-queues.js';
import type { SweeperConfig } from '../commons/config.js';
import { type HandlerDeps, instrumented } from '../commons/lambda-chain.js';
import { occupancyIndex, tableStores } from '../commons/stores.js';
import { METRICS, SWEEPER_BUDGET_MS, SWEEPER_CATCH_UP_GRACE_SECONDS } from '../contract/topology.js';
import { systemClock } from '../core/kernel/task.js';
import { sweep } from '../core/sweep/sweep.js';

/**
 * Runs every minute: re-scans seconds a scanner claimed but never finished, re-enqueues
 * tasks never attempted long after their due time, and reports how far behind things are.
 * Whatever it had to enqueue is a missed task: the normal path should have sent it.
 */
export function createSweeperHandler(config: SweeperConfig, { clients, observability }: HandlerDeps) {
  const { logger, metrics } = observability;
  const ports = {
    ...tableStores(config.table, clients.dynamo),
    occupancy: occupancyIndex(config, clients.dynamo),
    deliveryQueue: sqsDeliveryQueue(clients.sqs, config.deliveryQueueUrl, config.expressQueueUrl),
    clock: systemClock,
  };
  const settings = {
    maxSecondsPerRun: config.sweepMaxSecondsPerRun,
    graceSeconds: config.sweepGraceSeconds,
    overdueGraceSeconds: config.overdueGraceSeconds,
    catchUpGraceSeconds: SWEEPER_CATCH_UP_GRACE_SECONDS,
    budgetMs: SWEEPER_BUDGET_MS,
  };
  return instrumented(observability, async () => {
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
}
