/**
 * Properties that must hold for every input, not just the examples the other tests pick:
 * the id encoding round-trips and sorts by due time, and the request schema never throws,
 * always explains a refusal, and accepts what the contract says it accepts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { MAX_ENCODABLE_MS, MAX_SHARDS, newTaskId, parseTaskId } from '../../functions/core/kernel/ids.js';
import { LIMITS, parseTaskRequest } from '../../functions/core/submit/schemas.js';

const NOW_MS = Date.UTC(2026, 10, 21, 12);
const DAY_MS = 86_400_000;
const RULES = { allowInsecureTargets: false, nowMs: NOW_MS };
const location = fc.record({
  fireAtMs: fc.integer({ min: 0, max: MAX_ENCODABLE_MS }),
  shard: fc.integer({ min: 0, max: MAX_SHARDS - 1 }),
});

describe('Property: task ids', () => {
  it('decode to the due time and shard they were made from', () => {
    fc.assert(
      fc.property(location, (where) => {
        expect(parseTaskId(newTaskId(where), MAX_SHARDS)).toEqual(where);
      }),
    );
  });

  it('sort as strings in the order of their due times', () => {
    fc.assert(
      fc.property(location, location, (a, b) => {
        const [idA, idB] = [newTaskId(a), newTaskId(b)];
        if (a.fireAtMs < b.fireAtMs) expect(idA < idB).toBe(true);
        if (a.fireAtMs > b.fireAtMs) expect(idA > idB).toBe(true);
      }),
    );
  });

  it('are refused, never thrown on, when forged, truncated or of any other type', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ minLength: 26, maxLength: 26 }), fc.anything()), (candidate) => {
        const parsed = parseTaskId(candidate, 16);
        if (parsed !== undefined) {
          expect(typeof candidate).toBe('string');
          expect(parsed.shard).toBeLessThan(16);
          expect(newTaskId(parsed).slice(0, 12)).toBe(String(candidate).slice(0, 12));
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('carry no shard beyond the deployment: an id from a larger deployment is refused', () => {
    fc.assert(
      fc.property(location, fc.integer({ min: 1, max: MAX_SHARDS }), (where, shardCount) => {
        const parsed = parseTaskId(newTaskId(where), shardCount);
        expect(parsed === undefined).toBe(where.shard >= shardCount);
      }),
    );
  });
});

/** Text the contract accepts in bizType, bizId and idempotencyKey: no control characters, at least one character. */
const text = (max: number) =>
  fc
    .string({ unit: 'grapheme', minLength: 1, maxLength: max })
    .filter((value) => !/[\u0000-\u001f\u007f-\u009f]/.test(value));

const validRequest = fc.record(
  {
    dueAt: fc.integer({ min: NOW_MS - DAY_MS + 1000, max: NOW_MS + LIMITS.horizonDays * DAY_MS }),
    target: fc.constantFrom(
      { type: 'http', url: 'https://hooks.example.com/timer' },
      { type: 'sqs', queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders' },
      { type: 'eventbridge', eventBusName: 'orders' },
    ),
    payload: fc.jsonValue({ maxDepth: 3 }),
    bizType: text(LIMITS.bizTypeLength),
    bizId: text(LIMITS.bizIdLength),
    idempotencyKey: text(LIMITS.idempotencyKeyLength),
  },
  { requiredKeys: ['dueAt', 'target'] },
);

describe('Property: the task request schema', () => {
  it('never throws, and every refusal names a field and says what is wrong', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.anything(), fc.jsonValue(), fc.record({ dueAt: fc.anything(), target: fc.anything() })),
        (body) => {
          const parsed = parseTaskRequest(body, RULES);
          if (!parsed.ok) {
            expect(parsed.errors.length).toBeGreaterThan(0);
            for (const error of parsed.errors) {
              expect(error.path).not.toBe('');
              expect(error.message.length).toBeGreaterThan(5);
            }
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('accepts every request the contract allows, keeping its due time, payload and business fields', () => {
    fc.assert(
      fc.property(validRequest, (body) => {
        const parsed = parseTaskRequest(body, RULES);
        if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
        expect(parsed.value.dueAtMs).toBe(body.dueAt);
        // As JSON carries it: -0 travels as 0, the one value JSON cannot tell apart.
        expect(JSON.parse(parsed.value.payloadJson)).toEqual(JSON.parse(JSON.stringify(body.payload ?? null)));
        expect(parsed.value.bizId).toBe(body.bizId);
      }),
    );
  });

  it('gives the same fingerprint whatever order the fields come in, and a different one for a different payload', () => {
    fc.assert(
      fc.property(validRequest, fc.jsonValue(), (body, otherPayload) => {
        const reversed = Object.fromEntries(Object.entries(body).reverse());
        const first = parseTaskRequest(body, RULES);
        const again = parseTaskRequest(reversed, RULES);
        const changed = parseTaskRequest({ ...body, payload: otherPayload }, RULES);
        if (!first.ok || !again.ok || !changed.ok) throw new Error('a valid request was refused');
        expect(again.value.fingerprint).toBe(first.value.fingerprint);
        if (JSON.stringify(otherPayload) !== JSON.stringify(body.payload ?? null)) {
          expect(changed.value.fingerprint).not.toBe(first.value.fingerprint);
        }
      }),
    );
  });
});
