/**
 * The stored wire format, pinned literally on purpose: deployed tables hold these items, so
 * every attribute name, key prefix and padding here must survive any change to the schema
 * module. Every other test builds items and keys through the schema module instead.
 */
import { describe, expect, it } from 'vitest';

import {
  apiKeyKey,
  bizTypeKey,
  CALLBACK_COUNTER_PREFIX,
  CLOCK_KEY,
  clockToItem,
  counterKey,
  idempotencyKey,
  idempotencyToItem,
  occupancyKey,
  RATE_COUNTER_PREFIX,
  recheckFlagItem,
  scanMarkerItem,
  SWEEP_KEY,
  taskFromItem,
  taskToItem,
  tenantKey,
  tenantListingKey,
} from '../../functions/adapters/dynamo/table-schema.js';
import { taskKey } from '../../functions/core/kernel/ids.js';
import { aTask } from './fakes.js';

const SECOND = 1_780_000_000;

describe('Module: table-schema', () => {
  it('stores a task under its bucket and shard, with its index keys and its payload as text', () => {
    // Prepare
    const task = aTask(SECOND * 1000 + 250, 2, {
      bizType: 'order',
      bizId: 'o-1',
      idempotencyKey: 'k-1',
      policy: { maxAttempts: 3 },
      rescheduledFrom: 'EARLIER',
    });
    const key = taskKey(task.id, { fireAtMs: task.fireAtMs, shard: 2 }, 1000);

    // Act
    const item = taskToItem(task, key);

    // Assess
    expect(item).toEqual({
      pk: `B#${SECOND % 1000}#2`,
      sk: `00${SECOND}250#${task.id}`,
      bizIdKey: 'acme#o-1',
      bizTypeKey: 'acme#order#2',
      id: task.id,
      tenantId: 'acme',
      status: 'PENDING',
      dueAtMs: SECOND * 1000 + 250,
      createdAtMs: task.createdAtMs,
      target: { type: 'http', url: 'https://hooks.example.com/timer' },
      payload: '{"orderId":"o-1"}',
      attempts: 0,
      bizType: 'order',
      bizId: 'o-1',
      idempotencyKey: 'k-1',
      policy: { maxAttempts: 3 },
      rescheduledFrom: 'EARLIER',
    });
    expect(taskFromItem(item)).toEqual(task);
  });

  it('stores a task with a window under its fire time, beside the dueAt asked for and the window', () => {
    // Prepare
    const fireAtMs = SECOND * 1000 + 250;
    const task = aTask(fireAtMs, 2, { dueAtMs: fireAtMs - 42_000, window: { seconds: 60 } });
    const key = taskKey(task.id, { fireAtMs, shard: 2 }, 1000);

    // Act
    const item = taskToItem(task, key);

    // Assess
    expect(item).toMatchObject({
      sk: `00${SECOND}250#${task.id}`,
      dueAtMs: fireAtMs - 42_000,
      fireAtMs,
      windowSeconds: 60,
    });
    expect(taskFromItem(item)).toEqual(task);
  });

  it('keeps the clock, the sweep watermarks and the per-second markers under fixed and hourly keys', () => {
    // Act
    const clock = clockToItem({ cursor: SECOND, startedAt: SECOND - 10 });
    const scanned = scanMarkerItem(SECOND, SECOND + 59, new Map([[SECOND + 7, 3]]), 99);
    const recheck = recheckFlagItem(SECOND, SECOND + 30, 99);

    // Assess
    expect(CLOCK_KEY).toEqual({ pk: 'CLOCK', sk: 'CLOCK' });
    expect(clock).toEqual({ pk: 'CLOCK', sk: 'CLOCK', cursor: SECOND, startedAt: SECOND - 10 });
    expect(SWEEP_KEY).toEqual({ pk: 'SWEEP', sk: 'SWEEP' });
    expect(scanned).toEqual({
      pk: `SCANNED#${Math.floor(SECOND / 3600)}`,
      sk: `00${SECOND}`,
      through: SECOND + 59,
      busy: { [SECOND + 7]: 3 },
      expiresAt: 99,
    });
    expect(recheck).toEqual({
      pk: `RECHECK#${Math.floor(SECOND / 3600)}`,
      sk: `00${SECOND}#${SECOND + 30}`,
      dueSecond: SECOND + 30,
      expiresAt: 99,
    });
    const minute = Math.floor(SECOND / 60) + 1;
    expect(occupancyKey(minute, 5)).toEqual({ pk: `OCCUPIED#${minute}#5`, sk: `00${minute * 60}` });
  });

  it('keys idempotency claims, tenants, API keys, bizType settings and counters by their prefixes', () => {
    // Act
    const claim = idempotencyToItem(
      { scope: 'task', tenantId: 'acme', key: 'k-1', taskId: 'T', fingerprint: 'f', claimedAtMs: 5 },
      99,
    );
    const scheduleClaim = idempotencyKey('schedule', 'acme', 'k-1');

    // Assess
    expect(claim).toEqual({
      pk: 'IDEM#acme#k-1',
      sk: 'IDEM',
      taskId: 'T',
      fingerprint: 'f',
      claimedAtMs: 5,
      expiresAt: 99,
    });
    expect(scheduleClaim).toEqual({ pk: 'IDEM#acme/schedules#k-1', sk: 'IDEM' });
    expect(tenantKey('acme')).toEqual({ pk: 'TENANT#acme', sk: 'TENANT' });
    expect(tenantListingKey('acme')).toEqual({ pk: 'TENANTS', sk: 'acme' });
    expect(apiKeyKey('acme', 'key-1')).toEqual({ pk: 'APIKEYS#acme', sk: 'key-1' });
    expect(bizTypeKey('acme', 'order')).toEqual({ pk: 'BIZTYPES#acme', sk: 'order' });
    expect(counterKey(RATE_COUNTER_PREFIX, 'acme', SECOND)).toEqual({ pk: 'RATE#acme', sk: String(SECOND) });
    expect(counterKey(CALLBACK_COUNTER_PREFIX, 'acme#order', SECOND)).toEqual({
      pk: 'CALLBACKS#acme#order',
      sk: String(SECOND),
    });
  });
});
