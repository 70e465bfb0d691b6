import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';

import { minutePlanKey, OCCUPANCY_SLOTS } from '../../../functions/adapters/dynamo/table-schema.js';
import { loadConfig } from '../../../functions/commons/config.js';
import { ENV } from '../../../functions/contract/topology.js';
import { createTickerHandler } from '../../../functions/ticker/app.js';
import { handlerEnv, lambdaContext, LOOKAHEAD_SECONDS, TICK_QUEUE_URL, unitHandler } from './setup.js';

const ddbMock = mockClient(DynamoDBDocumentClient);
const sqsMock = mockClient(SQSClient);
const handler = await unitHandler(createTickerHandler, loadConfig('ticker', handlerEnv()));
const denseHandler = await unitHandler(
  createTickerHandler,
  loadConfig('ticker', { ...handlerEnv(), [ENV.tickEverySecond]: 'true' }),
);

describe('Function: ticker handler', () => {
  beforeEach(() => {
    ddbMock.reset();
    sqsMock.reset();
    sqsMock.on(SendMessageBatchCommand).resolves({ Failed: [] });
  });

  it('plans this minute and the next and sends one tick per occupied second, none for empty ones', async () => {
    // Prepare: the next minute has tasks in two seconds; this minute has none.
    const nextMinute = Math.floor(Date.now() / 60_000) + 1;
    const busy = [nextMinute * 60 + 5, nextMinute * 60 + 30];
    ddbMock.on(UpdateCommand).resolves({});
    ddbMock
      .on(UpdateCommand, { Key: { sk: String(nextMinute * 60).padStart(12, '0') } })
      .resolves({ Attributes: { seconds: new Set(busy) } });

    // Act
    const result = await handler({}, lambdaContext(10_000));

    // Assess
    expect(result).toEqual({ ticks: 2 });
    const plans = ddbMock.commandCalls(UpdateCommand).map((call) => call.args[0].input);
    expect(plans).toHaveLength(2 * OCCUPANCY_SLOTS);
    expect(
      plans.every((plan) => plan.UpdateExpression?.includes('planned = :planned') && plan.ReturnValues === 'ALL_OLD'),
    ).toBe(true);
    const entries = sqsMock.commandCalls(SendMessageBatchCommand).flatMap((call) => {
      expect(call.args[0].input.QueueUrl).toBe(TICK_QUEUE_URL);
      return call.args[0].input.Entries ?? [];
    });
    expect(entries.map((entry) => JSON.parse(entry.MessageBody ?? '{}').second)).toEqual(busy);
    // Each surfaces the lookahead before its second, never earlier, and before the second itself.
    for (const entry of entries) {
      const second = JSON.parse(entry.MessageBody ?? '{}').second as number;
      expect(Date.now() / 1000 + (entry.DelaySeconds ?? 0)).toBeLessThanOrEqual(second);
      expect(Date.now() / 1000 + (entry.DelaySeconds ?? 0)).toBeGreaterThanOrEqual(second - LOOKAHEAD_SECONDS);
    }
  });

  it('sends nothing when the minutes it plans are empty', async () => {
    // Prepare
    ddbMock.on(UpdateCommand).resolves({});

    // Act
    const result = await handler({}, lambdaContext(10_000));

    // Assess
    expect(result).toEqual({ ticks: 0 });
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it('in dense mode, ticks all 60 seconds of a minute it plans first, with one write per minute', async () => {
    // Prepare: a previous run planned this minute; the next one is new.
    const thisMinute = Math.floor(Date.now() / 60_000);
    ddbMock.on(UpdateCommand).resolves({});
    ddbMock.on(UpdateCommand, { Key: minutePlanKey(thisMinute) }).resolves({ Attributes: { planned: true } });

    // Act
    const result = await denseHandler({}, lambdaContext(10_000));

    // Assess
    expect(result).toEqual({ ticks: 60 });
    expect(ddbMock.commandCalls(UpdateCommand).map((call) => call.args[0].input.Key)).toEqual([
      minutePlanKey(thisMinute),
      minutePlanKey(thisMinute + 1),
    ]);
    const seconds = sqsMock
      .commandCalls(SendMessageBatchCommand)
      .flatMap((call) => call.args[0].input.Entries ?? [])
      .map((entry) => JSON.parse(entry.MessageBody ?? '{}').second);
    expect(seconds).toEqual(Array.from({ length: 60 }, (_, offset) => (thisMinute + 1) * 60 + offset));
  });
});
