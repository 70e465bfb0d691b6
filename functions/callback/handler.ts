import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { DELIVERY_LEASE_MS, ENV, MAX_EARLY_WAIT_MS } from '../../lib/topology';
import { delayRedelivery, SqsDeadLetterQueue } from '../adapters/sqs-queues';
import { AwsTargetDispatcher } from '../adapters/targets';
import { eventBridge, secretsManager, sqs, sqsForQueueUrl } from '../commons/clients';
import { integerEnv, requireEnv } from '../commons/config';
import { createLogger } from '../commons/logger';
import { tableFromEnv } from '../commons/stores';
import { type DeliveryOutcome, type DeliveryPorts, deliverTask, redeliverDeadLetter } from '../core/deliver';
import { asSigningSecret } from '../core/signature';
import { systemClock } from '../core/task';

const logger = createLogger();

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
    webhookTimeoutMs: integerEnv(ENV.webhookTimeoutMs),
    clock: systemClock,
    sqsFor: sqsForQueueUrl,
    eventBridge,
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

/** The task a message names, and whether it is a dead letter (which carries its last error) being redriven. */
function messageOf(record: SQSRecord): { id: string; redriven: boolean } | undefined {
  try {
    const body = JSON.parse(record.body) as { id?: unknown; error?: unknown } | null;
    return typeof body?.id === 'string' ? { id: body.id, redriven: body.error !== undefined } : undefined;
  } catch {
    return undefined;
  }
}

/** Delivers one record; true when the message is done with, false when it must come back later. */
async function processRecord(record: SQSRecord): Promise<boolean> {
  const message = messageOf(record);
  if (message === undefined) {
    logger.error('delivery message without a task id dropped', {
      messageId: record.messageId,
      body: record.body.slice(0, 200),
    });
    return true;
  }
  const { id } = message;
  const outcome: DeliveryOutcome = message.redriven
    ? await redeliverDeadLetter(ports, id)
    : await deliverTask(ports, id);
  const facts = { taskId: id, messageId: record.messageId, receiveCount: record.attributes.ApproximateReceiveCount };
  switch (outcome.kind) {
    case 'delivered':
      logger.info('delivered', { ...facts, attempt: outcome.attempt, latenessMs: outcome.latenessMs });
      return true;
    case 'skipped':
      logger.info('skipped', { ...facts, reason: outcome.reason });
      return true;
    case 'failed':
      logger.error('attempts exhausted; task FAILED and dead-lettered', {
        ...facts,
        attempt: outcome.attempt,
        error: outcome.error,
      });
      return true;
    case 'early':
    case 'retry':
      if (outcome.kind === 'retry') logger.warn('attempt failed; will retry', { ...facts, ...outcome });
      await delayRedelivery(sqs, deliveryQueueUrl, record.receiptHandle, outcome.retryAfterSeconds);
      return false;
  }
}

/**
 * One bad record never fails the batch: each is settled on its own and only the ones
 * that must come back are reported, with their visibility already set to the backoff.
 */
export const handler = middy<SQSEvent, SQSBatchResponse>()
  .use(injectLambdaContext(logger))
  .handler(async (event) => {
    const settled = await Promise.allSettled(event.Records.map(processRecord));
    const batchItemFailures = settled.flatMap((result, index) => {
      if (result.status === 'fulfilled' && result.value) return [];
      if (result.status === 'rejected')
        logger.error('delivery crashed; SQS will redeliver', { error: result.reason as Error });
      return [{ itemIdentifier: event.Records[index]?.messageId ?? '' }];
    });
    return { batchItemFailures };
  });
