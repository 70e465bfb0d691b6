/**
 * What a restart of local mode puts back into the queues fauxqs lost, from a table staged as a
 * SIGKILL leaves it while the scanner lags behind: every task that had a message (or would have
 * had one by now) is sent again at once, none early, and a task no scanner has claimed yet is left
 * to its scan.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DynamoClockStore } from '../../functions/adapters/dynamo/clock-store.js';
import { DynamoTaskStore } from '../../functions/adapters/dynamo/task-store.js';
import { DynamoTenantStore } from '../../functions/adapters/dynamo/tenant-store.js';
import { DEFAULT_SETTINGS, DELIVERY_LEASE_MS } from '../../functions/contract/topology.js';
import { secondOf } from '../../functions/core/kernel/clock.js';
import { newAttemptId } from '../../functions/core/kernel/ids.js';
import { freshTaskId, newPendingTask } from '../../functions/core/kernel/task-kernel.js';
import { newPlacement } from '../../functions/core/kernel/task-kernel.js';
import { ensureDevTenant } from '../../lib/local/dev-tenant.js';
import { DEV_TENANT_ID } from '../../lib/local/dev-tenant.js';
import {
  ensureLocalTaskTable,
  LOCAL_TABLE_NAME,
  localDynamoClients,
  startLocalDynamo,
} from '../../lib/local/dynamodb.js';
import { type LocalTimer, startLocalTimer } from '../../lib/local/runtime.js';
import { eventually, startWebhookReceiver } from '../support/webhook-receiver.js';

let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let dataDir: string;
let timer: LocalTimer | undefined;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'timer-restart-recovery-'));
  receiver = await startWebhookReceiver({ '/ok': () => 200 });
});

afterAll(async () => {
  await timer?.stop();
  await receiver?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('Faults: the messages a restart of local mode restores', () => {
  it('re-enqueues at once the leased, directly enqueued and retrying tasks of seconds the lagging scanner has not claimed, none early, and no task a receipt names', async () => {
    // Prepare: the table as a SIGKILL leaves it, the scan cursor 20 s behind.
    const dynalite = await startLocalDynamo(dataDir);
    const { raw, dynamo } = localDynamoClients(dynalite.endpoint);
    await ensureLocalTaskTable(raw);
    await ensureDevTenant(new DynamoTenantStore({ client: dynamo, tableName: LOCAL_TABLE_NAME }), dataDir, Date.now());
    const nowMs = Date.now();
    await new DynamoClockStore({ client: dynamo, tableName: LOCAL_TABLE_NAME }).start(secondOf(nowMs) - 20);
    const store = new DynamoTaskStore({
      client: dynamo,
      tableName: LOCAL_TABLE_NAME,
      bucketCount: DEFAULT_SETTINGS.bucketCount,
    });
    const placement = newPlacement();
    const stage = async (fireAtMs: number, createdAtMs: number) => {
      const id = freshTaskId({ ...DEFAULT_SETTINGS, placement }, fireAtMs);
      const content = {
        tenantId: DEV_TENANT_ID,
        dueAtMs: fireAtMs,
        target: { type: 'http' as const, url: receiver.url('/ok') },
        payloadJson: '{}',
      };
      const entry = newPendingTask(DEFAULT_SETTINGS, id, content, createdAtMs);
      await store.create(entry.task, entry.address);
      return entry;
    };
    const leaseUntilMs = nowMs + DELIVERY_LEASE_MS;
    const retryAtMs = nowMs + 4000;
    // A late arrival whose attempt the kill cut short: DELIVERING under a lease that would run another minute.
    const leased = await stage(nowMs - 5000, nowMs - 6000);
    await store.claimDelivery(leased.address, nowMs, leaseUntilMs, newAttemptId());
    // A late arrival enqueued directly and not yet attempted.
    const late = await stage(nowMs - 3000, nowMs - 4000);
    // A late arrival whose first attempt failed, waiting out its backoff.
    const retrying = await stage(nowMs - 4000, nowMs - 5000);
    await store.claimDelivery(retrying.address, nowMs - 3500, nowMs + 60_000, newAttemptId());
    await store.finishDelivery(retrying.address, 1, {
      status: 'PENDING',
      lastError: 'HTTP 503',
      history: [],
      retryAtMs,
    });
    // A task in a second the scanner claimed before the kill.
    const claimed = await stage(nowMs - 25_000, nowMs - 600_000);
    // One in the same second, delivered before the kill: its receipt says so, its item is PENDING.
    const receipted = await stage(nowMs - 25_000, nowMs - 600_000);
    await store.recordReceipt({
      id: newAttemptId(),
      second: secondOf(receipted.task.fireAtMs),
      delivered: new Map([[receipted.task.id, nowMs - 24_000]]),
      expiresAtSeconds: secondOf(nowMs) + 86_400,
    });
    // A task in a second no scanner has claimed, never attempted: left to its scan.
    const unclaimed = await stage(nowMs + 600_000, nowMs - 600_000);
    await dynalite.close();

    // Act
    timer = await startLocalTimer({ dataDir, port: 0, logLevel: 'SILENT' });

    // Assess
    expect(timer.recovered).toBe(4);
    const restored = [leased, late, retrying, claimed].map((entry) => entry.task.id);
    const firstCall = (id: string) => receiver.receipts.find((receipt) => receipt.body.id === id);
    await eventually('every restored task to be delivered', () => restored.every(firstCall), 60, 250);
    // The dead run's lease was ended, not waited out; the attempt it cut short stays counted.
    expect(firstCall(leased.task.id)?.receivedAtMs).toBeLessThan(leaseUntilMs);
    const restartedStore = new DynamoTaskStore({
      client: timer.dynamo,
      tableName: LOCAL_TABLE_NAME,
      bucketCount: DEFAULT_SETTINGS.bucketCount,
    });
    await eventually(
      'the leased task to be recorded',
      async () => (await restartedStore.get(leased.address))?.status === 'DELIVERED',
    );
    expect(await restartedStore.get(leased.address)).toMatchObject({ status: 'DELIVERED', attempts: 2 });
    expect(firstCall(retrying.task.id)?.receivedAtMs).toBeGreaterThanOrEqual(retryAtMs);
    expect(firstCall(unclaimed.task.id)).toBeUndefined();
    expect(firstCall(receipted.task.id)).toBeUndefined();
  }, 60_000);
});
