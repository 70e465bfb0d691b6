import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { GetQueueAttributesCommand, type ReceiveMessageRequest, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';

import { QUEUES } from '../../functions/contract/topology.js';
import { createLambdaService, sharedEnvironments } from '../../lib/local/lambda-service.js';
import { QueueCallError, sqsJsonQueue } from '../../lib/local/mapping-queue.js';
import { SQS_SCALING, type SqsEventSource, startSqsEventSource } from '../../lib/local/queue-poller.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';
import { eventually, quantile } from '../support/webhook-receiver.js';

const emulators = emulatorsFixture();
let queues = 0;

async function queueWith(count: number, visibilityTimeoutSeconds: number) {
  const queue = await emulators.createQueue(`event-source-${++queues}`, {
    VisibilityTimeout: String(visibilityTimeoutSeconds),
  });
  for (let offset = 0; offset < count; offset += 10) {
    const entries = Array.from({ length: Math.min(10, count - offset) }, (_, index) => ({
      Id: String(index),
      MessageBody: `message-${offset + index}`,
    }));
    await emulators.sqs.send(new SendMessageBatchCommand({ QueueUrl: queue.url, Entries: entries }));
  }
  return queue;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Event source mapping: SQS, as Lambda runs it', () => {
  it('gathers a batch larger than one receive over its batching window, and invokes with a part batch when the window ends', async () => {
    // Prepare: 35 messages waiting, then 5 more a moment later; batches of up to 100, gathered for up to a second.
    const queue = await queueWith(35, 30);
    const batches: number[] = [];
    const lambda = createLambdaService({
      handlers: sharedEnvironments({
        callback: async (event) => {
          batches.push((event as SQSEvent).Records.length);
          return { batchItemFailures: [] };
        },
      }),
      onError: () => undefined,
    });

    // Act
    const startedMs = Date.now();
    const eventSource = startSqsEventSource({
      queue: sqsJsonQueue(emulators.sqsEndpoint),
      queueUrl: queue.url,
      queueArn: queue.arn,
      invoke: (event) => lambda.invoke<SQSEvent, SQSBatchResponse>('callback', event),
      batchSize: 100,
      maxBatchingWindowSeconds: 1,
      maxConcurrency: 2,
      scaling: { initialConcurrency: 1, scaleUpPerMinute: 0 },
      onError: () => undefined,
    });
    await sleep(300);
    await emulators.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queue.url,
        Entries: Array.from({ length: 5 }, (_, index) => ({ Id: String(index), MessageBody: `late-${index}` })),
      }),
    );
    // Far fewer than the batch size came, so an invocation at all means the window ended it.
    await eventually('the batch', () => batches.length > 0, 200, 100);
    const invokedAfterMs = Date.now() - startedMs;
    await eventSource.stop();

    // Assess: one invocation of all 40, once the window ran out (a receive takes at most 10), and all 40 deleted.
    expect(batches).toEqual([40]);
    const left = await emulators.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queue.url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    expect(left.Attributes).toMatchObject({
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
    });
    expect(invokedAfterMs).toBeGreaterThanOrEqual(1000);
  });

  it('starts with its initial concurrency and scales up under a backlog, never past its maximum', async () => {
    // Prepare: a backlog of one-message batches that each take 300 ms.
    const queue = await queueWith(80, 30);
    let running = 0;
    const seen: Array<{ running: number; scaledConcurrency: number }> = [];
    let eventSource: SqsEventSource | undefined;
    const lambda = createLambdaService({
      handlers: sharedEnvironments({
        callback: async () => {
          running += 1;
          seen.push({ running, scaledConcurrency: eventSource?.stats().scaledConcurrency ?? 0 });
          await sleep(300);
          running -= 1;
          return { batchItemFailures: [] };
        },
      }),
      onError: () => undefined,
    });

    // Act: 2 batches at first, 10 more a second, at most 8.
    eventSource = startSqsEventSource({
      queue: sqsJsonQueue(emulators.sqsEndpoint),
      queueUrl: queue.url,
      queueArn: queue.arn,
      invoke: (event) => lambda.invoke<SQSEvent, SQSBatchResponse>('callback', event),
      batchSize: 1,
      maxConcurrency: 8,
      scaling: { initialConcurrency: 2, scaleUpPerMinute: 600 },
      onError: () => undefined,
    });
    await eventually('the backlog to drain', () => lambda.stats().callback.invocations === 80, 60, 250);
    await eventSource.stop();

    // Assess
    expect(seen[0]?.scaledConcurrency).toBe(2);
    expect(seen.every((entry) => entry.running <= entry.scaledConcurrency)).toBe(true);
    const stats = eventSource.stats();
    expect(stats.peakScaledConcurrency).toBe(8);
    expect(stats.peakBatchesInFlight).toBeGreaterThan(2);
    expect(stats.peakBatchesInFlight).toBeLessThanOrEqual(8);
    expect(lambda.stats().callback.peakConcurrency).toBeLessThanOrEqual(8);
  });

  it("accumulates a scale model's fractional ramp, running one batch until the fractions add up to two", async () => {
    // Prepare: a 1/100 model's mapping, starting at 5/100 and adding 300/100 a minute (0.05 a
    // second): at full scale the 5 to 10 batches take a minute, so here one batch runs for about 40 s.
    const queue = await queueWith(40, 30);
    const lambda = createLambdaService({
      handlers: sharedEnvironments({
        callback: async () => {
          await sleep(200);
          return { batchItemFailures: [] };
        },
      }),
      onError: () => undefined,
    });

    // Act
    const eventSource = startSqsEventSource({
      queue: sqsJsonQueue(emulators.sqsEndpoint),
      queueUrl: queue.url,
      queueArn: queue.arn,
      invoke: (event) => lambda.invoke<SQSEvent, SQSBatchResponse>('callback', event),
      batchSize: 1,
      maxConcurrency: 600,
      scaling: {
        initialConcurrency: SQS_SCALING.initialConcurrency / 100,
        scaleUpPerMinute: SQS_SCALING.scaleUpPerMinute / 100,
      },
      onError: () => undefined,
    });
    await sleep(3500);
    await eventSource.stop();

    // Assess: a ramp rounded up to a whole batch a second would have run several at once by now.
    expect(eventSource.stats().batches).toBeGreaterThan(3);
    expect(eventSource.stats().peakBatchesInFlight).toBe(1);
    expect(lambda.stats().callback.peakConcurrency).toBe(1);
  });

  it('abandons a batch that outlives the function timeout; it comes back after the visibility timeout', async () => {
    // Prepare: the first invocation hangs past its 0.2 s timeout; later ones succeed.
    const queue = await queueWith(3, 1);
    const receives: Array<{ at: number; receiveCounts: string[] }> = [];
    const lambda = createLambdaService({
      handlers: sharedEnvironments({
        callback: async (event) => {
          const records = (event as SQSEvent).Records;
          receives.push({ at: Date.now(), receiveCounts: records.map((r) => r.attributes.ApproximateReceiveCount) });
          if (receives.length === 1) await sleep(5000);
          return { batchItemFailures: [] };
        },
      }),
      limits: { callback: { timeoutSeconds: 0.2 } },
      onError: () => undefined,
    });

    // Act
    const eventSource = startSqsEventSource({
      queue: sqsJsonQueue(emulators.sqsEndpoint),
      queueUrl: queue.url,
      queueArn: queue.arn,
      invoke: (event) => lambda.invoke<SQSEvent, SQSBatchResponse>('callback', event),
      batchSize: 10,
      maxConcurrency: 2,
      onError: () => undefined,
    });
    await eventually('the batch to come back', () => receives.length >= 2, 40, 250);
    await eventSource.stop();

    // Assess: same three messages, received a second time, once the 1 s visibility had passed.
    const [first, second] = receives;
    expect(first?.receiveCounts).toEqual(['1', '1', '1']);
    expect(second?.receiveCounts).toEqual(['2', '2', '2']);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(900);
    expect(lambda.stats().callback).toMatchObject({ timeouts: 1, errors: 1 });
  });

  it('runs batches side by side: one held for its latest due time holds up no other (100 a second)', async () => {
    // Prepare: as the scanner sends them, each second's hundred messages surface a second before they
    // are due, and the handler holds its batch until the latest of them is due, as the callback does.
    const queue = await emulators.createQueue(`event-source-${++queues}`, { VisibilityTimeout: '30' });
    const handled: Array<{ dueAtMs: number; latenessMs: number }> = [];
    let running = 0;
    let mostRunning = 0;
    const lambda = createLambdaService({
      handlers: sharedEnvironments({
        callback: async (event) => {
          running += 1;
          mostRunning = Math.max(mostRunning, running);
          await Promise.all(
            (event as SQSEvent).Records.map(async (record) => {
              const dueAtMs = Number(record.body);
              await sleep(dueAtMs - Date.now());
              handled.push({ dueAtMs, latenessMs: Date.now() - dueAtMs });
            }),
          );
          running -= 1;
          return { batchItemFailures: [] };
        },
      }),
      onError: () => undefined,
    });
    const eventSource = startSqsEventSource({
      queue: sqsJsonQueue(emulators.sqsEndpoint),
      queueUrl: queue.url,
      queueArn: queue.arn,
      invoke: (event) => lambda.invoke<SQSEvent, SQSBatchResponse>('callback', event),
      batchSize: 10,
      maxConcurrency: QUEUES.delivery.consumer.maxConcurrency,
      // Already scaled to 20, as a mapping is once traffic has run a few seconds: this is about its
      // two receivers keeping that many batches going, not about the scale-up (tested above).
      scaling: { ...SQS_SCALING, initialConcurrency: 20 },
      onError: () => undefined,
    });

    // Act
    const firstDueMs = Date.now() + 1000;
    for (let second = 0; second < 4; second++) {
      await sleep(firstDueMs + (second - 1) * 1000 - Date.now());
      for (let offset = 0; offset < 100; offset += 10) {
        const entries = Array.from({ length: 10 }, (_, index) => ({
          Id: String(index),
          // Sent out of order (37 is coprime to 100), so each batch spans its whole second, as the scanner's do.
          MessageBody: String(firstDueMs + second * 1000 + (((offset + index) * 37) % 100) * 10),
        }));
        await emulators.sqs.send(new SendMessageBatchCommand({ QueueUrl: queue.url, Entries: entries }));
      }
    }
    await eventually('every message to be handled', () => handled.length === 400, 40, 250);
    await eventSource.stop();

    // Assess: a batch held for a second must not hold up others. Pollers that waited for their
    // invocations would keep no more batches running than there are pollers, and run a second
    // late; a second's ten batches, each held for up to a second, run side by side.
    const lateness = handled.map((entry) => entry.latenessMs);
    console.info(
      `event source at 100/s: ${mostRunning} batches at once; lateness p50 ${quantile(lateness, 0.5)} ms, p99 ${quantile(lateness, 0.99)} ms`,
    );
    expect(mostRunning).toBeGreaterThan(4);
  });

  it('leaves a throttled batch in the queue and backs off', async () => {
    // Prepare: the function may run once at a time, the mapping asks for five.
    const queue = await queueWith(6, 1);
    const lambda = createLambdaService({
      handlers: sharedEnvironments({
        callback: async () => {
          await sleep(300);
          return { batchItemFailures: [] };
        },
      }),
      limits: { callback: { reservedConcurrency: 1 } },
      onError: () => undefined,
    });

    // Act
    const eventSource = startSqsEventSource({
      queue: sqsJsonQueue(emulators.sqsEndpoint),
      queueUrl: queue.url,
      queueArn: queue.arn,
      invoke: (event) => lambda.invoke<SQSEvent, SQSBatchResponse>('callback', event),
      batchSize: 1,
      maxConcurrency: 5,
      scaling: { initialConcurrency: 5, scaleUpPerMinute: 60 },
      onError: () => undefined,
    });
    await eventually('every message to be processed once', () => lambda.stats().callback.invocations >= 6, 80, 250);
    await eventSource.stop();

    // Assess: throttled batches were not lost, only delayed.
    expect(lambda.stats().callback.throttles).toBeGreaterThan(0);
    expect(eventSource.stats().throttledBatches).toBe(lambda.stats().callback.throttles);
    expect(lambda.stats().callback.peakConcurrency).toBe(1);
  });
});

describe("Function: sqsJsonQueue, the mappings' own SQS client", () => {
  it('receives and deletes over the JSON protocol, and tells its observer of each call by the name the bench prices', async () => {
    // Prepare: three messages waiting; an observer noting each call.
    const queue = await queueWith(3, 30);
    const calls: string[] = [];
    const mappingQueue = sqsJsonQueue(emulators.sqsEndpoint, (request) => calls.push(request.name));

    // Act: receive them, delete them, then look again.
    const request: ReceiveMessageRequest = {
      QueueUrl: queue.url,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
      MessageSystemAttributeNames: ['All'],
    };
    const messages = await mappingQueue.receive(request);
    await mappingQueue.deleteBatch({
      QueueUrl: queue.url,
      Entries: messages.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle })),
    });
    const left = await mappingQueue.receive(request);

    // Assert: the three bodies came with their receive counts, and the deletes removed them.
    expect(messages.map((message) => message.Body).sort()).toEqual(['message-0', 'message-1', 'message-2']);
    expect(messages.every((message) => message.Attributes?.ApproximateReceiveCount === '1')).toBe(true);
    expect(left).toEqual([]);
    expect(calls).toEqual([
      'EventSourceMapping.SQS.ReceiveMessage',
      'EventSourceMapping.SQS.DeleteMessageBatch',
      'EventSourceMapping.SQS.ReceiveMessage',
    ]);
  });

  it('rejects with the error SQS answered, named by its type, and still tells the observer', async () => {
    const calls: string[] = [];
    const mappingQueue = sqsJsonQueue(emulators.sqsEndpoint, (request) => calls.push(request.name));

    const refused = await mappingQueue
      .receive({
        QueueUrl: `${emulators.sqsEndpoint}/000000000000/no-such-queue`,
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: 0,
        MessageSystemAttributeNames: ['All'],
      })
      .catch((error: unknown) => error);

    expect(refused).toBeInstanceOf(QueueCallError);
    expect((refused as QueueCallError).name).toMatch(/QueueDoesNotExist$/);
    expect((refused as QueueCallError).status).toBe(400);
    expect(calls).toEqual(['EventSourceMapping.SQS.ReceiveMessage']);
  });

  it('sends a call again once when its connection is reset before an answer', async () => {
    // Prepare: a server that resets the first connection it is asked on, then answers as SQS.
    let asked = 0;
    const server = createServer((request, response) => {
      asked += 1;
      if (asked === 1) {
        request.socket.destroy();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      response.end(JSON.stringify({ Messages: [{ MessageId: 'm1', Body: 'after the reset' }] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    try {
      const messages = await sqsJsonQueue(endpoint).receive({
        QueueUrl: `${endpoint}/000000000000/reset`,
        MaxNumberOfMessages: 1,
        WaitTimeSeconds: 0,
        MessageSystemAttributeNames: ['All'],
      });

      expect(messages.map((message) => message.Body)).toEqual(['after the reset']);
      expect(asked).toBe(2);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
