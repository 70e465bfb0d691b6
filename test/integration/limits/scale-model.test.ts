import type { AddressInfo } from 'node:net';

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import dynalite from 'dynalite';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTaskTable, LOCAL_CREDENTIALS, LOCAL_REGION } from '../../../lib/local/dynamodb.js';
import {
  type RunningScaleModel,
  startScaleModel,
  startScaleModelProcess,
} from '../../../lib/local/limits/scale-model.js';
import { ManualClock } from '../../support/clock.js';

const dynamoServer = dynalite({ createTableMs: 0 });
let fauxqs: FauxqsServer;
let scaleModel: RunningScaleModel;
const tableName = 'scale-model';
const dynamoEndpoint = () => `http://127.0.0.1:${(dynamoServer.address() as AddressInfo).port}`;

beforeAll(async () => {
  await new Promise<void>((resolve) => dynamoServer.listen(0, '127.0.0.1', () => resolve()));
  const dynamodbEndpoint = dynamoEndpoint();
  fauxqs = await startFauxqs({ port: 0, logger: false });
  await createTaskTable(
    new DynamoDBClient({ region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, endpoint: dynamodbEndpoint }),
    tableName,
  );
  // A stopped clock keeps the test's burst in one second however slowly this machine serves it.
  scaleModel = await startScaleModel(
    { k: 100, clock: new ManualClock(Date.now()) },
    { dynamodbEndpoint, sqsEndpoint: fauxqs.address },
  );
});

afterAll(async () => {
  await scaleModel.close();
  await fauxqs.stop();
  await new Promise<void>((resolve) => dynamoServer.close(() => resolve()));
});

/** The clients the handlers would be given, pointed at the model's endpoints. */
function clientsOf(model: RunningScaleModel) {
  const dynamo = DynamoDBDocumentClient.from(
    new DynamoDBClient({ region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, endpoint: model.dynamodbEndpoint }),
  );
  const sqs = new SQSClient({
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    endpoint: model.sqsEndpoint,
    useQueueUrlAsEndpoint: false,
  });
  return { dynamo, sqs };
}

/** Three times the 1/100 per-key write limit at once on one key, and one message through SQS. */
async function overloadOneKeyAndSendOneMessage(model: RunningScaleModel, queueName: string) {
  const { dynamo, sqs } = clientsOf(model);
  await Promise.allSettled(
    Array.from({ length: 30 }, (_, n) =>
      dynamo.send(new PutCommand({ TableName: tableName, Item: { pk: `B#${queueName}`, sk: `t${n}` } })),
    ),
  );
  const { QueueUrl: url = '' } = await sqs.send(new CreateQueueCommand({ QueueName: queueName }));
  await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'due' }));
  const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 1 }));
  return { url, received: received.Messages ?? [], maxAttempts: await dynamo.config.maxAttempts() };
}

describe('Function: startScaleModel', () => {
  it('routes the SDK through both proxies and reports what each saw', async () => {
    // Act
    const { url, received, maxAttempts } = await overloadOneKeyAndSendOneMessage(scaleModel, 'scale-model');

    // Assess
    const report = await scaleModel.report();
    expect(report.k).toBe(100);
    expect(report.dynamodb.limits.partitionWrite).toBe(10);
    // 10 fit the stopped second; the other 20 are throttled on each of the SDK's attempts.
    expect(report.dynamodb.byKeyClass.B).toMatchObject({ writeUnits: 10, throttles: 20 * maxAttempts });
    expect(received).toHaveLength(1);
    expect(report.sqs).toMatchObject({ inFlightCap: 1_200, queues: { [url]: { inFlight: 1, received: 1 } } });
    expect(report.api).toMatchObject({ ratePerSecond: 100, burst: 50 });
  });
});

describe('Function: startScaleModelProcess', () => {
  it('enforces the limits from a process of its own and reports what its proxies saw', async () => {
    // Prepare
    const model = await startScaleModelProcess(
      { k: 100 },
      { dynamodbEndpoint: dynamoEndpoint(), sqsEndpoint: fauxqs.address },
    );

    try {
      // Act
      const { url, received } = await overloadOneKeyAndSendOneMessage(model, 'scale-model-process');

      // Assess: by the system clock the SDK's retries may reach the next second, so only the per-second bound is exact.
      const report = await model.report();
      expect(report.k).toBe(100);
      expect(report.dynamodb.byKeyClass.B?.throttles).toBeGreaterThan(0);
      expect(report.dynamodb.hottestKey).toMatchObject({ value: 'B#scale-model-process', peakUnitsPerSecond: 10 });
      expect(received).toHaveLength(1);
      expect(report.sqs.queues[url]).toMatchObject({ inFlight: 1, received: 1 });
      expect(report.api).toMatchObject({ ratePerSecond: 100, burst: 50 });
    } finally {
      await model.close();
    }
  });
});
