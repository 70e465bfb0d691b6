/**
 * Local mode killed with SIGKILL while tasks are in flight, then started again on the same
 * data folder: the tasks are on disk (dynalite), their queue messages were in memory
 * (fauxqs) and are gone. Nothing may be lost, and nothing delivered early.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { TaskItem } from '../../functions/adapters/dynamo/table-schema.js';
import type { ConsoleDlqView, RedriveResult } from '../../lib/local/console/wire.js';
import { DEV_API_KEY_FILE } from '../../lib/local/dev-tenant.js';
import { localDynamoClients } from '../../lib/local/dynamodb.js';
import { LOCAL_ENDPOINTS_FILE, type LocalEndpoints } from '../../lib/local/endpoints.js';
import { LOCAL_CONSOLE_DLQ_PATH, LOCAL_REDRIVE_PATH } from '../../lib/local/paths.js';
import { eventually, startWebhookReceiver } from '../support/webhook-receiver.js';
import { freePort, startLocalMode } from './local-process.js';

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

let receiver: Receiver;
let dataDir: string;
/** The second test's own data, so it neither restores the first test's tasks nor shares its store. */
let retryDataDir: string;
/** The schedule test's own data. */
let scheduleDataDir: string;
let child: ChildProcess | undefined;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'timer-restart-'));
  retryDataDir = await mkdtemp(join(tmpdir(), 'timer-restart-retry-'));
  scheduleDataDir = await mkdtemp(join(tmpdir(), 'timer-restart-schedule-'));
  receiver = await startWebhookReceiver({
    '/ok': () => 200,
    // Fails the first attempt, so some tasks are waiting out a retry backoff when the process dies.
    '/flaky': (_, seen) => (seen === 0 ? 503 : 200),
    '/flaky-long': (_, seen) => (seen === 0 ? 503 : 200),
    '/flaky-short': (_, seen) => (seen === 0 ? 503 : 200),
    '/flaky-once': (_, seen) => (seen === 0 ? 503 : 200),
    '/every-2s': () => 200,
  });
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await receiver?.close();
  await rm(dataDir, { recursive: true, force: true });
  await rm(retryDataDir, { recursive: true, force: true });
  await rm(scheduleDataDir, { recursive: true, force: true });
});

describe('Faults: local mode killed with SIGKILL', () => {
  it('delivers every task after a restart, none early', async () => {
    // Prepare
    const port = await freePort();
    child = await startLocalMode(port, dataDir);
    const start = Date.now();
    const tasks = Array.from({ length: 60 }, (_, index) => ({
      dueAt: start + 1500 + index * 150,
      target: { type: 'http', url: receiver.url(index % 4 === 0 ? '/flaky' : '/ok') },
      payload: { index },
      idempotencyKey: `restart-${index}`,
    }));
    // The first start made the development tenant's key and kept it in the data folder.
    const apiKey = (await readFile(join(dataDir, DEV_API_KEY_FILE), 'utf8')).trim();
    const created = await fetch(`http://127.0.0.1:${port}/v1/tasks/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ tasks }),
    });
    expect(created.status).toBe(201);
    const ids = ((await created.json()) as { results: Array<{ task: { id: string } }> }).results.map((r) => r.task.id);

    // Act: kill it hard while deliveries are under way, then start it again on the same data.
    await eventually('some tasks to be delivered', () => receiver.receipts.length >= 10, 100, 100);
    child.kill('SIGKILL');
    const deliveredBeforeKill = new Set(receiver.receipts.filter((r) => r.status === 200).map((r) => r.body.id)).size;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    child = await startLocalMode(port, dataDir);
    // A task whose attempt the kill cut short stays DELIVERING under its 60 s lease (it may have
    // reached the target), so its message is re-sent for the lease's end: wait that out too.
    await eventually(
      'every task to be delivered after the restart',
      () => ids.every((id) => receiver.receipts.some((r) => r.body.id === id && r.status === 200)),
      360,
      250,
    );

    // Assess
    const delivered = receiver.receipts.filter((r) => r.status === 200);
    const early = receiver.receipts.filter((r) => r.receivedAtMs < Date.parse(r.body.dueAt));
    const deliveredIds = new Set(delivered.map((r) => r.body.id));
    const lost = ids.filter((id) => !deliveredIds.has(id));
    console.log(
      `fault "local process SIGKILLed and restarted": submitted ${ids.length}, delivered ${deliveredIds.size} (${deliveredBeforeKill} before the kill), duplicates ${delivered.length - deliveredIds.size}, lost ${lost.length}, early ${early.length}`,
    );
    expect(deliveredBeforeKill).toBeLessThan(ids.length);
    expect(lost).toEqual([]);
    expect(early).toEqual([]);
  }, 200_000);

  it('keeps a retry waiting out its backoff and a dead letter listed and redrivable across a restart', async () => {
    // Prepare: three bizTypes: a five-minute backoff, a 15 s one, and a single attempt (straight to the DLQ).
    child?.kill('SIGKILL');
    const port = await freePort();
    child = await startLocalMode(port, retryDataDir);
    const api = `http://127.0.0.1:${port}`;
    const apiKey = (await readFile(join(retryDataDir, DEV_API_KEY_FILE), 'utf8')).trim();
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
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
      const body = { dueAt, bizType, target: { type: 'http', url: receiver.url(path) }, payload: { bizType } };
      const created = await fetch(`${api}/v1/tasks`, { method: 'POST', headers, body: JSON.stringify(body) });
      expect(created.status).toBe(201);
      return ((await created.json()) as { id: string }).id;
    };
    const [long, short, dead] = [
      await submit('five-minutes', '/flaky-long'),
      await submit('fifteen-seconds', '/flaky-short'),
      await submit('one-attempt', '/flaky-once'),
    ];
    const receiptsOf = (id: string) => receiver.receipts.filter((receipt) => receipt.body.id === id);
    const dlq = async () => (await (await fetch(`${api}${LOCAL_CONSOLE_DLQ_PATH}`)).json()) as ConsoleDlqView;
    await eventually('each task to have failed its first attempt', () =>
      [long, short, dead].every((id) => receiptsOf(id).length === 1),
    );
    await eventually('the dead letter to be listed', async () => (await dlq()).messages === 1, 40, 250);

    // Act: kill it while one task waits five minutes, one fifteen seconds, and one sits in the DLQ.
    child.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    child = await startLocalMode(port, retryDataDir);

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
    const endpoints = JSON.parse(await readFile(join(retryDataDir, LOCAL_ENDPOINTS_FILE), 'utf8')) as LocalEndpoints;
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

  it('keeps a schedule firing across a SIGKILL, with no occurrence skipped or doubled', async () => {
    // Prepare: a schedule every 2 s, with a few occurrences delivered before the kill.
    child?.kill('SIGKILL');
    const port = await freePort();
    child = await startLocalMode(port, scheduleDataDir);
    const api = `http://127.0.0.1:${port}`;
    const apiKey = (await readFile(join(scheduleDataDir, DEV_API_KEY_FILE), 'utf8')).trim();
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
    const created = await fetch(`${api}/v1/schedules`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ rate: '2 seconds', target: { type: 'http', url: receiver.url('/every-2s') } }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const receipts = () => receiver.receipts.filter((receipt) => receipt.body.scheduleId === id);
    const occurrenceTimes = () => [...new Set(receipts().map((receipt) => Date.parse(receipt.body.occurrence ?? '')))];
    await eventually('three occurrences before the kill', () => occurrenceTimes().length >= 3, 80, 250);

    // Act: kill it between occurrences, wait more than an interval, start it again.
    child.kill('SIGKILL');
    const killedAtMs = Date.now();
    const beforeKill = occurrenceTimes().length;
    await new Promise((resolve) => setTimeout(resolve, 3000));
    child = await startLocalMode(port, scheduleDataDir);
    // An occurrence the kill cut short mid-attempt holds its 60 s lease first, as any task does.
    await eventually(
      'occurrences well past the kill',
      () => Math.max(...occurrenceTimes()) > killedAtMs + 10_000,
      400,
      250,
    );
    await fetch(`${api}/v1/schedules/${id}`, { method: 'DELETE', headers });

    // Assess: every occurrence from the first to the last, each under one task id, none early.
    const times = occurrenceTimes().sort((a, b) => a - b);
    const first = times[0] ?? 0;
    const expected = Array.from({ length: times.length }, (_, index) => first + index * 2000);
    const idsByTime = new Map<number, Set<string>>();
    for (const receipt of receipts()) {
      const atMs = Date.parse(receipt.body.occurrence ?? '');
      idsByTime.set(atMs, (idsByTime.get(atMs) ?? new Set()).add(receipt.body.id));
    }
    const doubled = [...idsByTime.values()].filter((ids) => ids.size > 1);
    const early = receipts().filter((receipt) => receipt.receivedAtMs < Date.parse(receipt.body.occurrence ?? ''));
    console.log(
      `fault "local process SIGKILLed with a schedule every 2 s": ${times.length} occurrences (${beforeKill} before the kill), skipped ${expected.filter((at) => !idsByTime.has(at)).length}, doubled ${doubled.length}, duplicate deliveries ${receipts().length - times.length}, early ${early.length}`,
    );
    expect(times).toEqual(expected);
    expect(doubled).toEqual([]);
    expect(early).toEqual([]);
  }, 180_000);
});
