import { describe, expect, it } from 'vitest';

import { matchRoute } from '../../functions/api/route-match.js';
import { TimerClient } from '../../lib/client/client.js';

const TASK = {
  id: '01TASK',
  status: 'PENDING',
  dueAt: '2026-01-01T00:00:00.000Z',
  createdAt: '2026-01-01T00:00:00.000Z',
};

/** A client whose fetch records each request and answers 200 with a task. */
function recordingClient(baseUrl: string) {
  const requests: Array<{ method: string; url: URL }> = [];
  const client = new TimerClient({
    baseUrl,
    apiKey: 'tk_acme_key_secret',
    fetch: async (input, init) => {
      requests.push({ method: init?.method ?? 'GET', url: new URL(String(input)) });
      return new Response(JSON.stringify(TASK), { status: 200, headers: { 'content-type': 'application/json' } });
    },
  });
  return { client, requests };
}

describe('Class: TimerClient', () => {
  it.each([
    ['a function URL, which ends with a slash', 'https://abc123.lambda-url.eu-west-1.on.aws/'],
    ['the HTTP API URL, which does not', 'https://abc123.execute-api.eu-west-1.amazonaws.com'],
  ])('takes %s as its base URL and calls the routes the api matches', async (_, baseUrl) => {
    // Prepare
    const { client, requests } = recordingClient(baseUrl);

    // Act
    await client.schedule({ delaySeconds: 60, target: { type: 'http', url: 'https://hooks.example.com/' } });
    await client.get('01TASK');
    await client.cancel('01TASK');

    // Assess: no empty segment from the slash, and each path is the route a function URL request resolves to.
    expect(requests.map(({ url }) => url.origin)).toEqual(Array(3).fill(new URL(baseUrl).origin));
    expect(requests.map(({ method, url }) => matchRoute(method, url.pathname))).toEqual([
      { routeKey: 'POST /v1/tasks', pathParameters: {} },
      { routeKey: 'GET /v1/tasks/{id}', pathParameters: { id: '01TASK' } },
      { routeKey: 'DELETE /v1/tasks/{id}', pathParameters: { id: '01TASK' } },
    ]);
  });
});
