/**
 * The stored wire format, pinned literally on purpose: deployed tables hold these items, so
 * every attribute name, key prefix and padding here must survive any change to the schema
 * module. Every other test builds items and keys through the schema module instead.
 */
import { describe, expect, it } from 'vitest';

import {
  API_DELETABLE_PARTITION_PREFIXES,
  apiKeyKey,
  bizTypeKey,
  CALLBACK_COUNTER_PREFIX,
  CLOCK_KEY,
  clockToItem,
  counterKey,
  idempotencyKey,
  idempotencyToItem,
  indexPartitionKey,
  markerSortRange,
  occupancyKey,
  partitionKind,
  RATE_COUNTER_PREFIX,
  recheckFlagItem,
  scanMarkerItem,
  scheduleKey,
  SCHEDULES_LEGACY,
  scheduleShareOf,
  SWEEP_KEY,
  taskFromItem,
  taskKey,
  taskPartitionKey,
  taskSecondRange,
  taskToItem,
  tenantKey,
  tenantListingKey,
} from '../../functions/adapters/dynamo/table-schema.js';
import { newTaskId, taskAddress } from '../../functions/core/kernel/ids.js';
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
    const address = taskAddress(task.id, { fireAtMs: task.fireAtMs, shard: 2 }, 1000);

    // Act
    const item = taskToItem(task, address);

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
    const address = taskAddress(task.id, { fireAtMs, shard: 2 }, 1000);

    // Act
    const item = taskToItem(task, address);

    // Assess
    expect(item).toMatchObject({
      sk: `00${SECOND}250#${task.id}`,
      dueAtMs: fireAtMs - 42_000,
      fireAtMs,
      windowSeconds: 60,
    });
    expect(taskFromItem(item)).toEqual(task);
  });

  it('names the kind of item a partition key holds by its prefix', () => {
    // Act & Assess
    expect(['B#5#3', 'CLOCK', 'RATE#acme#3', 'IDEM#acme/schedules#k'].map(partitionKind)).toEqual([
      'B',
      'CLOCK',
      'RATE',
      'IDEM',
    ]);
  });

  it('keys a task by bucket and shard, then fire time and id, and reads one second of it as one sort-key range', () => {
    // Prepare
    const address = taskAddress('01JZ0000000000000000000000', { fireAtMs: SECOND * 1000 + 250, shard: 7 }, 86_400);

    // Act & Assess
    expect(taskKey(address)).toEqual({ pk: 'B#73600#7', sk: '001780000000250#01JZ0000000000000000000000' });
    expect(taskPartitionKey(5, 3)).toBe('B#5#3');
    expect(taskSecondRange(SECOND)).toEqual({ from: '001780000000000', to: '001780000000999#~' });
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
    expect(markerSortRange(SECOND, SECOND + 5)).toEqual({ from: '001780000000', to: '001780000005~' });
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
    expect(scheduleKey('acme', 'sch-1')).toEqual({ pk: `SCHEDULES#acme#${scheduleShareOf('sch-1')}`, sk: 'sch-1' });
    expect(scheduleKey('acme', 'sch-1', SCHEDULES_LEGACY)).toEqual({ pk: 'SCHEDULES#acme', sk: 'sch-1' });
    expect(API_DELETABLE_PARTITION_PREFIXES).toEqual(['BIZTYPES#', 'SCHEDULES#']);
    expect(indexPartitionKey({ index: 'byBizId', tenantId: 'acme', bizId: 'o-1' })).toBe('acme#o-1');
    expect(indexPartitionKey({ index: 'byBizType', tenantId: 'acme', bizType: 'order', shard: 3 })).toBe(
      'acme#order#3',
    );
    expect(counterKey(RATE_COUNTER_PREFIX, { tenantId: 'acme' }, SECOND)).toEqual({
      pk: 'RATE#acme',
      sk: String(SECOND),
    });
    expect(counterKey(RATE_COUNTER_PREFIX, { tenantId: 'acme', share: 3 }, SECOND)).toEqual({
      pk: 'RATE#acme#3',
      sk: String(SECOND),
    });
    expect(counterKey(CALLBACK_COUNTER_PREFIX, { tenantId: 'acme', bizType: 'order', share: 0 }, SECOND)).toEqual({
      pk: 'CALLBACKS#acme#order#0',
      sk: String(SECOND),
    });
  });
});

describe('Function: taskSecondRange', () => {
  const second = SECOND;
  const skAt = (ms: number) =>
    taskKey(taskAddress(newTaskId({ fireAtMs: ms, shard: 0 }), { fireAtMs: ms, shard: 0 }, 1000)).sk;
  const inRange = (sk: string) => {
    const { from, to } = taskSecondRange(second);
    return sk >= from && sk <= to;
  };

  it('holds the first and the last millisecond of the second', () => {
    // Act & Assess
    expect(inRange(skAt(second * 1000))).toBe(true);
    expect(inRange(skAt(second * 1000 + 999))).toBe(true);
  });

  it('leaves out the neighbouring seconds', () => {
    // Act & Assess
    expect(inRange(skAt((second + 1) * 1000))).toBe(false);
    expect(inRange(skAt(second * 1000 - 1))).toBe(false);
  });

  it('leaves out a task due a whole number of wheel turns later in the same bucket', () => {
    // Prepare
    const bucketCount = 1000;
    const later = (second + bucketCount) * 1000 + 500;
    const partitionOf = (ms: number) => taskKey(taskAddress('X', { fireAtMs: ms, shard: 0 }, bucketCount)).pk;

    // Act & Assess
    expect(partitionOf(later)).toBe(partitionOf(second * 1000));
    expect(inRange(skAt(later))).toBe(false);
  });
});
