import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { occupancyKey, taskPartitionKey, taskSecondRange } from '../../../functions/adapters/dynamo/table-schema.js';
import { loadConfig } from '../../../functions/commons/config.js';
import { bucketOf, newTaskId } from '../../../functions/core/kernel/ids.js';
import { createScannerHandler } from '../../../functions/scanner/app.js';
import {
  BUCKET_COUNT,
  EXPRESS_QUEUE_URL,
  handlerEnv,
  lambdaContext,
  LOOKAHEAD_SECONDS,
  SHARD_COUNT,
  sqsRecord,
  TABLE_NAME,
  unitHandler,
} from './setup.js';

const ddbMock = mockClient(DynamoDBDocumentClient);
const sqsMock = mockClient(SQSClient);
const handler = await unitHandler(createScannerHandler, loadConfig('scanner', handlerEnv()));

const CLOCK_KEY = { pk: 'CLOCK', sk: 'CLOCK' };
const conditionFailed = () => Object.assign(new Error('x'), { name: 'ConditionalCheckFailedException' });

/** A CLOCK item that behaves like the real one: the conditional advance moves it past the claimed seconds. */
function clockItemAt(start: number) {
  let cursor = start;
  ddbMock.on(GetCommand, { Key: CLOCK_KEY }).callsFake(() => ({ Item: { ...CLOCK_KEY, cursor, startedAt: start } }));
  ddbMock.on(UpdateCommand, { Key: CLOCK_KEY }).callsFake((input) => {
    if (input.ExpressionAttributeValues[':from'] !== cursor) throw conditionFailed();
    cursor = input.ExpressionAttributeValues[':next'];
    return {};
  });
  return { cursor: () => cursor };
}

/** The occupancy index's item for the minute of `second`, naming that second. */
function occupied(second: number) {
  ddbMock.on(BatchGetCommand).resolves({
    Responses: { [TABLE_NAME]: [{ ...occupancyKey(Math.floor(second / 60), 0), seconds: new Set([second]) }] },
  });
}

describe('Function: scanner handler', () => {
  beforeEach(() => {
    // The clock stands still, so a run cannot cross into the next second and claim it too.
    vi.useFakeTimers({ toFake: ['Date'] });
    ddbMock.reset();
    sqsMock.reset();
    ddbMock.on(QueryCommand).resolves({ Items: [] });
    ddbMock.on(PutCommand).resolves({});
    sqsMock.on(SendMessageBatchCommand).resolves({ Failed: [] });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('claims the due seconds in one write, enqueues the tasks of the occupied one and marks them scanned', async () => {
    // Prepare
    const second = Math.floor(Date.now() / 1000);
    const clock = clockItemAt(second);
    occupied(second);
    const due = [second * 1000 + 100, second * 1000 + 900].map((dueAtMs) => ({
      id: newTaskId({ fireAtMs: dueAtMs, shard: 1 }),
      dueAtMs,
    }));
    ddbMock
      .on(QueryCommand, {
        ExpressionAttributeValues: {
          ':pk': taskPartitionKey(bucketOf(second, BUCKET_COUNT), 1),
          ':from': taskSecondRange(second).from,
        },
      })
      .resolves({ Items: due });

    // Act
    const result = await handler({ Records: [sqsRecord(JSON.stringify({ second }), 'tick-1')] }, lambdaContext());

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    expect(clock.cursor()).toBeGreaterThan(second + LOOKAHEAD_SECONDS);
    const sends = sqsMock.commandCalls(SendMessageBatchCommand);
    expect(sends).toHaveLength(1);
    // The second scanned is due now, too soon for the delivery queue's batching window.
    expect(sends[0]?.args[0].input.QueueUrl).toBe(EXPRESS_QUEUE_URL);
    expect(sends[0]?.args[0].input.Entries?.map((entry) => JSON.parse(entry.MessageBody ?? '{}').id)).toEqual(
      due.map((task) => task.id),
    );
    const shardsRead = ddbMock
      .commandCalls(QueryCommand)
      .filter((query) => query.args[0].input.ExpressionAttributeValues?.[':from'] === taskSecondRange(second).from)
      .map((query) => query.args[0].input.ExpressionAttributeValues?.[':pk']);
    expect(shardsRead.sort()).toEqual(
      Array.from({ length: SHARD_COUNT }, (_, shard) => taskPartitionKey(bucketOf(second, BUCKET_COUNT), shard)).sort(),
    );
    const markers = ddbMock.commandCalls(PutCommand);
    expect(markers).toHaveLength(1);
    expect(markers[0]?.args[0].input.Item).toMatchObject({
      sk: String(second).padStart(12, '0'),
      through: clock.cursor() - 1,
      busy: { [second]: 2 },
    });
    expect(sends[0]?.calledBefore(markers[0] ?? sends[0])).toBe(true);
    expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(1);
  });

  it('claims nothing when the cursor is already past the lookahead', async () => {
    // Prepare
    const clock = clockItemAt(Math.floor(Date.now() / 1000) + LOOKAHEAD_SECONDS + 60);

    // Act
    const result = await handler({ Records: [sqsRecord('{}', 'tick-2')] }, lambdaContext());

    // Assess
    expect(result).toEqual({ batchItemFailures: [] });
    expect(ddbMock.commandCalls(UpdateCommand)).toHaveLength(0);
    expect(ddbMock.commandCalls(QueryCommand)).toHaveLength(0);
    expect(clock.cursor()).toBeGreaterThan(Date.now() / 1000);
  });
});
