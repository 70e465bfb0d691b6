/**
 * A local timer in this process and a webhook receiver of a test file's own, started before its
 * tests and stopped after them, with `api` calling the timer as its development tenant.
 */
import { afterAll, beforeAll } from 'vitest';

import { type LocalTimer, startLocalTimer } from '../../lib/local/runtime.js';
import { type Responder, startWebhookReceiver } from './webhook-receiver.js';

export interface LocalTimerFixture {
  timer: LocalTimer;
  receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  /** Calls the timer's api with the development tenant's key; the body is the parsed JSON answer. */
  api: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: Record<string, unknown> }>;
}

export function localTimerFixture(responders: Record<string, Responder>): LocalTimerFixture {
  const fixture = {
    api: async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${fixture.timer.apiUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${fixture.timer.apiKey}` },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    },
  } as LocalTimerFixture;
  beforeAll(async () => {
    fixture.timer = await startLocalTimer({ port: 0, logLevel: 'SILENT' });
    fixture.receiver = await startWebhookReceiver(responders);
  });
  afterAll(async () => {
    await fixture.receiver?.close();
    await fixture.timer?.stop();
  });
  return fixture;
}
