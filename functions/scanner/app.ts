import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';

import { sqsDeliveryQueue } from '../adapters/sqs-queues.js';
import type { ScannerConfig } from '../commons/config.js';
import { type HandlerDeps, instrumented } from '../commons/lambda-chain.js';
import { occupancyIndex, tableStores } from '../commons/stores.js';
import { METRICS, SCANNER_BUDGET_MS } from '../contract/topology.js';
import { systemClock } from '../core/kernel/task.js';
import { runScanner } from '../core/scan/scan.js';

/** Leaves time to finish the send chunk in hand and record what was finished before the function times out. */
const FINISH_RESERVE_MS = 15_000;

/**
 * Each tick starts a claim-and-scan loop. A tick carries no work of its own, so a
 * failure here is reported for the whole batch and the tick is simply retried; the
 * sweeper re-scans any second this run claimed but could not finish.
 */
export function createScannerHandler(config: ScannerConfig, { clients, observability }: HandlerDeps) {
  const { logger, metrics } = observability;
  const ports = {
    ...tableStores(config.table, clients.dynamo),
    occupancy: occupancyIndex(config, clients.dynamo),
    deliveryQueue: sqsDeliveryQueue(clients.sqs, config.deliveryQueueUrl, config.expressQueueUrl),
    clock: systemClock,
    lookaheadSeconds: config.lookaheadSeconds,
  };
  return instrumented<SQSEvent, SQSBatchResponse>(observability, async (_event, context) => {
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
}
