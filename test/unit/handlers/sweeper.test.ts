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
import { beforeEach, describe, expect, it } from 'vitest';

import { occupancyKey, taskPartitionKey, taskSecondRange } from '../../../functions/adapters/dynamo/table-schema.js';
import { loadConfig } from '../../../functions/commons/config.js';
import { bucketOf, newTaskId } from '../../../functions/core/kernel/ids.js';
import { createSweeperHandler } from '../../../functions/sweeper/app.js';
import { BUCKET_COUNT, EXPRESS_QUEUE_URL, handlerEnv, lambdaContext, TABLE_NAME, unitHandler } from './setup.js';

const ddbMock = mockClient(DynamoDBDocumentClient);
const sqsMock = mockClient(SQSClient);
const handler = await unitHandler(createSweeperHandler, loadConfig('sweeper', handlerEnv()));

const markerSk = (second: number) => String(second).padStart(12, '0');

describe('Function: sweeper handler', () => {
  beforeEach(() => {
    ddbMock.reset();
    sqsMock.reset();
    ddbMock.on(PutCommand).resolves({});
    sqsMock.on(SendMessageBatchCommand).resolves({ Failed: [] });
  });

  it('rescans the one claimed second that has no marker and marks it', async () => {
    // Prepare: ten seconds claimed before now, all finished but one, which has a task in the
    // occupancy index. The cursor is recent enough that the catch-up has nothing to claim.
    const cursor = Math.floor(Date.now() / 1000) - 5;
    const startedAt = cursor - 10;
    const unfinished = cursor - 4;
    const finished = Array.from({ length: 10 }, (_, index) => startedAt + index).filter((s) => s !== unfinished);
    const lost = { id: newTaskId({ fireAtMs: unfinished * 1000 + 250, shard: 0 }), dueAtMs: unfinished * 1000 + 250 };
    ddbMock.on(GetCommand).resolves({ Item: { pk: 'CLOCK', sk: 'CLOCK', cursor, startedAt } });
    ddbMock.on(BatchGetCommand).resolves({
      Responses: {
        [TABLE_NAME]: [{ ...occupancyKey(Math.floor(unfinished / 60), 3), seconds: new Set([unfinished]) }],
      },
    });
    // Markers and tasks share the table; scan markers live in SCANNED#<hour> partitions.
    ddbMock.on(QueryCommand).callsFake((input: { ExpressionAttributeValues?: Record<string, unknown> }) => {
      const pk = String(input.ExpressionAttributeValues?.[':pk'] ?? '');
      const [kind, hourText] = pk.split('#');
      const hour = Number(hourText);
      if (kind !== 'SCANNED') return { Items: [] };
      const inHour = finished.filter((second) => Math.floor(second / 3600) === hour);
      return { Items: inHour.map((second) => ({ sk: markerSk(second), through: second })) };
    });
    ddbMock
      .on(QueryCommand, {
        ExpressionAttributeValues: {
          ':pk': taskPartitionKey(bucketOf(unfinished, BUCKET_COUNT), 0),
          ':from': taskSecondRange(unfinished).from,
        },
      })
      .resolves({ Items: [lost] });

    // Act
    const report = await handler({}, lambdaContext(120_000));

    // Assess
    expect(report).toMatchObject({ rescanned: [unfinished], enqueued: 1 });
    const taskQueries = ddbMock
      .commandCalls(QueryCommand)
      .map((query) => query.args[0].input)
      .filter((input) => String(input.ExpressionAttributeValues?.[':pk']).startsWith('B#'));
    expect(
      taskQueries.every((input) => input.ExpressionAttributeValues?.[':from'] === taskSecondRange(unfinished).from),
    ).toBe(true);
    const sends = sqsMock.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input);
    expect(sends).toEqual([
      {
        QueueUrl: EXPRESS_QUEUE_URL,
        Entries: [{ Id: '0', MessageBody: JSON.stringify({ id: lost.id }), DelaySeconds: 0 }],
      },
    ]);
    expect(ddbMock.commandCalls(PutCommand).map((put) => put.args[0].input.Item)).toEqual([
      expect.objectContaining({ sk: markerSk(unfinished), through: unfinished, busy: { [unfinished]: 1 } }),
    ]);
    // The watermark moves past the ten seconds, and only the watermark: no task is updated.
    expect(ddbMock.commandCalls(UpdateCommand).map((update) => update.args[0].input)).toMatchObject([
      { Key: { pk: 'SWEEP', sk: 'SWEEP' }, ExpressionAttributeValues: { ':second': cursor - 1 } },
    ]);
  });
});
