import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';

import { signWebhook } from '../contract/webhook-signature.js';
import type { Notification, Sender, TargetDispatcher, TargetResult } from '../core/deliver/deliver.js';
import type { Clock, Target } from '../core/kernel/task.js';
import type { WebhookClient } from './webhook-client.js';

export const USER_AGENT = 'distributed-timer/0.1 (+https://www.standardwebhooks.com)';
export const DEFAULT_EVENT_SOURCE = 'timer.service';
export const DEFAULT_DETAIL_TYPE = 'Timer Fired';

export interface TargetDispatcherOptions {
  readonly clock: Clock;
  /** The SQS client for a target queue's region (queues may live in other regions than the service). */
  readonly sqsFor: (queueUrl: string) => SQSClient;
  readonly eventBridge: EventBridgeClient;
  /** Posts webhooks; its policy decides which hosts and addresses they may reach. */
  readonly webhooks: WebhookClient;
}

const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** Seconds from a Retry-After header (delta-seconds or an HTTP date), if it has one. */
export function retryAfterSeconds(header: string | undefined, nowMs: number): number | undefined {
  const value = header?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  // An HTTP-date (RFC 9110) always ends in GMT; anything else is not a Retry-After we understand.
  if (!value.endsWith('GMT')) return undefined;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - nowMs) / 1000));
}

/** Delivers notifications to webhooks, SQS queues and EventBridge buses. */
export class AwsTargetDispatcher implements TargetDispatcher {
  constructor(private readonly options: TargetDispatcherOptions) {}

  async dispatch(target: Target, notification: Notification, sender: Sender): Promise<TargetResult> {
    const body = JSON.stringify(notification);
    try {
      switch (target.type) {
        case 'http':
          return await this.postWebhook(target, notification.id, body, sender);
        case 'sqs':
          await this.options.sqsFor(target.queueUrl).send(
            new SendMessageCommand({
              QueueUrl: target.queueUrl,
              MessageBody: body,
              MessageAttributes: {
                'timer-task-id': { DataType: 'String', StringValue: notification.id },
                'timer-attempt': { DataType: 'Number', StringValue: String(notification.attempt) },
              },
            }),
          );
          return { ok: true };
        case 'eventbridge':
          return await this.putEvent(target, body);
      }
    } catch (error) {
      return { ok: false, error: describe(error) };
    }
  }

  private async postWebhook(
    target: Extract<Target, { type: 'http' }>,
    id: string,
    body: string,
    sender: Sender,
  ): Promise<TargetResult> {
    const { clock, webhooks } = this.options;
    const signed = signWebhook(sender.signingSecrets, id, Math.floor(clock.now() / 1000), body);
    const outcome = await webhooks.post(target.url, {
      headers: { ...target.headers, 'content-type': 'application/json', 'user-agent': USER_AGENT, ...signed },
      body,
      ...(sender.allowedHosts && { allowedHosts: sender.allowedHosts }),
    });
    if (!outcome.answered) return { ok: false, error: outcome.error };
    const { status, headers } = outcome;
    if (status >= 200 && status < 300) return { ok: true, detail: `HTTP ${status}`, statusCode: status };
    const from = `HTTP ${status} from ${new URL(target.url).host}`;
    const retryAfter = retryAfterSeconds(headers['retry-after'], clock.now());
    return {
      ok: false,
      // A redirect could point anywhere, including inside our own network; the target must give its final URL.
      error: status >= 300 && status < 400 ? `${from} (redirects are not followed: give the final URL)` : from,
      statusCode: status,
      ...(retryAfter !== undefined && { retryAfterSeconds: retryAfter }),
    };
  }

  private async putEvent(target: Extract<Target, { type: 'eventbridge' }>, detail: string): Promise<TargetResult> {
    const result = await this.options.eventBridge.send(
      new PutEventsCommand({
        Entries: [
          {
            EventBusName: target.eventBusName,
            Source: target.source ?? DEFAULT_EVENT_SOURCE,
            DetailType: target.detailType ?? DEFAULT_DETAIL_TYPE,
            Detail: detail,
          },
        ],
      }),
    );
    const failed = result.Entries?.find((entry) => entry.ErrorCode);
    if ((result.FailedEntryCount ?? 0) > 0 || failed) {
      return {
        ok: false,
        error: `EventBridge rejected the event: ${failed?.ErrorCode} ${failed?.ErrorMessage ?? ''}`.trim(),
      };
    }
    return { ok: true };
  }
}
