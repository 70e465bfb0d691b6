/**
 * Local mode killed with SIGKILL while tasks are in flight, then started again on the same
 * data folder: the tasks are on disk (dynalite), their queue messages were in memory
 * (fauxqs) and are gone. Nothing may be lost, and nothing delivered early.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { DEV_API_KEY_FILE } from '../../lib/local/dev-tenant.js';
import { eventually } from '../support/webhook-receiver.js';
import { freePort, killedLocalMode, startLocalMode } from './local-process.js';

const local = killedLocalMode('restart', {
  '/ok': () => 200,
  // Fails the first attempt, so some tasks are waiting out a retry backoff when the process dies.
  '/flaky': (_, seen) => (seen === 0 ? 503 : 200),
});

describe('Faults: local mode killed with SIGKILL', () => {
  it('delivers every task after a restart, none early', async () => {
    // Prepare
    const port = await freePort();
    local.child = await startLocalMode(port, local.dataDir);
    const start = Date.now();
    const tasks = Array.from({ length: 60 }, (_, index) => ({
      dueAt: start + 1500 + index * 150,
      target: { type: 'http', url: local.receiver.url(index % 4 === 0 ? '/flaky' : '/ok') },
      payload: { index },
      idempotencyKey: `restart-${index}`,
    }));
    // The first start made the development tenant's key and kept it in the data folder.
    const apiKey = (await readFile(join(local.dataDir, DEV_API_KEY_FILE), 'utf8')).trim();
    const created = await fetch(`http://127.0.0.1:${port}/v1/tasks/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ tasks }),
    });
    expect(created.status).toBe(201);
    const ids = ((await created.json()) as { results: Array<{ task: { id: string } }> }).results.map((r) => r.task.id);

    // Act: kill it hard while deliveries are under way, then start it again on the same data.
    await eventually('some tasks to be delivered', () => local.receiver.receipts.length >= 10, 100, 100);
    local.child.kill('SIGKILL');
    const deliveredBeforeKill = new Set(local.receiver.receipts.filter((r) => r.status === 200).map((r) => r.body.id))
      .size;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    local.child = await startLocalMode(port, local.dataDir);
    // A task whose attempt the kill cut short stays DELIVERING under its 60 s lease (it may have
    // reached the target), so its message is re-sent for the lease's end: wait that out too.
    await eventually(
      'every task to be delivered after the restart',
      () => ids.every((id) => local.receiver.receipts.some((r) => r.body.id === id && r.status === 200)),
      360,
      250,
    );

    // Assess
    const delivered = local.receiver.receipts.filter((r) => r.status === 200);
    const early = local.receiver.receipts.filter((r) => r.receivedAtMs < Date.parse(r.body.dueAt));
    const deliveredIds = new Set(delivered.map((r) => r.body.id));
    const lost = ids.filter((id) => !deliveredIds.has(id));
    console.log(
      `fault "local process SIGKILLed and restarted": submitted ${ids.length}, delivered ${deliveredIds.size} (${deliveredBeforeKill} before the kill), duplicates ${delivered.length - deliveredIds.size}, lost ${lost.length}, early ${early.length}`,
    );
    expect(deliveredBeforeKill).toBeLessThan(ids.length);
    expect(lost).toEqual([]);
    expect(early).toEqual([]);
  }, 200_000);
});
