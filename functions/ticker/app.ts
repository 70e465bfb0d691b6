import { sqsTickQueue } from '../adapters/sqs-queues.js';
import type { TickerConfig } from '../commons/config.js';
import { type HandlerDeps, instrumented } from '../commons/lambda-chain.js';
import { occupancyIndex } from '../commons/stores.js';
import { systemClock } from '../core/kernel/task.js';
import { planTicks } from '../core/kernel/tick.js';

/** Runs once a minute (EventBridge rule) and sends one tick per second with tasks in the minutes it plans. */
export function createTickerHandler(config: TickerConfig, { clients, observability }: HandlerDeps) {
  const { logger } = observability;
  const ports = {
    occupancy: occupancyIndex(config, clients.dynamo),
    tickQueue: sqsTickQueue(clients.sqs, config.tickQueueUrl),
    clock: systemClock,
    lookaheadSeconds: config.lookaheadSeconds,
  };
  return instrumented(observability, async () => {
    const ticks = await planTicks(ports);
    logger.info('ticks sent', { first: ticks[0]?.second, count: ticks.length });
    return { ticks: ticks.length };
  });
}
