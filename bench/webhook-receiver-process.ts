/**
 * The scale model's webhook receiver in a process of its own (started by bench/webhook-receiver.ts):
 * /hook/<tenant>, checking each arrival's signature with that tenant's secret. In the cloud the
 * receivers are other machines; here, serving them on the handlers' event loop took about a tenth
 * of its time in a hot second, and stamped each arrival only when that loop got to it.
 *
 * Each tenant's path stands for a host of its own: with limits, a host serves at most
 * `concurrencyPerHost` requests at once, each for `serviceMs`, and the rest wait their turn.
 * Arrivals are stamped when their body is read, before any wait, and kept until the parent asks
 * for them.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

import { verifyWebhook } from '../functions/contract/webhook-signature.js';
import type { WebhookNotification } from '../functions/contract/wire.js';
import { serveLocalProcess } from '../lib/local/local-process.js';
import type { ReceivedArrival, ReceiverQuestion, ReceiverSetup, ReceiverUsage } from './webhook-receiver.js';

const setup = JSON.parse(process.argv[2] ?? '{}') as ReceiverSetup;
const { tenants, secrets, limits } = setup;

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

let unreported: ReceivedArrival[] = [];
const hosts = new Map<string, { serving: number; waiting: Array<() => void> }>();
const usage: ReceiverUsage = { peakConcurrency: 0, peakWaiting: 0, waited: 0, maxWaitMs: 0 };

/** Waits for a place at the tenant's host and serves the request's time; answers what frees the place. */
async function served(tenant: string): Promise<() => void> {
  if (!limits) return () => undefined;
  const host = hosts.get(tenant) ?? { serving: 0, waiting: [] };
  hosts.set(tenant, host);
  if (host.serving < limits.concurrencyPerHost) host.serving += 1;
  else {
    const waitFrom = Date.now();
    usage.waited += 1;
    // The place is handed over by the request leaving it, so `serving` stays as it is.
    await new Promise<void>((resolve) => {
      host.waiting.push(resolve);
      usage.peakWaiting = Math.max(usage.peakWaiting, host.waiting.length);
    });
    usage.maxWaitMs = Math.max(usage.maxWaitMs, Date.now() - waitFrom);
  }
  usage.peakConcurrency = Math.max(usage.peakConcurrency, host.serving);
  await sleep(limits.serviceMs);
  return () => {
    const next = host.waiting.shift();
    if (next) next();
    else host.serving -= 1;
  };
}

const server = createServer((request, response) => {
  void readBody(request).then(async (rawBody) => {
    const receivedAtMs = Date.now();
    const tenant = (request.url ?? '').replace(/^\/hook\//, '');
    const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
    const secret = secrets[tenant];
    const notification = JSON.parse(rawBody) as WebhookNotification;
    const hangs = tenants[tenant] === 'hang';
    unreported.push({
      notification: {
        id: notification.id,
        ...(notification.scheduleId && { scheduleId: notification.scheduleId }),
        ...(notification.occurrence && { occurrence: notification.occurrence }),
      },
      arrival: {
        receivedAtMs,
        attempt: notification.attempt,
        signatureValid: secret !== undefined && verifyWebhook(secret, headers, rawBody),
        answered: hangs ? 0 : 204,
      },
    });
    // A hanging webhook never answers; the caller's timeout ends the request.
    if (hangs) return;
    const release = await served(tenant);
    response.writeHead(204).end();
    release();
  });
});

await serveLocalProcess(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    ready: (server.address() as AddressInfo).port,
    answer: (question) => {
      if ((question as ReceiverQuestion) === 'usage') return usage;
      const arrivals = unreported;
      unreported = [];
      return arrivals;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
});
