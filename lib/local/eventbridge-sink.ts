import { randomUUID } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SunkEvent {
  readonly eventId: string;
  readonly receivedAt: string;
  readonly eventBusName: string;
  readonly source: string;
  readonly detailType: string;
  readonly detail: unknown;
}

export interface EventBridgeSink {
  readonly endpoint: string;
  readonly events: readonly SunkEvent[];
  close(): Promise<void>;
}

interface PutEventsEntry {
  EventBusName?: string;
  Source?: string;
  DetailType?: string;
  Detail?: string;
}

/**
 * Stands in for EventBridge in local mode. It speaks PutEvents' own wire protocol
 * (AWS JSON 1.1), so the callback's unmodified EventBridge client talks to it through
 * AWS_ENDPOINT_URL_EVENTBRIDGE; events are kept in memory and appended to a JSON Lines file.
 */
export async function startEventBridgeSink(
  options: {
    logFile?: string;
    /** The scale model's PutEvents quota: whether a request of this many entries may go on. @default always */
    admit?: (entries: number) => boolean;
  } = {},
): Promise<EventBridgeSink> {
  const events: SunkEvent[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    const answer = async () => {
      const target = request.headers['x-amz-target'];
      if (target !== 'AWSEvents.PutEvents') {
        response.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
        response.end(
          JSON.stringify({
            __type: 'UnknownOperationException',
            message: `the local sink only takes PutEvents, not ${target}`,
          }),
        );
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { Entries?: PutEventsEntry[] };
      if (options.admit && !options.admit(body.Entries?.length ?? 0)) {
        // EventBridge's answer over its PutEvents quota, which the SDK retries with backoff.
        response.writeHead(400, { 'content-type': 'application/x-amz-json-1.1' });
        response.end(JSON.stringify({ __type: 'ThrottlingException', message: 'Rate exceeded' }));
        return;
      }
      const accepted = (body.Entries ?? []).map((entry) => ({
        eventId: randomUUID(),
        receivedAt: new Date().toISOString(),
        eventBusName: entry.EventBusName ?? 'default',
        source: entry.Source ?? '',
        detailType: entry.DetailType ?? '',
        detail: JSON.parse(entry.Detail ?? 'null') as unknown,
      }));
      events.push(...accepted);
      if (options.logFile && accepted.length > 0) {
        await appendFile(options.logFile, accepted.map((event) => `${JSON.stringify(event)}\n`).join(''));
      }
      response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
      response.end(
        JSON.stringify({ FailedEntryCount: 0, Entries: accepted.map((event) => ({ EventId: event.eventId })) }),
      );
    };
    // Fire and forget: each PutEvents request is answered on its own, as the service would.
    request.on('end', () => void answer());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    events,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
