/**
 * Local mode over HTTP, as a user meets it, with a receiver that answers slowly: one that answers
 * within the webhook timeout is called once per attempt and its task is DELIVERED.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DEV_API_KEY_FILE } from '../../lib/local/dev-tenant.js';
import { eventually, startWebhookReceiver } from '../support/webhook-receiver.js';
import { freePort, startLocalMode } from './local-process.js';

let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let dataDir: string;
let child: ChildProcess | undefined;
let api: string;
let headers: Record<string, string>;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'timer-slow-receiver-'));
  receiver = await startWebhookReceiver({
    '/slow': () => ({ status: 200, delayMs: 3_500 }),
  });
  const port = await freePort();
  child = await startLocalMode(port, dataDir);
  api = `http://127.0.0.1:${port}`;
  const apiKey = (await readFile(join(dataDir, DEV_API_KEY_FILE), 'utf8')).trim();
  headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await receiver?.close();
  await rm(dataDir, { recursive: true, force: true });
});

const receiptsOf = (id: string) => receiver.receipts.filter((receipt) => receipt.body.id === id);

async function statusOf(id: string): Promise<string> {
  const response = await fetch(`${api}/v1/tasks/${id}`, { headers });
  return ((await response.json()) as { status: string }).status;
}

describe('Faults: a receiver that answers slowly, in local mode', () => {
  it('calls a receiver answering 200 after 3.5 s once and records it DELIVERED, by default and with maxAttempts 1', async () => {
    // Prepare
    const put = await fetch(`${api}/v1/biz-types/one-attempt`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ maxAttempts: 1 }),
    });
    expect(put.status).toBeLessThan(300);
    const dueAt = Date.now() + 2000;
    const submit = async (bizType?: string) => {
      const body = { dueAt, target: { type: 'http', url: receiver.url('/slow') }, payload: {}, bizType };
      const created = await fetch(`${api}/v1/tasks`, { method: 'POST', headers, body: JSON.stringify(body) });
      expect(created.status).toBe(201);
      return ((await created.json()) as { id: string }).id;
    };
    const ids = [await submit(), await submit('one-attempt')];

    // Act
    const finished = async () =>
      (await Promise.all(ids.map(statusOf))).every((status) => status === 'DELIVERED' || status === 'FAILED');
    await eventually('both tasks to finish', finished, 80, 250);

    // Assess
    expect(await Promise.all(ids.map(statusOf))).toEqual(['DELIVERED', 'DELIVERED']);
    expect(ids.map((id) => receiptsOf(id).length)).toEqual([1, 1]);
  }, 60_000);
});
