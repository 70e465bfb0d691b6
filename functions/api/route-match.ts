/**
 * Which API route a request is, from its method and path. API Gateway resolves the HTTP API's
 * routes itself; the local gateway and a Lambda function URL (whose events all carry the route
 * key `$default`) resolve them here, from the same API_ROUTES, so the three cannot disagree.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

import { API_ROUTES, type ApiRouteKey } from '../contract/topology.js';
import { type HttpResult, problem, problemResponse } from './http.js';

/** A route and its path parameters, decoded, as API Gateway puts them in the event. */
export interface MatchedRoute {
  readonly routeKey: ApiRouteKey;
  readonly pathParameters: Readonly<Record<string, string>>;
}

interface RoutePattern {
  readonly routeKey: ApiRouteKey;
  readonly method: string;
  readonly pattern: RegExp;
  readonly parameterNames: readonly string[];
}

const patterns: readonly RoutePattern[] = API_ROUTES.map((routeKey) => {
  const [method = '', path = ''] = routeKey.split(' ');
  const parameterNames: string[] = [];
  const pattern = path.replace(/\{(\w+)\}/g, (_, name: string) => {
    parameterNames.push(name);
    return '([^/]+)';
  });
  return { routeKey, method, pattern: new RegExp(`^${pattern}$`), parameterNames };
});

/**
 * Whether every percent-escape in the path decodes to UTF-8. A path that does not cannot name a
 * resource; it is the client's mistake (RFC 3986), answered with `malformedPath` rather than
 * letting `decodeURIComponent` throw into a 500.
 */
export function isDecodablePath(path: string): boolean {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/** The 400 for a path that `isDecodablePath` refuses. */
export function malformedPath(path: string): HttpResult {
  return problemResponse(
    problem(
      400,
      'malformed-path',
      `The path ${path} has a percent-escape that is not UTF-8 (a % must be followed by two hex digits and form valid UTF-8); encode the id with encodeURIComponent.`,
    ),
  );
}

/**
 * The route a request matches, with its path parameters decoded, as API Gateway would resolve
 * it; undefined when no route matches or the path does not decode (check `isDecodablePath`
 * first to tell the two apart).
 */
export function matchRoute(method: string, path: string): MatchedRoute | undefined {
  // Escapes never span a '/', so a path that decodes as a whole decodes segment by segment too.
  if (!isDecodablePath(path)) return undefined;
  for (const route of patterns) {
    const match = route.method === method ? route.pattern.exec(path) : null;
    if (!match) continue;
    const pathParameters = Object.fromEntries(
      route.parameterNames.map((name, index) => [name, decodeURIComponent(match[index + 1] ?? '')]),
    );
    return { routeKey: route.routeKey, pathParameters };
  }
  return undefined;
}

/** The route key a function URL gives every request: it has no routes, so the api resolves them itself. */
const FUNCTION_URL_ROUTE_KEY = '$default';

const API_ROUTE_KEYS: ReadonlySet<string> = new Set(API_ROUTES);

const isApiRouteKey = (routeKey: string): routeKey is ApiRouteKey => API_ROUTE_KEYS.has(routeKey);

const noRoute = (request: string): HttpResult =>
  problemResponse(problem(404, 'no-route', `There is no route ${request}.`));

/**
 * The route of an event and the event as the HTTP API would have sent it, or the answer when it
 * has none.
 */
export type RoutedEvent =
  | { readonly ok: true; readonly routeKey: ApiRouteKey; readonly event: APIGatewayProxyEventV2 }
  | { readonly ok: false; readonly response: HttpResult };

/**
 * Resolves the route of an HTTP API (payload format 2.0) event. API Gateway has matched it
 * already; a function URL's `$default` event is matched here from its method and raw path, and
 * given the path parameters API Gateway would have set, so every route reads them the same way.
 */
export function routeOf(event: APIGatewayProxyEventV2): RoutedEvent {
  if (event.routeKey !== FUNCTION_URL_ROUTE_KEY) {
    return isApiRouteKey(event.routeKey)
      ? { ok: true, routeKey: event.routeKey, event }
      : { ok: false, response: noRoute(event.routeKey) };
  }
  const { method } = event.requestContext.http;
  if (!isDecodablePath(event.rawPath)) return { ok: false, response: malformedPath(event.rawPath) };
  const matched = matchRoute(method, event.rawPath);
  if (!matched) return { ok: false, response: noRoute(`${method} ${event.rawPath}`) };
  return {
    ok: true,
    routeKey: matched.routeKey,
    event: { ...event, routeKey: matched.routeKey, pathParameters: matched.pathParameters },
  };
}
