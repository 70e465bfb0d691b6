import { DeleteMessageBatchCommand, type Message, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';

import type { FunctionName } from '../../functions/contract/topology.js';
import { lambdaContext, type LambdaHandler } from './lambda-context.js';

export interface PollerOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly fn: FunctionName;
  readonly handler: LambdaHandler<SQSEvent, SQSBatchResponse | undefined>;
  readonly batchSize: number;
  readonly pollers: number;
  readonly onError: (error: unknown) => void;
}

/** Long-poll wait; short enough that stop() returns promptly. */
const WAIT_SECONDS = 1;
/** After a failed receive or delete, so a broken queue does not become a busy loop. */
const ERROR_PAUSE_MS = 250;

function toRecord(message: Message, queueArn: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
      SenderId: attributes.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: 'us-east-1',
  };
}

/**
 * What Lambda's SQS event source mapping does, on one machine: receive up to a batch,
 * invoke the handler, delete what succeeded. Reported batch item failures, and every
 * record of a batch whose handler threw, stay in the queue and come back after their
 * visibility timeout; fauxqs moves them to the DLQ after maxReceiveCount.
 */
export function startQueuePollers(options: PollerOptions): { stop(): Promise<void> } {
  let running = true;
  const loop = async () => {
    while (running) {
      try {
        const received = await options.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: options.batchSize,
            WaitTimeSeconds: WAIT_SECONDS,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        const messages = received.Messages ?? [];
        if (messages.length === 0) continue;
        const event: SQSEvent = { Records: messages.map((message) => toRecord(message, options.queueArn)) };
        let failed: Set<string>;
        try {
          const response = await options.handler(event, lambdaContext(options.fn));
          failed = new Set((response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
        } catch (error) {
          options.onError(error);
          failed = new Set(event.Records.map((record) => record.messageId));
        }
        const done = messages.filter((message) => !failed.has(message.MessageId ?? ''));
        if (done.length > 0) {
          await options.sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: options.queueUrl,
              Entries: done.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle })),
            }),
          );
        }
      } catch (error) {
        if (running) options.onError(error);
        await new Promise((resolve) => setTimeout(resolve, ERROR_PAUSE_MS));
      }
    }
  };
  const loops = Array.from({ length: options.pollers }, loop);
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}
