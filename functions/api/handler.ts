import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

import { sqsDeliveryQueue, sqsTickQueue } from '../adapters/sqs-queues.js';
import { systemResolve } from '../adapters/webhook-client.js';
import { sqs } from '../commons/clients.js';
import { booleanEnv, integerEnv, requireEnv } from '../commons/config.js';
import { createLogger } from '../commons/logger.js';
import { createMetrics } from '../commons/metrics.js';
import { tableFromEnv } from '../commons/stores.js';
import { tracer } from '../commons/tracer.js';
import { ENV, METRICS } from '../contract/topology.js';
import { parseAllowList } from '../core/allowed-targets.js';
import { addressPolicy } from '../core/egress.js';
import { systemClock } from '../core/task.js';
import { type HttpResult, problem, problemResponse } from './http.js';
import { type ApiPorts, route } from './routes.js';

const logger = createLogger();
const metrics = createMetrics();

const ports: ApiPorts = {
  ...tableFromEnv(),
  deliveryQueue: sqsDeliveryQueue(sqs, requireEnv(ENV.deliveryQueueUrl)),
  tickQueue: sqsTickQueue(sqs, requireEnv(ENV.tickQueueUrl)),
  clock: systemClock,
  retentionDays: integerEnv(ENV.retentionDays),
  lookaheadSeconds: integerEnv(ENV.lookaheadSeconds),
  allowInsecureTargets: booleanEnv(ENV.allowInsecureTargets),
  horizonDays: integerEnv(ENV.maxHorizonDays),
  targetRules: {
    policy: addressPolicy(booleanEnv(ENV.allowInsecureTargets)),
    allowLists: {
      queueArns: parseAllowList(process.env[ENV.allowedQueueArns]),
      eventBusArns: parseAllowList(process.env[ENV.allowedEventBusArns]),
    },
    home: {
      partition: requireEnv(ENV.awsPartition),
      // Lambda always sets AWS_REGION (and reserves the name); local mode sets it too.
      region: process.env.AWS_REGION ?? '',
      account: requireEnv(ENV.awsAccount),
    },
    resolveHost: systemResolve,
  },
  onScheduled: function recordScheduled(result) {
    const created = result.outcomes.filter((outcome) => outcome.kind === 'created').length;
    metrics.addMetric(METRICS.tasksCreated, MetricUnit.Count, created);
    metrics.addMetric(METRICS.tasksEnqueuedDirect, MetricUnit.Count, result.enqueuedDirect);
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

/** Turns anything unexpected into a problem+json 500 and logs it, so callers never see a stack trace. */
const problemOnError = (): middy.MiddlewareObj<APIGatewayProxyEventV2, HttpResult> => ({
  onError: async function internalErrorAsProblem(request) {
    logger.error('request failed', { error: request.error as Error, routeKey: request.event.routeKey });
    request.response = problemResponse(
      problem(
        500,
        'internal',
        'The request could not be completed. Retry it with the same idempotencyKey to be safe: without one, a task may have been created and a retry creates another.',
      ),
    );
  },
});

export const handler = middy<APIGatewayProxyEventV2, HttpResult>()
  .use(captureLambdaHandler(tracer))
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics))
  .use(problemOnError())
  .handler((event) => {
    // API Gateway's request id, so a caller quoting it can be found in the logs.
    logger.setCorrelationId(event.requestContext?.requestId);
    return route(ports, event);
  });
