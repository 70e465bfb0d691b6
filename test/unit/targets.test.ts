import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { AwsTargetDispatcher, retryAfterSeconds } from '../../functions/adapters/targets';
import type { Notification, Sender } from '../../functions/core/deliver';
import { generateSigningSecret, verifyWebhook } from '../../functions/core/signature';
import type { Target } from '../../functions/core/task';
import { ManualClock } from './fakes';

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
const WEBHOOK: Target = { type: 'http', url: 'https://hooks.example.com/timer?x=1', headers: { 'x-tenant': 't-42' } };

const SENDER: Sender = { signingSecrets: [SECRET] };

const sqsMock = mockClient(SQSClient);
const eventBridgeMock = mockClient(EventBridgeClient);

function dispatcherWith(fetch: typeof globalThis.fetch) {
  return new AwsTargetDispatcher({
    webhookTimeoutMs: 1000,
    clock: new ManualClock(NOW_MS),
    sqsFor: () => new SQSClient({ region: 'eu-west-1' }),
    eventBridge: new EventBridgeClient({ region: 'us-east-1' }),
    fetch,
  });
}

const answering = (status: number, headers: Record<string, string> = {}) =>
  vi.fn<typeof globalThis.fetch>(async () => new Response(status === 204 ? null : 'body', { status, headers }));

describe('Class: AwsTargetDispatcher', () => {
  beforeEach(() => {
    sqsMock.reset();
    eventBridgeMock.reset();
  });

  describe('Method: dispatch to a webhook', () => {
    it('posts the notification as signed JSON with the caller headers and without following redirects', async () => {
      // Prepare
      const fetch = answering(204);

      // Act
      const result = await dispatcherWith(fetch).dispatch(WEBHOOK, NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({ ok: true, detail: 'HTTP 204', statusCode: 204 });
      expect(fetch).toHaveBeenCalledTimes(1);
      const [url, init] = fetch.mock.calls[0] ?? [];
      const headers = init?.headers as Record<string, string>;
      const body = init?.body as string;
      expect(url).toBe('https://hooks.example.com/timer?x=1');
      expect(init?.method).toBe('POST');
      expect(init?.redirect).toBe('manual');
      expect(headers['content-type']).toBe('application/json');
      expect(headers['x-tenant']).toBe('t-42');
      expect(headers['webhook-id']).toBe(NOTIFICATION.id);
      expect(JSON.parse(body)).toEqual(NOTIFICATION);
      expect(verifyWebhook(SECRET, headers, body, Math.floor(NOW_MS / 1000))).toBe(true);
    });

    it('reports a non-2xx answer as a failure naming the status and host', async () => {
      // Act
      const result = await dispatcherWith(answering(500)).dispatch(WEBHOOK, NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({ ok: false, error: 'HTTP 500 from hooks.example.com', statusCode: 500 });
    });

    it('treats a redirect as a failure rather than following it', async () => {
      // Act
      const result = await dispatcherWith(answering(302, { location: 'http://169.254.169.254/' })).dispatch(
        WEBHOOK,
        NOTIFICATION,
        SENDER,
      );

      // Assess
      expect(result).toEqual({ ok: false, error: 'HTTP 302 from hooks.example.com', statusCode: 302 });
    });

    it('passes on the Retry-After of a 429', async () => {
      // Act
      const result = await dispatcherWith(answering(429, { 'retry-after': '7' })).dispatch(WEBHOOK, NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({ ok: false, error: 'HTTP 429 from hooks.example.com', retryAfterSeconds: 7, statusCode: 429 });
    });

    it('reports a network error as a failure instead of throwing', async () => {
      // Prepare
      const fetch = vi.fn<typeof globalThis.fetch>(async () => {
        throw new TypeError('fetch failed');
      });

      // Act
      const result = await dispatcherWith(fetch).dispatch(WEBHOOK, NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({ ok: false, error: 'TypeError: fetch failed' });
    });

    it('reports a timeout in words', async () => {
      // Prepare
      const fetch = vi.fn<typeof globalThis.fetch>(async () => {
        throw new DOMException('The operation timed out.', 'TimeoutError');
      });

      // Act
      const result = await dispatcherWith(fetch).dispatch(WEBHOOK, NOTIFICATION, SENDER);

      // Assess
      expect(result).toEqual({ ok: false, error: 'no answer within 1000 ms' });
    });
  });

  describe('Method: dispatch to an SQS queue', () => {
    it('sends the notification JSON to the queue URL', async () => {
      // Prepare
      const queueUrl = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders';
      sqsMock.on(SendMessageCommand).resolves({ MessageId: 'm-1' });

      // Act
      const result = await dispatcherWith(answering(204)).dispatch({ type: 'sqs', queueUrl }, NOTIFICATION, SENDER);

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
      const result = await dispatcherWith(answering(204)).dispatch(
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
      const result = await dispatcherWith(answering(204)).dispatch(
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
      await dispatcherWith(answering(204)).dispatch(
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
      const result = await dispatcherWith(answering(204)).dispatch(
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
    expect(retryAfterSeconds(null, NOW_MS)).toBeUndefined();
    expect(retryAfterSeconds('', NOW_MS)).toBeUndefined();
    expect(retryAfterSeconds('soon', NOW_MS)).toBeUndefined();
  });

  it('does not mistake numbers that are not delta seconds for dates', () => {
    // Act & Assess
    expect(retryAfterSeconds('7.5', NOW_MS)).toBeUndefined();
    expect(retryAfterSeconds('-1', NOW_MS)).toBeUndefined();
  });
});
