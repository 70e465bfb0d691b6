import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';

import { sqsTickQueue } from '../adapters/sqs-queues.js';
import { sqs } from '../commons/clients.js';
import { integerEnv, requireEnv } from '../commons/config.js';
import { createLogger } from '../commons/logger.js';
import { tableFromEnv } from '../commons/stores.js';
import { tracer } from '../commons/tracer.js';
import { ENV } from '../contract/topology.js';
import { systemClock } from '../core/task.js';
import { planTicks } from '../core/tick.js';

const logger = createLogger();

const ports = {
  occupancy: tableFromEnv().occupancy,
  tickQueue: sqsTickQueue(sqs, requireEnv(ENV.tickQueueUrl)),
  clock: systemClock,
  lookaheadSeconds: integerEnv(ENV.lookaheadSeconds),
};

/** Runs once a minute (EventBridge rule) and sends one tick per second with tasks in the minutes it plans. */
export const handler = middy()
  .use(captureLambdaHandler(tracer))
  .use(injectLambdaContext(logger))
  .handler(async () => {
    const ticks = await planTicks(ports);
    logger.info('ticks sent', { first: ticks[0]?.second, count: ticks.length });
    return { ticks: ticks.length };
  });
