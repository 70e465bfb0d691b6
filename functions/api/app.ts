import type { Logger } from '@aws-lambda-powertools/logger';
import type middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

import { sqsDeliveryQueue, sqsTickQueue } from '../adapters/sqs-queues.js';
import { systemResolve } from '../adapters/webhook-client.js';
import type { ApiConfig } from '../commons/config.js';
import { type HandlerDeps, instrumented } from '../commons/lambda-chain.js';
import { CountBatch } from '../commons/metrics.js';
import { occupancyIndex, tableStores } from '../commons/stores.js';
import { METRICS } from '../contract/topology.js';
import { StoreBusyError, systemClock } from '../core/kernel/task.js';
import { newPlacement } from '../core/kernel/task-kernel.js';
import { addressPolicy } from '../core/targets/egress.js';
import { type HttpResult, problem, problemResponse } from './http.js';
import { type ApiPorts, route } from './routes.js';

/** Long enough for DynamoDB's on-demand scaling to catch up with a burst. */
const OVERLOAD_RETRY_AFTER_SECONDS = 2;

/** Errors that mean the table is over its throughput: the SDK's, after its own retries, and the stores'. */
const OVERLOAD_ERRORS = new Set([
  StoreBusyError.name,
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
]);

/**
 * Turns anything unexpected into problem+json and logs it, so callers never see a stack trace:
 * a 503 with Retry-After when the table is over its throughput (the request was fine; waiting
 * helps), else a 500.
 */
const problemOnError = (logger: Logger): middy.MiddlewareObj<APIGatewayProxyEventV2, HttpResult> => ({
  onError: async function internalErrorAsProblem(request) {
    logger.error('request failed', { error: request.error as Error, routeKey: request.event.routeKey });
    if (request.error !== null && OVERLOAD_ERRORS.has(request.error.name)) {
      request.response = problemResponse(
        problem(
          503,
          'store-busy',
          'The task table is over its throughput and some writes were not made. Retry in a few seconds with the same idempotencyKey (each task of a batch with its own), so tasks already written are not written twice; a steady 503 means the table needs more capacity (docs/limits.md).',
        ),
        { 'retry-after': String(OVERLOAD_RETRY_AFTER_SECONDS) },
      );
      return;
    }
    request.response = problemResponse(
      problem(
        500,
        'internal',
        'The request could not be completed. Retry it with the same idempotencyKey to be safe: without one, a task may have been created and a retry creates another.',
      ),
    );
  },
});

/** The HTTP API: routes each request to its operation over the table and the queues. */
export function createApiHandler(config: ApiConfig, { clients, observability }: HandlerDeps) {
  const { logger, metrics } = observability;
  const counts = new CountBatch(metrics);
  const ports: ApiPorts = {
    ...tableStores(config.table, clients.dynamo, config.retentionDays),
    occupancy: occupancyIndex(config, clients.dynamo),
    deliveryQueue: sqsDeliveryQueue(clients.sqs, config.deliveryQueueUrl, config.expressQueueUrl),
    tickQueue: sqsTickQueue(clients.sqs, config.tickQueueUrl),
    clock: systemClock,
    placement: newPlacement(),
    retentionDays: config.retentionDays,
    lookaheadSeconds: config.lookaheadSeconds,
    allowInsecureTargets: config.allowInsecureTargets,
    horizonDays: config.maxHorizonDays,
    targetRules: {
      policy: addressPolicy(config.allowInsecureTargets),
      allowLists: { queueArns: config.allowedQueueArns, eventBusArns: config.allowedEventBusArns },
      home: { partition: config.awsPartition, region: config.aws.region, account: config.awsAccount },
      resolveHost: systemResolve,
    },
    onScheduled: function recordScheduled(result) {
      const created = result.outcomes.filter((outcome) => outcome.kind === 'created').length;
      counts.add(METRICS.tasksCreated, created);
      counts.add(METRICS.tasksEnqueuedDirect, result.enqueuedDirect);
      if (result.deferred > 0) {
        logger.warn('late arrivals could not be enqueued; their seconds are flagged for the sweeper', {
          deferred: result.deferred,
        });
      }
      if (result.untickedSeconds > 0) {
        logger.warn("seconds' ticks could not be sent; the sweeper's catch-up will scan them, late", {
          untickedSeconds: result.untickedSeconds,
        });
      }
    },
  };

  return instrumented<APIGatewayProxyEventV2, HttpResult>(
    observability,
    async (event) => {
      // API Gateway's request id, so a caller quoting it can be found in the logs.
      logger.setCorrelationId(event.requestContext?.requestId);
      try {
        return await route(ports, event);
      } finally {
        counts.endInvocation();
      }
    },
    { middlewares: [problemOnError(logger)] },
  );
}
