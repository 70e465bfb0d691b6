import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import { ENV, TICKS_PER_RUN } from '../../lib/topology';
import { sqsTickQueue } from '../adapters/sqs-queues';
import { sqs } from '../commons/clients';
import { requireEnv } from '../commons/config';
import { createLogger } from '../commons/logger';
import { tracer } from '../commons/tracer';
import { systemClock } from '../core/task';
import { fanOutTicks } from '../core/tick';

const logger = createLogger();

const tickQueue = sqsTickQueue(sqs, requireEnv(ENV.tickQueueUrl));

/** Runs once a minute (EventBridge rule) and spreads that minute into one tick per second. */
export const handler = middy()
  .use(captureLambdaHandler(tracer))
  .use(injectLambdaContext(logger))
  .handler(async () => {
    const ticks = await fanOutTicks({ tickQueue, clock: systemClock, count: TICKS_PER_RUN });
    logger.info('ticks sent', { first: ticks[0]?.second, count: ticks.length });
    return { ticks: ticks.length };
  });
