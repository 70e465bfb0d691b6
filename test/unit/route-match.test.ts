import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';

import { matchRoute, routeOf } from '../../functions/api/route-match.js';
import { API_ROUTES } from '../../functions/contract/topology.js';

describe('Function: matchRoute', () => {
  it('finds every route of API_ROUTES from its method and a concrete path', () => {
    // Prepare: each route key with its placeholders filled in.
    const requests = API_ROUTES.map((routeKey) => {
      const [method = '', path = ''] = routeKey.split(' ');
      return { routeKey, method, path: path.replace('{id}', '01TASK').replace('{bizType}', 'order-close') };
    });

    // Act & Assess
    for (const { routeKey, method, path } of requests) {
      expect(matchRoute(method, path)?.routeKey).toBe(routeKey);
    }
  });

  it('decodes path parameters as API Gateway does', () => {
    // Act
    const matched = matchRoute('PUT', '/v1/biz-types/order%20close%2Fv2');

    // Assess
    expect(matched).toEqual({
      routeKey: 'PUT /v1/biz-types/{bizType}',
      pathParameters: { bizType: 'order close/v2' },
    });
  });

  it('takes /v1/tasks/batch as the batch route for POST and as a task id for GET, as API Gateway does', () => {
    // Act & Assess
    expect(matchRoute('POST', '/v1/tasks/batch')).toEqual({ routeKey: 'POST /v1/tasks/batch', pathParameters: {} });
    expect(matchRoute('GET', '/v1/tasks/batch')).toEqual({
      routeKey: 'GET /v1/tasks/{id}',
      pathParameters: { id: 'batch' },
    });
  });

  it.each([
    ['POST', '/v1/tasks/01TASK'],
    ['GET', '/v2/tasks'],
    ['GET', '/v1/tasks/01TASK/extra'],
    ['GET', '//v1/tasks'],
    ['GET', '/v1/tasks/'],
    ['OPTIONS', '/v1/tasks'],
  ])('matches nothing for %s %s', (method, path) => {
    // Act & Assess
    expect(matchRoute(method, path)).toBeUndefined();
  });

  it('matches nothing, rather than throwing, for a path whose escapes are not UTF-8', () => {
    // Act & Assess
    expect(matchRoute('GET', '/v1/tasks/%C3')).toBeUndefined();
  });
});

describe('Function: routeOf', () => {
  const apiGatewayEvent = (routeKey: string) =>
    ({
      version: '2.0',
      routeKey,
      rawPath: '/v1/tasks/01TASK',
      pathParameters: { id: '01TASK' },
      requestContext: { routeKey, http: { method: 'GET', path: '/v1/tasks/01TASK' } },
    }) as unknown as APIGatewayProxyEventV2;

  it("keeps API Gateway's route and event as they are", () => {
    // Prepare
    const event = apiGatewayEvent('GET /v1/tasks/{id}');

    // Act & Assess
    expect(routeOf(event)).toEqual({ ok: true, routeKey: 'GET /v1/tasks/{id}', event });
  });

  it('answers a route key the contract does not have with a 404 problem', () => {
    // Act
    const routed = routeOf(apiGatewayEvent('GET /v0/tasks/{id}'));

    // Assess
    expect(routed.ok).toBe(false);
    expect(routed.ok ? undefined : JSON.parse(routed.response.body)).toMatchObject({
      type: '/problems/no-route',
      status: 404,
    });
  });
});
