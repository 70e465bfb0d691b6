import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';

import { METRICS } from '../contract/topology.js';
import {
  deliverTask,
  type DeliveryOutcome,
  type DeliveryPorts,
  readTogether,
  receiptsTogether,
  type ReceiptWrites,
  redeliverDeadLetter,
  type TaskReads,
} from '../core/deliver/deliver.js';
import type { DeliveryQueue } from '../core/kernel/task.js';
import { decodeDeliveryBody, type ReceivedMessage, reminderMessage } from '../core/kernel/task-kernel.js';

export interface RecordPorts {
  readonly delivery: DeliveryPorts;
  /**
   * Where a task that must come back later gets a new, delayed message. A received message is
   * never hidden for a backoff: in-flight messages are capped (about 120,000 per queue) and
   * cannot stay hidden past 12 hours, while a delayed message waits for free and for ever.
   */
  readonly deliveryQueue: DeliveryQueue;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * Sends the task a new message that surfaces at `atMs`, or after SQS's longest delay (900 s)
 * when that is sooner, carrying `atMs` so a longer wait is a chain of delayed messages. It is
 * sent before the received message is deleted: a crash in between duplicates the reminder
 * (the delivery lease and the task's retry time dedupe it), never loses it.
 */
function comeBackAt(ports: RecordPorts, id: string, atMs: number): Promise<void> {
  return ports.deliveryQueue.send([reminderMessage(id, atMs, ports.delivery.clock.now())]);
}

/** Delivers one record; once it resolves the message is done with (a task that must come back has a new one). */
async function deliverRecord(
  ports: RecordPorts,
  record: SQSRecord,
  message: ReceivedMessage | undefined,
  reads: TaskReads,
  receipts: ReceiptWrites,
): Promise<void> {
  const { metrics } = ports;
  if (message === undefined) {
    ports.logger.error('delivery message without a task id dropped', {
      messageId: record.messageId,
      body: record.body.slice(0, 200),
    });
    return;
  }
  const { id } = message;
  // Records are delivered concurrently, so each gets its own child logger: the task id is
  // its correlation id, the same one the api, the scanner and the receiver's webhook-id show.
  const logger = ports.logger.createChild();
  logger.setCorrelationId(id);
  const outcome: DeliveryOutcome = message.redriven
    ? await redeliverDeadLetter(ports.delivery, id, receipts)
    : await deliverTask(ports.delivery, id, message.notBeforeMs, reads, receipts);
  const facts = { taskId: id, messageId: record.messageId, receiveCount: record.attributes.ApproximateReceiveCount };
  switch (outcome.kind) {
    case 'delivered':
      metrics.addMetric(METRICS.tasksDelivered, MetricUnit.Count, 1);
      metrics.addMetric(METRICS.deliveryLatenessMs, MetricUnit.Milliseconds, outcome.latenessMs);
      // Debug, not info: a line per delivery is the largest log bill at scale, and the task item keeps these facts.
      logger.debug('delivered', { ...facts, attempt: outcome.attempt, latenessMs: outcome.latenessMs });
      return;
    case 'skipped':
      logger.debug('skipped', { ...facts, reason: outcome.reason });
      return;
    case 'failed':
      metrics.addMetric(METRICS.deliveryAttemptsFailed, MetricUnit.Count, 1);
      metrics.addMetric(METRICS.tasksFailed, MetricUnit.Count, 1);
      logger.error('attempts exhausted; task FAILED and dead-lettered', {
        ...facts,
        attempt: outcome.attempt,
        error: outcome.error,
      });
      return;
    case 'retry':
      metrics.addMetric(METRICS.deliveryAttemptsFailed, MetricUnit.Count, 1);
      logger.warn('attempt failed; will retry', { ...facts, ...outcome });
      await comeBackAt(ports, id, outcome.retryAtMs);
      return;
    case 'deferred':
      logger.info('rescheduled task waits for its predecessor to finish a delivery attempt', { ...facts });
      await comeBackAt(ports, id, ports.delivery.clock.now() + outcome.retryAfterSeconds * 1000);
      return;
    case 'throttled':
      metrics.addMetric(METRICS.deliveriesThrottled, MetricUnit.Count, 1);
      logger.info("bizType's callback rate used up for this second; asked again later", { ...facts, ...outcome });
      await comeBackAt(ports, id, ports.delivery.clock.now() + outcome.retryAfterSeconds * 1000);
      return;
    case 'rested':
      logger.info('webhook host rested; not called, asked again later', { ...facts, ...outcome });
      await comeBackAt(ports, id, ports.delivery.clock.now() + outcome.retryAfterSeconds * 1000);
      return;
    case 'early':
      await comeBackAt(ports, id, outcome.notBeforeMs);
      return;
  }
}

/**
 * One bad record never fails the batch: each is settled on its own. A task that must come
 * back later already has a new message, so only a record whose processing threw is reported,
 * and SQS brings it back after the queue's visibility timeout, by which time any lease it took
 * has lapsed; that is what the queue's maxReceiveCount counts. First attempts answered 2xx are
 * recorded in receipts, one per group of records read together (see receiptsTogether); a record
 * whose receipt could not be stored is reported too, so its task is delivered again rather than
 * left looking undelivered.
 */
export async function deliverRecords(ports: RecordPorts, records: readonly SQSRecord[]): Promise<SQSBatchResponse> {
  ports.metrics.addMetric(METRICS.deliveryBatchSize, MetricUnit.Count, records.length);
  const messages = records.map((record) => decodeDeliveryBody(record.body));
  // A redriven dead letter is revived before it is read, so it reads alone, after its revive.
  const planned = messages.flatMap((message) => (message && !message.redriven ? [message] : []));
  const reads = readTogether(ports.delivery, planned);
  const receipts = receiptsTogether(ports.delivery, planned);
  const settled = await Promise.allSettled(
    records.map((record, index) =>
      deliverRecord(ports, record, messages[index], reads, receipts).finally(() => {
        const message = messages[index];
        if (message && !message.redriven) receipts.done(message.id);
      }),
    ),
  );
  const unrecorded = await receipts.written();
  if (unrecorded.size > 0) {
    ports.logger.error('receipt not stored; SQS will redeliver its tasks', { taskIds: [...unrecorded] });
  }
  const batchItemFailures = settled.flatMap((result, index) => {
    if (result.status === 'fulfilled') {
      const id = messages[index]?.id;
      return id !== undefined && unrecorded.has(id) ? [{ itemIdentifier: records[index]?.messageId ?? '' }] : [];
    }
    ports.logger.error('delivery crashed; SQS will redeliver', { error: result.reason as Error });
    return [{ itemIdentifier: records[index]?.messageId ?? '' }];
  });
  return { batchItemFailures };
}
