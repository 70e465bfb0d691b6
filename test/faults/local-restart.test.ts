/**
 * Local mode killed with SIGKILL while tasks are in flight, then started again on the same
 * data folder: the tasks are on disk (dynalite), their queue messages were in memory
 * (fauxqs) and are gone. Nothing may be lost, and nothing delivered early.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DEV_API_KEY_FILE } from '../../lib/local/dev-tenant.js';
import { eventually, startWebhookReceiver } from '../support/webhook-receiver.js';

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

let receiver: Receiver;
let dataDir: string;
let child: ChildProcess | undefined;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts `npm start`'s entry point as its own process and waits until it prints its API URL. */
async function startLocalMode(port: number): Promise<ChildProcess> {
  const process_ = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], {
    env: { ...process.env, TIMER_PORT: String(port), TIMER_DATA_DIR: dataDir, TIMER_LOG_LEVEL: 'ERROR' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  process_.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  process_.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  await eventually(
    `local mode to start (output so far: ${output.slice(-500)})`,
    () => output.includes('Press Ctrl+C'),
    120,
    250,
  );
  return process_;
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'timer-restart-'));
  receiver = await startWebhookReceiver({
    '/ok': () => 200,
    // Fails the first attempt, so some tasks are waiting out a retry backoff when the process dies.
    '/flaky': (_, seen) => (seen === 0 ? 503 : 200),
  });
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await receiver?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('Faults: local mode killed with SIGKILL', () => {
  it('delivers every task after a restart, none early', async () => {
    // Prepare
    const port = await freePort();
    child = await startLocalMode(port);
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
    child = await startLocalMode(port);
    await eventually(
      'every task to be delivered after the restart',
      () => ids.every((id) => receiver.receipts.some((r) => r.body.id === id && r.status === 200)),
      160,
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
  }, 120_000);
});
