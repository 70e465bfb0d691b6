import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

import {
  ChangeMessageVisibilityCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { BatchGetCommand, DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { taskKey, tenantKey, tenantToItem } from '../../../functions/adapters/dynamo/table-schema.js';
import { createCallbackHandler } from '../../../functions/callback/app.js';
import { loadConfig } from '../../../functions/commons/config.js';
import { ENV } from '../../../functions/contract/topology.js';
import { verifyWebhook } from '../../../functions/contract/webhook-signature.js';
import { newTaskId, taskAddress } from '../../../functions/core/kernel/ids.js';
import { newTenant } from '../../../functions/core/tenants/tenants.js';
import {
  BACKOFF_BASE_SECONDS,
  BUCKET_COUNT,
  DELIVERY_QUEUE_URL,
  handlerEnv,
  lambdaContext,
  sqsRecord,
  unitHandler,
} from './setup.js';

const ddbMock = mockClient(DynamoDBDocumentClient);
const sqsMock = mockClient(SQSClient);
// The receiver below listens on loopback over http, which only local mode's webhook policy reaches.
const handler = await unitHandler(
  createCallbackHandler,
  loadConfig('callback', { ...handlerEnv(), [ENV.allowInsecureTargets]: 'true' }),
);

const TENANT = newTenant('acme', Date.now());
const SIGNING_SECRET = TENANT.signingSecrets[0]?.secret ?? '';

/** A real webhook receiver: /ok answers 204, anything else 500. */
const received: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    received.push({ path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
    response.writeHead(request.url === '/ok' ? 204 : 500).end();
  });
});
let receiverUrl = '';

beforeAll(async () => {
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});

afterAll(async () => {
  receiver.close();
  await once(receiver, 'close');
});

/** The task items the mocked table holds, by sort key: what its consistent BatchGetItem returns. */
const taskItems = new Map<string, Record<string, unknown>>();

/**
 * A due webhook task, never attempted and submitted a minute before it was due, as the mocked
 * table's consistent read returns it: its first attempt takes no lease. Returns its delivery message.
 */
function dueTask(path: string, messageId: string) {
  const dueAtMs = Date.now() - 1500;
  const id = newTaskId({ fireAtMs: dueAtMs, shard: 1 });
  const key = taskKey(taskAddress(id, { fireAtMs: dueAtMs, shard: 1 }, BUCKET_COUNT));
  taskItems.set(key.sk, {
    ...key,
    id,
    tenantId: TENANT.id,
    status: 'PENDING',
    dueAtMs,
    createdAtMs: dueAtMs - 60_000,
    target: { type: 'http', url: `${receiverUrl}${path}` },
    payload: '{"orderId":"o-1"}',
    attempts: 0,
  });
  return { id, key, record: sqsRecord(JSON.stringify({ id }), messageId) };
}

/** The updates that recorded attempts' outcomes (not a lease, which asks for the new image). */
const outcomeUpdates = () =>
  ddbMock
    .commandCalls(UpdateCommand)
    .map((call) => call.args[0].input)
    .filter((input) => input.ReturnValues !== 'ALL_NEW');

describe('Function: callback handler', () => {
  beforeEach(() => {
    ddbMock.reset();
    taskItems.clear();
    ddbMock
      .on(BatchGetCommand)
      .callsFake((input: { RequestItems: Record<string, { Keys: Array<{ sk: string }> }> }) => ({
        Responses: Object.fromEntries(
          Object.entries(input.RequestItems).map(([table, { Keys }]) => [
            table,
            Keys.flatMap((key) => taskItems.get(key.sk) ?? []),
          ]),
        ),
      }));
    ddbMock.on(GetCommand, { Key: tenantKey(TENANT.id) }).resolves({ Item: tenantToItem(TENANT) });
    sqsMock.reset();
    received.length = 0;
    ddbMock.on(UpdateCommand).resolves({});
    sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
    sqsMock.on(SendMessageCommand).resolves({});
    sqsMock.on(SendMessageBatchCommand).resolves({ Failed: [] });
  });

  it('delivers a signed webhook and reports no failure for its message', async () => {
    // Prepare
    const task = dueTask('/ok', 'm-ok');

    // Act
    const result = await handler({ Records: [task.record] }, lambdaContext(30_000));

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(JSON.parse(request?.body ?? '{}')).toMatchObject({ id: task.id, attempt: 1, payload: { orderId: 'o-1' } });
    expect(verifyWebhook(SIGNING_SECRET, request?.headers as Record<string, string>, request?.body ?? '')).toBe(true);
    // The delivery is recorded in the batch's receipt: the task's item is not written.
    expect(outcomeUpdates()).toEqual([]);
    const receipts = ddbMock.commandCalls(PutCommand).map((call) => call.args[0].input.Item);
    expect(receipts).toHaveLength(1);
    expect(Object.keys(receipts[0]?.delivered ?? {})).toEqual([task.id]);
    expect(sqsMock.commandCalls(ChangeMessageVisibilityCommand)).toHaveLength(0);
  });

  it('records a failed attempt with its retry time and sends a new message delayed by the backoff, never hiding the received one', async () => {
    // Prepare
    const task = dueTask('/fail', 'm-fail');
    const before = Date.now();

    // Act
    const result = await handler({ Records: [task.record] }, lambdaContext(30_000));

    // Assess: the received message is done with; the retry waits as a delayed message, not an in-flight one.
    expect(result).toEqual({ batchItemFailures: [] });
    expect(received).toHaveLength(1);
    expect(sqsMock.commandCalls(ChangeMessageVisibilityCommand)).toHaveLength(0);
    const [update] = outcomeUpdates();
    expect(update?.ExpressionAttributeValues).toMatchObject({
      ':status': 'PENDING',
      ':lastError': `HTTP 500 from ${new URL(receiverUrl).host}`,
    });
    const retryAtMs = Number(update?.ExpressionAttributeValues?.[':retryAtMs']);
    expect(retryAtMs).toBeGreaterThanOrEqual(before + BACKOFF_BASE_SECONDS * 1000);
    const sent = sqsMock.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input);
    expect(sent).toEqual([
      {
        QueueUrl: DELIVERY_QUEUE_URL,
        Entries: [
          {
            Id: '0',
            MessageBody: JSON.stringify({ id: task.id, notBeforeMs: retryAtMs }),
            DelaySeconds: BACKOFF_BASE_SECONDS,
          },
        ],
      },
    ]);
  });

  it('drops a message without a task id instead of failing it', async () => {
    // Act
    const result = await handler(
      { Records: [sqsRecord('not json', 'm-bad'), sqsRecord('{"second":1}', 'm-no-id')] },
      lambdaContext(30_000),
    );

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    expect(ddbMock.calls()).toHaveLength(0);
    expect(sqsMock.calls()).toHaveLength(0);
  });

  it('settles every record of a batch that mixes outcomes, the failing one with a new message, reading their tasks in one request', async () => {
    // Prepare
    const delivered = dueTask('/ok', 'm-1');
    const failing = dueTask('/fail', 'm-2');

    // Act
    const result = await handler(
      { Records: [delivered.record, sqsRecord('garbage', 'm-3'), failing.record] },
      lambdaContext(30_000),
    );

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    expect(received.map((request) => request.path).sort()).toEqual(['/fail', '/ok']);
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(1);
    const reads = ddbMock
      .commandCalls(BatchGetCommand)
      .map((call) => Object.values(call.args[0].input.RequestItems ?? {}));
    expect(reads).toEqual([[{ Keys: [delivered.key, failing.key], ConsistentRead: true }]]);
    expect(
      ddbMock.commandCalls(GetCommand).filter((call) => call.args[0].input.Key?.pk !== tenantKey(TENANT.id).pk),
    ).toEqual([]);
  });
});
