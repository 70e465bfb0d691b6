import { promises as dns } from 'node:dns';

import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import {
  keyringToItem,
  RATE_COUNTER_PREFIX,
  tenantKey,
  tenantToItem,
} from '../../../functions/adapters/dynamo/table-schema.js';
import { createApiHandler } from '../../../functions/api/app.js';
import { loadConfig } from '../../../functions/commons/config.js';
import { newTaskId, parseTaskId } from '../../../functions/core/kernel/ids.js';
import { newApiKey, newKeyring, newTenant } from '../../../functions/core/tenants/tenants.js';
import { EXPRESS_QUEUE_URL, handlerEnv, lambdaContext, SHARD_COUNT, TABLE_NAME, unitHandler } from './setup.js';

// The api resolves webhook hosts at submit; this machine has no DNS, so hooks.example.com gets a public address here.
vi.spyOn(dns, 'lookup').mockImplementation((async () => [{ address: '93.184.215.14', family: 4 }]) as never);

const ddbMock = mockClient(DynamoDBDocumentClient);
const sqsMock = mockClient(SQSClient);
const handler = await unitHandler(createApiHandler, loadConfig('api', handlerEnv()));

const TARGET = { type: 'http', url: 'https://hooks.example.com/timer' };
const TENANT = newTenant('acme', Date.now());
const KEYRING = newKeyring(Date.now());
const { apiKey: API_KEY, record: KEY_RECORD } = newApiKey(KEYRING, TENANT.id, Date.now());

function apiEvent(
  routeKey: string,
  options: {
    body?: string;
    id?: string;
    bizType?: string;
    authorization?: string;
    query?: Record<string, string>;
  } = {},
): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey,
    rawPath: routeKey.split(' ')[1]?.replace('{id}', options.id ?? '') ?? '/',
    rawQueryString: '',
    headers: {
      'content-type': 'application/json',
      ...(options.authorization !== '' && { authorization: options.authorization ?? `Bearer ${API_KEY}` }),
    },
    requestContext: { routeKey, http: { method: routeKey.split(' ')[0] } } as APIGatewayProxyEventV2['requestContext'],
    isBase64Encoded: false,
    ...(options.body !== undefined && { body: options.body }),
    ...(options.id !== undefined && { pathParameters: { id: options.id } }),
    ...(options.bizType !== undefined && { pathParameters: { bizType: options.bizType } }),
    ...(options.query !== undefined && { queryStringParameters: options.query }),
  };
}

async function call(
  routeKey: string,
  options: {
    body?: unknown;
    rawBody?: string;
    id?: string;
    bizType?: string;
    authorization?: string;
    query?: Record<string, string>;
  } = {},
) {
  const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const response = await handler(apiEvent(routeKey, { ...options, body }), lambdaContext(10_000));
  return { ...response, json: JSON.parse(response.body) };
}

/**
 * A request as a Lambda function URL delivers it: payload format 2.0, but every route key is
 * `$default` and there are no path parameters; the route is only in the method and raw path.
 */
function functionUrlEvent(method: string, rawPath: string, body?: unknown): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
    requestContext: {
      routeKey: '$default',
      stage: '$default',
      domainName: 'abc123.lambda-url.eu-west-1.on.aws',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '203.0.113.9', userAgent: 'test' },
    } as APIGatewayProxyEventV2['requestContext'],
    isBase64Encoded: false,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  };
}

async function callFunctionUrl(method: string, rawPath: string, body?: unknown) {
  const response = await handler(functionUrlEvent(method, rawPath, body), lambdaContext(10_000));
  return { ...response, json: JSON.parse(response.body) };
}

/**
 * Lambda's application log-level filter as the functions are deployed (JSON format, level INFO):
 * a line whose `level` is below the function's level is dropped, and a line without one is taken
 * as INFO (docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html).
 */
const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'];
const keptByLambda = (line: string, applicationLevel: string) =>
  LEVELS.indexOf((JSON.parse(line) as { level?: string }).level?.toUpperCase() ?? 'INFO') >=
  LEVELS.indexOf(applicationLevel);

/** The EMF lines a fresh api instance (its logger at INFO, as deployed) writes to stdout while `work` runs. */
async function emfLinesOf(work: (instance: typeof handler) => Promise<void>): Promise<string[]> {
  // The test run turns metrics off (vitest.config.ts); Lambda has them on.
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
  const instance = await unitHandler(
    createApiHandler,
    loadConfig('api', { ...handlerEnv(), POWERTOOLS_LOG_LEVEL: 'INFO' }),
  );
  const lines: string[] = [];
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  });
  try {
    await work(instance);
  } finally {
    write.mockRestore();
    vi.unstubAllEnvs();
  }
  return lines.filter((line) => line.includes('"_aws"'));
}

const nowSecond = () => Math.floor(Date.now() / 1000);
const clockAt = (cursor: number) => ({ Item: { pk: 'CLOCK', sk: 'CLOCK', cursor, startedAt: cursor - 3600 } });
const conditionFailed = () => Object.assign(new Error('x'), { name: 'ConditionalCheckFailedException' });
const isTenancyKey = (key: unknown) => /^(KEYRING|TENANT#|APIKEYS#|RATE#)/.test(String((key as { pk?: string }).pk));
const taskReads = () => ddbMock.commandCalls(GetCommand).filter((call) => !isTenancyKey(call.args[0].input.Key));

/**
 * Every conditional update is refused but the rate counter's, whose key (`RATE#<tenant>#<share>`)
 * no fixed Key stub can name: the request is admitted whatever leases earlier tests left.
 */
const refuseUpdatesButTheRateCounter = () =>
  ddbMock
    .on(UpdateCommand)
    .callsFake((input: { Key: { pk: string } }) =>
      input.Key.pk.startsWith(RATE_COUNTER_PREFIX) ? {} : Promise.reject(conditionFailed()),
    );

describe('Function: api handler', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  beforeEach(() => {
    ddbMock.reset();
    sqsMock.reset();
    ddbMock.on(GetCommand, { Key: { pk: 'CLOCK', sk: 'CLOCK' } }).resolves(clockAt(nowSecond()));
    // The occupancy index: a minute no ticker has planned yet.
    ddbMock.on(UpdateCommand).resolves({});
    ddbMock.on(GetCommand, { Key: { pk: 'KEYRING', sk: 'KEYRING' } }).resolves({ Item: keyringToItem(KEYRING) });
    ddbMock.on(GetCommand, { Key: tenantKey(TENANT.id) }).resolves({ Item: tenantToItem(TENANT) });
    ddbMock
      .on(GetCommand, { Key: { pk: `APIKEYS#${TENANT.id}`, sk: KEY_RECORD.keyId } })
      .resolves({ Item: { pk: `APIKEYS#${TENANT.id}`, sk: KEY_RECORD.keyId, ...KEY_RECORD } });
    ddbMock.on(UpdateCommand, { Key: { pk: `RATE#${TENANT.id}` } }).resolves({});
    sqsMock.on(SendMessageBatchCommand).resolves({ Failed: [] });
  });

  it('creates a task and answers 201 with its id, status and due time', async () => {
    // Prepare
    ddbMock.on(PutCommand).resolves({});
    const before = Date.now();

    // Act
    const response = await call('POST /v1/tasks', { body: { delaySeconds: 60, target: TARGET, payload: { n: 1 } } });

    // Assess
    expect(response.statusCode).toBe(201);
    expect(response.headers).toEqual({ 'content-type': 'application/json' });
    const location = parseTaskId(response.json.id, SHARD_COUNT);
    expect(location).toBeDefined();
    expect(response.json.status).toBe('PENDING');
    expect(response.json.dueAt).toBe(new Date(location?.fireAtMs ?? 0).toISOString());
    expect(location?.fireAtMs).toBeGreaterThanOrEqual(before + 60_000);
    expect(location?.fireAtMs).toBeLessThanOrEqual(Date.now() + 60_000);
    const puts = ddbMock.commandCalls(PutCommand).map((put) => put.args[0].input);
    expect(puts).toHaveLength(1);
    expect(puts[0]).toMatchObject({
      TableName: TABLE_NAME,
      Item: { id: response.json.id, status: 'PENDING', target: TARGET, payload: '{"n":1}', attempts: 0 },
    });
    // The second goes into the occupancy index before the task is written.
    const occupy = ddbMock
      .commandCalls(UpdateCommand)
      .find((update) => String(update.args[0].input.Key?.pk).startsWith('OCCUPIED#'));
    const dueSecond = Math.floor((location?.fireAtMs ?? 0) / 1000);
    expect(occupy?.args[0].input).toMatchObject({
      Key: { pk: expect.stringMatching(new RegExp(`^OCCUPIED#${Math.floor(dueSecond / 60)}#\\d+$`)) },
      UpdateExpression: expect.stringContaining('ADD #seconds :seconds'),
      ExpressionAttributeValues: { ':seconds': new Set([dueSecond]) },
    });
    expect(occupy?.calledBefore(ddbMock.commandCalls(PutCommand)[0] ?? occupy)).toBe(true);
    expect(sqsMock.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it('creates a task with a window: 201 with the dueAt asked for and the firesAt planned within the window', async () => {
    // Prepare
    ddbMock.on(PutCommand).resolves({});
    const dueAtMs = Date.now() + 120_000;

    // Act
    const response = await call('POST /v1/tasks', {
      body: { dueAt: dueAtMs, window: { seconds: 300 }, target: TARGET },
    });

    // Assess
    expect(response.statusCode).toBe(201);
    const firesAtMs = Date.parse(response.json.firesAt);
    expect(response.json.dueAt).toBe(new Date(dueAtMs).toISOString());
    expect(firesAtMs).toBeGreaterThanOrEqual(dueAtMs);
    expect(firesAtMs).toBeLessThanOrEqual(dueAtMs + 300_000);
    expect(parseTaskId(response.json.id, SHARD_COUNT)?.fireAtMs).toBe(firesAtMs);
    expect(ddbMock.commandCalls(PutCommand)[0]?.args[0].input.Item).toMatchObject({
      dueAtMs,
      fireAtMs: firesAtMs,
      windowSeconds: 300,
    });
  });

  it('refuses a window over 15 minutes with a 400 naming window.seconds and the range, and writes nothing', async () => {
    // Act
    const response = await call('POST /v1/tasks', {
      body: { delaySeconds: 60, window: { seconds: 3600 }, target: TARGET },
    });

    // Assess
    expect(response.statusCode).toBe(400);
    expect(response.json.errors).toEqual([
      { path: 'window.seconds', message: 'must be a whole number of seconds from 1 to 900 (15 minutes)' },
    ]);
    expect(ddbMock.commandCalls(PutCommand)).toHaveLength(0);
  });

  it('emits its metrics as an EMF line without a level, which Lambda keeps at application level INFO', async () => {
    // Prepare
    ddbMock.on(PutCommand).resolves({});
    const submit = { delaySeconds: 60, target: TARGET };

    // Act
    const emf = await emfLinesOf(async (instance) => {
      await instance(apiEvent('POST /v1/tasks', { body: JSON.stringify(submit) }), lambdaContext(10_000));
    });

    // Assess
    expect(emf).toHaveLength(1);
    const line = JSON.parse(emf[0] ?? '{}') as Record<string, unknown>;
    expect(line).toMatchObject({ TasksCreated: 1 });
    expect(line).not.toHaveProperty('level');
    expect(keptByLambda(emf[0] ?? '', 'INFO')).toBe(true);
  });

  it('sums the counts of the submits an instance takes within ten seconds into one EMF line', async () => {
    // Prepare
    ddbMock.on(PutCommand).resolves({});
    // Set back in time, so the clock the tests after this one see still only moves forward.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 60_000 });
    const submit = () => apiEvent('POST /v1/tasks', { body: JSON.stringify({ delaySeconds: 60, target: TARGET }) });

    // Act: one submit, 20 more within the window, one after it.
    const emf = await emfLinesOf(async (instance) => {
      await instance(submit(), lambdaContext(10_000));
      for (let index = 0; index < 20; index++) {
        vi.advanceTimersByTime(100);
        await instance(submit(), lambdaContext(10_000));
      }
      vi.advanceTimersByTime(10_000);
      await instance(submit(), lambdaContext(10_000));
    });

    // Assess: 22 submits, two lines, every task counted.
    expect(emf.map((line) => (JSON.parse(line) as { TasksCreated: number }).TasksCreated)).toEqual([1, 21]);
  });

  it('enqueues a task at once when its second was already claimed by a scanner', async () => {
    // Prepare
    ddbMock.on(PutCommand).resolves({});
    ddbMock.on(GetCommand, { Key: { pk: 'CLOCK', sk: 'CLOCK' } }).resolves(clockAt(nowSecond() + 2));

    // Act
    const response = await call('POST /v1/tasks', { body: { delaySeconds: 0, target: TARGET } });

    // Assess
    expect(response.statusCode).toBe(201);
    const batches = sqsMock.commandCalls(SendMessageBatchCommand).map((batch) => batch.args[0].input);
    expect(batches).toHaveLength(1);
    expect(batches[0]?.QueueUrl).toBe(EXPRESS_QUEUE_URL);
    expect(batches[0]?.Entries?.map((entry) => entry.MessageBody)).toEqual([JSON.stringify({ id: response.json.id })]);
  });

  it('answers malformed JSON with a 400 problem naming the body, and writes nothing', async () => {
    // Act
    const response = await call('POST /v1/tasks', { rawBody: '{"delaySeconds": 60,' });

    // Assess
    expect(response.statusCode).toBe(400);
    expect(response.headers).toEqual({ 'content-type': 'application/problem+json' });
    expect(response.json.errors[0].path).toBe('(body)');
    expect(ddbMock.commandCalls(PutCommand)).toHaveLength(0);
  });

  it('answers an invalid request with a 400 problem per field', async () => {
    // Act
    const response = await call('POST /v1/tasks', {
      body: { delaySeconds: 60, target: { ...TARGET, url: 'ftp://x' } },
    });

    // Assess
    expect(response.statusCode).toBe(400);
    expect(response.json).toMatchObject({ type: '/problems/validation', status: 400 });
    expect(response.json.errors.map((error: { path: string }) => error.path)).toEqual(['target.url']);
    expect(ddbMock.commandCalls(PutCommand)).toHaveLength(0);
  });

  it('answers 404 for an id that cannot exist without reading the table', async () => {
    // Act
    const response = await call('GET /v1/tasks/{id}', { id: 'not-a-task-id' });

    // Assess
    expect(response.statusCode).toBe(404);
    expect(response.headers).toEqual({ 'content-type': 'application/problem+json' });
    expect(taskReads()).toHaveLength(0);
  });

  it.each([
    ['GET /v1/tasks/{id}', '\u0000\uFFFD../..'],
    ['DELETE /v1/tasks/{id}', '%00%ff..%2f..'],
    ['PATCH /v1/tasks/{id}', '\uD800'],
  ])(
    'answers %s with a 404 problem for an id of control, escape or lone-surrogate characters',
    async (routeKey, id) => {
      // Act
      const response = await call(routeKey, { id, body: { delaySeconds: 60 } });

      // Assess
      expect(response.statusCode).toBe(404);
      expect(response.headers).toEqual({ 'content-type': 'application/problem+json' });
      expect(taskReads()).toHaveLength(0);
    },
  );

  it('returns a stored task with its delivery facts', async () => {
    // Prepare
    const dueAtMs = Date.now() - 5000;
    const id = newTaskId({ fireAtMs: dueAtMs, shard: 1 });
    ddbMock.on(GetCommand, { Key: { sk: `${String(dueAtMs).padStart(15, '0')}#${id}` } }).resolves({
      Item: {
        id,
        tenantId: TENANT.id,
        status: 'DELIVERED',
        dueAtMs,
        createdAtMs: dueAtMs - 60_000,
        target: TARGET,
        payload: '{"n":1}',
        attempts: 1,
        deliveredAtMs: dueAtMs + 40,
        latenessMs: 40,
      },
    });

    // Act
    const response = await call('GET /v1/tasks/{id}', { id });

    // Assess
    expect(response.statusCode).toBe(200);
    expect(response.json).toMatchObject({
      id,
      status: 'DELIVERED',
      dueAt: new Date(dueAtMs).toISOString(),
      firesAt: new Date(dueAtMs).toISOString(),
      payload: { n: 1 },
      attempts: 1,
      deliveredAt: new Date(dueAtMs + 40).toISOString(),
      latenessMs: 40,
    });
  });

  it('returns a stored task with a window with the dueAt asked for, its planned firesAt and the window', async () => {
    // Prepare
    const dueAtMs = Date.now() + 60_000;
    const fireAtMs = dueAtMs + 12_345;
    const id = newTaskId({ fireAtMs, shard: 1 });
    ddbMock.on(GetCommand, { Key: { sk: `${String(fireAtMs).padStart(15, '0')}#${id}` } }).resolves({
      Item: {
        id,
        tenantId: TENANT.id,
        status: 'PENDING',
        dueAtMs,
        fireAtMs,
        windowSeconds: 60,
        createdAtMs: dueAtMs - 60_000,
        target: TARGET,
        payload: 'null',
        attempts: 0,
      },
    });

    // Act
    const response = await call('GET /v1/tasks/{id}', { id });

    // Assess
    expect(response.statusCode).toBe(200);
    expect(response.json).toMatchObject({
      id,
      dueAt: new Date(dueAtMs).toISOString(),
      firesAt: new Date(fireAtMs).toISOString(),
      window: { seconds: 60 },
    });
  });

  it('refuses with 409 to cancel a task that was already delivered', async () => {
    // Prepare
    const dueAtMs = Date.now() - 5000;
    const id = newTaskId({ fireAtMs: dueAtMs, shard: 0 });
    refuseUpdatesButTheRateCounter();
    ddbMock.on(GetCommand, { Key: { sk: `${String(dueAtMs).padStart(15, '0')}#${id}` } }).resolves({
      Item: {
        id,
        tenantId: TENANT.id,
        status: 'DELIVERED',
        dueAtMs,
        createdAtMs: dueAtMs,
        target: TARGET,
        payload: 'null',
      },
    });

    // Act
    const response = await call('DELETE /v1/tasks/{id}', { id });

    // Assess
    expect(response.statusCode).toBe(409);
    expect(response.headers).toEqual({ 'content-type': 'application/problem+json' });
    expect(response.json.type).toBe('/problems/already-final');
  });

  it('turns an unexpected DynamoDB error into a 500 problem without internals', async () => {
    // Prepare
    ddbMock
      .on(PutCommand)
      .rejects(Object.assign(new Error('arn:aws:dynamodb:secret-table exploded'), { name: 'InternalServerError' }));

    // Act
    const response = await call('POST /v1/tasks', { body: { delaySeconds: 60, target: TARGET } });

    // Assess
    expect(response.statusCode).toBe(500);
    expect(response.headers).toEqual({ 'content-type': 'application/problem+json' });
    expect(response.json).toMatchObject({ type: '/problems/internal', status: 500 });
    expect(response.body).not.toContain('exploded');
  });

  it('answers a batch the table keeps leaving unprocessed with a 503 problem that says to retry with the same keys', async () => {
    // Prepare
    vi.useFakeTimers();
    ddbMock.on(BatchWriteCommand).callsFake((input: { RequestItems: Record<string, unknown[]> }) => ({
      UnprocessedItems: input.RequestItems,
    }));

    // Act
    const responding = call('POST /v1/tasks/batch', {
      body: {
        tasks: [
          { delaySeconds: 60, target: TARGET },
          { delaySeconds: 61, target: TARGET },
        ],
      },
    });
    await vi.runAllTimersAsync();
    const response = await responding;

    // Assess
    expect(response.statusCode).toBe(503);
    expect(response.headers).toEqual({ 'content-type': 'application/problem+json', 'retry-after': '2' });
    expect(response.json).toMatchObject({ type: '/problems/store-busy', status: 503 });
    expect(response.json.detail).toContain('same idempotencyKey');
  });

  it('creates the valid items of a batch and answers 207 with a result per item', async () => {
    // Prepare
    ddbMock.on(PutCommand).resolves({});

    // Act
    const response = await call('POST /v1/tasks/batch', {
      body: {
        tasks: [
          { delaySeconds: 60, target: TARGET },
          { dueAt: 'tomorrow', target: TARGET },
        ],
      },
    });

    // Assess
    expect(response.statusCode).toBe(207);
    expect(response.json).toMatchObject({ created: 1, rejected: 1 });
    const [created, rejected] = response.json.results;
    expect(created).toMatchObject({ index: 0, status: 201, task: { status: 'PENDING' } });
    expect(rejected).toMatchObject({ index: 1, status: 400, problem: { errors: [{ path: 'tasks[1].dueAt' }] } });
    const writes = [
      ...ddbMock.commandCalls(PutCommand).map((put) => put.args[0].input.Item?.id),
      ...ddbMock
        .commandCalls(BatchWriteCommand)
        .flatMap((batch) =>
          (batch.args[0].input.RequestItems?.[TABLE_NAME] ?? []).map((request) => request.PutRequest?.Item?.id),
        ),
    ];
    expect(writes).toEqual([created.task.id]);
  });

  it('rejects a batch of more than 100 tasks as a whole, naming the tasks field', async () => {
    // Act
    const response = await call('POST /v1/tasks/batch', {
      body: { tasks: Array.from({ length: 101 }, () => ({ delaySeconds: 60, target: TARGET })) },
    });

    // Assess
    expect(response.statusCode).toBe(400);
    expect(response.json.errors.map((error: { path: string }) => error.path)).toEqual(['tasks']);
    expect(ddbMock.commandCalls(PutCommand)).toHaveLength(0);
    expect(ddbMock.commandCalls(BatchWriteCommand)).toHaveLength(0);
  });

  it("lists by bizId from the caller's own index partition and reads the tasks it names", async () => {
    // Prepare
    const dueAtMs = Date.now() + 60_000;
    const id = newTaskId({ fireAtMs: dueAtMs, shard: 1 });
    const sk = `${String(dueAtMs).padStart(15, '0')}#${id}`;
    ddbMock.on(QueryCommand).resolves({ Items: [{ pk: 'B#x#1', sk, bizIdKey: `${TENANT.id}#order-7` }] });
    ddbMock.on(BatchGetCommand).resolves({
      Responses: {
        [TABLE_NAME]: [
          {
            pk: 'B#x#1',
            sk,
            id,
            tenantId: TENANT.id,
            status: 'PENDING',
            dueAtMs,
            createdAtMs: dueAtMs,
            target: TARGET,
            payload: 'null',
            attempts: 0,
            bizId: 'order-7',
          },
        ],
      },
    });

    // Act
    const response = await call('GET /v1/tasks', { query: { bizId: 'order-7', limit: '10' } });

    // Assess
    expect(response.statusCode).toBe(200);
    expect(response.json).toEqual({ tasks: [expect.objectContaining({ id, bizId: 'order-7', history: [] })] });
    expect(ddbMock.commandCalls(QueryCommand).map((query) => query.args[0].input)).toEqual([
      expect.objectContaining({
        IndexName: 'byBizId',
        ExpressionAttributeValues: { ':partition': `${TENANT.id}#order-7` },
        Limit: 10,
      }),
    ]);
  });

  it('refuses a reschedule with both dueAt and delaySeconds, naming the field, and writes nothing', async () => {
    // Act
    const response = await call('PATCH /v1/tasks/{id}', {
      id: newTaskId({ fireAtMs: Date.now() + 60_000, shard: 0 }),
      body: { delaySeconds: 60, dueAt: Date.now() + 120_000 },
    });

    // Assess
    expect(response.statusCode).toBe(400);
    expect(response.json.errors).toEqual([{ path: 'dueAt', message: 'give either dueAt or delaySeconds, not both' }]);
    expect(ddbMock.commandCalls(PutCommand)).toHaveLength(0);
  });

  it.each([
    ['no Authorization header', '', 'Authorization: Bearer'],
    ['a Basic credential', 'Basic dXNlcjpwYXNz', 'Authorization: Bearer'],
    ['a malformed key', 'Bearer tk_acme_short', 'not valid'],
    ['a key with the wrong secret', `Bearer ${API_KEY.slice(0, -16)}AAAA${API_KEY.slice(-12)}`, 'not valid'],
    ['a key with a made-up tag', `Bearer ${API_KEY.slice(0, -4)}AAAA`, 'not valid'],
  ])('answers 401 with a Bearer challenge for %s, and writes nothing', async (_case, authorization, detail) => {
    // Act
    const response = await call('POST /v1/tasks', { body: { delaySeconds: 60, target: TARGET }, authorization });

    // Assess
    expect(response.statusCode).toBe(401);
    expect(response.headers).toMatchObject({
      'www-authenticate': 'Bearer',
      'content-type': 'application/problem+json',
    });
    expect(response.json.detail).toContain(detail);
    expect(ddbMock.commandCalls(PutCommand)).toHaveLength(0);
  });

  it("answers 429 with Retry-After once the tenant's requests this second reach its limit", async () => {
    // Prepare: a second of its own, so no count leased by earlier requests is left to spend.
    // Every counter share refuses: the tenant's second is full wherever this instance asks.
    ddbMock.on(UpdateCommand).rejects(conditionFailed());
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 3_600_000);

    // Act
    const response = await call('POST /v1/tasks', { body: { delaySeconds: 60, target: TARGET } }).finally(() =>
      vi.useRealTimers(),
    );

    // Assess
    expect(response.statusCode).toBe(429);
    expect(response.headers).toMatchObject({ 'retry-after': '1' });
    expect(response.json.detail).toContain(`${TENANT.rateLimitPerSecond} requests a second`);
    expect(ddbMock.commandCalls(PutCommand)).toHaveLength(0);
  });

  it("stores a bizType's settings in the tenant's own partition and answers with them", async () => {
    // Prepare
    ddbMock.on(PutCommand).resolves({});

    // Act
    const response = await call('PUT /v1/biz-types/{bizType}', {
      bizType: 'order-close',
      body: { maxAttempts: 3, callbackRateLimitPerSecond: 20 },
    });

    // Assess
    expect(response.statusCode).toBe(200);
    expect(response.json).toMatchObject({ bizType: 'order-close', maxAttempts: 3, callbackRateLimitPerSecond: 20 });
    expect(ddbMock.commandCalls(PutCommand).map((put) => put.args[0].input)).toEqual([
      {
        TableName: TABLE_NAME,
        Item: expect.objectContaining({
          pk: `BIZTYPES#${TENANT.id}`,
          sk: 'order-close',
          tenantId: TENANT.id,
          maxAttempts: 3,
        }),
      },
    ]);
  });

  it('refuses out-of-range settings with a 400 naming the field, and writes nothing', async () => {
    // Act
    const response = await call('PUT /v1/biz-types/{bizType}', { bizType: 'order-close', body: { maxAttempts: 500 } });

    // Assess
    expect(response.statusCode).toBe(400);
    expect(response.json.errors).toEqual([{ path: 'maxAttempts', message: 'must be at most 50' }]);
    expect(ddbMock.commandCalls(PutCommand)).toHaveLength(0);
  });

  it("deletes only the caller's settings, with a condition so a missing bizType is a 404", async () => {
    // Prepare
    ddbMock.on(DeleteCommand).rejects(conditionFailed());

    // Act
    const response = await call('DELETE /v1/biz-types/{bizType}', { bizType: 'never-made' });

    // Assess
    expect(response.statusCode).toBe(404);
    expect(ddbMock.commandCalls(DeleteCommand).map((del) => del.args[0].input)).toEqual([
      expect.objectContaining({
        Key: { pk: `BIZTYPES#${TENANT.id}`, sk: 'never-made' },
        ConditionExpression: 'attribute_exists(pk)',
      }),
    ]);
  });

  describe('through the function URL (route key $default)', () => {
    /** A stored task of the caller's, answered for its own key only. */
    function storedTask(status: string) {
      const dueAtMs = Date.now() - 5000;
      const id = newTaskId({ fireAtMs: dueAtMs, shard: SHARD_COUNT - 1 });
      ddbMock.on(GetCommand, { Key: { sk: `${String(dueAtMs).padStart(15, '0')}#${id}` } }).resolves({
        Item: { id, tenantId: TENANT.id, status, dueAtMs, createdAtMs: dueAtMs, target: TARGET, payload: '{"n":1}' },
      });
      return id;
    }

    it('serves GET /v1/tasks/{id} with the id taken from the raw path', async () => {
      // Prepare
      const id = storedTask('DELIVERED');

      // Act
      const response = await callFunctionUrl('GET', `/v1/tasks/${id}`);

      // Assess
      expect(response.statusCode).toBe(200);
      expect(response.json).toMatchObject({ id, status: 'DELIVERED', payload: { n: 1 } });
    });

    it('serves DELETE /v1/tasks/{id} as the cancel of that task', async () => {
      // Prepare
      const id = storedTask('DELIVERED');
      refuseUpdatesButTheRateCounter();

      // Act
      const response = await callFunctionUrl('DELETE', `/v1/tasks/${id}`);

      // Assess: the cancel's refusal names the state of exactly this task.
      expect(response.statusCode).toBe(409);
      expect(response.json).toMatchObject({
        type: '/problems/already-final',
        detail: expect.stringContaining('DELIVERED'),
      });
    });

    it('serves POST /v1/tasks and POST /v1/tasks/batch as the single and the batch submit', async () => {
      // Prepare
      ddbMock.on(PutCommand).resolves({});
      ddbMock.on(BatchWriteCommand).resolves({});

      // Act
      const single = await callFunctionUrl('POST', '/v1/tasks', { delaySeconds: 60, target: TARGET });
      const batch = await callFunctionUrl('POST', '/v1/tasks/batch', { tasks: [{ delaySeconds: 60, target: TARGET }] });

      // Assess
      expect(single.statusCode).toBe(201);
      expect(single.json).toMatchObject({ id: expect.any(String), status: 'PENDING' });
      expect(batch.statusCode).toBe(201);
      expect(batch.json).toMatchObject({ created: 1, rejected: 0 });
    });

    it('gives a bizType route its decoded path parameter', async () => {
      // Prepare
      ddbMock.on(DeleteCommand).rejects(conditionFailed());

      // Act
      const response = await callFunctionUrl('DELETE', '/v1/biz-types/never%2Dmade');

      // Assess
      expect(response.statusCode).toBe(404);
      expect(ddbMock.commandCalls(DeleteCommand).map((del) => del.args[0].input.Key)).toEqual([
        { pk: `BIZTYPES#${TENANT.id}`, sk: 'never-made' },
      ]);
    });

    it.each([
      ['GET', '/v1/nothing-here'],
      ['PATCH', '/v1/tasks'],
      ['GET', '//v1/tasks'],
    ])('answers %s %s with a 404 problem before reading anything', async (method, path) => {
      // Act
      const response = await callFunctionUrl(method, path);

      // Assess: not even the API key is looked up, as API Gateway answers an unknown route itself.
      expect(response.statusCode).toBe(404);
      expect(response.headers).toEqual({ 'content-type': 'application/problem+json' });
      expect(response.json).toMatchObject({ type: '/problems/no-route', status: 404 });
      expect(response.json.detail).toContain(`${method} ${path}`);
      expect(ddbMock.calls()).toHaveLength(0);
    });

    it('answers a path whose escapes are not UTF-8 with a 400 problem, as the local gateway does', async () => {
      // Act
      const response = await callFunctionUrl('GET', '/v1/tasks/%C3');

      // Assess
      expect(response.statusCode).toBe(400);
      expect(response.json).toMatchObject({ type: '/problems/malformed-path', status: 400 });
      expect(ddbMock.calls()).toHaveLength(0);
    });

    // Last: its second or so of requests would move the tests after it into a fresh second of the rate counter.
    it('refuses a flood of 2,000 distinct made-up keys with 401s and no table read at all', async () => {
      // Prepare: the instance has read the keyring, which it does once, at its first request with a key.
      const made = (index: number) =>
        `tk_${TENANT.id}_${KEY_RECORD.keyId.slice(0, 7)}${String(index).padStart(5, '0')}_${'s'.repeat(43)}`;
      const refused = async (index: number) => {
        const event = functionUrlEvent('POST', '/v1/tasks', { delaySeconds: 60, target: TARGET });
        event.headers.authorization = `Bearer ${made(index)}`;
        return (await handler(event, lambdaContext(10_000))).statusCode;
      };
      await refused(2_000);
      ddbMock.resetHistory();

      // Act: keys from before tags (the text then ended with the secret), every one a key id nobody issued.
      const statuses = new Set<number>();
      for (let index = 0; index < 2_000; index++) statuses.add(await refused(index));

      // Assess
      expect(ddbMock.calls()).toHaveLength(0);
      expect([...statuses]).toEqual([401]);
    });
  });
});
