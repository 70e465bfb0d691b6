import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { lambdaContext, stubHandlerEnv, TICK_QUEUE_URL } from './setup';

const ddbMock = mockClient(DynamoDBDocumentClient);
const sqsMock = mockClient(SQSClient);
stubHandlerEnv();
const { handler } = await import('../../../functions/ticker/handler');

describe('Function: ticker handler', () => {
  beforeEach(() => {
    ddbMock.reset();
    sqsMock.reset();
    sqsMock.on(SendMessageBatchCommand).resolves({ Failed: [] });
  });

  it('sends one tick per second of the coming minute, in six batches, delayed 0 to 59 seconds', async () => {
    // Prepare
    const firstSecond = Math.floor(Date.now() / 1000);

    // Act
    const result = await handler({}, lambdaContext(10_000));

    // Assess
    expect(result).toEqual({ ticks: 60 });
    const batches = sqsMock.commandCalls(SendMessageBatchCommand).map((call) => call.args[0].input);
    expect(batches).toHaveLength(6);
    expect(batches.every((batch) => batch.QueueUrl === TICK_QUEUE_URL && batch.Entries?.length === 10)).toBe(true);
    const entries = batches.flatMap((batch) => batch.Entries ?? []);
    const delays = entries.map((entry) => entry.DelaySeconds ?? -1).sort((a, b) => a - b);
    expect(delays).toEqual(Array.from({ length: 60 }, (_, second) => second));
    // Each tick names the second it stands for: the run's first second plus its delay.
    const offsets = new Set(
      entries.map((entry) => JSON.parse(entry.MessageBody ?? '{}').second - (entry.DelaySeconds ?? 0)),
    );
    expect(offsets.size).toBe(1);
    expect([...offsets][0]).toBeGreaterThanOrEqual(firstSecond);
    expect(ddbMock.calls()).toHaveLength(0);
  });
});
