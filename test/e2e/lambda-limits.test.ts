/**
 * Local mode under Lambda's limits, over HTTP: the gateway refuses what Lambda would refuse.
 * (Batches running side by side, timeouts and throttles are tested on the event source
 * mapping itself, in test/integration/sqs-event-source.test.ts, where a loaded machine's
 * CPU does not decide the outcome.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { LocalTimer } from '../../lib/local/runtime.js';
import { startTestTimer } from '../support/local-timer-fixture.js';

let timer: LocalTimer;

beforeAll(async () => {
  timer = await startTestTimer();
});

afterAll(async () => {
  await timer?.stop();
});

async function post(path: string, body: string) {
  const response = await fetch(`${timer.apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${timer.apiKey}` },
    body,
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

describe('End to end: local mode within Lambda limits', () => {
  it('answers a request over 6 MB with 413 problem+json naming the limit, and never invokes the api', async () => {
    // Prepare: under API Gateway's 10 MB, over Lambda's 6 MB.
    const invocationsBefore = timer.lambdaStats().functions.api.invocations;
    const body = JSON.stringify({ dueAt: Date.now() + 60_000, payload: { padding: 'x'.repeat(7 * 1024 * 1024) } });

    // Act
    const response = await post('/v1/tasks', body);

    // Assess
    expect(response.status).toBe(413);
    expect(response.contentType).toBe('application/problem+json');
    expect(response.body).toMatchObject({ status: 413, type: '/problems/payload-too-large' });
    expect(response.body.detail).toContain('6 MB');
    expect(timer.lambdaStats().functions.api.invocations).toBe(invocationsBefore);
  });
});
