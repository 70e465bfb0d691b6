import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import {
  sendAll,
  SqsDeadLetterQueue,
  sqsDeliveryQueue,
  sqsInbox,
  sqsTickQueue,
  startRedrive,
} from '../../functions/adapters/sqs-queues.js';

const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/timer-delivery';
const EXPRESS_QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/timer-express';
const sqsMock = mockClient(SQSClient);
const sqs = new SQSClient({ region: 'us-east-1' });

const messages = (count: number) =>
  Array.from({ length: count }, (_, index) => ({ body: `m${index}`, delaySeconds: 0 }));
const batches = () => sqsMock.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input.Entries ?? []);

describe('Function: sendAll', () => {
  beforeEach(() => {
    sqsMock.reset();
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends 25 messages in batches of 10, 10 and 5', async () => {
    // Prepare
    sqsMock.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });

    // Act
    await sendAll(sqs, QUEUE_URL, messages(25));

    // Assess
    expect(batches().map((entries) => entries.length)).toEqual([10, 10, 5]);
    expect(
      batches()
        .flat()
        .map((entry) => entry.MessageBody),
    ).toEqual(messages(25).map((message) => message.body));
    expect(
      sqsMock.commandCalls(SendMessageBatchCommand).every((call) => call.args[0].input.QueueUrl === QUEUE_URL),
    ).toBe(true);
  });

  it('sends nothing for no messages', async () => {
    // Act
    await sendAll(sqs, QUEUE_URL, []);

    // Assess
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it('retries only the entries SQS reported as failed', async () => {
    // Prepare
    vi.useFakeTimers();
    sqsMock
      .on(SendMessageBatchCommand)
      .resolvesOnce({ Failed: [{ Id: '3', Code: 'InternalError', SenderFault: false }] })
      .resolves({ Failed: [] });

    // Act
    const sending = sendAll(sqs, QUEUE_URL, messages(5));
    await vi.runAllTimersAsync();
    await sending;

    // Assess
    expect(batches().map((entries) => entries.map((entry) => entry.MessageBody))).toEqual([
      ['m0', 'm1', 'm2', 'm3', 'm4'],
      ['m3'],
    ]);
  });

  it('throws naming the queue when entries still fail after the retries', async () => {
    // Prepare
    vi.useFakeTimers();
    sqsMock
      .on(SendMessageBatchCommand)
      .resolves({ Failed: [{ Id: '0', Code: 'KmsThrottled', Message: 'slow down', SenderFault: false }] });

    // Act
    const sending = sendAll(sqs, QUEUE_URL, messages(2));
    const failure = expect(sending).rejects.toThrow(QUEUE_URL);
    await vi.runAllTimersAsync();

    // Assess
    await failure;
    await expect(sending).rejects.toThrow('KmsThrottled: slow down');
    expect(batches().map((entries) => entries.length)).toEqual([2, 1, 1, 1]);
  });
});

describe('Function: sqsDeliveryQueue', () => {
  beforeEach(() => {
    sqsMock.reset();
    sqsMock.on(SendMessageBatchCommand).resolves({ Failed: [] });
  });

  it('sends only the task id as the body, delayed as asked', async () => {
    // Act
    await sqsDeliveryQueue(sqs, QUEUE_URL).send([{ id: 'T1', delaySeconds: 3 }]);

    // Assess
    expect(batches()[0]).toEqual([{ Id: '0', MessageBody: '{"id":"T1"}', DelaySeconds: 3 }]);
  });

  it('sends the messages marked express to the express queue and the rest to the delivery queue', async () => {
    // Act
    await sqsDeliveryQueue(sqs, QUEUE_URL, EXPRESS_QUEUE_URL).send([
      { id: 'T1', delaySeconds: 1 },
      { id: 'T2', delaySeconds: 0, express: true },
    ]);

    // Assess
    const sentTo = sqsMock
      .commandCalls(SendMessageBatchCommand)
      .map((call) => [call.args[0].input.QueueUrl, call.args[0].input.Entries?.map((entry) => entry.MessageBody)]);
    expect(sentTo.sort()).toEqual(
      [
        [EXPRESS_QUEUE_URL, ['{"id":"T2"}']],
        [QUEUE_URL, ['{"id":"T1"}']],
      ].sort(),
    );
  });

  it('carries the time a message must wait for, so a wait longer than SQS can delay is a chain of messages', async () => {
    // Act
    await sqsDeliveryQueue(sqs, QUEUE_URL).send([{ id: 'T1', delaySeconds: 900, notBeforeMs: 1_780_043_200_000 }]);

    // Assess
    expect(batches()[0]).toEqual([
      { Id: '0', MessageBody: '{"id":"T1","notBeforeMs":1780043200000}', DelaySeconds: 900 },
    ]);
  });

  it('sends ticks with their second, delayed as asked', async () => {
    // Act
    await sqsTickQueue(sqs, QUEUE_URL).send([{ second: 1_780_000_000, delaySeconds: 42 }]);

    // Assess
    expect(batches()[0]).toEqual([{ Id: '0', MessageBody: '{"second":1780000000}', DelaySeconds: 42 }]);
  });
});

describe('Function: sqsInbox', () => {
  beforeEach(() => {
    sqsMock.reset();
  });

  it('receives up to ten messages without waiting, with their receive counts, and deletes them by receipt handle', async () => {
    // Prepare
    sqsMock.on(ReceiveMessageCommand).resolves({
      Messages: [
        { MessageId: 'm-1', ReceiptHandle: 'h-1', Body: '{"id":"t-1"}', Attributes: { ApproximateReceiveCount: '3' } },
      ],
    });
    sqsMock.on(DeleteMessageBatchCommand).resolves({ Successful: [{ Id: '0' }], Failed: [] });
    const inbox = sqsInbox(sqs, QUEUE_URL);

    // Act
    const received = await inbox.receive();
    await inbox.delete(received);

    // Assess: a wait would hold the invocation after its own batch is done.
    expect(sqsMock.commandCalls(ReceiveMessageCommand)[0]?.args[0].input).toMatchObject({
      QueueUrl: QUEUE_URL,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
    });
    expect(received).toEqual([
      { messageId: 'm-1', receiptHandle: 'h-1', body: '{"id":"t-1"}', attributes: { ApproximateReceiveCount: '3' } },
    ]);
    expect(sqsMock.commandCalls(DeleteMessageBatchCommand)[0]?.args[0].input.Entries).toEqual([
      { Id: '0', ReceiptHandle: 'h-1' },
    ]);
  });

  it('throws when SQS reports a delete failed, so the caller knows those messages come back', async () => {
    // Prepare
    sqsMock.on(DeleteMessageBatchCommand).resolves({
      Successful: [],
      Failed: [{ Id: '0', Code: 'ReceiptHandleIsInvalid', SenderFault: true }],
    });

    // Act
    const deleting = sqsInbox(sqs, QUEUE_URL).delete([{ receiptHandle: 'h-1' }]);

    // Assess
    await expect(deleting).rejects.toThrow(`1 of 1 messages not deleted from ${QUEUE_URL}`);
  });
});

describe('Class: SqsDeadLetterQueue', () => {
  beforeEach(() => {
    sqsMock.reset();
  });

  it('sends the id, attempt and error, so a redrive can deliver it again', async () => {
    // Prepare
    const dlqUrl = `${QUEUE_URL}-dlq`;

    // Act
    await new SqsDeadLetterQueue(sqs, dlqUrl).send({ id: 'T1', attempt: 8, error: 'HTTP 500 from h' });

    // Assess
    const input = sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input;
    expect(input?.QueueUrl).toBe(dlqUrl);
    expect(JSON.parse(input?.MessageBody ?? '')).toEqual({ id: 'T1', attempt: 8, error: 'HTTP 500 from h' });
  });

  it('sends many letters in batches with the same body as one', async () => {
    // Prepare
    sqsMock.on(SendMessageBatchCommand).resolves({ Failed: [] });

    // Act
    await new SqsDeadLetterQueue(sqs, `${QUEUE_URL}-dlq`).sendMany([
      { id: 'T1', attempt: 8, error: 'HTTP 500 from h' },
      { id: 'T2', attempt: 3, error: 'HTTP 410 from h' },
    ]);

    // Assess
    expect(batches()[0]?.map((entry) => JSON.parse(entry.MessageBody ?? ''))).toEqual([
      { id: 'T1', attempt: 8, error: 'HTTP 500 from h' },
      { id: 'T2', attempt: 3, error: 'HTTP 410 from h' },
    ]);
  });
});

describe('Function: startRedrive', () => {
  beforeEach(() => {
    sqsMock.reset();
  });

  it('moves the DLQ to the delivery queue named explicitly, since SQS never saw most letters leave it', async () => {
    // Prepare
    const dlqUrl = 'https://sqs.us-east-1.amazonaws.com/123456789012/timer-delivery-dlq';
    sqsMock
      .on(GetQueueAttributesCommand, { QueueUrl: dlqUrl })
      .resolves({ Attributes: { QueueArn: 'arn:aws:sqs:us-east-1:123456789012:timer-delivery-dlq' } })
      .on(GetQueueAttributesCommand, { QueueUrl: QUEUE_URL })
      .resolves({ Attributes: { QueueArn: 'arn:aws:sqs:us-east-1:123456789012:timer-delivery' } })
      .on(StartMessageMoveTaskCommand)
      .resolves({ TaskHandle: 'handle-1' });

    // Act
    const handle = await startRedrive(sqs, dlqUrl, QUEUE_URL);

    // Assess
    expect(handle).toBe('handle-1');
    expect(sqsMock.commandCalls(StartMessageMoveTaskCommand).map((call) => call.args[0].input)).toEqual([
      {
        SourceArn: 'arn:aws:sqs:us-east-1:123456789012:timer-delivery-dlq',
        DestinationArn: 'arn:aws:sqs:us-east-1:123456789012:timer-delivery',
      },
    ]);
  });
});
