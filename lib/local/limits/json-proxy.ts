/**
 * The seam both throughput models sit in: an HTTP server on loopback that takes an AWS JSON
 * protocol request (operation in X-Amz-Target), lets a handler answer it or pass it on to
 * the emulator, and sends the answer back byte for byte unless the handler rewrote it.
 */
import { randomUUID } from 'node:crypto';
import {
  Agent,
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';

export interface WireResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

export interface WireRequest {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** The operation, e.g. `PutItem` or `ReceiveMessage` (the part of X-Amz-Target after the dot). */
  readonly operation: string;
}

/** Headers that describe one hop or one body, so they must not be copied onto another. */
const HOP_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

function forwardable(headers: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).flatMap(([name, value]) =>
      HOP_HEADERS.has(name.toLowerCase()) || value === undefined
        ? []
        : [[name, Array.isArray(value) ? value.join(',') : value]],
    ),
  );
}

/**
 * The emulator behind a proxy, reached over keep-alive connections with node:http: fetch cost
 * the proxy twice the CPU per request (its web streams), and every request of the model pays it.
 */
export class Upstream {
  private readonly agent = new Agent({ keepAlive: true });

  constructor(private readonly endpoint: string) {}

  send(
    path: string,
    headers: IncomingHttpHeaders | Record<string, string>,
    body: Buffer,
    method = 'POST',
  ): Promise<WireResponse> {
    const hasBody = method !== 'GET' && method !== 'HEAD';
    return new Promise((resolve, reject) => {
      const outgoing = request(new URL(path, this.endpoint), {
        method,
        agent: this.agent,
        headers: { ...forwardable(headers), ...(hasBody && { 'content-length': String(body.length) }) },
      });
      outgoing.on('error', reject);
      outgoing.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 500,
            headers: forwardable(response.headers),
            body: Buffer.concat(chunks),
          }),
        );
      });
      outgoing.end(hasBody ? body : undefined);
    });
  }

  /**
   * Sends an operation of the proxy's own (a read to size an item, a queue's attributes),
   * carrying the caller's signing headers, which the emulators require but do not check.
   */
  async call(request: WireRequest, operation: string, payload: unknown): Promise<{ status: number; json: unknown }> {
    const target = String(request.headers['x-amz-target'] ?? '').replace(/\.\w+$/, `.${operation}`);
    const headers = { ...forwardable(request.headers), 'x-amz-target': target };
    const response = await this.send(request.path, headers, Buffer.from(JSON.stringify(payload)));
    return { status: response.status, json: JSON.parse(response.body.toString('utf8') || '{}') };
  }
}

/**
 * A JSON protocol answer the proxy writes itself. The DynamoDB SDK checks x-amz-crc32 when it
 * is present, so a rewritten body carries its own.
 */
export function jsonResponse(
  status: number,
  payload: unknown,
  extraHeaders: Record<string, string> = {},
): WireResponse {
  const body = Buffer.from(JSON.stringify(payload));
  return {
    status,
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amzn-requestid': randomUUID(),
      'x-amz-crc32': String(crc32(body)),
      ...extraHeaders,
    },
    body,
  };
}

/** An error as AWS's JSON protocol writes it, which the SDK turns into an exception named by `__type`. */
export function jsonError(
  namespace: string,
  code: string,
  message: string,
  options: { status?: number; headers?: Record<string, string> } = {},
): WireResponse {
  return jsonResponse(options.status ?? 400, { __type: `${namespace}#${code}`, message }, options.headers);
}

export type ProxyHandler = (request: WireRequest) => Promise<WireResponse>;

export interface RunningProxy {
  readonly endpoint: string;
  close(): Promise<void>;
}

/** Starts a proxy on a free loopback port in front of `upstreamEndpoint`, with the handler made for it. */
export async function startJsonProxy(
  upstreamEndpoint: string,
  handlerFor: (upstream: Upstream) => ProxyHandler,
): Promise<RunningProxy> {
  const upstream = new Upstream(upstreamEndpoint);
  const handle = handlerFor(upstream);
  const serve = async (incoming: IncomingMessage, outgoing: ServerResponse) => {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of incoming) chunks.push(chunk as Buffer);
      const target = String(incoming.headers['x-amz-target'] ?? '');
      const request: WireRequest = {
        path: incoming.url ?? '/',
        headers: incoming.headers,
        body: Buffer.concat(chunks),
        operation: target.slice(target.lastIndexOf('.') + 1),
      };
      const method = incoming.method ?? 'GET';
      const response =
        method === 'POST'
          ? await handle(request)
          : await upstream.send(request.path, request.headers, request.body, method);
      outgoing.writeHead(response.status, { ...response.headers, 'content-length': String(response.body.length) });
      outgoing.end(response.body);
    } catch (error) {
      // A proxy fault is the emulator being unreachable to the caller: a 500 the SDK retries, and a reason to read.
      outgoing.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
      outgoing.end(JSON.stringify({ __type: 'InternalFailure', message: (error as Error).message }));
    }
  };
  // Fire and forget: serve answers every failure itself, so it never rejects.
  const server = createServer((incoming, outgoing) => void serve(incoming, outgoing));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
