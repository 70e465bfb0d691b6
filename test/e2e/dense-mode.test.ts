/**
 * Local mode with `tickEverySecond`: the same handlers, told to tick and scan every second
 * instead of keeping the occupancy index, over HTTP, with every AWS request they make watched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { FunctionName } from '../../functions/contract/topology.js';
import { type AwsRequest, type LocalTimer, startLocalTimer } from '../../lib/local/runtime.js';
import { sweeperSentIds } from '../support/local-timer-fixture.js';
import { eventually, quantile, startWebhookReceiver } from '../support/webhook-receiver.js';

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

let timer: LocalTimer;
let receiver: Receiver;
const requests: AwsRequest[] = [];

beforeAll(async () => {
  timer = await startLocalTimer({
    port: 0,
    logLevel: 'SILENT',
    // Few shards: dense mode Queries each of them every second, and this test is about which items are touched.
    settings: { tickEverySecond: true, shardCount: 4 },
    onRequest: (request) => requests.push(request),
  });
  receiver = await startWebhookReceiver({ '/ok': () => 204 });
});

afterAll(async () => {
  await receiver?.close();
  await timer?.stop();
});

/** Whether a request names an occupancy index item (`OCCUPIED#…`), whatever its shape. */
const touchesOccupancy = (request: AwsRequest) => JSON.stringify(request.input).includes('OCCUPIED#');

describe('End to end: dense mode (tickEverySecond) in local mode', () => {
  it('delivers single submits on time, never early, with no occupancy write by the api and no index read by scans', async () => {
    // Prepare: single submits due in distinct seconds over the next few, and two already overdue (late arrivals).
    const start = Date.now();
    const dueTimes = [
      ...Array.from({ length: 10 }, (_, i) => start + 4000 + i * 900 + (i % 3) * 137),
      start - 3000,
      start - 61_000,
    ];

    // Act
    const submitted: Array<{ id: string; dueAtMs: number; acceptedAtMs: number }> = [];
    for (const dueAtMs of dueTimes) {
      const response = await fetch(`${timer.apiUrl}/v1/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${timer.apiKey}` },
        body: JSON.stringify({ dueAt: dueAtMs, target: { type: 'http', url: receiver.url('/ok') }, payload: {} }),
      });
      expect(response.status).toBe(201);
      const { id } = (await response.json()) as { id: string };
      submitted.push({ id, dueAtMs, acceptedAtMs: Date.now() });
    }
    const arrived = () => new Set(receiver.receipts.map((receipt) => receipt.body.id));
    await eventually('every task has arrived', () => submitted.every((task) => arrived().has(task.id)), 60);

    // Assess: never early, and each came by its own second's tick, not the sweeper's catch-up.
    const firstArrival = new Map<string, number>();
    for (const receipt of receiver.receipts) {
      if (!firstArrival.has(receipt.body.id)) firstArrival.set(receipt.body.id, receipt.receivedAtMs);
    }
    const lateness = submitted.map(
      (task) => (firstArrival.get(task.id) ?? Number.NaN) - Math.max(task.dueAtMs, task.acceptedAtMs),
    );
    expect(lateness.filter((ms) => ms < 0)).toEqual([]);
    console.log(`dense mode: lateness p99 ${quantile(lateness, 0.99)} ms`);
    expect(submitted.filter((task) => requests.flatMap(sweeperSentIds).includes(task.id))).toEqual([]);

    // The index is kept by nobody: the ticker's once-a-minute plan writes are the only requests naming one of its items.
    const byFunction = (fn: FunctionName) => requests.filter((request) => request.fn === fn);
    expect(byFunction('api').length).toBeGreaterThan(0);
    expect(byFunction('api').filter(touchesOccupancy)).toEqual([]);
    expect(byFunction('scanner').filter(touchesOccupancy)).toEqual([]);
    expect(byFunction('sweeper').filter(touchesOccupancy)).toEqual([]);
    const plans = byFunction('ticker').filter(touchesOccupancy);
    expect(plans.length).toBeGreaterThan(0);
    expect(new Set(plans.map((request) => request.name))).toEqual(new Set(['DynamoDB.UpdateItem']));
    // One item per planned minute, never the index's other slots.
    expect(plans.every((request) => JSON.stringify(request.input).match(/OCCUPIED#\d+#0"/))).toBe(true);
    // Scans read no index slots (the callback's BatchGetItem reads tasks, not the index).
    const batchReads = [...byFunction('scanner'), ...byFunction('sweeper')].filter(
      (request) => request.name === 'DynamoDB.BatchGetItem',
    );
    expect(batchReads).toEqual([]);
  }, 90_000);
});
