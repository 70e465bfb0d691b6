import { describe, expect, it } from 'vitest';

import {
  indexWrites,
  itemBytes,
  keyClass,
  readUnits,
  writeUnits,
} from '../../../lib/local/limits/dynamodb-capacity.js';
import {
  DynamoThroughputModel,
  tablePartitions,
  TASK_TABLE_SCHEMA,
} from '../../../lib/local/limits/dynamodb-throughput.js';
import { ManualClock } from '../../support/clock.js';

describe('Function: itemBytes', () => {
  it('counts attribute names and values by DynamoDB’s rules', () => {
    // Act
    const bytes = itemBytes({
      pk: { S: 'B#1' }, // 2 + 3
      n: { N: '12345' }, // 1 + (3 + 1)
      ok: { BOOL: true }, // 2 + 1
      l: { L: [{ S: 'ab' }, { NULL: true }] }, // 1 + 3 + (1 + 2) + (1 + 1)
      m: { M: { x: { S: 'é' } } }, // 1 + 3 + 1 + (1 + 2)
    });

    // Assess
    expect(bytes).toBe(5 + 5 + 3 + 9 + 8);
  });
});

describe('Function: writeUnits and readUnits', () => {
  it('charges a write unit per started kilobyte and never less than one', () => {
    expect(writeUnits(0)).toBe(1);
    expect(writeUnits(1024)).toBe(1);
    expect(writeUnits(1025)).toBe(2);
  });

  it('charges a read unit per started 4 KB, half for an eventually consistent read', () => {
    expect(readUnits(0, true)).toBe(1);
    expect(readUnits(4097, true)).toBe(2);
    expect(readUnits(4097, false)).toBe(1);
    expect(readUnits(100, false)).toBe(0.5);
  });
});

describe('Function: keyClass', () => {
  it('names a key by its text before the first #', () => {
    expect(keyClass('B#1#2')).toBe('B');
    expect(keyClass('CLOCK')).toBe('CLOCK');
  });
});

describe('Function: indexWrites', () => {
  it('writes an index when an item enters it or its key moves, not when the key stays', () => {
    // Prepare
    const entering = indexWrites('t', TASK_TABLE_SCHEMA, undefined, { pk: { S: 'B#1' }, bizIdKey: { S: 'ten#order' } });
    const moving = indexWrites('t', TASK_TABLE_SCHEMA, { bizIdKey: { S: 'a' } }, { bizIdKey: { S: 'b' } });
    const staying = indexWrites('t', TASK_TABLE_SCHEMA, { bizIdKey: { S: 'a' } }, { bizIdKey: { S: 'a' } });

    // Assess
    expect(entering).toEqual([{ table: 't', index: 'byBizId', value: 'ten#order' }]);
    expect(moving.map((ref) => ref.value)).toEqual(['a', 'b']);
    expect(staying).toEqual([]);
  });
});

describe('Class: DynamoThroughputModel', () => {
  const hot = { ref: { table: 't', value: 'B#7' }, units: 1 };

  it('admits a key’s scaled limit in one second, refuses the next request, and admits again a second later', () => {
    // Prepare: k = 100 leaves 10 write units a second per key.
    const clock = new ManualClock(1_000_000);
    const model = new DynamoThroughputModel({ k: 100, clock });

    // Act
    const first = Array.from({ length: 10 }, () => model.admit('write', 't', [hot]));
    const eleventh = model.admit('write', 't', [hot]);
    clock.advance(1000);
    const nextSecond = model.admit('write', 't', [hot]);

    // Assess
    expect(first.every((refusal) => refusal === undefined)).toBe(true);
    expect(eleventh).toBe('partition');
    expect(nextSecond).toBeUndefined();
  });

  it('throttles two keys that hash into one partition together, and reports their collision', () => {
    // Prepare: k = 100 leaves 10 write units a second per partition; in a table of 2
    // partitions, of three keys two share one.
    const clock = new ManualClock(1_000_000);
    const model = new DynamoThroughputModel({ k: 100, clock, partitions: 2 });
    const keys = ['B#1#0', 'B#1#1', 'B#1#2'].map((value) => ({ ref: { table: 't', value }, units: 1 }));

    // Act: 6 units on each key, each within its own key's 10.
    const refusals = keys.flatMap((key) => Array.from({ length: 6 }, () => model.admit('write', 't', [key])));

    // Assess: the shared partition took 10 of its keys' 12 units; the other took 6.
    expect(refusals.filter((refusal) => refusal === 'partition')).toHaveLength(2);
    const { collisions } = model.report();
    expect(collisions).toMatchObject({
      partitions: 2,
      sharedSeconds: 1,
      mostKeysInOneSecond: 2,
      peakSharedUnitsPerSecond: 10,
      hottestFractionOfLimit: 1,
    });
    expect(collisions?.busiestShared?.keys).toHaveLength(2);
  });

  it('reports the busiest partition again without the task-shard keys, whose load the model does not divide by k', () => {
    // Prepare: one partition, at k = 100 10 write units a second.
    const clock = new ManualClock(1_000_000);
    const model = new DynamoThroughputModel({ k: 100, clock, partitions: 1 });
    const unit = (value: string, index?: string) => ({ ref: { table: 't', value, ...(index && { index }) }, units: 1 });

    // Act: 5 units on a bucket key, 3 on the byBizType index, 2 on a tenant's rate counter.
    for (let i = 0; i < 5; i++) model.admit('write', 't', [unit('B#1#0')]);
    for (let i = 0; i < 3; i++) model.admit('write', 't', [unit('acme#pay#0', 'byBizType')]);
    for (let i = 0; i < 2; i++) model.admit('write', 't', [unit('RATE#acme#0')]);

    // Assess: the table's partition took 7 of its 10 units (the index has partitions of its own), 2 of them unsharded.
    expect(model.report().collisions).toMatchObject({
      hottestFractionOfLimit: 0.7,
      hottestUnshardedFractionOfLimit: 0.2,
    });
  });

  it('lets task-shard keys over their limit through when told they are not held to it, and counts them, while other keys are still refused', () => {
    // Prepare: k = 100 leaves 10 write units a second per key and per partition; two partitions.
    const clock = new ManualClock(1_000_000);
    const model = new DynamoThroughputModel({ k: 100, clock, partitions: 2, shardKeysLimited: false });
    const unit = (value: string) => ({ ref: { table: 't', value }, units: 1 });

    // Act: 12 units on a bucket key and 12 on a tenant's rate counter.
    const bucket = Array.from({ length: 12 }, () => model.admit('write', 't', [unit('B#1#0')]));
    const rate = Array.from({ length: 12 }, () => model.admit('write', 't', [unit('RATE#acme#0')]));

    // Assess
    expect(bucket.every((refusal) => refusal === undefined)).toBe(true);
    expect(rate.filter((refusal) => refusal === 'partition')).toHaveLength(2);
    expect(model.report().byKeyClass).toMatchObject({
      B: { throttles: 0, overLimit: 2 },
      RATE: { throttles: 2, overLimit: 0 },
    });
  });

  it('sizes a table’s partitions by its bytes at 10 GB each or its throughput, whichever needs more', () => {
    // Act
    const billionADay = tablePartitions({ bytes: 30e12, writeUnitsPerSecond: 100_000, readUnitsPerSecond: 40_000 });
    const busySmall = tablePartitions({ bytes: 1e9, writeUnitsPerSecond: 40_000, readUnitsPerSecond: 30_000 });

    // Assess
    expect(billionADay).toBe(Math.ceil(30e12 / 10 / 1024 ** 3));
    expect(busySmall).toBe(50);
  });

  it('refuses on the table’s limit when every key is within its own', () => {
    // Prepare: k = 4,000 leaves 10 units a second for the table and 1 per key.
    const clock = new ManualClock(0);
    const model = new DynamoThroughputModel({ k: 4_000, clock });

    // Act
    const refusals = Array.from({ length: 11 }, (_, n) =>
      model.admit('write', 't', [{ ref: { table: 't', value: `B#${n}` }, units: 1 }]),
    );

    // Assess
    expect(refusals.slice(0, 10).every((refusal) => refusal === undefined)).toBe(true);
    expect(refusals[10]).toBe('table');
    expect(model.report().tableThrottles).toEqual({ read: 0, write: 1 });
    expect(model.report().tablePeakUnitsPerSecond).toEqual({ read: 0, write: 10 });
  });

  it('counts a Query’s per-request floor 1/k against the table, since per-second scans do not shrink with the load', () => {
    // Prepare: k = 4,000 leaves 10 read units a second for the table.
    const clock = new ManualClock(0);
    const model = new DynamoThroughputModel({ k: 4_000, clock });
    const shardQuery = (n: number) => ({ ref: { table: 't', value: `B#7#${n}` }, units: 1, floor: true });

    // Act: 80 empty-shard Queries, then 10 single-item reads that are load.
    const queries = Array.from({ length: 80 }, (_, n) => model.admit('read', 't', [shardQuery(n)]));
    const reads = Array.from({ length: 10 }, (_, n) =>
      model.admit('read', 't', [{ ref: { table: 't', value: `T#${n}` }, units: 1 }]),
    );

    // Assess: the floors took 80/4,000 of a unit; the load's tenth unit no longer fits.
    expect(queries.every((refusal) => refusal === undefined)).toBe(true);
    expect(reads.slice(0, 9).every((refusal) => refusal === undefined)).toBe(true);
    expect(reads[9]).toBe('table');
  });

  it('reports usage by key class and the hottest key as a fraction of its limit', () => {
    // Prepare
    const clock = new ManualClock(0);
    const model = new DynamoThroughputModel({ k: 100, clock });
    for (let n = 0; n < 12; n++) model.admit('write', 't', [hot]);
    model.admit('read', 't', [{ ref: { table: 't', value: 'CLOCK' }, units: 1 }]);
    model.admit('write', 't', [{ ref: { table: 't', index: 'byBizId', value: 'ten#x' }, units: 1 }]);

    // Act
    const report = model.report();

    // Assess
    expect(report.byKeyClass.B).toEqual({
      keys: 1,
      requests: 12,
      readUnits: 0,
      writeUnits: 10,
      throttles: 2,
      overLimit: 0,
    });
    expect(report.byKeyClass.CLOCK).toMatchObject({ requests: 1, readUnits: 1 });
    expect(report.hottestKeyByClass.CLOCK).toEqual({ read: 1, write: 0 });
    expect(report.byKeyClass['index:byBizId']).toMatchObject({ writeUnits: 1 });
    expect(report.hottestKey).toMatchObject({ value: 'B#7', kind: 'write', fractionOfLimit: 1 });
  });

  it('reports the item asked for most in one second, apart from the others in its partition', () => {
    // Prepare: one minute item of an hour's partition asked for five times in a second, its neighbour
    // three times in each of two seconds.
    const clock = new ManualClock(0);
    const model = new DynamoThroughputModel({ k: 100, clock });
    const item = (minute: number) => ({ pk: { S: 'OCCUPIED#27000' }, sk: { S: String(minute) } });
    for (let n = 0; n < 5; n++) model.itemRequested('t', item(1));
    for (let n = 0; n < 3; n++) model.itemRequested('t', item(2));
    clock.advance(1000);
    for (let n = 0; n < 3; n++) model.itemRequested('t', item(2));

    // Act
    const report = model.report();

    // Assess
    expect(report.hottestItem).toEqual({ table: 't', key: 'OCCUPIED#27000 / 1', peakRequestsPerSecond: 5 });
  });

  it('reports each item class’s busiest item in requests a second, to compare across loads', () => {
    // Prepare: the clock item asked for twice in a second; two task items once each.
    const clock = new ManualClock(0);
    const model = new DynamoThroughputModel({ k: 100, clock });
    model.itemRequested('t', { pk: { S: 'CLOCK' }, sk: { S: 'CLOCK' } });
    model.itemRequested('t', { pk: { S: 'CLOCK' }, sk: { S: 'CLOCK' } });
    model.itemRequested('t', { pk: { S: 'B#7#1' }, sk: { S: '1#a' } });
    model.itemRequested('t', { pk: { S: 'B#7#1' }, sk: { S: '1#b' } });

    // Act
    const report = model.report();

    // Assess
    expect(report.hottestItemByClass).toEqual({ CLOCK: 2, B: 1 });
  });

  it('counts what an environment asks while starting, and a first read it does not repeat, per start, apart from the load', () => {
    // Prepare: api:1 starts and reads the clock; then, warm, reads it again, reads a tenant once,
    // the sweeper's item twice, and writes a counter twice. api:2 starts and reads the clock.
    const clock = new ManualClock(0);
    const model = new DynamoThroughputModel({ k: 1, clock });
    const ask = (
      environment: { id: string; starting: boolean },
      kind: 'read' | 'write',
      value: string,
      units: number,
    ) => {
      const meter = model.meterFor(environment);
      meter.itemRequested(kind, 't', { pk: { S: value }, sk: { S: value } });
      meter.admit(kind, 't', [{ ref: { table: 't', value }, units }]);
    };
    ask({ id: 'api:1', starting: true }, 'read', 'CLOCK', 1);
    ask({ id: 'api:1', starting: false }, 'read', 'CLOCK', 1);
    ask({ id: 'api:1', starting: false }, 'read', 'TENANT#a', 0.5);
    ask({ id: 'api:1', starting: false }, 'read', 'SWEEP', 1);
    ask({ id: 'api:1', starting: false }, 'read', 'SWEEP', 1);
    ask({ id: 'api:1', starting: false }, 'write', 'RATE#a#0', 1);
    ask({ id: 'api:1', starting: false }, 'write', 'RATE#a#0', 1);
    ask({ id: 'api:2', starting: true }, 'read', 'CLOCK', 1);

    // Act
    const report = model.report();

    // Assess: the load is the clock's one read by a warm environment that had read it, the
    // sweeper's item's two reads (the first joining it once repeated), and the counter's two
    // writes; the starts spent 2 clock units and half a tenant unit over two environments.
    expect(report.hottestItemByClass).toEqual({ CLOCK: 1, RATE: 2, SWEEP: 2 });
    expect(report.hottestKeyByClass).toEqual({
      CLOCK: { read: 1, write: 0 },
      RATE: { read: 0, write: 2 },
      SWEEP: { read: 2, write: 0 },
    });
    expect(report.unitsPerStartByClass).toEqual({ CLOCK: { read: 1, write: 0 }, TENANT: { read: 0.25, write: 0 } });
    expect(report.startsByFunction).toEqual({ api: 2 });
  });
});
