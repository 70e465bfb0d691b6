/**
 * Local mode's DynamoDB: dynalite, in memory or in a data folder, and the clients that
 * talk to it. The runtime uses it, and so does the `timer` CLI when it has to open a data
 * folder itself because local mode is not running.
 */
import { mkdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import dynalite from 'dynalite';

import { TABLE } from '../../functions/contract/topology.js';

export const LOCAL_TABLE_NAME = 'timer-tasks';
export const LOCAL_REGION = 'us-east-1';
/** dynalite and fauxqs accept any credentials; the SDK only insists that there are some. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

/** Creates the task table as the stack defines it: string pk and sk, on demand, with the indexes of TABLE. */
export async function createTaskTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const indexes = Object.values(TABLE.indexes);
  const keyAttributes = new Set([
    TABLE.partitionKey,
    TABLE.sortKey,
    ...indexes.flatMap((index) => [index.partitionKey, index.sortKey]),
  ]);
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [...keyAttributes].map((name) => ({ AttributeName: name, AttributeType: 'S' })),
      KeySchema: [
        { AttributeName: TABLE.partitionKey, KeyType: 'HASH' },
        { AttributeName: TABLE.sortKey, KeyType: 'RANGE' },
      ],
      GlobalSecondaryIndexes: indexes.map((index) => ({
        IndexName: index.name,
        KeySchema: [
          { AttributeName: index.partitionKey, KeyType: 'HASH' },
          { AttributeName: index.sortKey, KeyType: 'RANGE' },
        ],
        Projection: { ProjectionType: index.projection },
      })),
    }),
  );
}

const TABLE_ACTIVE_POLLS = 100;
const TABLE_ACTIVE_POLL_MS = 20;

const tableStatus = (client: DynamoDBClient, tableName: string) =>
  client
    .send(new DescribeTableCommand({ TableName: tableName }))
    .then((described) => described.Table?.TableStatus)
    .catch(() => undefined);

/**
 * Waits until a table is ACTIVE: even with createTableMs 0, dynalite answers "not found" to
 * item requests until a timer marks a new table ACTIVE, which a busy event loop delays.
 */
export async function waitUntilActive(client: DynamoDBClient, tableName: string): Promise<void> {
  for (let poll = 0; poll < TABLE_ACTIVE_POLLS; poll++) {
    if ((await tableStatus(client, tableName)) === 'ACTIVE') return;
    await new Promise((resolve) => setTimeout(resolve, TABLE_ACTIVE_POLL_MS));
  }
  throw new Error(
    `the table ${tableName} did not become ACTIVE within ${(TABLE_ACTIVE_POLLS * TABLE_ACTIVE_POLL_MS) / 1000} s`,
  );
}

/** Creates the local task table unless the data folder already has it, and waits until it is ACTIVE. */
export async function ensureLocalTaskTable(client: DynamoDBClient): Promise<void> {
  if ((await tableStatus(client, LOCAL_TABLE_NAME)) === undefined) await createTaskTable(client, LOCAL_TABLE_NAME);
  await waitUntilActive(client, LOCAL_TABLE_NAME);
}

export interface LocalDynamo {
  readonly endpoint: string;
  close(): Promise<void>;
}

/** Starts dynalite on a free loopback port, keeping its data in `<dataDir>/dynamodb` when a folder is given. */
export async function startLocalDynamo(dataDir?: string): Promise<LocalDynamo> {
  if (dataDir) await mkdir(dataDir, { recursive: true });
  const server = dynalite({ createTableMs: 0, ...(dataDir && { path: join(dataDir, 'dynamodb') }) });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A low-level client (for table operations) and a document client over it, both for a local dynalite. */
export function localDynamoClients(endpoint: string): { raw: DynamoDBClient; dynamo: DynamoDBDocumentClient } {
  const raw = new DynamoDBClient({ region: LOCAL_REGION, endpoint, credentials: LOCAL_CREDENTIALS });
  return { raw, dynamo: DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } }) };
}
