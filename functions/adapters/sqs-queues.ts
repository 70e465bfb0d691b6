import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  SendMessageCommand,
  type SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';

import { AWS_LIMITS } from '../contract/aws-limits.js';
import type { DeadLetter, DeadLetterQueue } from '../core/deliver/deliver.js';
import type { DeliveryMessage, DeliveryQueue } from '../core/kernel/task.js';
import { encodeDeliveryBody } from '../core/kernel/task-kernel.js';
import type { Tick, TickQueue } from '../core/kernel/tick.js';

const SQS_BATCH_LIMIT = AWS_LIMITS.sqs.batchEntries;
const FAILED_ENTRY_RETRIES = 3;
/**
 * Batches in flight at once: 2,000 batches (a 20,000-task second) at 15-25 ms each leave in 1-1.6 s,
 * inside the 2 s lookahead, while staying under the SDK's default 50 sockets.
 */
const PARALLEL_BATCHES = 32;

export interface OutgoingMessage {
  readonly body: string;
  readonly delaySeconds: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function sendBatch(sqs: SQSClient, queueUrl: string, batch: readonly OutgoingMessage[]): Promise<void> {
  let entries: SendMessageBatchRequestEntry[] = batch.map((message, index) => ({
    Id: String(index),
    MessageBody: message.body,
    DelaySeconds: message.delaySeconds,
  }));
  for (let retry = 0; entries.length > 0; retry++) {
    if (retry > 0) await sleep(50 * 2 ** retry);
    const result = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    const failed = new Set((result.Failed ?? []).map((entry) => entry.Id));
    entries = entries.filter((entry) => failed.has(entry.Id));
    if (entries.length > 0 && retry >= FAILED_ENTRY_RETRIES) {
      const reasons = (result.Failed ?? []).map((entry) => `${entry.Code}: ${entry.Message}`).join('; ');
      throw new Error(`${entries.length} messages to ${queueUrl} failed after retries (${reasons})`);
    }
  }
}

/** Sends every message in batches of ten, a bounded number of batches at a time; throws if any message could not be sent. */
export async function sendAll(sqs: SQSClient, queueUrl: string, messages: readonly OutgoingMessage[]): Promise<void> {
  const batches: OutgoingMessage[][] = [];
  for (let start = 0; start < messages.length; start += SQS_BATCH_LIMIT) {
    batches.push(messages.slice(start, start + SQS_BATCH_LIMIT));
  }
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      const batch = batches[next++];
      if (batch) await sendBatch(sqs, queueUrl, batch);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_BATCHES, batches.length) }, worker));
}

/** Deletes up to ten received messages by their receipt handles; returns how many SQS reported not deleted. */
async function deleteReceived(sqs: SQSClient, queueUrl: string, receiptHandles: readonly string[]): Promise<number> {
  const result = await sqs.send(
    new DeleteMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: receiptHandles.map((handle, index) => ({ Id: String(index), ReceiptHandle: handle })),
    }),
  );
  return (result.Failed ?? []).length;
}

/**
 * Receives messages as the event source mapping does (short polling: a wait would hold the
 * invocation after its own batch is done) and deletes them once done with. A message whose delete
 * failed comes back after its visibility timeout, as one the mapping could not delete would.
 */
export function sqsInbox(sqs: SQSClient, queueUrl: string) {
  return {
    async receive() {
      const received = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: SQS_BATCH_LIMIT,
          WaitTimeSeconds: 0,
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
      );
      return (received.Messages ?? []).map((message) => ({
        messageId: message.MessageId ?? '',
        receiptHandle: message.ReceiptHandle ?? '',
        body: message.Body ?? '',
        attributes: { ApproximateReceiveCount: message.Attributes?.ApproximateReceiveCount ?? '1' },
      }));
    },
    async delete(messages: ReadonlyArray<{ readonly receiptHandle: string }>) {
      if (messages.length === 0) return;
      const failed = await deleteReceived(
        sqs,
        queueUrl,
        messages.map((message) => message.receiptHandle),
      );
      if (failed > 0) throw new Error(`${failed} of ${messages.length} messages not deleted from ${queueUrl}`);
    },
  };
}

/** A queue that sends items of one kind, encoded as messages, in parallel batches. */
export class SqsBatchQueue<T> {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly encode: (item: T) => OutgoingMessage,
  ) {}

  send(items: readonly T[]): Promise<void> {
    return sendAll(this.sqs, this.queueUrl, items.map(this.encode));
  }
}

/**
 * The delivery queue, and the express queue beside it for messages marked `express` (their task
 * goes too soon for the delivery queue's batching window); the callback consumes both alike. A
 * caller with one queue (a test, a tool) leaves `expressQueueUrl` out and sends both kinds to it.
 */
export function sqsDeliveryQueue(sqs: SQSClient, queueUrl: string, expressQueueUrl = queueUrl): DeliveryQueue {
  const delivery = deliveryMessages(sqs, queueUrl);
  const express = deliveryMessages(sqs, expressQueueUrl);
  return {
    async send(messages) {
      const [urgent, rest] = [
        messages.filter((message) => message.express),
        messages.filter((message) => !message.express),
      ];
      await Promise.all([
        ...(urgent.length > 0 ? [express.send(urgent)] : []),
        ...(rest.length > 0 ? [delivery.send(rest)] : []),
      ]);
    },
  };
}

function deliveryMessages(sqs: SQSClient, queueUrl: string): SqsBatchQueue<DeliveryMessage> {
  return new SqsBatchQueue<DeliveryMessage>(sqs, queueUrl, (message) => ({
    body: encodeDeliveryBody({
      id: message.id,
      ...(message.notBeforeMs !== undefined && { notBeforeMs: message.notBeforeMs }),
    }),
    delaySeconds: message.delaySeconds,
  }));
}

export function sqsTickQueue(sqs: SQSClient, queueUrl: string): TickQueue {
  return new SqsBatchQueue<Tick>(sqs, queueUrl, (tick) => ({
    body: JSON.stringify({ second: tick.second }),
    delaySeconds: tick.delaySeconds,
  }));
}

/**
 * Dead letters share the delivery message's shape plus why it failed, so a DLQ redrive
 * puts them straight back on the delivery queue, where the `error` field tells the
 * callback to revive the FAILED task before delivering it.
 */
export class SqsDeadLetterQueue implements DeadLetterQueue {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(letter: DeadLetter): Promise<void> {
    await this.sqs.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: deadLetterBody(letter) }));
  }

  /** Sends many letters in batches, as local mode does when it rebuilds its DLQ from the table. */
  sendMany(letters: readonly DeadLetter[]): Promise<void> {
    return sendAll(
      this.sqs,
      this.queueUrl,
      letters.map((letter) => ({ body: deadLetterBody(letter), delaySeconds: 0 })),
    );
  }
}

function deadLetterBody(letter: DeadLetter): string {
  return encodeDeliveryBody({ id: letter.id, attempt: letter.attempt, error: letter.error });
}

async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const result = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  const arn = result.Attributes?.QueueArn;
  if (!arn) throw new Error(`no ARN for queue ${queueUrl}`);
  return arn;
}

/**
 * Moves every message of a DLQ back to the delivery queue with SQS's own message move
 * task. The destination is named explicitly: the callback dead-letters exhausted tasks
 * itself, so SQS has no source queue recorded for those messages.
 */
export async function startRedrive(sqs: SQSClient, dlqUrl: string, deliveryQueueUrl: string): Promise<string> {
  const [sourceArn, destinationArn] = await Promise.all([queueArn(sqs, dlqUrl), queueArn(sqs, deliveryQueueUrl)]);
  const started = await sqs.send(
    new StartMessageMoveTaskCommand({ SourceArn: sourceArn, DestinationArn: destinationArn }),
  );
  return started.TaskHandle ?? '';
}

/**
 * The same move done by hand (receive, send, delete), for SQS implementations without
 * message move tasks, such as local mode's fauxqs. A message is deleted from the DLQ only
 * after it was sent on, so a crash midway duplicates at worst. Returns the bodies moved.
 */
export async function redriveByCopy(sqs: SQSClient, dlqUrl: string, deliveryQueueUrl: string): Promise<string[]> {
  const moved: string[] = [];
  for (;;) {
    const received = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: dlqUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        VisibilityTimeout: 60,
      }),
    );
    const messages = received.Messages ?? [];
    if (messages.length === 0) return moved;
    await sendAll(
      sqs,
      deliveryQueueUrl,
      messages.map((message) => ({ body: message.Body ?? '', delaySeconds: 0 })),
    );
    await deleteReceived(
      sqs,
      dlqUrl,
      messages.map((message) => message.ReceiptHandle ?? ''),
    );
    moved.push(...messages.map((message) => message.Body ?? ''));
  }
}

/** Messages in a queue, visible or not (a received message is still in the queue until deleted). */
export async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<number> {
  const result = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(result.Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(result.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}

/**
 * The bodies of up to ten messages, left where they are: a receive with a visibility timeout
 * of zero hides nothing from other consumers. It still counts as a receive, so only peek at a
 * queue without a redrive policy of its own (a DLQ), where receive counts move nothing.
 */
export async function peekMessages(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const received = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: SQS_BATCH_LIMIT,
      VisibilityTimeout: 0,
      WaitTimeSeconds: 0,
    }),
  );
  return (received.Messages ?? []).map((message) => message.Body ?? '');
}
