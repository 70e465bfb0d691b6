import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AwsTargetDispatcher } from '../../functions/adapters/targets.js';
import { WebhookClient } from '../../functions/adapters/webhook-client.js';
import { deliverRecords, type RecordPorts } from '../../functions/callback/records.js';
import { DEFAULT_SETTINGS, WEBHOOK_CONNECT_TIMEOUT_MS } from '../../functions/contract/topology.js';
import { guardedByHostBreaker, HostBreaker } from '../../functions/core/deliver/host-breaker.js';
import type { Task } from '../../functions/core/kernel/task.js';
import { addressPolicy } from '../../functions/core/targets/egress.js';
import { allowLoopbackConnectsOnly } from '../support/loopback-guard.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import {
  aTask,
  aTenant,
  DELIVERY_SETTINGS,
  FakeDeliveryQueue,
  fakeOccurrencePorts,
  FakeRequestCounter,
  FakeTaskStore,
  fakeTenantDirectory,
  ManualClock,
} from './fakes.js';
import { sqsRecord } from './handlers/setup.js';

/**
 * The callback's path as app.ts builds it (host breaker with its defaults, the real webhook
 * client, the deployment's webhook timeout and attempts) against a real receiver on loopback.
 */

let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let guard: ReturnType<typeof allowLoopbackConnectsOnly>;

beforeAll(async () => {
  guard = allowLoopbackConnectsOnly();
  receiver = await startWebhookReceiver({
    '/slow': () => ({ status: 200, delayMs: 3_500 }),
    '/ok': () => 200,
    '/always-503': () => 503,
    '/twice-503': (_notification, attemptsSoFar) => (attemptsSoFar < 2 ? 503 : 200),
  });
});

afterAll(async () => {
  await receiver.close();
  guard.mockRestore();
});

function callbackWith(tasks: readonly Task[]) {
  const clock = new ManualClock(Date.now());
  const store = new FakeTaskStore(tasks);
  const deliveryQueue = new FakeDeliveryQueue();
  const ports: RecordPorts = {
    delivery: {
      ...DELIVERY_SETTINGS,
      maxAttempts: DEFAULT_SETTINGS.maxAttempts,
      taskStore: store,
      occurrences: fakeOccurrencePorts(store, clock),
      targets: guardedByHostBreaker(
        new AwsTargetDispatcher({
          clock,
          sqsFor: () => new SQSClient({ region: 'eu-west-1' }),
          eventBridge: new EventBridgeClient({ region: 'eu-west-1' }),
          webhooks: new WebhookClient({
            policy: addressPolicy(true),
            connectTimeoutMs: WEBHOOK_CONNECT_TIMEOUT_MS,
            totalTimeoutMs: DEFAULT_SETTINGS.webhookTimeoutMs,
          }),
        }),
        new HostBreaker(clock),
      ),
      tenants: fakeTenantDirectory([aTenant()]),
      deadLetters: { send: async () => undefined },
      callbackCounter: new FakeRequestCounter(),
      clock,
    },
    deliveryQueue,
    logger: new Logger({ serviceName: 'unit', logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'unit' }),
  };
  const deliver = (batch: readonly Task[]) =>
    deliverRecords(
      ports,
      batch.map((task) => sqsRecord(JSON.stringify({ id: task.id }), task.id)),
    );
  return { clock, store, deliveryQueue, deliver };
}

const callsTo = (task: Task) => receiver.receipts.filter((receipt) => receipt.body.id === task.id);
const webhook = (path: string) => ({ type: 'http', url: receiver.url(path) }) as const;

describe('Invariant 12: a receiver that answers within the webhook timeout', () => {
  it('is called once per attempt, and its task ends DELIVERED, when it answers 200 after 3.5 s, by default and with maxAttempts 1', async () => {
    // Prepare
    const dueAtMs = Date.now();
    const byDefault = aTask(dueAtMs, 0, { target: webhook('/slow') });
    const oneAttempt = aTask(dueAtMs, 1, { target: webhook('/slow'), policy: { maxAttempts: 1 } });
    const { store, deliveryQueue, deliver } = callbackWith([byDefault, oneAttempt]);

    // Act
    const response = await deliver([byDefault, oneAttempt]);

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(deliveryQueue.sent).toEqual([]);
    for (const task of [byDefault, oneAttempt]) {
      expect(callsTo(task)).toHaveLength(1);
      expect(store.shown(task.id)).toMatchObject({ status: 'DELIVERED', attempts: 1 });
    }
  });
});

describe("Invariant 9: a live host's 5xx to one task", () => {
  it('never holds back its other tasks nor rests the host, and a task answered 503 twice is delivered on its third call', async () => {
    // Prepare: more always-503 tasks than it takes unanswered calls to rest a host.
    const dueAtMs = Date.now();
    const failing = Array.from({ length: 8 }, (_, index) =>
      aTask(dueAtMs, index % 4, { target: webhook('/always-503') }),
    );
    const twice = aTask(dueAtMs, 0, { target: webhook('/twice-503') });
    const healthy = Array.from({ length: 8 }, (_, index) => aTask(dueAtMs, index % 4, { target: webhook('/ok') }));
    const { clock, store, deliver } = callbackWith([...failing, twice, ...healthy]);
    const statusOf = (task: Task) => store.shown(task.id)?.status;

    // Act: the failures come first, then the healthy tasks, then every retry as it falls due.
    await deliver([...failing, twice]);
    await deliver(healthy);
    for (let round = 0; round < 2; round += 1) {
      const retrying = [...failing, twice].filter((task) => statusOf(task) === 'PENDING');
      clock.set(Math.max(...retrying.map((task) => store.shown(task.id)?.retryAtMs ?? 0)));
      await deliver(retrying);
    }

    // Assess
    expect(healthy.map(statusOf)).toEqual(healthy.map(() => 'DELIVERED'));
    expect(healthy.map((task) => callsTo(task).length)).toEqual(healthy.map(() => 1));
    expect(callsTo(twice).map((receipt) => receipt.status)).toEqual([503, 503, 200]);
    expect(store.shown(twice.id)).toMatchObject({ status: 'DELIVERED', attempts: 3 });
    // Every attempt of the failing tasks was a call the host answered: none was rested.
    for (const task of failing) {
      expect(store.shown(task.id)?.attempts).toBe(3);
      expect(callsTo(task)).toHaveLength(3);
    }
  });
});
