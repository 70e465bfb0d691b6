import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';

import { METRICS } from '../contract/topology.js';
import { deliverTask, type DeliveryOutcome, type DeliveryPorts, redeliverDeadLetter } from '../core/deliver.js';

export interface RecordPorts {
  readonly delivery: DeliveryPorts;
  /** Hides a received message for `seconds`: how a retry or an early message is scheduled. */
  readonly requeue: (receiptHandle: string, seconds: number) => Promise<void>;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/** The task a message names, and whether it is a dead letter (which carries its last error) being redriven. */
function messageOf(record: SQSRecord): { id: string; redriven: boolean } | undefined {
  try {
    const body = JSON.parse(record.body) as { id?: unknown; error?: unknown } | null;
    return typeof body?.id === 'string' ? { id: body.id, redriven: body.error !== undefined } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every receive counts towards the queue's maxReceiveCount, after which SQS moves the message
 * to the DLQ with its task still PENDING. A bizType's backlog longer than a few seconds
 * therefore waits a little longer each time round (the receive count over five, up to a
 * minute), so about a hundred receives span some seventeen minutes rather than a hundred seconds.
 */
function throttledRequeueSeconds(retryAfterSeconds: number, receiveCount: number): number {
  const spread = Number.isFinite(receiveCount) ? Math.ceil(receiveCount / 5) : 1;
  return Math.max(retryAfterSeconds, Math.min(60, spread));
}

/** Delivers one record; true when the message is done with, false when it must come back later. */
async function deliverRecord(ports: RecordPorts, record: SQSRecord): Promise<boolean> {
  const { metrics } = ports;
  const message = messageOf(record);
  if (message === undefined) {
    ports.logger.error('delivery message without a task id dropped', {
      messageId: record.messageId,
      body: record.body.slice(0, 200),
    });
    return true;
  }
  const { id } = message;
  // Records are delivered concurrently, so each gets its own child logger: the task id is
  // its correlation id, the same one the api, the scanner and the receiver's webhook-id show.
  const logger = ports.logger.createChild();
  logger.setCorrelationId(id);
  const outcome: DeliveryOutcome = message.redriven
    ? await redeliverDeadLetter(ports.delivery, id)
    : await deliverTask(ports.delivery, id);
  const facts = { taskId: id, messageId: record.messageId, receiveCount: record.attributes.ApproximateReceiveCount };
  switch (outcome.kind) {
    case 'delivered':
      metrics.addMetric(METRICS.tasksDelivered, MetricUnit.Count, 1);
      metrics.addMetric(METRICS.deliveryLatenessMs, MetricUnit.Milliseconds, outcome.latenessMs);
      // Debug, not info: a line per delivery is the largest log bill at scale, and the task item keeps these facts.
      logger.debug('delivered', { ...facts, attempt: outcome.attempt, latenessMs: outcome.latenessMs });
      return true;
    case 'skipped':
      logger.debug('skipped', { ...facts, reason: outcome.reason });
      return true;
    case 'failed':
      metrics.addMetric(METRICS.deliveryAttemptsFailed, MetricUnit.Count, 1);
      metrics.addMetric(METRICS.tasksFailed, MetricUnit.Count, 1);
      logger.error('attempts exhausted; task FAILED and dead-lettered', {
        ...facts,
        attempt: outcome.attempt,
        error: outcome.error,
      });
      return true;
    case 'retry':
      metrics.addMetric(METRICS.deliveryAttemptsFailed, MetricUnit.Count, 1);
      logger.warn('attempt failed; will retry', { ...facts, ...outcome });
      await ports.requeue(record.receiptHandle, outcome.retryAfterSeconds);
      return false;
    case 'deferred':
      logger.info('rescheduled task waits for its predecessor to finish a delivery attempt', { ...facts });
      await ports.requeue(record.receiptHandle, outcome.retryAfterSeconds);
      return false;
    case 'throttled': {
      metrics.addMetric(METRICS.deliveriesThrottled, MetricUnit.Count, 1);
      const seconds = throttledRequeueSeconds(
        outcome.retryAfterSeconds,
        Number(record.attributes.ApproximateReceiveCount),
      );
      logger.info("bizType's callback rate used up for this second; asked again later", { ...facts, seconds });
      await ports.requeue(record.receiptHandle, seconds);
      return false;
    }
    case 'early':
      await ports.requeue(record.receiptHandle, outcome.retryAfterSeconds);
      return false;
  }
}

/**
 * One bad record never fails the batch: each is settled on its own and only the ones
 * that must come back are reported, with their visibility already set to the backoff.
 * A record whose processing throws is reported too, and SQS brings it back after the
 * queue's visibility timeout, by which time any lease it took has lapsed.
 */
export async function deliverRecords(ports: RecordPorts, records: readonly SQSRecord[]): Promise<SQSBatchResponse> {
  ports.metrics.addMetric(METRICS.deliveryBatchSize, MetricUnit.Count, records.length);
  const settled = await Promise.allSettled(records.map((record) => deliverRecord(ports, record)));
  const batchItemFailures = settled.flatMap((result, index) => {
    if (result.status === 'fulfilled' && result.value) return [];
    if (result.status === 'rejected')
      ports.logger.error('delivery crashed; SQS will redeliver', { error: result.reason as Error });
    return [{ itemIdentifier: records[index]?.messageId ?? '' }];
  });
  return { batchItemFailures };
}
