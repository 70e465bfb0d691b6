import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';

import { SqsDeadLetterQueue, sqsDeliveryQueue, sqsInbox, sqsTickQueue } from '../adapters/sqs-queues.js';
import { AwsTargetDispatcher } from '../adapters/targets.js';
import { WebhookClient } from '../adapters/webhook-client.js';
import type { CallbackConfig } from '../commons/config.js';
import { type HandlerDeps, instrumented } from '../commons/lambda-chain.js';
import { occupancyIndex, tableStores } from '../commons/stores.js';
import { DELIVERY_LEASE_MS, MAX_EARLY_WAIT_MS, WEBHOOK_CONNECT_TIMEOUT_MS } from '../contract/topology.js';
import type { DeliveryPorts } from '../core/deliver/deliver.js';
import { guardedByHostBreaker, HostBreaker } from '../core/deliver/host-breaker.js';
import { SlowCallWatch } from '../core/deliver/slow-calls.js';
import { systemClock } from '../core/kernel/task.js';
import { addressPolicy } from '../core/targets/egress.js';
import { deliverRecords } from './records.js';

/**
 * A webhook unanswered this long is hanging, not slow: most answer in tens of milliseconds. Past
 * it the invocation delivers more of the queue while it waits (see deliverRecords); the stall a
 * hanging receiver costs other tenants' tasks in the batches it reaches is about this long.
 */
const SLOW_CALL_MS = 500;
/**
 * What a taken batch needs after its records' wait for their due times and their calls: the
 * receipt and outcome writes, the retry sends, the deletes. A batch still running at the
 * function's timeout is failed whole, and its messages come back only after the queue's
 * visibility timeout: a busy local run that let taken batches run past it redelivered tasks
 * minutes late.
 */
const WRITES_RESERVE_MS = 5_000;

/**
 * Delivers each record of the batch and reports only those that must come back; the
 * record handling lives in ./records so fault tests drive exactly this code.
 */
export function createCallbackHandler(config: CallbackConfig, { clients, observability }: HandlerDeps) {
  const { logger, metrics } = observability;
  const stores = tableStores(config.table, clients.dynamo, config.retentionDays);
  const deliveryQueue = sqsDeliveryQueue(clients.sqs, config.deliveryQueueUrl, config.expressQueueUrl);
  // One breaker per instance, living as long as it: it remembers which webhook hosts are down
  // across invocations, so a tenant's dead receiver is not called (and waited on) for every task.
  const breaker = new HostBreaker(systemClock);
  const targets = new SlowCallWatch(
    guardedByHostBreaker(
      new AwsTargetDispatcher({
        clock: systemClock,
        sqsFor: clients.sqsForQueueUrl,
        eventBridge: clients.eventBridge,
        webhooks: new WebhookClient({
          policy: addressPolicy(config.allowInsecureTargets),
          connectTimeoutMs: WEBHOOK_CONNECT_TIMEOUT_MS,
          totalTimeoutMs: config.webhookTimeoutMs,
        }),
      }),
      breaker,
    ),
    SLOW_CALL_MS,
    (target, sender) => breaker.unansweredIsNews(target, sender),
  );
  const inbox = sqsInbox(clients.sqs, config.deliveryQueueUrl);
  const ports: DeliveryPorts = {
    ...stores,
    occurrences: {
      ...stores,
      occupancy: occupancyIndex(config, clients.dynamo),
      deliveryQueue,
      tickQueue: sqsTickQueue(clients.sqs, config.tickQueueUrl),
      clock: systemClock,
      lookaheadSeconds: config.lookaheadSeconds,
    },
    targets,
    deadLetters: new SqsDeadLetterQueue(clients.sqs, config.deliveryDlqUrl),
    clock: systemClock,
    maxAttempts: config.maxAttempts,
    backoffBaseSeconds: config.backoffBaseSeconds,
    backoffMaxSeconds: config.backoffMaxSeconds,
    retentionDays: config.retentionDays,
    leaseMs: DELIVERY_LEASE_MS,
    maxEarlyWaitMs: MAX_EARLY_WAIT_MS,
  };
  return instrumented<SQSEvent, SQSBatchResponse>(observability, (event, context) =>
    deliverRecords({ delivery: ports, deliveryQueue, logger, metrics }, event.Records, {
      inbox,
      slowCalls: targets,
      remainingMs: () => context.getRemainingTimeInMillis(),
      callReserveMs: config.webhookTimeoutMs + WRITES_RESERVE_MS,
    }),
  );
}
