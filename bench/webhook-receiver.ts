/**
 * The scale model's webhook receiver, as the scenario sees it: the server runs in a process of
 * its own (bench/webhook-receiver-process.ts), and its arrivals are gathered here every
 * ARRIVALS_POLL_MS. An arrival's time is stamped where it arrived, so gathering late delays only
 * the scenario's progress checks, never a measured lateness. SQS and EventBridge arrivals are
 * recorded here too (`record`), so every target is counted the same way.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import type { WebhookNotification } from '../functions/contract/wire.js';
import { startLocalProcess } from '../lib/local/local-process.js';

/** How a tenant's webhook answers: at once with 204, or never (the delivery times out). */
export type WebhookBehaviour = 'ok' | 'hang';

/** The webhook receiver's host limit: each tenant's path stands for a host of its own. */
export interface ReceiverLimits {
  /** Requests one host serves at once; those over it wait in a queue for a free slot. */
  readonly concurrencyPerHost: number;
  /** How long the receiver takes to answer a request once it is served. */
  readonly serviceMs: number;
}

/** How busy the hosts were: the most requests one served at once, and those that waited. */
export interface ReceiverUsage {
  peakConcurrency: number;
  /** The most requests waiting for one host at once, and how many waited at all. */
  peakWaiting: number;
  waited: number;
  maxWaitMs: number;
}

export type ReceiverResult = ReceiverLimits & Readonly<ReceiverUsage>;

export interface Arrival {
  readonly receivedAtMs: number;
  /** The attempt the notification says it is. */
  readonly attempt: number;
  readonly signatureValid: boolean;
  readonly answered: number;
}

/** What names an arrival: a task's id, or a schedule's occurrence. */
type ArrivalOf = Pick<WebhookNotification, 'id' | 'scheduleId' | 'occurrence'>;

/** What the receiver's process is started with (its one argument, as JSON). */
export interface ReceiverSetup {
  readonly tenants: Readonly<Record<string, WebhookBehaviour>>;
  /** Each tenant's signing secret. */
  readonly secrets: Readonly<Record<string, string>>;
  readonly limits?: ReceiverLimits;
}

/** One arrival as the receiver's process reports it. */
export interface ReceivedArrival {
  readonly notification: ArrivalOf;
  readonly arrival: Arrival;
}

/** What the receiver's process answers: the arrivals since the last ask, or its hosts' usage. */
export type ReceiverQuestion = 'arrivals' | 'usage';

/** How often the scenario gathers the receiver's arrivals. */
const ARRIVALS_POLL_MS = 100;

/** The key of a schedule's occurrence: its schedule and nominal time. */
export const occurrenceKey = (scheduleId: string, atMs: number) => `${scheduleId}@${atMs}`;

/** Starts the receiver for `tenants` (each signing with its secret in `secrets`), once it is serving. */
export async function startReceiver(
  tenants: Readonly<Record<string, WebhookBehaviour>>,
  secrets: ReadonlyMap<string, string>,
  limits?: ReceiverLimits,
) {
  const setup: ReceiverSetup = { tenants, secrets: Object.fromEntries(secrets), ...(limits && { limits }) };
  const receiver = await startLocalProcess<number>(import.meta.url, 'webhook-receiver-process', [
    JSON.stringify(setup),
  ]);
  const arrivals = new Map<string, Arrival[]>();
  /** Occurrences of schedules, by occurrenceKey. */
  const occurrences = new Map<string, Arrival[]>();
  const record = (notification: ArrivalOf, arrival: Arrival) => {
    const { scheduleId, occurrence } = notification;
    const map = scheduleId && occurrence ? occurrences : arrivals;
    const key = scheduleId && occurrence ? occurrenceKey(scheduleId, Date.parse(occurrence)) : notification.id;
    const list = map.get(key) ?? [];
    list.push(arrival);
    map.set(key, list);
  };
  const gather = async () => {
    for (const { notification, arrival } of await receiver.ask<ReceivedArrival[]>(
      'arrivals' satisfies ReceiverQuestion,
    ))
      record(notification, arrival);
  };
  let open = true;
  const gathering = (async () => {
    while (open) {
      await gather();
      await sleep(ARRIVALS_POLL_MS);
    }
  })();
  return {
    url: (tenant: string) => `http://127.0.0.1:${receiver.ready}/hook/${tenant}`,
    arrivals,
    occurrences,
    record,
    /** Stops the receiver once every arrival is gathered; answers its hosts' usage, when they have a cap. */
    async close(): Promise<ReceiverResult | undefined> {
      open = false;
      await gathering;
      await gather();
      const usage = await receiver.ask<ReceiverUsage>('usage' satisfies ReceiverQuestion);
      await receiver.stop();
      return limits && { ...limits, ...usage };
    },
  };
}
