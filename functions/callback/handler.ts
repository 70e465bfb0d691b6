import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DELIVERY_LEASE_MS, ENV, MAX_EARLY_WAIT_MS, WEBHOOK_CONNECT_TIMEOUT_MS } from '../../lib/topology';
import { delayRedelivery, SqsDeadLetterQueue } from '../adapters/sqs-queues';
import { AwsTargetDispatcher } from '../adapters/targets';
import { WebhookClient } from '../adapters/webhook-client';
import { eventBridge, secretsManager, sqs, sqsForQueueUrl } from '../commons/clients';
import { booleanEnv, integerEnv, requireEnv } from '../commons/config';
import { createLogger } from '../commons/logger';
import { createMetrics } from '../commons/metrics';
import { tableFromEnv } from '../commons/stores';
import type { DeliveryPorts } from '../core/deliver';
import { addressPolicy } from '../core/egress';
import { asSigningSecret } from '../core/signature';
import { deliverRecords } from './records';
import { systemClock } from '../core/task';

const logger = createLogger();
const metrics = createMetrics();

const deliveryQueueUrl = requireEnv(ENV.deliveryQueueUrl);

/** Local mode passes the secret itself; the cloud stack passes a Secrets Manager ARN, read once per cold start. */
function signingSecretLoader(): () => Promise<string> {
  const inline = process.env[ENV.signingSecret];
  if (inline) return () => Promise.resolve(inline);
  const arn = requireEnv(ENV.signingSecretArn);
  let secret: Promise<string> | undefined;
  return () => {
    secret ??= secretsManager.send(new GetSecretValueCommand({ SecretId: arn })).then((result) => {
      if (!result.SecretString) throw new Error(`secret ${arn} has no string value`);
      return asSigningSecret(result.SecretString);
    });
    secret.catch(() => {
      secret = undefined;
    });
    return secret;
  };
}

const ports: DeliveryPorts = {
  ...tableFromEnv(),
  targets: new AwsTargetDispatcher({
    signingSecret: signingSecretLoader(),
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
