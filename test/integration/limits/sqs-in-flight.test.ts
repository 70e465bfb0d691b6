import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../../lib/local/dynamodb.js';
import type { RunningProxy } from '../../../lib/local/limits/json-proxy.js';
import { SqsInFlightModel, startSqsInFlightProxy } from '../../../lib/local/limits/sqs-in-flight.js';
import { ManualClock } from '../../support/clock.js';

let fauxqs: FauxqsServer;
let queues = 0;

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
});

afterAll(async () => {
  await fauxqs.stop();
});

/**
 * A queue with `messages` waiting, behind a proxy whose in-flight cap is 120,000 / k. The
 * model's clock is manual, so a test can move past a visibility or the 12-hour limit at once.
 */
async function queueBehindProxy(k: number, messages: number) {
  const clock = new ManualClock(Date.now());
  const model = new SqsInFlightModel({ k, clock });
  const proxy: RunningProxy = await startSqsInFlightProxy(fauxqs.address, model, clock);
  const sqs = new SQSClient({
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    endpoint: proxy.endpoint,
    useQueueUrlAsEndpoint: false,
    maxAttempts: 1,
  });
  const { QueueUrl: url = '' } = await sqs.send(new CreateQueueCommand({ QueueName: `limits-${++queues}` }));
  for (let n = 0; n < messages; n++) await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: `m${n}` }));
  return { clock, model, proxy, sqs, url };
}

const receive = (sqs: SQSClient, url: string, options: { wait?: number; visibility?: number } = {}) =>
  sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: options.wait ?? 0,
      VisibilityTimeout: options.visibility ?? 600,
    }),
  );

describe('Proxy: SQS in-flight limits', () => {
  it('gives a receive no more messages than the in-flight cap leaves, then answers a short poll OverLimit', async () => {
    // Prepare: k = 20,000 caps the queue at 6 messages in flight.
    const { model, proxy, sqs, url } = await queueBehindProxy(20_000, 10);

    // Act
    const first = await receive(sqs, url);
    const atCap = await receive(sqs, url).then(
      () => 'received',
      (error: Error & { $metadata: { httpStatusCode?: number } }) => `${error.name} ${error.$metadata.httpStatusCode}`,
    );

    // Assess
    expect(first.Messages).toHaveLength(6);
    expect(atCap).toBe('OverLimit 403');
    expect(model.report().queues[url]).toMatchObject({ inFlight: 6, peakInFlight: 6, receivesAtCap: 1 });
    await proxy.close();
  });

  it('answers a long poll at the cap with no messages, and receives again once messages are deleted or visible', async () => {
    // Prepare
    const { clock, model, proxy, sqs, url } = await queueBehindProxy(20_000, 10);
    const first = await receive(sqs, url, { visibility: 60 });

    // Act
    const atCap = await receive(sqs, url, { wait: 1 });
    await sqs.send(
      new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: first.Messages?.[0]?.ReceiptHandle ?? '' }),
    );
    const afterDelete = await receive(sqs, url);
    clock.advance(61_000);
    const afterExpiry = model.report().queues[url]?.inFlight;

    // Assess
    expect(atCap.Messages).toBeUndefined();
    expect(clock.sleeps).toEqual([1000]);
    expect(afterDelete.Messages).toHaveLength(1);
    expect(afterExpiry).toBe(1);
    await proxy.close();
  });

  it('refuses a visibility change reaching past 12 hours after the receive, as AWS does', async () => {
    // Prepare
    const { clock, model, proxy, sqs, url } = await queueBehindProxy(1, 2);
    const received = await receive(sqs, url, { visibility: 43_200 });
    const [one, two] = (received.Messages ?? []).map((message) => message.ReceiptHandle ?? '');
    clock.advance(3_600_000);

    // Act: an hour in, 11 hours more is the most allowed.
    const within = await sqs.send(
      new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: one, VisibilityTimeout: 39_600 }),
    );
    const beyond = await sqs
      .send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: one, VisibilityTimeout: 39_601 }))
      .then(
        () => 'changed',
        (error: Error) => `${error.name}: ${error.message}`,
      );
    const batch = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'ok', ReceiptHandle: two, VisibilityTimeout: 60 },
          { Id: 'late', ReceiptHandle: two, VisibilityTimeout: 43_200 },
        ],
      }),
    );

    // Assess
    expect(within.$metadata.httpStatusCode).toBe(200);
    expect(beyond).toMatch(/^InvalidParameterValue: .*Total VisibilityTimeout for the message is beyond the limit/);
    expect(batch.Successful?.map((entry) => entry.Id)).toEqual(['ok']);
    expect(batch.Failed?.map((entry) => [entry.Id, entry.Code])).toEqual([['late', 'InvalidParameterValue']]);
    expect(model.report().queues[url]?.visibilityRefusals).toBe(2);
    await proxy.close();
  });

  it('keeps fauxqs’s own limits: 1 MiB a message and 10 entries a batch', async () => {
    // Prepare
    const { proxy, sqs, url } = await queueBehindProxy(1, 0);

    // Act
    const large = await sqs
      .send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x'.repeat(1024 * 1024 + 1) }))
      .then(
        () => 'sent',
        (error: Error) => error.name,
      );
    const eleven = await sqs
      .send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: Array.from({ length: 11 }, (_, n) => ({ Id: `e${n}`, MessageBody: 'x' })),
        }),
      )
      .then(
        () => 'sent',
        (error: Error) => error.name,
      );

    // Assess
    // fauxqs names its errors by their legacy query codes.
    expect(large).toBe('AWS.SimpleQueueService.InvalidParameterValue');
    expect(eleven).toBe('TooManyEntriesInBatchRequest');
    await proxy.close();
  });
});
