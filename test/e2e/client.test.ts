import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TimerApiError, TimerClient, verifyWebhook } from '../../lib/client/client.js';
import { LOCAL_TABLE_NAME, type LocalTimer } from '../../lib/local/runtime.js';
import { startTestTimer } from '../support/local-timer-fixture.js';
import { eventually, startWebhookReceiver } from '../support/webhook-receiver.js';

let timer: LocalTimer;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;

beforeAll(async () => {
  timer = await startTestTimer();
  receiver = await startWebhookReceiver({ '/hook': () => 204 });
});

afterAll(async () => {
  await receiver?.close();
  await timer?.stop();
});

const countTasks = async () =>
  (
    await timer.dynamo.send(
      new ScanCommand({ TableName: LOCAL_TABLE_NAME, FilterExpression: 'attribute_exists(id)', Select: 'COUNT' }),
    )
  ).Count ?? 0;

describe('Class: TimerClient (against local mode)', () => {
  it('schedules, reads and cancels a task', async () => {
    // Prepare
    const client = new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey });

    // Act
    const created = await client.schedule({
      delaySeconds: 600,
      target: { type: 'http', url: receiver.url('/hook') },
      bizId: 'order-7',
    });
    const read = await client.get(created.id);
    const cancelled = await client.cancel(created.id);
    const unknown = await client.get('0000000000000000000000000Z');

    // Assess
    expect(created.status).toBe('PENDING');
    expect(read).toMatchObject({ id: created.id, status: 'PENDING', bizId: 'order-7' });
    expect(cancelled.status).toBe('CANCELLED');
    expect(unknown).toBeUndefined();
  });

  it('retries a submit whose answer was lost without creating a second task', async () => {
    // Prepare: the first answer never reaches the client, though the request did reach the API.
    let lost = 0;
    const losingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (lost++ === 0) throw new TypeError('fetch failed: socket hang up (simulated)');
      return response;
    };
    const client = new TimerClient({
      baseUrl: timer.apiUrl,
      apiKey: timer.apiKey,
      fetch: losingFetch,
      retryDelayMs: 10,
    });
    const before = await countTasks();

    // Act
    const task = await client.schedule({ delaySeconds: 600, target: { type: 'http', url: receiver.url('/hook') } });

    // Assess
    expect(lost).toBe(2);
    expect(await countTasks()).toBe(before + 1);
    expect((await client.get(task.id))?.id).toBe(task.id);
  });

  it('answers a keyed retry with what the create answered, though the task was cancelled since', async () => {
    // Prepare
    const client = new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey });
    const request = {
      dueAt: Date.now() + 600_000,
      target: { type: 'http' as const, url: receiver.url('/hook') },
      idempotencyKey: `cancelled-${Date.now()}`,
    };
    const created = await client.schedule(request);
    await client.cancel(created.id);

    // Act
    const replayed = await client.schedule(request);
    const reused = await client.schedule({ ...request, payload: { other: true } }).catch((error: unknown) => error);

    // Assess
    expect(replayed).toEqual(created);
    expect((await client.get(created.id))?.status).toBe('CANCELLED');
    expect((reused as TimerApiError).status).toBe(409);
    expect((reused as TimerApiError).problem?.errors?.[0]?.path).toBe('idempotencyKey');
  });

  it('surfaces the problem details of a refused request, naming the field', async () => {
    // Prepare
    const client = new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey });

    // Act
    const refused = await client
      .schedule({ delaySeconds: 10, target: { type: 'http', url: 'ftp://example.com' } })
      .catch((error: unknown) => error);

    // Assess
    expect(refused).toBeInstanceOf(TimerApiError);
    expect((refused as TimerApiError).status).toBe(400);
    expect((refused as TimerApiError).problem?.errors).toEqual([
      { path: 'target.url', message: 'must use http:// or https://' },
    ]);
  });

  it('serves its OpenAPI document at GET /v1/openapi.json, to callers with a key', async () => {
    // Act
    const anonymous = await fetch(`${timer.apiUrl}/v1/openapi.json`);
    const response = await fetch(`${timer.apiUrl}/v1/openapi.json`, {
      headers: { authorization: `Bearer ${timer.apiKey}` },
    });
    const document = (await response.json()) as { openapi: string; paths: Record<string, unknown> };

    // Assess
    expect(anonymous.status).toBe(401);
    expect(response.status).toBe(200);
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toContain('/v1/tasks/{id}');
  });

  it('lists tasks by bizType page after page, and by status', async () => {
    // Prepare
    const client = new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey });
    const result = await client.scheduleBatch(
      Array.from({ length: 12 }, () => ({
        delaySeconds: 600,
        target: { type: 'http' as const, url: receiver.url('/hook') },
        bizType: 'e2e-list',
      })),
    );
    const ids = result.results.flatMap((item) => ('task' in item ? [item.task.id] : []));
    await client.cancel(ids[0] ?? '');

    // Act
    const listed: string[] = [];
    for await (const task of client.tasks({ bizType: 'e2e-list', limit: 5 })) listed.push(task.id);
    const cancelled = await client.list({ bizType: 'e2e-list', status: 'CANCELLED' });
    const forged = await client.list({ bizType: 'e2e-list', cursor: 'not-a-cursor' }).catch((error: unknown) => error);

    // Assess
    expect(listed.sort()).toEqual([...ids].sort());
    expect(cancelled.tasks.map((task) => task.id)).toEqual([ids[0]]);
    expect((forged as TimerApiError).problem?.errors?.[0]?.path).toBe('cursor');
  });

  it('reschedules a task: the old one is cancelled, the new one is delivered with its history', async () => {
    // Prepare
    const client = new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey });
    const original = await client.schedule({
      delaySeconds: 600,
      target: { type: 'http', url: receiver.url('/hook') },
      payload: { v: 1 },
    });

    // Act
    const moved = await client.reschedule(original.id, { delaySeconds: 1, payload: { v: 2 } });
    const again = await client.reschedule(original.id, { delaySeconds: 1, payload: { v: 2 } });
    await eventually(
      'the rescheduled task to be delivered',
      async () => (await client.get(moved.id))?.status === 'DELIVERED',
    );
    const old = await client.get(original.id);
    const delivered = await client.get(moved.id);

    // Assess
    expect(moved).toMatchObject({ rescheduledFrom: original.id, status: 'PENDING', payload: { v: 2 } });
    expect(again.id).toBe(moved.id);
    expect(old).toMatchObject({ status: 'CANCELLED', rescheduledTo: moved.id });
    expect(delivered?.history).toEqual([expect.objectContaining({ attempt: 1, statusCode: 204 })]);
    expect(receiver.receipts.filter((receipt) => receipt.body.id === original.id)).toEqual([]);
  });

  it('reports each batch item on its own', async () => {
    // Prepare
    const client = new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey });

    // Act
    const result = await client.scheduleBatch([
      { delaySeconds: 600, target: { type: 'http', url: receiver.url('/hook') } },
      { delaySeconds: -1, target: { type: 'http', url: receiver.url('/hook') } },
    ]);

    // Assess
    expect(result).toMatchObject({ created: 1, rejected: 1 });
    expect(result.results.map((item) => item.status)).toEqual([201, 400]);
  });

  describe('schedule() batching', () => {
    /** A client whose requests are counted by path, as they leave it. */
    const countingClient = () => {
      const paths: string[] = [];
      const counting: typeof fetch = (input, init) => {
        paths.push(new URL(String(input)).pathname);
        return fetch(input, init);
      };
      return { client: new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey, fetch: counting }), paths };
    };
    const hookTask = () => ({ delaySeconds: 600, target: { type: 'http' as const, url: receiver.url('/hook') } });

    it('sends a lone call at once, as a single submit', async () => {
      // Prepare
      const { client, paths } = countingClient();

      // Act
      const pending = client.schedule(hookTask());
      const sentBeforeAnyWait = [...paths];
      const task = await pending;

      // Assess
      expect(sentBeforeAnyWait).toEqual(['/v1/tasks']);
      expect(task.status).toBe('PENDING');
    });

    it('sends 250 concurrent calls as at most 4 requests, each call answered with its own task', async () => {
      // Prepare
      const { client, paths } = countingClient();
      const before = await countTasks();

      // Act
      const tasks = await Promise.all(Array.from({ length: 250 }, () => client.schedule(hookTask())));

      // Assess: the first alone, then full batches while it is in flight, then the rest.
      expect(paths.length).toBeLessThanOrEqual(4);
      expect(paths.filter((path) => path === '/v1/tasks/batch').length).toBeGreaterThan(0);
      expect(new Set(tasks.map((task) => task.id)).size).toBe(250);
      expect(await countTasks()).toBe(before + 250);
      // 250 writes on local mode take seconds on a busy machine.
    }, 60_000);

    it("rejects only the caller of an invalid task in a batch, naming its field; the others' tasks are made", async () => {
      // Prepare
      const { client, paths } = countingClient();
      const invalid = { delaySeconds: 10, target: { type: 'http' as const, url: 'ftp://example.com' } };

      // Act: the first goes alone; the three made while it is in flight go as one batch.
      const outcomes = await Promise.allSettled([
        client.schedule(hookTask()),
        client.schedule(hookTask()),
        client.schedule(invalid),
        client.schedule(hookTask()),
      ]);

      // Assess
      expect(paths).toEqual(['/v1/tasks', '/v1/tasks/batch']);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      const refused = (outcomes[2] as PromiseRejectedResult).reason as TimerApiError;
      expect(refused).toBeInstanceOf(TimerApiError);
      expect(refused.status).toBe(400);
      expect(refused.problem?.errors).toEqual([{ path: 'target.url', message: 'must use http:// or https://' }]);
    });

    it('rejects every caller in a batch the API refused as a whole', async () => {
      // Prepare: a key the API does not know, so every request is refused.
      const client = new TimerClient({ baseUrl: timer.apiUrl, apiKey: 'tk_not-a-real-key', attempts: 1 });

      // Act
      const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => client.schedule(hookTask())));

      // Assess
      expect(outcomes.every((outcome) => outcome.status === 'rejected')).toBe(true);
      expect(outcomes.map((outcome) => ((outcome as PromiseRejectedResult).reason as TimerApiError).status)).toEqual([
        401, 401, 401, 401, 401,
      ]);
    });
  });

  it('gives receivers a verify helper that accepts the real signature and nothing else', async () => {
    // Prepare
    const client = new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey });
    await client.schedule({
      delaySeconds: 0,
      target: { type: 'http', url: receiver.url('/hook') },
      payload: { ok: true },
    });

    // Act
    await eventually('the webhook to arrive', () =>
      receiver.receipts.some((receipt) => receipt.body.payload !== undefined),
    );
    const [receipt] = receiver.receipts;

    // Assess
    expect(receipt && verifyWebhook(timer.signingSecret, receipt.headers, receipt.rawBody)).toBe(true);
    expect(receipt && verifyWebhook(timer.signingSecret, receipt.headers, `${receipt.rawBody} `)).toBe(false);
  });
});
