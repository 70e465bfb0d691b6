import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Notification } from '../../functions/core/deliver';

export interface Receipt {
  readonly path: string;
  readonly receivedAtMs: number;
  readonly headers: Record<string, string | undefined>;
  readonly rawBody: string;
  readonly body: Notification;
}

/** How the receiver answers a delivery to a path: a status code, chosen per request. */
export type Responder = (notification: Notification, attemptsSoFar: number) => number;

/** A real HTTP server on loopback that records every webhook with the receiver's own clock. */
export async function startWebhookReceiver(responders: Record<string, Responder>) {
  const receipts: Receipt[] = [];
  const attemptsById = new Map<string, number>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const receivedAtMs = Date.now();
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const body = JSON.parse(rawBody) as Notification;
      const path = request.url ?? '/';
      const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      receipts.push({ path, receivedAtMs, headers, rawBody, body });
      const seen = attemptsById.get(body.id) ?? 0;
      attemptsById.set(body.id, seen + 1);
      const status = responders[path]?.(body, seen) ?? 404;
      response.writeHead(status, { 'content-type': 'text/plain' });
      response.end(status < 300 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    receipts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Polls `condition` every `intervalMs` up to `attempts` times; fails with `what` if it never holds. */
export async function eventually(
  what: string,
  condition: () => boolean | Promise<boolean>,
  attempts = 100,
  intervalMs = 500,
) {
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** The value at quantile q (0..1) of the numbers, nearest-rank. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}
