import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { ENV, SWEEPER_BUDGET_MS } from '../../lib/topology';
import { sqsDeliveryQueue } from '../adapters/sqs-queues';
import { sqs } from '../commons/clients';
import { integerEnv, requireEnv } from '../commons/config';
import { createLogger } from '../commons/logger';
import { tableFromEnv } from '../commons/stores';
import { sweepUnfinishedSeconds } from '../core/sweep';
import { systemClock } from '../core/task';

const logger = createLogger();

const ports = {
  ...tableFromEnv(),
  deliveryQueue: sqsDeliveryQueue(sqs, requireEnv(ENV.deliveryQueueUrl)),
  clock: systemClock,
};
const settings = {
  maxSecondsPerRun: integerEnv(ENV.sweepMaxSecondsPerRun),
  graceSeconds: integerEnv(ENV.sweepGraceSeconds),
  budgetMs: SWEEPER_BUDGET_MS,
};

/** Runs every minute: re-scans seconds a scanner claimed but never finished. */
export const handler = middy()
  .use(injectLambdaContext(logger))
  .handler(async () => {
    const report = await sweepUnfinishedSeconds(ports, settings);
    const log = report.rescanned.length > 0 ? logger.warn.bind(logger) : logger.info.bind(logger);
    log('sweep finished', {
      rescanned: report.rescanned.length,
      enqueued: report.enqueued,
      lagSeconds: report.lagSeconds,
      unsweptSeconds: report.unsweptSeconds,
    });
    return report;
  });
