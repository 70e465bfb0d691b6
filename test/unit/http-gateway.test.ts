import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { startHttpGateway } from '../../lib/local/http-gateway.js';

describe('Function: startHttpGateway', () => {
  const invoke = vi.fn();
  const onError = vi.fn();
  let gateway: Awaited<ReturnType<typeof startHttpGateway>>;

  beforeAll(async () => {
    gateway = await startHttpGateway({ port: 0, invoke, localRoutes: {}, onError });
  });
  afterAll(() => gateway.close());

  it.each(['/v1/tasks/%00%ff..%2f..', '/v1/tasks/%', '/v1/tasks/%zz', '/v1/tasks/%C3'])(
    'answers a path that is not valid percent-encoding (%s) with a 400 problem, without invoking the api',
    async (path) => {
      // Act
      const response = await fetch(`${gateway.url}${path}`);

      // Assess
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
      expect(await response.json()).toMatchObject({ type: '/problems/malformed-path', status: 400 });
      expect(invoke).not.toHaveBeenCalled();
      expect(onError).not.toHaveBeenCalled();
    },
  );
});
