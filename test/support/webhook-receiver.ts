import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { Notification } from '../../functions/core/deliver/deliver.js';

export interface Receipt {
  readonly path: string;
  /** The status the receiver answered with; 0 when it dropped the connection instead. */
  readonly status: number;
  readonly receivedAtMs: number;
  readonly headers: Record<string, string | undefined>;
  readonly rawBody: string;
  readonly body: Notification;
}

/** An answer with a delay, extra headers, or no answer at all (the connection is dropped). */
export interface Answer {
  readonly status?: number;
  readonly delayMs?: number;
  readonly headers?: Record<string, string>;
  readonly dropConnection?: boolean;
}

/** How the receiver answers a delivery to a path, chosen per request. */
export type Responder = (notification: Notification, attemptsSoFar: number) => number | Answer;

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
      const seen = attemptsById.get(body.id) ?? 0;
      attemptsById.set(body.id, seen + 1);
      const chosen = responders[path]?.(body, seen) ?? 404;
      const answer: Answer = typeof chosen === 'number' ? { status: chosen } : chosen;
      receipts.push({
        path,
        status: answer.dropConnection ? 0 : (answer.status ?? 200),
        receivedAtMs,
        headers,
        rawBody,
        body,
      });
      if (answer.dropConnection) {
        request.socket.destroy();
        return;
      }
      const status = answer.status ?? 200;
      setTimeout(() => {
        if (response.destroyed) return;
        response.writeHead(status, { 'content-type': 'text/plain', ...answer.headers });
        response.end(status < 300 ? 'ok' : 'no');
      }, answer.delayMs ?? 0);
    });
  });
  let connections = 0;
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    receipts,
    /** TCP connections accepted so far: how a test sees keep-alive reuse, or that nothing connected at all. */
    connections: () => connections,
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

/**
 * What `read` answers once `settled` holds of it, or its last answer when `attempts` polls have
 * passed: for a value that follows an event with a lag a busy machine lengthens (a task's status
 * after the receiver has its delivery). The caller asserts on it, so a failure shows the value.
 */
export async function settledValue<T>(
  read: () => Promise<T>,
  settled: (value: T) => boolean,
  attempts = 60,
  intervalMs = 500,
): Promise<T> {
  let value = await read();
  for (let attempt = 1; attempt < attempts && !settled(value); attempt++) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    value = await read();
  }
  return value;
}

/** The value at quantile q (0..1) of the numbers, nearest-rank. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}
