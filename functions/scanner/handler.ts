import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';

import { sqsDeliveryQueue } from '../adapters/sqs-queues.js';
import { sqs } from '../commons/clients.js';
import { integerEnv, requireEnv } from '../commons/config.js';
import { createLogger } from '../commons/logger.js';
import { createMetrics } from '../commons/metrics.js';
import { tableFromEnv } from '../commons/stores.js';
import { tracer } from '../commons/tracer.js';
import { ENV, METRICS, SCANNER_BUDGET_MS } from '../contract/topology.js';
import { runScanner } from '../core/scan.js';
import { systemClock } from '../core/task.js';

const logger = createLogger();
const metrics = createMetrics();

const ports = {
  ...tableFromEnv(),
  deliveryQueue: sqsDeliveryQueue(sqs, requireEnv(ENV.deliveryQueueUrl)),
  clock: systemClock,
  lookaheadSeconds: integerEnv(ENV.lookaheadSeconds),
};

/** Leaves time to finish the second in hand before the function times out. */
const FINISH_RESERVE_MS = 15_000;

/**
 * Each tick starts a claim-and-scan loop. A tick carries no work of its own, so a
 * failure here is reported for the whole batch and the tick is simply retried; the
 * sweeper re-scans any second this run claimed but could not finish.
 */
export const handler = middy<SQSEvent, SQSBatchResponse>()
  .use(captureLambdaHandler(tracer))
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics))
  .handler(async (_event: SQSEvent, context: Context) => {
    const budgetMs = Math.min(SCANNER_BUDGET_MS, context.getRemainingTimeInMillis() - FINISH_RESERVE_MS);
    const run = await runScanner(ports, budgetMs);
    metrics.addMetric(METRICS.secondsScanned, MetricUnit.Count, run.claimed);
    metrics.addMetric(METRICS.tasksEnqueued, MetricUnit.Count, run.enqueued);
    for (const count of run.enqueuedBySecond.values())
      metrics.addMetric(METRICS.tasksPerSecond, MetricUnit.Count, count);
    const facts = { claimed: run.claimed, busySeconds: run.enqueuedBySecond.size, enqueued: run.enqueued };
    if (run.enqueued > 0) logger.info('seconds scanned', facts);
    else if (run.claimed > 0) logger.debug('empty seconds claimed', facts);
    return { batchItemFailures: [] };
  });
