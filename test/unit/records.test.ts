import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { deliverRecords } from '../../functions/callback/records.js';
import type { DeliveryPorts } from '../../functions/core/deliver.js';
import { aTask, FakeRequestCounter, FakeTaskStore, fakeTenantDirectory, ManualClock } from './fakes.js';
import { sqsRecord } from './handlers/setup.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('Function: deliverRecords', () => {
  it("logs each record's lines with its task id as the correlation id, even when records run concurrently", async () => {
    // Prepare
    const nowMs = Date.UTC(2026, 10, 21, 12);
    const tasks = [aTask(nowMs - 1000, 0), aTask(nowMs - 1000, 1)];
    const delivery: DeliveryPorts = {
      taskStore: new FakeTaskStore(tasks),
      targets: { dispatch: async () => ({ ok: true }) },
      tenants: fakeTenantDirectory(),
      deadLetters: { send: async () => undefined },
      callbackCounter: new FakeRequestCounter(),
      clock: new ManualClock(nowMs),
      bucketCount: 1000,
      shardCount: 4,
      maxAttempts: 3,
      backoffBaseSeconds: 1,
      backoffMaxSeconds: 2,
      retentionDays: 1,
      leaseMs: 60_000,
      maxEarlyWaitMs: 5000,
    };
    const lines: string[] = [];
    // The per-delivery line is logged at debug: at scale it would be the largest log bill.
    const logger = new Logger({ serviceName: 'unit', logLevel: 'DEBUG' });
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });

    // Act
    await deliverRecords(
      { delivery, requeue: async () => undefined, logger, metrics: new Metrics({ namespace: 'unit' }) },
      tasks.map((task, index) => sqsRecord(JSON.stringify({ id: task.id }), `m-${index}`)),
    );

    // Assess
    const delivered = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.message === 'delivered');
    expect(delivered.map((line) => [line.correlation_id, line.taskId])).toEqual(
      tasks.map((task) => [task.id, task.id]),
    );
  });
});
