import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

import { problem, problemResponse } from '../../functions/api/http.js';
import { isDecodablePath, malformedPath, matchRoute } from '../../functions/api/route-match.js';
import { AWS_LIMITS } from '../../functions/contract/aws-limits.js';
import { type InvokeResult, SYNC_PAYLOAD_LIMIT_BYTES } from './lambda-service.js';

/** API Gateway HTTP APIs refuse bodies over 10 MB; the local gateway does the same. */
const MAX_BODY_BYTES = AWS_LIMITS.apiGateway.payloadBytes;

/**
 * What an HTTP API answers when its Lambda integration fails: throttled, timed out, thrown, or a
 * response over Lambda's limit. HTTP APIs give them all the same 500 (AWS's troubleshooting guide
 * for HTTP API Lambda integrations); the cause is only in `$context.integrationErrorMessage`.
 */
const INTEGRATION_FAILED = {
  statusCode: 500,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ message: 'Internal Server Error' }),
};

function toResponse(result: InvokeResult<APIGatewayProxyStructuredResultV2>): APIGatewayProxyStructuredResultV2 {
  switch (result.outcome) {
    case 'ok':
      return result.response;
    case 'request-too-large':
      // Lambda refuses the event before the api runs, so the api cannot explain; the gateway does, as the api would.
      return problemResponse(
        problem(
          413,
          'payload-too-large',
          `The request is ${result.bytes} bytes as a Lambda event; Lambda accepts at most 6 MB (${SYNC_PAYLOAD_LIMIT_BYTES} bytes) in a synchronous invocation`,
        ),
      );
    default:
      return INTEGRATION_FAILED;
  }
}

async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function queryParameters(search: URLSearchParams): Record<string, string> {
  const joined: Record<string, string> = {};
  for (const name of new Set(search.keys())) joined[name] = search.getAll(name).join(',');
  return joined;
}

function toEvent(
  request: IncomingMessage,
  url: URL,
  body: Buffer,
  routeKey: string,
  pathParameters: Record<string, string>,
): APIGatewayProxyEventV2 {
  const headers = Object.fromEntries(
    Object.entries(request.headers).map(([name, value]) => [
      name,
      Array.isArray(value) ? value.join(',') : (value ?? ''),
    ]),
  );
  const now = Date.now();
  return {
    version: '2.0',
    routeKey,
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    // API Gateway joins a repeated parameter's values with commas, and leaves the field out when there are none.
    ...(url.search.length > 1 && { queryStringParameters: queryParameters(url.searchParams) }),
    pathParameters,
    isBase64Encoded: false,
    body: body.toString('utf8'),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: url.host,
      domainPrefix: 'local',
      http: {
        method: request.method ?? 'GET',
        path: url.pathname,
        protocol: `HTTP/${request.httpVersion}`,
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
    },
  };
}

/** What a local-only endpoint answers: a body sent as JSON, or text with its own headers (a page and its assets). */
export type LocalResponse =
  | { readonly status: number; readonly body: unknown }
  | { readonly status: number; readonly headers: Readonly<Record<string, string>>; readonly text: string };

/** A local-only endpoint served beside the API (never deployed). */
export type LocalRoute = (
  method: string,
  headers: Record<string, string | undefined>,
  body: string,
) => Promise<LocalResponse>;

const LOOPBACK_HOSTNAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Local routes have no authentication, so they answer only what a web page elsewhere cannot
 * send: the Host must name loopback (a rebound DNS name does not), and an Origin, which
 * browsers add to cross-site requests, must be this server's own.
 */
function isFromThisMachine(request: IncomingMessage, url: URL): boolean {
  const origin = request.headers.origin;
  const hostIsLoopback = request.headers.host !== undefined && LOOPBACK_HOSTNAMES.has(url.hostname);
  return hostIsLoopback && (origin === undefined || origin === url.origin);
}

/** An HTTP server in front of the api handler, translating requests to HTTP API (v2) events as API Gateway does. */
export async function startHttpGateway(options: {
  port: number;
  /** Lambda's invoke, for the api function. */
  invoke: (event: APIGatewayProxyEventV2) => Promise<InvokeResult<APIGatewayProxyStructuredResultV2>>;
  localRoutes: Record<string, LocalRoute>;
  /** The stage throttle (a scale model's): a response to send instead of invoking the api, or undefined to go on. */
  admit?: () => APIGatewayProxyStructuredResultV2 | undefined;
  onError: (error: unknown) => void;
}): Promise<{ url: string; close(): Promise<void> }> {
  const serve = async (request: IncomingMessage, response: ServerResponse) => {
    try {
      const url = new URL(request.url ?? '/', `http://${request.headers.host ?? 'localhost'}`);
      if (!isDecodablePath(url.pathname)) {
        const result = malformedPath(url.pathname);
        response.writeHead(result.statusCode, result.headers as Record<string, string>);
        response.end(result.body);
        return;
      }
      const local = options.localRoutes[url.pathname];
      if (local) {
        if (!isFromThisMachine(request, url)) {
          response.writeHead(403, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ message: 'local routes answer only pages and programs on this machine' }));
          return;
        }
        const body = (await readBody(request)) ?? Buffer.alloc(0);
        const headers = Object.fromEntries(
          Object.entries(request.headers).map(([name, value]) => [name, String(value)]),
        );
        const result = await local(request.method ?? 'GET', headers, body.toString('utf8'));
        // Local data changes every second; a cached copy would only mislead.
        if ('text' in result) {
          response.writeHead(result.status, { 'cache-control': 'no-store', ...result.headers });
          response.end(result.text);
        } else {
          response.writeHead(result.status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
          response.end(JSON.stringify(result.body));
        }
        return;
      }
      const matched = matchRoute(request.method ?? 'GET', url.pathname);
      if (!matched) {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ message: 'Not Found' }));
        return;
      }
      const body = await readBody(request);
      if (!body) {
        response.writeHead(413, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ message: 'Request Entity Too Large' }));
        return;
      }
      const result =
        options.admit?.() ??
        toResponse(await options.invoke(toEvent(request, url, body, matched.routeKey, matched.pathParameters)));
      response.writeHead(result.statusCode ?? 200, (result.headers ?? {}) as Record<string, string>);
      response.end(result.body ?? '');
    } catch (error) {
      options.onError(error);
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ message: 'Internal Server Error' }));
    }
  };
  // Fire and forget: serve catches every error and answers 500, so it never rejects.
  const server: Server = createServer((request, response) => void serve(request, response));
  // A taken port is an 'error' event, not a throw; unheard, it would crash the process with a stack trace.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
