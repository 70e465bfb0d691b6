import type { AddressInfo } from 'node:net';

import {
  BatchWriteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTaskTable, LOCAL_CREDENTIALS, LOCAL_REGION } from '../../../lib/local/dynamodb.js';
import { startDynamoThroughputProxy } from '../../../lib/local/limits/dynamodb-proxy.js';
import { DynamoThroughputModel } from '../../../lib/local/limits/dynamodb-throughput.js';
import type { RunningProxy } from '../../../lib/local/limits/json-proxy.js';
import { ManualClock } from '../../support/clock.js';

const dynamoServer = dynalite({ createTableMs: 0 });
let dynaliteEndpoint = '';
let tables = 0;

beforeAll(async () => {
  await new Promise<void>((resolve) => dynamoServer.listen(0, '127.0.0.1', () => resolve()));
  dynaliteEndpoint = `http://127.0.0.1:${(dynamoServer.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => dynamoServer.close(() => resolve()));
});

/** A fresh task table behind a fresh proxy with the given k, and an SDK client pointed at the proxy. */
async function throttled(k: number, clock: { now(): number } = { now: () => Date.now() }) {
  const tableName = `limits-${++tables}`;
  await createTaskTable(
    new DynamoDBClient({ region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, endpoint: dynaliteEndpoint }),
    tableName,
  );
  const model = new DynamoThroughputModel({ k, clock });
  const proxy: RunningProxy = await startDynamoThroughputProxy(dynaliteEndpoint, model);
  const client = new DynamoDBClient({ region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, endpoint: proxy.endpoint });
  return { tableName, model, proxy, client };
}

const item = (pk: string, sk: string, extra: Record<string, { S: string }> = {}) => ({
  pk: { S: pk },
  sk: { S: sk },
  ...extra,
});

/** Sends every put at once and sums the attempts the SDK made, whether each put ended in success or not. */
async function putAll(client: DynamoDBClient, tableName: string, items: ReturnType<typeof item>[]) {
  const settled = await Promise.allSettled(
    items.map((Item) => client.send(new PutItemCommand({ TableName: tableName, Item }))),
  );
  const attempts = settled.reduce((sum, result) => {
    const metadata =
      result.status === 'fulfilled'
        ? result.value.$metadata
        : (result.reason as { $metadata?: { attempts?: number } }).$metadata;
    return sum + (metadata?.attempts ?? 1);
  }, 0);
  return { attempts, failures: settled.filter((result) => result.status === 'rejected') };
}

describe('Proxy: DynamoDB throughput', () => {
  it('throttles writes to one key past the scaled limit, and the SDK retries them', async () => {
    // Prepare: k = 100 leaves 10 write units a second per key; 30 puts land on one key in one (stopped) second.
    const { tableName, model, proxy, client } = await throttled(100, new ManualClock(Date.now()));

    // Act
    const { attempts, failures } = await putAll(
      client,
      tableName,
      Array.from({ length: 30 }, (_, n) => item('B#hot', `t${n}`)),
    );

    // Assess: 10 fit; the other 20 are throttled on each of the SDK's attempts.
    const maxAttempts = await client.config.maxAttempts();
    expect(failures.map((failure) => (failure.reason as Error).name)).toEqual(
      Array(20).fill('ProvisionedThroughputExceededException'),
    );
    expect(attempts).toBe(10 + 20 * maxAttempts);
    expect(model.report().byKeyClass.B).toMatchObject({ writeUnits: 10, throttles: 20 * maxAttempts });
    expect(model.report().hottestKey).toMatchObject({ value: 'B#hot', kind: 'write', fractionOfLimit: 1 });
    await proxy.close();
  });

  it('admits the same writes spread over four keys', async () => {
    // Prepare
    const { tableName, model, proxy, client } = await throttled(100, new ManualClock(Date.now()));

    // Act
    const { attempts, failures } = await putAll(
      client,
      tableName,
      Array.from({ length: 20 }, (_, n) => item(`B#${n % 4}`, `t${n}`)),
    );

    // Assess
    expect(failures).toEqual([]);
    expect(attempts).toBe(20);
    expect(model.report().byKeyClass.B).toMatchObject({ keys: 4, requests: 20, writeUnits: 20, throttles: 0 });
    await proxy.close();
  });

  it('answers a throttle as AWS’s JSON protocol does, so the SDK names the exception', async () => {
    // Prepare: no retries, so the first throttle reaches the caller; a stopped clock keeps both puts in one second.
    const { tableName, proxy } = await throttled(1000, new ManualClock(Date.now()));
    const client = new DynamoDBClient({
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      endpoint: proxy.endpoint,
      maxAttempts: 1,
    });
    await client.send(new PutItemCommand({ TableName: tableName, Item: item('CLOCK', 'CLOCK') }));

    // Act
    const error = await client.send(new PutItemCommand({ TableName: tableName, Item: item('CLOCK', 'CLOCK') })).then(
      () => undefined,
      (reason: unknown) => reason as { name: string; $metadata: { httpStatusCode: number } },
    );

    // Assess
    expect(error?.name).toBe('ProvisionedThroughputExceededException');
    expect(error?.$metadata.httpStatusCode).toBe(400);
    await proxy.close();
  });

  it('charges an update for the item it leaves, and a failed conditional write still costs units', async () => {
    // Prepare
    const { tableName, model, proxy, client } = await throttled(1);
    await client.send(new PutItemCommand({ TableName: tableName, Item: item('RATE#a', 'x') }));

    // Act: grow the item to about 3 KB, then fail a condition on it.
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: item('RATE#a', 'x'),
        UpdateExpression: 'SET big = :big',
        ExpressionAttributeValues: { ':big': { S: 'x'.repeat(3000) } },
      }),
    );
    const failed = await client
      .send(
        new PutItemCommand({
          TableName: tableName,
          Item: item('RATE#a', 'x'),
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      )
      .then(
        () => 'applied',
        (error: Error) => error.name,
      );

    // Assess: 1 (put) + 3 (update to ~3 KB) + 3 (the failed put, charged for the item it would replace).
    expect(failed).toBe('ConditionalCheckFailedException');
    expect(model.report().byKeyClass.RATE).toMatchObject({ requests: 3, writeUnits: 7 });
    await proxy.close();
  });

  it('answers each write with the ReturnValues its caller asked for, whatever the model asked dynalite for', async () => {
    // Prepare
    const { tableName, model, proxy, client } = await throttled(1);
    const grow = (value: string, ReturnValues?: 'ALL_OLD' | 'ALL_NEW') =>
      client.send(
        new UpdateItemCommand({
          TableName: tableName,
          Key: item('RATE#b', 'x'),
          UpdateExpression: 'SET v = :v',
          ExpressionAttributeValues: { ':v': { S: value } },
          ...(ReturnValues && { ReturnValues }),
        }),
      );

    // Act
    const put = await client.send(new PutItemCommand({ TableName: tableName, Item: item('RATE#b', 'x') }));
    const replaced = await client.send(
      new PutItemCommand({ TableName: tableName, Item: item('RATE#b', 'x'), ReturnValues: 'ALL_OLD' }),
    );
    const plain = await grow('1'.repeat(2000));
    const old = await grow('2', 'ALL_OLD');
    const fresh = await grow('3', 'ALL_NEW');

    // Assess: and each write was charged for the larger of the item before and after it (1, 1, 2, 2, 1).
    expect(put.Attributes).toBeUndefined();
    expect(replaced.Attributes).toEqual(item('RATE#b', 'x'));
    expect(plain.Attributes).toBeUndefined();
    expect(old.Attributes?.v?.S).toHaveLength(2000);
    expect(fresh.Attributes?.v).toEqual({ S: '3' });
    expect(model.report().byKeyClass.RATE).toMatchObject({ requests: 5, writeUnits: 7 });
    await proxy.close();
  });

  it('charges an index write on the index’s own partition key', async () => {
    // Prepare
    const { tableName, model, proxy, client } = await throttled(1);

    // Act
    await client.send(
      new PutItemCommand({ TableName: tableName, Item: item('B#1', 't1', { bizIdKey: { S: 'ten#order-9' } }) }),
    );

    // Assess
    expect(model.report().byKeyClass['index:byBizId']).toMatchObject({ keys: 1, writeUnits: 1 });
    await proxy.close();
  });

  it('charges a Query for its page’s items summed, then rounded up to 4 KB units', async () => {
    // Prepare: three items of about 2 KB in one partition.
    const { tableName, model, proxy, client } = await throttled(1);
    for (const sk of ['a', 'b', 'c']) {
      await client.send(
        new PutItemCommand({ TableName: tableName, Item: item('S#q', sk, { body: { S: 'x'.repeat(2000) } }) }),
      );
    }
    const query = (ConsistentRead: boolean) =>
      client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': 'pk' },
          ExpressionAttributeValues: { ':pk': { S: 'S#q' } },
          ConsistentRead,
        }),
      );

    // Act
    await query(true);
    await query(false);

    // Assess: about 6 KB is 2 units strongly consistent, and 1 eventually consistent.
    expect(model.report().byKeyClass.S).toMatchObject({ readUnits: 3 });
    await proxy.close();
  });

  it('returns a batch’s throttled writes as UnprocessedItems and forwards the rest', async () => {
    // Prepare: k = 200 leaves 5 write units a second per key; a stopped clock keeps the batch in one second.
    const { tableName, proxy, client } = await throttled(200, new ManualClock(Date.now()));
    const writes = Array.from({ length: 8 }, (_, n) => ({ PutRequest: { Item: item('B#batch', `t${n}`) } }));

    // Act
    const answer = await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: writes } }));

    // Assess
    expect(answer.UnprocessedItems?.[tableName]).toHaveLength(3);
    await proxy.close();
  });

  it('keeps dynalite’s own limits: 25 writes a batch and 400 KB an item', async () => {
    // Prepare
    const { tableName, proxy, client } = await throttled(1);
    const writes = Array.from({ length: 26 }, (_, n) => ({ PutRequest: { Item: item(`B#${n}`, 't') } }));

    // Act
    const batch = await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: writes } })).then(
      () => 'accepted',
      (error: Error) => error.name,
    );
    const large = await client
      .send(
        new PutItemCommand({ TableName: tableName, Item: item('B#big', 't', { body: { S: 'x'.repeat(401 * 1024) } }) }),
      )
      .then(
        () => 'accepted',
        (error: Error) => error.name,
      );

    // Assess
    expect(batch).toBe('ValidationException');
    expect(large).toBe('ValidationException');
    await proxy.close();
  });
});
