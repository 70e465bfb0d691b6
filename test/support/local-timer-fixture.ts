/**
 * A local timer in this process and a webhook receiver of a test file's own, started before its
 * tests and stopped after them, with `api` calling the timer as its development tenant.
 */
import { afterAll, beforeAll } from 'vitest';

import { decodeDeliveryBody } from '../../functions/core/kernel/task-kernel.js';
import type { AwsRequest } from '../../lib/local/function-wiring.js';
import { type LocalTimer, type LocalTimerOptions, startLocalTimer } from '../../lib/local/runtime.js';
import { type Responder, startWebhookReceiver } from './webhook-receiver.js';

/**
 * The task ids a request of local mode's sent to the delivery queue from the sweeper: its catch-up
 * and overdue passes send only what a missed tick or a lost message left behind, so a task named
 * here did not come by its own tick (or the api's own enqueue).
 */
export function sweeperSentIds(request: AwsRequest): string[] {
  if (request.fn !== 'sweeper' || request.name !== 'SQS.SendMessageBatch') return [];
  const entries = (request.input.Entries ?? []) as Array<{ MessageBody?: string }>;
  return entries.flatMap((entry) => decodeDeliveryBody(entry.MessageBody ?? '')?.id ?? []);
}

/**
 * The shards of the local timers tests start. Shards spread a busy second's writes over DynamoDB
 * partitions, which dynalite has none of, and the scanner Queries every shard of each second that
 * holds a task: at the deployment's 80, a test paid 80 Queries (about 0.3 CPU-s here) for every
 * such second, and the local-mode e2e file took 34 CPU-s where it takes 25 at 8. No test that
 * starts a timer here is about the shard count: the ids, the scan over every shard and the
 * deployment's 80 are the unit tests' and the synthesized stack's.
 */
const TEST_SHARD_COUNT = 8;

/** Starts a local timer on a free port, silent, with TEST_SHARD_COUNT shards unless `options` say otherwise. */
export function startTestTimer(options: LocalTimerOptions = {}): Promise<LocalTimer> {
  return startLocalTimer({
    port: 0,
    logLevel: 'SILENT',
    ...options,
    settings: { shardCount: TEST_SHARD_COUNT, ...options.settings },
  });
}

export interface LocalTimerFixture {
  timer: LocalTimer;
  receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  /** Tasks the sweeper sent to the delivery queue (see sweeperSentIds). */
  sentBySweeper: Set<string>;
  /** Calls the timer's api with the development tenant's key; the body is the parsed JSON answer. */
  api: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: Record<string, unknown> }>;
}

export function localTimerFixture(responders: Record<string, Responder>): LocalTimerFixture {
  const fixture = {
    sentBySweeper: new Set<string>(),
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
    fixture.timer = await startTestTimer({
      onRequest: (request) => {
        for (const id of sweeperSentIds(request)) fixture.sentBySweeper.add(id);
      },
    });
    fixture.receiver = await startWebhookReceiver(responders);
  });
  afterAll(async () => {
    await fixture.receiver?.close();
    await fixture.timer?.stop();
  });
  return fixture;
}
