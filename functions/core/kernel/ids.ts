import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';

/**
 * Task ids say where the task lives, so GET and DELETE are single-item reads with no
 * index: 10 Crockford base32 characters of the fire time in milliseconds (sortable, as in a
 * ULID), 2 of the shard, 14 of randomness (70 bits). 26 characters in all. The fire time is
 * the caller's dueAt, or, for a task with a flexible window, the time planned within it
 * (see window.ts): the task lives, is scanned and is delivered at that time.
 */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ID_PATTERN = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const TIME_CHARS = 10;
const SHARD_CHARS = 2;
const RANDOM_CHARS = 14;
/** Largest fire time an id can carry: 2^48 - 1 ms, the year 10889. */
export const MAX_ENCODABLE_MS = 2 ** 48 - 1;
/** Largest shard count an id can carry. */
export const MAX_SHARDS = 32 ** SHARD_CHARS;

export interface TaskLocation {
  /** When the task fires: its dueAt, or the time planned within its window. */
  readonly fireAtMs: number;
  readonly shard: number;
}

function encode(value: number, length: number): string {
  let out = '';
  let rest = value;
  for (let i = 0; i < length; i++) {
    out = ALPHABET[rest % 32] + out;
    rest = Math.floor(rest / 32);
  }
  return out;
}

function decode(text: string): number {
  let value = 0;
  for (const char of text) value = value * 32 + ALPHABET.indexOf(char);
  return value;
}

function charsOf(bytes: Uint8Array, length: number): string {
  let out = '';
  for (const byte of bytes.subarray(0, length)) out += ALPHABET[byte % 32];
  return out;
}

/**
 * Deals shards in turn, from a random start: one dealer per execution environment (the caller
 * makes it at cold start), so its tasks (a batch's above all) spread evenly over the shards.
 * Independent random picks put a few times the average on some shards (100 tasks over 80
 * shards: up to 4 or 5 on one), and a hot second's deliveries write every task's item again in
 * the same second, so the fullest shard is what throttles. Environments do not share a dealer,
 * as Lambda's do not share memory: a model that ran several environments off one counter would
 * deal a hot second more evenly than any fleet does.
 */
export function shardDealer(start = randomInt(MAX_SHARDS)): (shardCount: number) => number {
  let dealt = start;
  return function dealShard(shardCount) {
    dealt += 1;
    return dealt % shardCount;
  };
}

/** A new id for a task firing at `fireAtMs` stored in `shard`; `seed`, when given, replaces the random part. */
export function newTaskId(location: TaskLocation, seed?: Uint8Array): string {
  if (!Number.isInteger(location.fireAtMs) || location.fireAtMs < 0 || location.fireAtMs > MAX_ENCODABLE_MS) {
    throw new RangeError(`fireAtMs ${location.fireAtMs} cannot be encoded in a task id`);
  }
  if (!Number.isInteger(location.shard) || location.shard < 0 || location.shard >= MAX_SHARDS) {
    throw new RangeError(`shard ${location.shard} cannot be encoded in a task id`);
  }
  const rest = seed ?? randomBytes(RANDOM_CHARS);
  return encode(location.fireAtMs, TIME_CHARS) + encode(location.shard, SHARD_CHARS) + charsOf(rest, RANDOM_CHARS);
}

/**
 * The id of the task firing at `fireAtMs` that `name` stands for, the same every time it is
 * asked: shard and random part come from a hash of `name`. A schedule's occurrence is named by
 * its schedule, revision and time, so creating it twice is one conditional put and a no-op.
 */
export function derivedTaskId(fireAtMs: number, name: string, shardCount: number): string {
  const digest = createHash('sha256').update(name).digest();
  return newTaskId({ fireAtMs, shard: digest.readUInt32BE(0) % shardCount }, digest.subarray(4));
}

/**
 * Where the task with this id lives, or undefined when the text is not an id this
 * deployment could have issued (so the caller answers 404 rather than crashing).
 */
export function parseTaskId(id: unknown, shardCount: number): TaskLocation | undefined {
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) return undefined;
  const fireAtMs = decode(id.slice(0, TIME_CHARS));
  const shard = decode(id.slice(TIME_CHARS, TIME_CHARS + SHARD_CHARS));
  if (fireAtMs > MAX_ENCODABLE_MS || shard >= shardCount) return undefined;
  return { fireAtMs, shard };
}

/** The bucket a second falls in: seconds repeat every `bucketCount`, like a timing wheel's slots. */
export function bucketOf(second: number, bucketCount: number): number {
  return ((second % bucketCount) + bucketCount) % bucketCount;
}

/**
 * Where a task lives, as plain data: the bucket of its fire second and its shard (one partition),
 * and its fire time and id, which order it there. The store builds its key from this
 * (table-schema.ts), so the core never spells one.
 */
export interface TaskAddress extends TaskLocation {
  readonly id: string;
  readonly bucket: number;
}

/** The address of the task `id`, which lives at `location` (as parseTaskId reads it from the id). */
export function taskAddress(id: string, location: TaskLocation, bucketCount: number): TaskAddress {
  const bucket = bucketOf(Math.floor(location.fireAtMs / 1000), bucketCount);
  return { id, bucket, shard: location.shard, fireAtMs: location.fireAtMs };
}

/** A new delivery lease's name: unique per claim, and the same in every send of that claim. */
export function newAttemptId(): string {
  return randomUUID();
}
