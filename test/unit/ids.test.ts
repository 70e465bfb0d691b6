import { describe, expect, it } from 'vitest';

import { bucketOf, newTaskId, parseTaskId, shardDealer, taskAddress } from '../../functions/core/kernel/ids.js';

const DUE_AT_MS = Date.UTC(2026, 2, 1, 9, 30, 15, 250);
const SHARD_COUNT = 16;

describe('Function: newTaskId and parseTaskId', () => {
  it('deals shards in turn, so a batch of 100 over 80 shards puts at most two tasks on any shard', () => {
    // Prepare
    const dealShard = shardDealer();

    // Act
    const perShard = new Map<number, number>();
    for (let task = 0; task < 100; task++) {
      const shard = dealShard(80);
      perShard.set(shard, (perShard.get(shard) ?? 0) + 1);
    }

    // Assess
    expect(perShard.size).toBe(80);
    expect(Math.max(...perShard.values())).toBe(2);
  });

  it("gives each environment a dealer of its own: one environment's dealing does not move another's", () => {
    // Prepare: two environments whose dealers start at the same place.
    const first = shardDealer(0);
    const second = shardDealer(0);

    // Act
    const firstDeals = Array.from({ length: 5 }, () => first(80));
    const secondDeals = Array.from({ length: 5 }, () => second(80));

    // Assess
    expect(secondDeals).toEqual(firstDeals);
  });

  it('round-trips the due time and the shard', () => {
    // Prepare
    const location = { fireAtMs: DUE_AT_MS, shard: 11 };

    // Act
    const parsed = parseTaskId(newTaskId(location), SHARD_COUNT);

    // Assess
    expect(parsed).toEqual(location);
  });

  it('issues 26-character ids that sort in due-time order', () => {
    // Prepare
    const dueTimes = [DUE_AT_MS + 86_400_000, DUE_AT_MS, DUE_AT_MS + 1, DUE_AT_MS + 999, DUE_AT_MS - 1000];
    // Shards vary on purpose: the time prefix alone must decide the order.
    const ids = dueTimes.map((dueAtMs, index) =>
      newTaskId({ fireAtMs: dueAtMs, shard: (SHARD_COUNT - 1 - index) % SHARD_COUNT }),
    );

    // Act
    const sorted = [...ids].sort();

    // Assess
    for (const id of ids) expect(id).toHaveLength(26);
    expect(sorted.map((id) => parseTaskId(id, SHARD_COUNT)?.fireAtMs)).toEqual([...dueTimes].sort((a, b) => a - b));
  });

  it('gives two tasks with the same due time and shard different ids', () => {
    // Prepare
    const location = { fireAtMs: DUE_AT_MS, shard: 0 };

    // Act
    const first = newTaskId(location);
    const second = newTaskId(location);

    // Assess
    expect(first).not.toBe(second);
  });

  it('refuses to encode a due time or shard an id cannot carry', () => {
    // Act & Assess
    expect(() => newTaskId({ fireAtMs: -1, shard: 0 })).toThrow(RangeError);
    expect(() => newTaskId({ fireAtMs: 1.5, shard: 0 })).toThrow(RangeError);
    expect(() => newTaskId({ fireAtMs: DUE_AT_MS, shard: 1024 })).toThrow(RangeError);
  });

  it('rejects text of the wrong length', () => {
    // Prepare
    const id = newTaskId({ fireAtMs: DUE_AT_MS, shard: 3 });

    // Act & Assess
    expect(parseTaskId(id.slice(0, 25), SHARD_COUNT)).toBeUndefined();
    expect(parseTaskId(`${id}0`, SHARD_COUNT)).toBeUndefined();
    expect(parseTaskId('', SHARD_COUNT)).toBeUndefined();
  });

  it('rejects lowercase letters and the letters Crockford base32 leaves out', () => {
    // Prepare
    const head = newTaskId({ fireAtMs: DUE_AT_MS, shard: 3 }).slice(0, 25);

    // Act & Assess
    expect(parseTaskId(`${head}A`, SHARD_COUNT)).toBeDefined();
    expect(parseTaskId(`${head}a`, SHARD_COUNT)).toBeUndefined();
    for (const letter of ['I', 'L', 'O', 'U']) expect(parseTaskId(`${head}${letter}`, SHARD_COUNT)).toBeUndefined();
  });

  it('rejects values that are not strings', () => {
    // Act & Assess
    for (const value of [undefined, null, 42, { id: 'x' }, ['01']])
      expect(parseTaskId(value, SHARD_COUNT)).toBeUndefined();
  });

  it('rejects an id whose shard this deployment does not have', () => {
    // Prepare
    const id = newTaskId({ fireAtMs: DUE_AT_MS, shard: 5 });

    // Act & Assess
    expect(parseTaskId(id, 5)).toBeUndefined();
    expect(parseTaskId(id, 6)).toEqual({ fireAtMs: DUE_AT_MS, shard: 5 });
  });
});

describe('Function: bucketOf and taskAddress', () => {
  it('wraps seconds modulo the bucket count, like a timing wheel', () => {
    // Act & Assess
    expect(bucketOf(10_000_005, 10_000_000)).toBe(5);
    expect(bucketOf(9_999_999, 10_000_000)).toBe(9_999_999);
    expect(bucketOf(-1, 10)).toBe(9);
  });

  it('addresses a task by the bucket of its own fire second, its shard, its fire time and its id', () => {
    // Prepare
    const id = newTaskId({ fireAtMs: DUE_AT_MS, shard: 7 });

    // Act
    const address = taskAddress(id, { fireAtMs: DUE_AT_MS, shard: 7 }, 1000);

    // Assess
    expect(address).toEqual({ id, bucket: Math.floor(DUE_AT_MS / 1000) % 1000, shard: 7, fireAtMs: DUE_AT_MS });
  });
});
