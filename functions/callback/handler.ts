import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';

import { delayRedelivery, SqsDeadLetterQueue } from '../adapters/sqs-queues.js';
import { AwsTargetDispatcher } from '../adapters/targets.js';
import { WebhookClient } from '../adapters/webhook-client.js';
import { eventBridge, sqs, sqsForQueueUrl } from '../commons/clients.js';
import { booleanEnv, integerEnv, requireEnv } from '../commons/config.js';
import { createLogger } from '../commons/logger.js';
import { createMetrics } from '../commons/metrics.js';
import { tableFromEnv } from '../commons/stores.js';
import { tracer } from '../commons/tracer.js';
import { DELIVERY_LEASE_MS, ENV, MAX_EARLY_WAIT_MS, WEBHOOK_CONNECT_TIMEOUT_MS } from '../contract/topology.js';
import type { DeliveryPorts } from '../core/deliver.js';
import { addressPolicy } from '../core/egress.js';
import { systemClock } from '../core/task.js';
import { deliverRecords } from './records.js';

const logger = createLogger();
const metrics = createMetrics();

const deliveryQueueUrl = requireEnv(ENV.deliveryQueueUrl);

const ports: DeliveryPorts = {
  ...tableFromEnv(),
  targets: new AwsTargetDispatcher({
    clock: systemClock,
    sqsFor: sqsForQueueUrl,
    eventBridge,
    webhooks: new WebhookClient({
      policy: addressPolicy(booleanEnv(ENV.allowInsecureTargets)),
      connectTimeoutMs: WEBHOOK_CONNECT_TIMEOUT_MS,
      totalTimeoutMs: integerEnv(ENV.webhookTimeoutMs),
    }),
  }),
  deadLetters: new SqsDeadLetterQueue(sqs, requireEnv(ENV.deliveryDlqUrl)),
  clock: systemClock,
  maxAttempts: integerEnv(ENV.maxAttempts),
  backoffBaseSeconds: integerEnv(ENV.backoffBaseSeconds),
  backoffMaxSeconds: integerEnv(ENV.backoffMaxSeconds),
  retentionDays: integerEnv(ENV.retentionDays),
  leaseMs: DELIVERY_LEASE_MS,
  maxEarlyWaitMs: MAX_EARLY_WAIT_MS,
};

/**
 * Delivers each record of the batch and reports only those that must come back; the
 * record handling lives in ./records so fault tests drive exactly this code.
 */
export const handler = middy<SQSEvent, SQSBatchResponse>()
  .use(captureLambdaHandler(tracer))
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics))
  .handler((event) =>
    deliverRecords(
      {
        delivery: ports,
        requeue: (receiptHandle, seconds) => delayRedelivery(sqs, deliveryQueueUrl, receiptHandle, seconds),
        logger,
        metrics,
      },
      event.Records,
    ),
  );
