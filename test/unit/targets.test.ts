import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { AwsTargetDispatcher, retryAfterSeconds, USER_AGENT } from '../../functions/adapters/targets.js';
import { WebhookClient } from '../../functions/adapters/webhook-client.js';
import { generateSigningSecret, verifyWebhook } from '../../functions/contract/webhook-signature.js';
import type { Notification, Sender } from '../../functions/core/deliver/deliver.js';
import type { Target } from '../../functions/core/kernel/task.js';
import { addressPolicy } from '../../functions/core/targets/egress.js';
import { allowLoopbackConnectsOnly } from '../support/loopback-guard.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { ManualClock } from './fakes.js';

const NOW_MS = Date.UTC(2026, 5, 1, 8, 0, 0);
const SECRET = generateSigningSecret();
const NOTIFICATION: Notification = {
  id: '01KGZ3Q7W2000ABCDEFGHJKMNP',
  dueAt: new Date(NOW_MS - 20).toISOString(),
  firedAt: new Date(NOW_MS).toISOString(),
  attempt: 2,
  bizType: 'order',
  bizId: 'o-1',
  payload: { orderId: 'o-1' },
};
const TIMEOUT_MS = 300;

const SENDER: Sender = { tenantId: 'acme', signingSecrets: [SECRET] };

const sqsMock = mockClient(SQSClient);
const eventBridgeMock = mockClient(EventBridgeClient);

let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let guard: ReturnType<typeof allowLoopbackConnectsOnly>;

beforeAll(async () => {
  guard = allowLoopbackConnectsOnly();
  receiver = await startWebhookReceiver({
    '/timer?x=1': () => 204,
    '/fail': () => 500,
    '/moved': () => ({ status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } }),
    '/busy': () => ({ status: 429, headers: { 'retry-after': '7' } }),
    '/drop': () => ({ dropConnection: true }),
    '/slow': () => ({ status: 204, delayMs: 5 * TIMEOUT_MS }),
  });
});

afterAll(async () => {
  await receiver.close();
  guard.mockRestore();
});

afterEach(() => {
  receiver.receipts.length = 0;
});

const LOCAL_MODE_WEBHOOKS = { policy: addressPolicy(true), connectTimeoutMs: TIMEOUT_MS, totalTimeoutMs: TIMEOUT_MS };

/** A dispatcher whose webhooks reach loopback over http, as in local mode, unless given another client. */
function dispatcherWith(webhooks = new WebhookClient(LOCAL_MODE_WEBHOOKS)) {
  return new AwsTargetDispatcher({
    clock: new ManualClock(NOW_MS),
    sqsFor: () => new SQSClient({ region: 'eu-west-1' }),
    eventBridge: new EventBridgeClient({ region: 'us-east-1' }),
    webhooks,
  });
}

const webhook = (path: string): Target => ({ type: 'http', url: receiver.url(path), headers: { 'x-tenant': 't-42' } });

describe('Class: AwsTargetDispatcher', () => {
  beforeEach(() => {
    sqsMock.reset();
    eventBridgeMock.reset();
  });

  describe('Method: dispatch to a webhook', () => {
    it('posts the notification as signed JSON with the caller headers', async () => {
      // Act
      const result = await dispatcherWith().dispatch(webhook('/timer?x=1'), NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({ ok: true, detail: 'HTTP 204', statusCode: 204 });
      expect(receiver.receipts).toHaveLength(1);
      const [receipt] = receiver.receipts;
      const headers = receipt?.headers ?? {};
      expect(receipt?.path).toBe('/timer?x=1');
      expect(headers['content-type']).toBe('application/json');
      expect(headers['user-agent']).toBe(USER_AGENT);
      expect(headers['x-tenant']).toBe('t-42');
      expect(headers['webhook-id']).toBe(NOTIFICATION.id);
      expect(receipt?.body).toEqual(NOTIFICATION);
      const nowSeconds = Math.floor(NOW_MS / 1000);
      expect(verifyWebhook(SECRET, headers as Record<string, string>, receipt?.rawBody ?? '', nowSeconds)).toBe(true);
    });

    it('reports a non-2xx answer as a failure naming the status and host', async () => {
      // Act
      const result = await dispatcherWith().dispatch(webhook('/fail'), NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({ ok: false, error: `HTTP 500 from 127.0.0.1:${receiver.port}`, statusCode: 500 });
    });

    it('treats a redirect as a failure rather than following it', async () => {
      // Act
      const result = await dispatcherWith().dispatch(webhook('/moved'), NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({
        ok: false,
        error: `HTTP 302 from 127.0.0.1:${receiver.port} (redirects are not followed: give the final URL)`,
        statusCode: 302,
      });
      expect(receiver.receipts.map((receipt) => receipt.path)).toEqual(['/moved']);
    });

    it('passes on the Retry-After of a 429', async () => {
      // Act
      const result = await dispatcherWith().dispatch(webhook('/busy'), NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({
        ok: false,
        error: `HTTP 429 from 127.0.0.1:${receiver.port}`,
        statusCode: 429,
        retryAfterSeconds: 7,
      });
    });

    it('reports a network error as a failure instead of throwing', async () => {
      // Act
      const result = await dispatcherWith().dispatch(webhook('/drop'), NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({ ok: false, error: 'socket hang up' });
    });

    it('reports a timeout in words', async () => {
      // Act
      const result = await dispatcherWith().dispatch(webhook('/slow'), NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({ ok: false, error: `no answer within ${TIMEOUT_MS} ms` });
    });

    it("refuses a host outside the sender's allow-list, without connecting", async () => {
      // Prepare
      const connectionsBefore = receiver.connections();

      // Act
      const result = await dispatcherWith().dispatch(webhook('/timer?x=1'), NOTIFICATION, {
        ...SENDER,
        allowedHosts: ['hooks.example.com'],
      });

      // Assess
      expect(result).toMatchObject({ ok: false, error: expect.stringContaining('hooks.example.com') });
      expect(receiver.connections()).toBe(connectionsBefore);
      expect(receiver.receipts).toHaveLength(0);
    });

    it("refuses, under the cloud's policy, a webhook whose name resolves to loopback, without connecting", async () => {
      // Prepare
      const cloud = new WebhookClient({
        ...LOCAL_MODE_WEBHOOKS,
        policy: addressPolicy(false),
        resolve: async () => [{ address: '127.0.0.1', family: 4 }],
      });
      const connectionsBefore = receiver.connections();

      // Act
      const result = await dispatcherWith(cloud).dispatch(
        { type: 'http', url: `https://hooks.example.com:${receiver.port}/timer?x=1` },
        NOTIFICATION,
        SENDER,
      );

      // Assess
      expect(result).toEqual({
        ok: false,
        error: 'connect to hooks.example.com (127.0.0.1) refused: is a loopback address (127.0.0.0/8)',
      });
      expect(receiver.connections()).toBe(connectionsBefore);
    });
  });

  describe('Method: dispatch to an SQS queue', () => {
    it('sends the notification JSON to the queue URL', async () => {
      // Prepare
      const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders';
      sqsMock.on(SendMessageCommand).resolves({ MessageId: 'm-1' });

      // Act
      const result = await dispatcherWith().dispatch({ type: 'sqs', queueUrl }, NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({ ok: true });
      const calls = sqsMock.commandCalls(SendMessageCommand);
      expect(calls).toHaveLength(1);
      expect(calls[0]?.args[0].input.QueueUrl).toBe(queueUrl);
      expect(JSON.parse(calls[0]?.args[0].input.MessageBody ?? '')).toEqual(NOTIFICATION);
    });

    it('reports a rejected send as a failure', async () => {
      // Prepare
      sqsMock.on(SendMessageCommand).rejects(Object.assign(new Error('Access denied'), { name: 'AccessDenied' }));

      // Act
      const result = await dispatcherWith().dispatch(
        { type: 'sqs', queueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders' },
        NOTIFICATION,
        SENDER,
      );

      // Assess
      expect(result).toEqual({ ok: false, error: 'AccessDenied: Access denied' });
    });
  });

  describe('Method: dispatch to an EventBridge bus', () => {
    it('puts one event with the default source and detail type', async () => {
      // Prepare
      eventBridgeMock.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: 'e-1' }] });

      // Act
      const result = await dispatcherWith().dispatch(
        { type: 'eventbridge', eventBusName: 'orders' },
        NOTIFICATION,
        SENDER,
      );

      // Assess
      expect(result).toEqual({ ok: true });
      const entries = eventBridgeMock.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries ?? [];
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ EventBusName: 'orders', Source: 'timer.service', DetailType: 'Timer Fired' });
      expect(JSON.parse(entries[0]?.Detail ?? '')).toEqual(NOTIFICATION);
    });

    it('uses the source and detail type the task names', async () => {
      // Prepare
      eventBridgeMock.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: 'e-1' }] });

      // Act
      await dispatcherWith().dispatch(
        { type: 'eventbridge', eventBusName: 'orders', source: 'shop.orders', detailType: 'Order Expired' },
        NOTIFICATION,
        SENDER,
      );

      // Assess
      const entries = eventBridgeMock.commandCalls(PutEventsCommand)[0]?.args[0].input.Entries ?? [];
      expect(entries[0]).toMatchObject({ Source: 'shop.orders', DetailType: 'Order Expired' });
    });

    it('reports a failed entry as a failure', async () => {
      // Prepare
      eventBridgeMock.on(PutEventsCommand).resolves({
        FailedEntryCount: 1,
        Entries: [{ ErrorCode: 'InternalFailure', ErrorMessage: 'try again' }],
      });

      // Act
      const result = await dispatcherWith().dispatch(
        { type: 'eventbridge', eventBusName: 'orders' },
        NOTIFICATION,
        SENDER,
      );

      // Assess
      expect(result).toEqual({ ok: false, error: 'EventBridge rejected the event: InternalFailure try again' });
    });
  });
});

describe('Function: retryAfterSeconds', () => {
  it('reads delta seconds', () => {
    // Act & Assess
    expect(retryAfterSeconds('120', NOW_MS)).toBe(120);
    expect(retryAfterSeconds(' 0 ', NOW_MS)).toBe(0);
  });

  it('reads an HTTP date as the seconds until it, and a past date as zero', () => {
    // Act & Assess
    expect(retryAfterSeconds(new Date(NOW_MS + 30_000).toUTCString(), NOW_MS)).toBe(30);
    expect(retryAfterSeconds(new Date(NOW_MS - 30_000).toUTCString(), NOW_MS)).toBe(0);
  });

  it('gives nothing for a missing or unreadable header', () => {
    // Act & Assess
    expect(retryAfterSeconds(undefined, NOW_MS)).toBeUndefined();
    expect(retryAfterSeconds('', NOW_MS)).toBeUndefined();
    expect(retryAfterSeconds('soon', NOW_MS)).toBeUndefined();
  });

  it('does not mistake numbers that are not delta seconds for dates', () => {
    // Act & Assess
    expect(retryAfterSeconds('7.5', NOW_MS)).toBeUndefined();
    expect(retryAfterSeconds('-1', NOW_MS)).toBeUndefined();
  });
});
