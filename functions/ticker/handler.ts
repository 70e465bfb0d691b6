import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import { ENV } from '../../lib/topology';
import { sqsTickQueue } from '../adapters/sqs-queues';
import { sqs } from '../commons/clients';
import { integerEnv, requireEnv } from '../commons/config';
import { createLogger } from '../commons/logger';
import { tableFromEnv } from '../commons/stores';
import { tracer } from '../commons/tracer';
import { systemClock } from '../core/task';
import { planTicks } from '../core/tick';

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
