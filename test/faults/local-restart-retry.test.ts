/**
 * Local mode killed with SIGKILL while a retry waits out its backoff and a dead letter is
 * listed: both are on disk, and both survive the restart as they were.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';

import type { TaskItem } from '../../functions/adapters/dynamo/table-schema.js';
import type { ConsoleDlqView, RedriveResult } from '../../lib/local/console/wire.js';
import { localDynamoClients } from '../../lib/local/dynamodb.js';
import { LOCAL_ENDPOINTS_FILE, type LocalEndpoints } from '../../lib/local/endpoints.js';
import { LOCAL_CONSOLE_DLQ_PATH, LOCAL_REDRIVE_PATH } from '../../lib/local/paths.js';
import { eventually } from '../support/webhook-receiver.js';
import { killedLocalMode, startLocalMode, startOnFreePort } from './local-process.js';

const local = killedLocalMode('restart-retry', {
  '/flaky-long': (_, seen) => (seen === 0 ? 503 : 200),
  '/flaky-short': (_, seen) => (seen === 0 ? 503 : 200),
  '/flaky-once': (_, seen) => (seen === 0 ? 503 : 200),
});

describe('Faults: local mode killed with SIGKILL', () => {
  it('keeps a retry waiting out its backoff and a dead letter listed and redrivable across a restart', async () => {
    // Prepare: three bizTypes: a five-minute backoff, a 15 s one, and a single attempt (straight to the DLQ).
    const { port, child, api, headers } = await startOnFreePort(local);
    const bizTypes = {
      'five-minutes': { maxAttempts: 3, backoffBaseSeconds: 300, backoffMaxSeconds: 300 },
      'fifteen-seconds': { maxAttempts: 3, backoffBaseSeconds: 15, backoffMaxSeconds: 15 },
      'one-attempt': { maxAttempts: 1 },
    };
    for (const [bizType, settings] of Object.entries(bizTypes)) {
      const put = await fetch(`${api}/v1/biz-types/${bizType}`, {
        method: 'PUT',
        headers,
        body: JSON.stringify(settings),
      });
      expect(put.status).toBeLessThan(300);
    }
    const dueAt = Date.now() + 2000;
    const submit = async (bizType: keyof typeof bizTypes, path: string) => {
      const body = { dueAt, bizType, target: { type: 'http', url: local.receiver.url(path) }, payload: { bizType } };
      const created = await fetch(`${api}/v1/tasks`, { method: 'POST', headers, body: JSON.stringify(body) });
      expect(created.status).toBe(201);
      return ((await created.json()) as { id: string }).id;
    };
    const [long, short, dead] = [
      await submit('five-minutes', '/flaky-long'),
      await submit('fifteen-seconds', '/flaky-short'),
      await submit('one-attempt', '/flaky-once'),
    ];
    const receiptsOf = (id: string) => local.receiver.receipts.filter((receipt) => receipt.body.id === id);
    const dlq = async () => (await (await fetch(`${api}${LOCAL_CONSOLE_DLQ_PATH}`)).json()) as ConsoleDlqView;
    await eventually('each task to have failed its first attempt', () =>
      [long, short, dead].every((id) => receiptsOf(id).length === 1),
    );
    await eventually('the dead letter to be listed', async () => (await dlq()).messages === 1, 40, 250);
    // The kill must land on retries that wait, not on attempts still being recorded: beside a second
    // npm test, one was killed between its call and its write and came back DELIVERING (leased).
    const stateOf = async (id: string) =>
      (await (await fetch(`${api}/v1/tasks/${id}`, { headers })).json()) as { status: string; attempts: number };
    await eventually('each retry to be recorded', async () =>
      (await Promise.all([long, short].map(stateOf))).every((task) => task.status === 'PENDING' && task.attempts === 1),
    );

    // Act: kill it while one task waits five minutes, one fifteen seconds, and one sits in the DLQ.
    child.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    local.child = await startLocalMode(port, local.dataDir);

    // Assess: the dead letter is still listed.
    const listed = await dlq();
    expect(listed.messages).toBe(1);
    expect(listed.letters.map((letter) => letter.taskId)).toEqual([dead]);

    // The short retry comes no earlier than its backoff, measured from the failed attempt.
    await eventually('the 15 s retry to be delivered', () => receiptsOf(short).length === 2, 120, 250);
    const [firstShort, secondShort] = receiptsOf(short);
    expect((secondShort?.receivedAtMs ?? 0) - (firstShort?.receivedAtMs ?? 0)).toBeGreaterThanOrEqual(15_000);

    // The five-minute retry was not brought forward by the restart: no second attempt yet, and it
    // is scheduled (in the table, which the restart's requeue honours) five minutes after the first.
    expect(receiptsOf(long)).toHaveLength(1);
    const endpoints = JSON.parse(await readFile(join(local.dataDir, LOCAL_ENDPOINTS_FILE), 'utf8')) as LocalEndpoints;
    const { dynamo } = localDynamoClients(endpoints.dynamodbEndpoint);
    const scanned = await dynamo.send(
      new ScanCommand({
        TableName: endpoints.tableName,
        FilterExpression: 'id = :id',
        ExpressionAttributeValues: { ':id': long },
        ConsistentRead: true,
      }),
    );
    const [longItem] = (scanned.Items ?? []) as TaskItem[];
    expect(longItem?.status).toBe('PENDING');
    expect(longItem?.retryAtMs).toBeGreaterThanOrEqual((receiptsOf(long)[0]?.receivedAtMs ?? 0) + 300_000);

    // The dead letter can be redriven, and its task is delivered.
    const redriven = (await (await fetch(`${api}${LOCAL_REDRIVE_PATH}`, { method: 'POST' })).json()) as RedriveResult;
    expect(redriven.taskIds).toEqual([dead]);
    await eventually(
      'the redriven task to be delivered',
      () => receiptsOf(dead).some((r) => r.status === 200),
      80,
      250,
    );
    console.log(
      `fault "local process SIGKILLed with a retry waiting and a dead letter": 15 s retry after ${(secondShort?.receivedAtMs ?? 0) - (firstShort?.receivedAtMs ?? 0)} ms, five-minute retry at +${(longItem?.retryAtMs ?? 0) - (receiptsOf(long)[0]?.receivedAtMs ?? 0)} ms, dead letter listed and redriven`,
    );
  }, 120_000);
});
