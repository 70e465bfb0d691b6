import { type Logger, LogLevelThreshold } from '@aws-lambda-powertools/logger';
import type { LogAttributes } from '@aws-lambda-powertools/logger/types';
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
import type { SlowCallWatch } from '../core/deliver/slow-calls.js';
import type { DeliveryQueue } from '../core/kernel/task.js';
import { decodeDeliveryBody, type ReceivedMessage, reminderMessage } from '../core/kernel/task-kernel.js';
import { systemTimer } from '../core/kernel/timers.js';

/** What delivering a message reads of it: the event source mapping's records, and the inbox's messages. */
export type DeliveryRecord = Pick<SQSRecord, 'messageId' | 'body'> & {
  readonly attributes: Pick<SQSRecord['attributes'], 'ApproximateReceiveCount'>;
};

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

/**
 * One record's logger, its task id the lines' correlation id (the same one the api, the scanner
 * and the receiver's webhook-id show). Records are delivered concurrently, so each needs a child
 * logger of its own, made when it first writes a line: making one took two thirds of an on-time
 * record's handling outside its calls (a CPU profile at 500 tasks a second), and an on-time
 * delivery writes no line above debug.
 */
function recordLogger(
  parent: Logger,
  id: string,
): { logger: () => Logger; debug: (message: string, fields: LogAttributes) => void } {
  let child: Logger | undefined;
  const logger = () => {
    if (child === undefined) {
      child = parent.createChild();
      child.setCorrelationId(id);
    }
    return child;
  };
  const debug = (message: string, fields: LogAttributes) => {
    if (parent.level <= LogLevelThreshold.DEBUG) logger().debug(message, fields);
  };
  return { logger, debug };
}

/** Delivers one record; once it resolves the message is done with (a task that must come back has a new one). */
async function deliverRecord(
  ports: RecordPorts,
  record: DeliveryRecord,
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
  const { logger, debug } = recordLogger(ports.logger, id);
  const outcome: DeliveryOutcome = message.redriven
    ? await redeliverDeadLetter(ports.delivery, id, receipts)
    : await deliverTask(ports.delivery, id, message.notBeforeMs, reads, receipts);
  const facts = { taskId: id, messageId: record.messageId, receiveCount: record.attributes.ApproximateReceiveCount };
  switch (outcome.kind) {
    case 'delivered':
      metrics.addMetric(METRICS.tasksDelivered, MetricUnit.Count, 1);
      metrics.addMetric(METRICS.deliveryLatenessMs, MetricUnit.Milliseconds, outcome.latenessMs);
      // Debug, not info: a line per delivery is the largest log bill at scale, and the task item keeps these facts.
      debug('delivered', { ...facts, attempt: outcome.attempt, latenessMs: outcome.latenessMs });
      return;
    case 'skipped':
      debug('skipped', { ...facts, reason: outcome.reason });
      return;
    case 'failed':
      metrics.addMetric(METRICS.deliveryAttemptsFailed, MetricUnit.Count, 1);
      metrics.addMetric(METRICS.tasksFailed, MetricUnit.Count, 1);
      logger().error('attempts exhausted; task FAILED and dead-lettered', {
        ...facts,
        attempt: outcome.attempt,
        error: outcome.error,
      });
      return;
    case 'retry':
      metrics.addMetric(METRICS.deliveryAttemptsFailed, MetricUnit.Count, 1);
      logger().warn('attempt failed; will retry', { ...facts, ...outcome });
      await comeBackAt(ports, id, outcome.retryAtMs);
      return;
    case 'deferred':
      logger().info('rescheduled task waits for its predecessor to finish a delivery attempt', { ...facts });
      await comeBackAt(ports, id, ports.delivery.clock.now() + outcome.retryAfterSeconds * 1000);
      return;
    case 'throttled':
      metrics.addMetric(METRICS.deliveriesThrottled, MetricUnit.Count, 1);
      logger().info("bizType's callback rate used up for this second; asked again later", { ...facts, ...outcome });
      await comeBackAt(ports, id, ports.delivery.clock.now() + outcome.retryAfterSeconds * 1000);
      return;
    case 'rested':
      logger().info('webhook host rested; not called, asked again later', { ...facts, ...outcome });
      await comeBackAt(ports, id, ports.delivery.clock.now() + outcome.retryAfterSeconds * 1000);
      return;
    case 'early':
      await comeBackAt(ports, id, outcome.notBeforeMs);
      return;
  }
}

/** A message the invocation received itself, with what deleting it takes. */
export type InboxMessage = DeliveryRecord & { readonly receiptHandle: string };

/** More of the delivery queue's messages, taken by the invocation itself (see `deliverRecords`). */
export interface DeliveryInbox {
  /** Up to ten visible messages, hidden for the queue's visibility timeout; none when the queue looks empty. */
  receive(): Promise<InboxMessage[]>;
  /** Deletes messages done with; those it could not delete come back after their visibility timeout. */
  delete(messages: readonly InboxMessage[]): Promise<void>;
}

/** What lets an invocation held by a slow call deliver more while it waits (see `deliverRecords`). */
export interface SpareTime {
  readonly inbox: DeliveryInbox;
  /** The watch the delivery ports' `targets` dispatch through. */
  readonly slowCalls: SlowCallWatch;
  /** Time left before the function times out. */
  readonly remainingMs: () => number;
  /** The least time a call started now may need: a webhook's whole timeout and the writes after it. */
  readonly callReserveMs: number;
}

/** How long an invocation waits after finding the queue empty before it looks again. */
const EMPTY_INBOX_PAUSE_MS = 250;
/** Batches of up to ten an invocation delivers at once while held, beside its own. */
const MAX_TAKEN_BATCHES = 10;
/**
 * How early a taken message may be and still be waited for, at the least: a message surfaces one
 * to two seconds before its task goes (delaySecondsUntil), so a shorter wait would send most of
 * them back. An invocation takes no more once less than this is left before its calls could no
 * longer finish (SpareTime.callReserveMs).
 */
const TAKEN_EARLY_WAIT_MS = 2000;

/**
 * Delivers the batch the event source mapping handed over. While one of its calls goes
 * unanswered (a hanging receiver holds it for the whole webhook timeout, and it is never given up
 * early), the invocation takes more messages from the delivery queue itself and delivers them,
 * deleting what is done: otherwise every invocation a hanging host's tasks reach would sit idle
 * for the timeout, and with the mapping's concurrency held so, every other tenant's deliveries
 * would wait behind it (invariant 9). A message taken this way and not finished (a crash, a
 * receipt not stored, a failed delete) comes back after the queue's visibility timeout, as one
 * from the mapping does. Only a slow call starts this, so an ordinary batch makes no extra request.
 */
export async function deliverRecords(
  ports: RecordPorts,
  records: readonly DeliveryRecord[],
  spare?: SpareTime,
): Promise<SQSBatchResponse> {
  const batch = deliverBatch(ports, records);
  if (spare) await deliverWhileHeld(ports, spare, batch);
  return batch;
}

async function deliverWhileHeld(ports: RecordPorts, spare: SpareTime, held: Promise<unknown>): Promise<void> {
  const unfinished = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>) => {
    const forget = () => {
      unfinished.delete(done);
    };
    const done: Promise<void> = work.then(forget, forget);
    unfinished.add(done);
    return done;
  };
  void track(held);
  // The invocation is held while its own batch or any batch it took is unfinished; a slow call in
  // any of them is a reason to take more, and the end of any of them a reason to look again.
  const slowCallInHand = async () =>
    (await spare.slowCalls.slowCallBefore(Promise.race(unfinished))) && unfinished.size > 0;
  let taking = 0;
  let taken = 0;
  try {
    // Taken batches wait out no more of their messages' lead than leaves their calls time to
    // finish: a message earlier than that goes back for its time (the 'early' outcome), as one
    // that surfaces too early does. So the invocation serves the queue for as long as a hanging
    // call holds it, not only while a batch's longest wait and a call would still fit.
    const earlyWaitLeft = () => Math.min(ports.delivery.maxEarlyWaitMs, spare.remainingMs() - spare.callReserveMs);
    while (unfinished.size > 0 && earlyWaitLeft() >= TAKEN_EARLY_WAIT_MS) {
      if (!(await slowCallInHand())) continue;
      if (taking >= MAX_TAKEN_BATCHES) {
        await Promise.race(unfinished);
        continue;
      }
      const records = await spare.inbox.receive();
      if (records.length === 0) {
        await pauseUnless(Promise.race(unfinished), EMPTY_INBOX_PAUSE_MS);
        continue;
      }
      taken += records.length;
      taking += 1;
      const takenPorts = { ...ports, delivery: { ...ports.delivery, maxEarlyWaitMs: earlyWaitLeft() } };
      void track(deliverTaken(takenPorts, spare.inbox, records).finally(() => (taking -= 1)));
      // The next is taken at once, up to MAX_TAKEN_BATCHES in hand: a taken batch waits for its
      // tasks' due times (messages surface a second or two early), so waiting for it to end or to
      // be slow itself took ten messages a half second, fewer than the queue brought while the
      // hanging call held the invocation (quick scale (d), healthy tenants' p99 1.1-1.3 s; 325-580 ms after).
    }
  } catch (error) {
    ports.logger.error('receiving more messages while a call was slow failed; the batches in hand go on', {
      error: error as Error,
    });
  }
  await Promise.all(unfinished);
  if (taken > 0) ports.logger.info('delivered more messages while a call was slow', { taken });
}

/** Delivers messages the invocation took and deletes those done with; never throws, as what is not deleted comes back. */
async function deliverTaken(ports: RecordPorts, inbox: DeliveryInbox, records: readonly InboxMessage[]): Promise<void> {
  try {
    const { batchItemFailures } = await deliverBatch(ports, records);
    const unfinished = new Set(batchItemFailures.map((failure) => failure.itemIdentifier));
    await inbox.delete(records.filter((record) => !unfinished.has(record.messageId)));
  } catch (error) {
    ports.logger.error(
      'messages taken while a call was slow not deleted; they come back after their visibility timeout',
      {
        error: error as Error,
        messageIds: records.map((record) => record.messageId),
      },
    );
  }
}

function pauseUnless(settled: Promise<unknown>, ms: number): Promise<unknown> {
  let stop = () => {};
  const pause = new Promise<void>((resolve) => {
    stop = systemTimer(ms, resolve);
  });
  return Promise.race([pause, settled.catch(() => undefined)]).finally(stop);
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
async function deliverBatch(ports: RecordPorts, records: readonly DeliveryRecord[]): Promise<SQSBatchResponse> {
  ports.metrics.addMetric(METRICS.deliveryBatchSize, MetricUnit.Count, records.length);
  const messages = records.map((record) => decodeDeliveryBody(record.body));
  // A redriven dead letter is revived before it is read, so it reads alone, after its revive.
  const planned = messages.flatMap((message) => (message && !message.redriven ? [message] : []));
  const reads = readTogether(ports.delivery, planned);
  const receipts = receiptsTogether(ports.delivery, planned);
  const settled = await Promise.allSettled(
    records.map((record, index) => {
      const message = messages[index];
      return deliverRecord(ports, record, message, reads.of(message), receipts.of(message)).finally(() => {
        if (message) receipts.done(message);
      });
    }),
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
