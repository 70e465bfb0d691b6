import type { AddressInfo } from 'node:net';

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DeleteCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import dynalite from 'dynalite';
import { startFauxqs } from 'fauxqs';

import { DynamoBizTypeStore } from '../../functions/adapters/dynamo/biz-type-store.js';
import { DynamoClockStore } from '../../functions/adapters/dynamo/clock-store.js';
import { DynamoIdempotencyStore } from '../../functions/adapters/dynamo/idempotency-store.js';
import { DynamoOccupancyIndex } from '../../functions/adapters/dynamo/occupancy-index.js';
import { DynamoRequestCounter } from '../../functions/adapters/dynamo/request-counter.js';
import { DynamoScheduleStore } from '../../functions/adapters/dynamo/schedule-store.js';
import { CALLBACK_COUNTER_PREFIX, CLOCK_KEY } from '../../functions/adapters/dynamo/table-schema.js';
import { DynamoTaskStore } from '../../functions/adapters/dynamo/task-store.js';
import { newPlacement, type Placement } from '../../functions/core/kernel/task-kernel.js';
import { createTaskTable, waitUntilActive } from '../../lib/local/dynamodb.js';

const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
const region = 'us-east-1';

export interface Emulators {
  readonly dynamo: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  /** fauxqs's address, for a client that is not the SDK's (local mode's event source mappings). */
  readonly sqsEndpoint: string;
  /** New clients to the same emulators, e.g. to give one component its own fault injection. */
  clients(): { dynamo: DynamoDBDocumentClient; sqs: SQSClient };
  readonly tableName: string;
  createQueue(name: string, attributes?: Record<string, string>): Promise<{ url: string; arn: string }>;
  stores(options?: { bucketCount?: number; queryPageSize?: number }): {
    taskStore: DynamoTaskStore;
    clockStore: DynamoClockStore;
    idempotencyStore: DynamoIdempotencyStore;
    bizTypeStore: DynamoBizTypeStore;
    callbackCounter: DynamoRequestCounter;
    occupancy: DynamoOccupancyIndex;
    scheduleStore: DynamoScheduleStore;
    /** A placement of the stores' own, as one execution environment has. */
    placement: Placement;
  };
  /** Deletes the CLOCK item, so a test can start the clock where it needs it. */
  resetClock(): Promise<void>;
  /** Creates another empty table from the topology, for a test that needs a table of its own. */
  newTable(): Promise<string>;
  stop(): Promise<void>;
}

let tables = 0;

/** In-memory dynalite and fauxqs on free ports, spoken to over their real wire protocols. */
export async function startEmulators(): Promise<Emulators> {
  const dynamoServer = dynalite({ createTableMs: 0 });
  await new Promise<void>((resolve) => dynamoServer.listen(0, '127.0.0.1', () => resolve()));
  const dynamoEndpoint = `http://127.0.0.1:${(dynamoServer.address() as AddressInfo).port}`;
  const sqsServer = await startFauxqs({ port: 0, logger: false });
  const clients = () => {
    const raw = new DynamoDBClient({ region, credentials, endpoint: dynamoEndpoint });
    return {
      raw,
      dynamo: DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } }),
      sqs: new SQSClient({ region, credentials, endpoint: sqsServer.address, useQueueUrlAsEndpoint: false }),
    };
  };
  const { raw: rawDynamo, dynamo, sqs } = clients();

  const tableName = `tasks-${++tables}`;
  await createTaskTable(rawDynamo, tableName);
  await waitUntilActive(rawDynamo, tableName);

  return {
    dynamo,
    sqs,
    sqsEndpoint: sqsServer.address,
    clients,
    tableName,
    async createQueue(name, attributes = {}) {
      const created = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
      const url = created.QueueUrl ?? '';
      const arn = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
      return { url, arn: arn.Attributes?.QueueArn ?? '' };
    },
    stores(options = {}) {
      return {
        taskStore: new DynamoTaskStore({
          client: dynamo,
          tableName,
          bucketCount: options.bucketCount ?? 10_000_000,
          ...(options.queryPageSize !== undefined && { queryPageSize: options.queryPageSize }),
        }),
        clockStore: new DynamoClockStore({ client: dynamo, tableName }),
        idempotencyStore: new DynamoIdempotencyStore({ client: dynamo, tableName }),
        bizTypeStore: new DynamoBizTypeStore({ client: dynamo, tableName }),
        callbackCounter: new DynamoRequestCounter({ client: dynamo, tableName, keyPrefix: CALLBACK_COUNTER_PREFIX }),
        occupancy: new DynamoOccupancyIndex({ client: dynamo, tableName }),
        scheduleStore: new DynamoScheduleStore({ client: dynamo, tableName }),
        placement: newPlacement(),
      };
    },
    async resetClock() {
      await dynamo.send(new DeleteCommand({ TableName: tableName, Key: CLOCK_KEY }));
    },
    async newTable() {
      const name = `tasks-${++tables}`;
      await createTaskTable(rawDynamo, name);
      await waitUntilActive(rawDynamo, name);
      return name;
    },
    async stop() {
      await sqsServer.stop();
      await new Promise<void>((resolve) => dynamoServer.close(() => resolve()));
    },
  };
}

/** Receives until the queue stays empty for one long poll, returning every body (messages are left in flight). */
export async function drainBodies(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const received = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        VisibilityTimeout: 300,
      }),
    );
    const messages = received.Messages ?? [];
    if (messages.length === 0) return bodies;
    bodies.push(...messages.map((message) => message.Body ?? ''));
  }
}
