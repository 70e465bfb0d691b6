import { describe, expect, it } from 'vitest';

import { parseIsoInstant, parseTaskRequest } from '../../functions/core/submit/schemas.js';

const NOW_MS = Date.UTC(2026, 0, 15, 12, 0, 0);
const DAY_MS = 24 * 3600 * 1000;
const CLOUD = { allowInsecureTargets: false, nowMs: NOW_MS };
const LOCAL = { allowInsecureTargets: true, nowMs: NOW_MS };
const TARGET = { type: 'http', url: 'https://hooks.example.com/timer' };

const request = (fields: Record<string, unknown>) => ({ target: TARGET, ...fields });

/** The error paths of a rejected request, or the resolved dueAt of an accepted one, for compact assertions. */
function outcome(body: unknown, options: Parameters<typeof parseTaskRequest>[1] = CLOUD) {
  const parsed = parseTaskRequest(body, options);
  return parsed.ok ? { dueAtMs: parsed.value.dueAtMs } : { paths: parsed.errors.map((error) => error.path) };
}

describe('Function: parseTaskRequest', () => {
  it('accepts an ISO dueAt in UTC', () => {
    // Act
    const result = outcome(request({ dueAt: '2026-01-15T12:30:00Z' }));

    // Assess
    expect(result).toEqual({ dueAtMs: NOW_MS + 30 * 60_000 });
  });

  it('accepts an ISO dueAt with an offset and resolves it to the same instant', () => {
    // Act
    const result = outcome(request({ dueAt: '2026-01-15T14:30:00.000+02:00' }));

    // Assess
    expect(result).toEqual({ dueAtMs: NOW_MS + 30 * 60_000 });
  });

  it('accepts dueAt as epoch milliseconds', () => {
    // Act
    const result = outcome(request({ dueAt: NOW_MS + 1234 }));

    // Assess
    expect(result).toEqual({ dueAtMs: NOW_MS + 1234 });
  });

  it('resolves delaySeconds against the clock', () => {
    // Act
    const result = outcome(request({ delaySeconds: 90 }));

    // Assess
    expect(result).toEqual({ dueAtMs: NOW_MS + 90_000 });
  });

  it('keeps the payload as JSON text and the business fields', () => {
    // Act
    const parsed = parseTaskRequest(
      request({ delaySeconds: 1, payload: { orderId: 'o-1', amount: 12.5 }, bizType: 'order', bizId: 'o-1' }),
      CLOUD,
    );

    // Assess
    expect(parsed).toEqual({
      ok: true,
      value: {
        dueAtMs: NOW_MS + 1000,
        dueFromDelay: true,
        fingerprint: expect.any(String),
        target: TARGET,
        payloadJson: '{"orderId":"o-1","amount":12.5}',
        bizType: 'order',
        bizId: 'o-1',
      },
    });
  });

  it("holds both dueAt and delaySeconds to the deployment's horizon, naming the field", () => {
    // Prepare
    const rules = { ...CLOUD, horizonDays: 30 };

    // Act
    const byDate = parseTaskRequest(request({ dueAt: NOW_MS + 31 * DAY_MS }), rules);
    const byDelay = parseTaskRequest(request({ delaySeconds: 31 * 86_400 }), rules);
    const within = parseTaskRequest(request({ delaySeconds: 30 * 86_400 }), rules);

    // Assess
    expect(byDate).toMatchObject({
      ok: false,
      errors: [{ path: 'dueAt', message: expect.stringContaining('30 days') }],
    });
    expect(byDelay).toMatchObject({
      ok: false,
      errors: [{ path: 'delaySeconds', message: expect.stringContaining('30 days') }],
    });
    expect(within.ok).toBe(true);
  });

  it('rejects a request with both dueAt and delaySeconds', () => {
    // Act & Assess
    expect(outcome(request({ dueAt: NOW_MS + 1000, delaySeconds: 1 }))).toEqual({ paths: ['dueAt'] });
  });

  it('rejects a request with neither dueAt nor delaySeconds', () => {
    // Act & Assess
    expect(outcome(request({}))).toEqual({ paths: ['dueAt'] });
  });

  it('rejects a calendar date that does not exist instead of rolling it over', () => {
    // Act & Assess
    expect(outcome(request({ dueAt: '2026-02-28T00:00:00Z' }))).toEqual({ dueAtMs: Date.UTC(2026, 1, 28) });
    expect(outcome(request({ dueAt: '2026-02-30T00:00:00Z' }))).toEqual({ paths: ['dueAt'] });
  });

  it('rejects an ISO date-time without a time zone', () => {
    // Act & Assess
    expect(outcome(request({ dueAt: '2026-01-15T12:30:00' }))).toEqual({ paths: ['dueAt'] });
  });

  it('rejects epoch milliseconds that are not a whole number', () => {
    // Act & Assess
    expect(outcome(request({ dueAt: NOW_MS + 1000.5 }))).toEqual({ paths: ['dueAt'] });
  });

  it('rejects a dueAt more than 366 days ahead', () => {
    // Act & Assess
    expect(outcome(request({ dueAt: NOW_MS + 366 * DAY_MS }))).toEqual({ dueAtMs: NOW_MS + 366 * DAY_MS });
    expect(outcome(request({ dueAt: NOW_MS + 366 * DAY_MS + 1 }))).toEqual({ paths: ['dueAt'] });
  });

  it('rejects a dueAt more than one day in the past', () => {
    // Act & Assess
    expect(outcome(request({ dueAt: NOW_MS - DAY_MS }))).toEqual({ dueAtMs: NOW_MS - DAY_MS });
    expect(outcome(request({ dueAt: NOW_MS - DAY_MS - 1 }))).toEqual({ paths: ['dueAt'] });
  });

  it('rejects an unknown target type at target.type', () => {
    // Act & Assess
    expect(outcome({ delaySeconds: 1, target: { type: 'lambda', functionName: 'f' } })).toEqual({
      paths: ['target.type'],
    });
  });

  it('rejects an http:// webhook in the cloud but accepts it in local mode', () => {
    // Prepare
    const body = { delaySeconds: 1, target: { type: 'http', url: 'http://127.0.0.1:8080/hook' } };

    // Act & Assess
    expect(outcome(body, CLOUD)).toEqual({ paths: ['target.url'] });
    expect(outcome(body, LOCAL)).toEqual({ dueAtMs: NOW_MS + 1000 });
  });

  it('rejects a webhook on the metadata address in the cloud, saying why and what to do, but accepts it in local mode', () => {
    // Prepare
    const body = { delaySeconds: 1, target: { type: 'http', url: 'https://0xa9fea9fe/latest/meta-data/' } };

    // Act
    const cloud = parseTaskRequest(body, CLOUD);

    // Assess
    expect(cloud).toEqual({
      ok: false,
      errors: [
        {
          path: 'target.url',
          message:
            "must not point at 169.254.169.254, which is the cloud instance metadata address (169.254.169.254/32); use your webhook's public host name",
        },
      ],
    });
    expect(outcome(body, LOCAL)).toEqual({ dueAtMs: NOW_MS + 1000 });
  });

  it('rejects a caller header that would override the signature', () => {
    // Prepare
    const body = request({ delaySeconds: 1, target: { ...TARGET, headers: { 'Webhook-Signature': 'v1,forged' } } });

    // Act & Assess
    expect(outcome(body)).toEqual({ paths: ['target.headers.Webhook-Signature'] });
  });

  it('rejects header values with CR or LF, which could smuggle headers', () => {
    // Act & Assess
    for (const value of ['a\r\nx-evil: 1', 'a\nb', 'a\rb']) {
      const body = request({ delaySeconds: 1, target: { ...TARGET, headers: { 'x-note': value } } });
      expect(outcome(body)).toEqual({ paths: ['target.headers.x-note'] });
    }
    expect(outcome(request({ delaySeconds: 1, target: { ...TARGET, headers: { 'x-note': 'tab\tok' } } }))).toEqual({
      dueAtMs: NOW_MS + 1000,
    });
  });

  it('rejects a payload over 64 KiB of JSON', () => {
    // Prepare: a string's JSON is its characters plus two quotes.
    const fits = 'x'.repeat(64 * 1024 - 2);
    const tooBig = 'x'.repeat(64 * 1024 - 1);

    // Act & Assess
    expect(outcome(request({ delaySeconds: 1, payload: fits }))).toEqual({ dueAtMs: NOW_MS + 1000 });
    expect(outcome(request({ delaySeconds: 1, payload: tooBig }))).toEqual({ paths: ['payload'] });
  });

  it('accepts a window of 1 to 900 whole seconds and keeps it with the request', () => {
    // Act
    const narrowest = parseTaskRequest(request({ delaySeconds: 10, window: { seconds: 1 } }), CLOUD);
    const widest = parseTaskRequest(request({ delaySeconds: 10, window: { seconds: 900 } }), CLOUD);

    // Assess
    expect(narrowest).toMatchObject({ ok: true, value: { dueAtMs: NOW_MS + 10_000, window: { seconds: 1 } } });
    expect(widest).toMatchObject({ ok: true, value: { window: { seconds: 900 } } });
  });

  it('rejects a window that is not 1 to 900 whole seconds at window.seconds, saying what fits', () => {
    for (const seconds of [0, -5, 1.5, 901, '60', undefined]) {
      // Act
      const parsed = parseTaskRequest(request({ delaySeconds: 10, window: { seconds } }), CLOUD);

      // Assess
      expect(parsed).toEqual({
        ok: false,
        errors: [{ path: 'window.seconds', message: expect.stringContaining('from 1 to 900 (15 minutes)') }],
      });
    }
  });

  it('rejects a window that is not an object at window, and an unknown field in it by name', () => {
    // Act & Assess
    expect(outcome(request({ delaySeconds: 10, window: 60 }))).toEqual({ paths: ['window'] });
    expect(outcome(request({ delaySeconds: 10, window: { seconds: 60, jitter: 5 } }))).toEqual({
      paths: ['window.jitter'],
    });
  });

  it('names an unknown top-level field by its own name', () => {
    // Act & Assess
    expect(outcome(request({ delaySeconds: 1, colour: 'blue' }))).toEqual({ paths: ['colour'] });
  });

  it('prefixes error paths with the batch position', () => {
    // Prepare
    const options = { ...CLOUD, pathPrefix: ['tasks', 3] };

    // Act & Assess
    expect(outcome(request({ dueAt: 'tomorrow' }), options)).toEqual({ paths: ['tasks[3].dueAt'] });
    expect(outcome(request({ delaySeconds: 1, colour: 'blue' }), options)).toEqual({ paths: ['tasks[3].colour'] });
    expect(
      outcome({ delaySeconds: 1, target: { type: 'http', url: 'http://hooks.example.com/timer' } }, options),
    ).toEqual({
      paths: ['tasks[3].target.url'],
    });
  });
});

describe('Function: parseIsoInstant', () => {
  it('reads seconds, fractions and offsets', () => {
    // Act & Assess
    expect(parseIsoInstant('2026-01-15T23:59:59.999Z')).toBe(Date.UTC(2026, 0, 15, 23, 59, 59, 999));
    expect(parseIsoInstant('2026-01-15T12:00-05:30')).toBe(Date.UTC(2026, 0, 15, 17, 30));
  });

  it('rejects the hour 24 and the month 13', () => {
    // Act & Assess
    expect(parseIsoInstant('2026-01-15T24:00:00Z')).toBeUndefined();
    expect(parseIsoInstant('2026-13-01T00:00:00Z')).toBeUndefined();
  });
});
