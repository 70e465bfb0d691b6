/**
 * The hostile-input corpus: malformed and hostile requests, each with the exact status it
 * must get, sent through the api's real routes to real stores on dynalite, configured as
 * a deployment is (https only, public addresses only). None of them may leave anything
 * behind in the table.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';

import { DynamoBizTypeStore } from '../../functions/adapters/dynamo/biz-type-store.js';
import { DynamoRequestCounter } from '../../functions/adapters/dynamo/request-counter.js';
import { partitionOf, RATE_COUNTER_PREFIX, taskNameTexts } from '../../functions/adapters/dynamo/table-schema.js';
import { DynamoTaskIndex } from '../../functions/adapters/dynamo/task-index.js';
import { DynamoTenantStore } from '../../functions/adapters/dynamo/tenant-store.js';
import { sqsDeliveryQueue } from '../../functions/adapters/sqs-queues.js';
import { type ApiPorts, route } from '../../functions/api/routes.js';
import { DEFAULT_SETTINGS, TABLE } from '../../functions/contract/topology.js';
import { newTaskId } from '../../functions/core/kernel/ids.js';
import { systemClock } from '../../functions/core/kernel/task.js';
import { cachedBizTypeDirectory } from '../../functions/core/submit/biz-types.js';
import { LIMITS } from '../../functions/core/submit/schemas.js';
import { cachedTenantDirectory, issueApiKey, newTenant } from '../../functions/core/tenants/tenants.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';
import { testTargetRules } from '../support/target-rules.js';

const SHARDS = 4;

const emulators = emulatorsFixture();
let ports: ApiPorts;
let apiKey = '';
let revokedKey = '';
let otherTenantsTask = '';
/** A schedule of the tenant's own, for the changes that must be refused. */
let ownSchedule = '';
let otherTenantsSchedule = '';

beforeAll(async () => {
  const options = { client: emulators.dynamo, tableName: emulators.tableName };
  const tenantStore = new DynamoTenantStore(options);
  const delivery = await emulators.createQueue('corpus-delivery');
  ports = {
    ...emulators.stores({ bucketCount: 1000 }),
    taskIndex: new DynamoTaskIndex({ ...options, bucketCount: 1000 }),
    deliveryQueue: sqsDeliveryQueue(emulators.sqs, delivery.url),
    tickQueue: { send: async () => undefined },
    lookaheadSeconds: 2,
    clock: systemClock,
    bucketCount: 1000,
    shardCount: SHARDS,
    nameTexts: taskNameTexts,
    retentionDays: 30,
    allowInsecureTargets: false,
    horizonDays: DEFAULT_SETTINGS.maxHorizonDays,
    targetRules: testTargetRules(false, {
      queueArns: ['arn:aws:sqs:us-east-1:123456789012:orders'],
      eventBusArns: ['arn:aws:events:us-east-1:123456789012:event-bus/orders'],
    }),
    tenants: cachedTenantDirectory(tenantStore, systemClock, 0),
    requestCounter: new DynamoRequestCounter(options),
    bizTypes: cachedBizTypeDirectory(new DynamoBizTypeStore(options), systemClock, 0),
  };
  const now = Date.now();
  // acme lists its webhook hosts; the attacker names are on it so the address checks behind the list get tested.
  const acmeHosts = ['hooks.example.com', 'x.example', '*.corp.example', '*.attacker.example', 'nowhere.example'];
  await tenantStore.createTenant(newTenant('acme', now, { rateLimitPerSecond: 100_000, allowedHosts: acmeHosts }));
  await tenantStore.createTenant(newTenant('globex', now, { rateLimitPerSecond: 100_000 }));
  const acme = await issueApiKey(tenantStore, 'acme', now);
  const globex = await issueApiKey(tenantStore, 'globex', now);
  const revoked = await issueApiKey(tenantStore, 'acme', now);
  await tenantStore.revokeApiKey('acme', revoked.record.keyId, now);
  apiKey = acme.apiKey;
  revokedKey = revoked.apiKey;
  const theirs = await call({ body: VALID }, `Bearer ${globex.apiKey}`);
  otherTenantsTask = String(JSON.parse(theirs.body).id);
  const schedule = await call({ routeKey: 'POST /v1/schedules', body: SCHEDULE });
  ownSchedule = String(JSON.parse(schedule.body).id);
  const theirSchedule = await call({ routeKey: 'POST /v1/schedules', body: SCHEDULE }, `Bearer ${globex.apiKey}`);
  otherTenantsSchedule = String(JSON.parse(theirSchedule.body).id);
});

const VALID = { delaySeconds: 60, target: { type: 'http', url: 'https://hooks.example.com/timer' } } as const;
const withTarget = (target: Record<string, unknown>) => ({ ...VALID, target: { type: 'http', ...target } });
const withUrl = (url: string) => withTarget({ url });
const withHeaders = (headers: Record<string, unknown>) => withTarget({ url: VALID.target.url, headers });
const raw = (rawBody: string) => ({ rawBody });
const SCHEDULE = { rate: '5 minutes', target: VALID.target } as const;
const DAY_MS = 86_400_000;

interface HostileRequest {
  readonly routeKey?: string;
  readonly body?: unknown;
  readonly rawBody?: string;
  readonly base64?: boolean;
  /** A path id, or a function of the ids the fixture made. */
  readonly id?: string | (() => string);
  readonly query?: Record<string, string>;
  /** Replaces the tenant's good Authorization header. */
  readonly authorization?: string | (() => string);
}

async function call(request: HostileRequest, authorization = `Bearer ${apiKey}`) {
  const routeKey = request.routeKey ?? 'POST /v1/tasks';
  const body = request.rawBody ?? (request.body === undefined ? undefined : JSON.stringify(request.body));
  const id = typeof request.id === 'function' ? request.id() : request.id;
  const header =
    typeof request.authorization === 'function' ? request.authorization() : (request.authorization ?? authorization);
  return route(ports, {
    routeKey,
    headers: { 'content-type': 'application/json', ...(header !== '' && { authorization: header }) },
    isBase64Encoded: request.base64 ?? false,
    ...(body !== undefined && { body: request.base64 ? Buffer.from(body).toString('base64') : body }),
    ...(id !== undefined && { pathParameters: { id } }),
    ...(request.query && { queryStringParameters: request.query }),
  } as unknown as APIGatewayProxyEventV2);
}

const corpus: Record<string, Array<[string, HostileRequest, number]>> = {
  'broken JSON': [
    ['an empty body', raw(''), 400],
    ['only whitespace', raw(' \n\t'), 400],
    ['an unclosed object', raw('{'), 400],
    ['a cut-off request', raw('{"delaySeconds": 60,'), 400],
    ['a trailing comma', raw('{"delaySeconds": 60, "target": {"type": "http", "url": "https://x.example"},}'), 400],
    ['single quotes', raw("{'delaySeconds': 60}"), 400],
    ['two objects', raw('{"delaySeconds": 60}{"delaySeconds": 61}'), 400],
    ['a byte-order mark', raw('\ufeff{"delaySeconds": 60}'), 400],
    ['null', raw('null'), 400],
    ['an array', raw('[]'), 400],
    ['a string', raw('"schedule me"'), 400],
    ['a broken unicode escape', raw('{"bizId": "\\u12"}'), 400],
    ['base64 of garbage', { rawBody: '\u0000\u0001\u0002', base64: true }, 400],
    ['a number with a dangling exponent', raw('{"delaySeconds": 6e}'), 400],
  ],
  'wrong types': [
    ['delaySeconds as a string', { body: { ...VALID, delaySeconds: '60' } }, 400],
    ['delaySeconds as a boolean', { body: { ...VALID, delaySeconds: true } }, 400],
    ['fractional delaySeconds', { body: { ...VALID, delaySeconds: 1.5 } }, 400],
    ['negative delaySeconds', { body: { ...VALID, delaySeconds: -1 } }, 400],
    ['dueAt as an object', { body: { target: VALID.target, dueAt: {} } }, 400],
    ['dueAt as an array', { body: { target: VALID.target, dueAt: [2030, 1, 1] } }, 400],
    ['dueAt as a boolean', { body: { target: VALID.target, dueAt: true } }, 400],
    ['the target as a string', { body: { ...VALID, target: 'https://hooks.example.com' } }, 400],
    ['a null target', { body: { ...VALID, target: null } }, 400],
    ['an unknown target type', { body: withTarget({ type: 'smtp', url: 'mailto:a@example.com' }) }, 400],
    ['a numeric target type', { body: withTarget({ type: 42 }) }, 400],
    ['a numeric url', { body: withTarget({ url: 42 }) }, 400],
    ['headers as an array', { body: withHeaders([] as unknown as Record<string, unknown>) }, 400],
    ['a numeric header value', { body: withHeaders({ 'x-n': 1 }) }, 400],
    ['a numeric bizType', { body: { ...VALID, bizType: 5 } }, 400],
    ['bizId as an array', { body: { ...VALID, bizId: ['a'] } }, 400],
    ['idempotencyKey as an object', { body: { ...VALID, idempotencyKey: {} } }, 400],
    ['an empty bizId', { body: { ...VALID, bizId: '' } }, 400],
    ['an unknown field', { body: { ...VALID, callbackUrl: 'https://x.example' } }, 400],
    [
      'a field of the sqs target on an http target',
      { body: withTarget({ url: VALID.target.url, queueUrl: 'x' }) },
      400,
    ],
    ['a batch whose tasks is not an array', { routeKey: 'POST /v1/tasks/batch', body: { tasks: VALID } }, 400],
    ['an empty batch', { routeKey: 'POST /v1/tasks/batch', body: { tasks: [] } }, 400],
    ['a batch of 101 tasks', { routeKey: 'POST /v1/tasks/batch', body: { tasks: Array(101).fill(VALID) } }, 400],
    ['a batch with an extra field', { routeKey: 'POST /v1/tasks/batch', body: { tasks: [VALID], dryRun: true } }, 400],
    [
      'a batch whose only item is invalid',
      { routeKey: 'POST /v1/tasks/batch', body: { tasks: [{ delaySeconds: 1 }] } },
      207,
    ],
  ],
  'flexible window': [
    ['a window of 0 seconds', { body: { ...VALID, window: { seconds: 0 } } }, 400],
    ['a negative window', { body: { ...VALID, window: { seconds: -60 } } }, 400],
    ['a fractional window', { body: { ...VALID, window: { seconds: 1.5 } } }, 400],
    ['a window over 15 minutes', { body: { ...VALID, window: { seconds: 901 } } }, 400],
    ['window seconds as a string', { body: { ...VALID, window: { seconds: '60' } } }, 400],
    ['a window without seconds', { body: { ...VALID, window: {} } }, 400],
    ['a window as a bare number', { body: { ...VALID, window: 60 } }, 400],
    ['a null window', { body: { ...VALID, window: null } }, 400],
    ['a window with an unknown field', { body: { ...VALID, window: { seconds: 60, jitter: 5 } } }, 400],
    [
      'a batch item with a window over 15 minutes',
      { routeKey: 'POST /v1/tasks/batch', body: { tasks: [{ ...VALID, window: { seconds: 3600 } }] } },
      207,
    ],
  ],
  'prototype pollution': [
    [
      'a top-level __proto__',
      raw(`{"__proto__": {"isAdmin": true}, "delaySeconds": 60, "target": ${JSON.stringify(VALID.target)}}`),
      400,
    ],
    [
      'a top-level constructor.prototype',
      raw(`{"constructor": {"prototype": {"x": 1}}, "delaySeconds": 60, "target": ${JSON.stringify(VALID.target)}}`),
      400,
    ],
    [
      '__proto__ inside the target',
      raw(`{"delaySeconds": 60, "target": {"type": "http", "url": "https://x.example", "__proto__": {"type": "sqs"}}}`),
      400,
    ],
    [
      'a __proto__ webhook header',
      raw(
        `{"delaySeconds": 60, "target": {"type": "http", "url": "https://x.example", "headers": {"__proto__": "x"}}}`,
      ),
      400,
    ],
    ['a constructor webhook header', { body: withHeaders({ constructor: 'x' }) }, 400],
    ['a prototype webhook header', { body: withHeaders({ prototype: 'x' }) }, 400],
    [
      '__proto__ in a batch item',
      {
        routeKey: 'POST /v1/tasks/batch',
        rawBody: `{"tasks": [{"__proto__": {"x": 1}, "delaySeconds": 60, "target": ${JSON.stringify(VALID.target)}}]}`,
      },
      400,
    ],
    [
      '__proto__ deep in the payload',
      raw(
        `{"delaySeconds": 60, "target": ${JSON.stringify(VALID.target)}, "payload": {"a": [{"__proto__": {"x": 1}}]}}`,
      ),
      400,
    ],
    [
      '__proto__ beside the batch',
      {
        routeKey: 'POST /v1/tasks/batch',
        rawBody: `{"__proto__": {"tasks": []}, "tasks": [${JSON.stringify(VALID)}]}`,
      },
      400,
    ],
  ],
  'huge numbers and strings': [
    ['delaySeconds of 1e308', { body: { ...VALID, delaySeconds: 1e308 } }, 400],
    ['delaySeconds past 2^53', { body: { ...VALID, delaySeconds: 2 ** 53 + 2 } }, 400],
    ['delaySeconds beyond the horizon', { body: { ...VALID, delaySeconds: 400 * 86_400 } }, 400],
    ['dueAt of 1e20 ms', { body: { target: VALID.target, dueAt: 1e20 } }, 400],
    ['a negative dueAt', { body: { target: VALID.target, dueAt: -1 } }, 400],
    ['a fractional dueAt', { body: { target: VALID.target, dueAt: Date.now() + 60_000.5 } }, 400],
    ['a 257-character bizId', { body: { ...VALID, bizId: 'x'.repeat(257) } }, 400],
    ['a 65-character bizType', { body: { ...VALID, bizType: 'x'.repeat(65) } }, 400],
    ['a 129-character idempotencyKey', { body: { ...VALID, idempotencyKey: 'k'.repeat(129) } }, 400],
    ['a 2,049-character url', { body: withUrl(`https://hooks.example.com/${'a'.repeat(2030)}`) }, 400],
    ['a payload over 64 KiB', { body: { ...VALID, payload: 'x'.repeat(65 * 1024) } }, 400],
    // 100 tasks of 64 KiB payloads are 6.5 MB, over Lambda's 6 MB event: the body cap refuses it first.
    [
      'a batch of 100 tasks with 64 KiB payloads',
      {
        routeKey: 'POST /v1/tasks/batch',
        body: { tasks: Array(100).fill({ ...VALID, payload: 'x'.repeat(64 * 1024 - 2) }) },
      },
      413,
    ],
    ['a body one byte over the cap', raw(`{"delaySeconds": 60, "pad": "${'x'.repeat(LIMITS.requestBodyBytes)}"}`), 413],
    ['an over-cap body sent base64-encoded', { rawBody: 'x'.repeat(LIMITS.requestBodyBytes + 1), base64: true }, 413],
    ['a 1,025-character header value', { body: withHeaders({ 'x-big': 'v'.repeat(1025) }) }, 400],
    [
      '21 webhook headers',
      { body: withHeaders(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`x-h${i}`, 'v']))) },
      400,
    ],
    ['a 65-character header name', { body: withHeaders({ [`x-${'n'.repeat(63)}`]: 'v' }) }, 400],
    [
      'an eventbridge detailType over 128 characters',
      { body: { ...VALID, target: { type: 'eventbridge', eventBusName: 'orders', detailType: 'd'.repeat(129) } } },
      400,
    ],
  ],
  'NaN and Infinity': [
    ['a bare NaN', raw(`{"delaySeconds": NaN, "target": ${JSON.stringify(VALID.target)}}`), 400],
    ['a bare Infinity', raw(`{"delaySeconds": Infinity, "target": ${JSON.stringify(VALID.target)}}`), 400],
    ['-Infinity as dueAt', raw(`{"dueAt": -Infinity, "target": ${JSON.stringify(VALID.target)}}`), 400],
    ['1e400, which parses to Infinity', raw(`{"delaySeconds": 1e400, "target": ${JSON.stringify(VALID.target)}}`), 400],
    ['-1e400 as dueAt', raw(`{"dueAt": -1e400, "target": ${JSON.stringify(VALID.target)}}`), 400],
    ['"NaN" as dueAt', { body: { target: VALID.target, dueAt: 'NaN' } }, 400],
  ],
  'dates in odd formats and zones': [
    ['a date without a time', { body: { target: VALID.target, dueAt: '2030-01-01' } }, 400],
    ['a time without a zone', { body: { target: VALID.target, dueAt: '2030-01-01T00:00:00' } }, 400],
    ['February 30th', { body: { target: VALID.target, dueAt: '2030-02-30T00:00:00Z' } }, 400],
    ['month 13', { body: { target: VALID.target, dueAt: '2030-13-01T00:00:00Z' } }, 400],
    ['hour 24', { body: { target: VALID.target, dueAt: '2030-01-01T24:00:00Z' } }, 400],
    ['minute 60', { body: { target: VALID.target, dueAt: '2030-01-01T00:60:00Z' } }, 400],
    ['second 60 (a leap second)', { body: { target: VALID.target, dueAt: '2030-06-30T23:59:60Z' } }, 400],
    ['a space instead of T', { body: { target: VALID.target, dueAt: '2030-01-01 00:00:00Z' } }, 400],
    ['an HTTP date', { body: { target: VALID.target, dueAt: 'Tue, 01 Jan 2030 00:00:00 GMT' } }, 400],
    ['epoch seconds as a string', { body: { target: VALID.target, dueAt: '1893456000' } }, 400],
    ['a +25:00 offset', { body: { target: VALID.target, dueAt: '2030-01-01T00:00:00+25:00' } }, 400],
    ['a zone name', { body: { target: VALID.target, dueAt: '2030-01-01T00:00:00 Europe/Paris' } }, 400],
    ['an expanded year', { body: { target: VALID.target, dueAt: '+012030-01-01T00:00:00Z' } }, 400],
    ['an ISO week date', { body: { target: VALID.target, dueAt: '2030-W01-1T00:00:00Z' } }, 400],
    ['ten fraction digits', { body: { target: VALID.target, dueAt: '2030-01-01T00:00:00.1234567891Z' } }, 400],
    ['two days ago', { body: { target: VALID.target, dueAt: new Date(Date.now() - 2 * DAY_MS).toISOString() } }, 400],
    ['the year 2999', { body: { target: VALID.target, dueAt: '2999-01-01T00:00:00Z' } }, 400],
    ['both dueAt and delaySeconds', { body: { ...VALID, dueAt: '2030-01-01T00:00:00Z' } }, 400],
    ['neither dueAt nor delaySeconds', { body: { target: VALID.target } }, 400],
    ['epoch seconds where milliseconds belong (1970)', { body: { target: VALID.target, dueAt: 1_893_456_000 } }, 400],
  ],
  'unicode edge cases': [
    [
      'a lone high surrogate in bizId',
      raw(`{"delaySeconds": 60, "target": ${JSON.stringify(VALID.target)}, "bizId": "\\ud800"}`),
      400,
    ],
    [
      'a lone low surrogate in bizType',
      raw(`{"delaySeconds": 60, "target": ${JSON.stringify(VALID.target)}, "bizType": "a\\udc00"}`),
      400,
    ],
    ['a NUL in idempotencyKey', { body: { ...VALID, idempotencyKey: 'key\u0000' } }, 400],
    ['an escape sequence in bizId', { body: { ...VALID, bizId: 'o-1\u001b[31m' } }, 400],
    ['a newline in bizType', { body: { ...VALID, bizType: 'order\nexpired' } }, 400],
    ['257 astral characters in bizId', { body: { ...VALID, bizId: '😀'.repeat(257) } }, 400],
    ['a euro sign in a header value', { body: withHeaders({ 'x-price': '10€' }) }, 400],
    ['a non-ASCII header name', { body: withHeaders({ 'x-prïce': '10' }) }, 400],
    ['a fullwidth colon in a header name', { body: withHeaders({ 'x-a：b': '1' }) }, 400],
  ],
  'control characters in headers': [
    ['CR LF in a header value (header injection)', { body: withHeaders({ 'x-a': 'v\r\nx-injected: 1' }) }, 400],
    ['a bare LF in a header value', { body: withHeaders({ 'x-a': 'v\nw' }) }, 400],
    ['a NUL in a header value', { body: withHeaders({ 'x-a': 'v\u0000' }) }, 400],
    ['a space in a header name', { body: withHeaders({ 'x bad': 'v' }) }, 400],
    ['a colon in a header name', { body: withHeaders({ 'x-a:': 'v' }) }, 400],
    ['an empty header name', { body: withHeaders({ '': 'v' }) }, 400],
    ['a Host header', { body: withHeaders({ Host: 'internal.example' }) }, 400],
    ['a Content-Length header', { body: withHeaders({ 'Content-Length': '0' }) }, 400],
    ['a Transfer-Encoding header', { body: withHeaders({ 'transfer-encoding': 'chunked' }) }, 400],
    ['a forged webhook-signature header', { body: withHeaders({ 'webhook-signature': 'v1,AAAA' }) }, 400],
    ['CR LF in the Authorization header', { body: VALID, authorization: () => `Bearer ${apiKey}\r\nx-admin: 1` }, 401],
    ['a NUL in the Authorization header', { body: VALID, authorization: () => `Bearer ${apiKey}\u0000` }, 401],
  ],
  'SSRF URLs': [
    ['plain http', { body: withUrl('http://hooks.example.com/timer') }, 400],
    ['127.0.0.1', { body: withUrl('https://127.0.0.1/') }, 400],
    ['127.0.0.1 in decimal', { body: withUrl('https://2130706433/') }, 400],
    ['127.0.0.1 in octal', { body: withUrl('https://0177.0.0.1/') }, 400],
    ['127.0.0.1 in hex', { body: withUrl('https://0x7f.0.0.1/') }, 400],
    ['127.1 shorthand', { body: withUrl('https://127.1/') }, 400],
    ['IPv6 loopback', { body: withUrl('https://[::1]/') }, 400],
    ['IPv6-mapped 127.0.0.1', { body: withUrl('https://[::ffff:127.0.0.1]/') }, 400],
    ['the metadata endpoint', { body: withUrl('https://169.254.169.254/latest/meta-data/') }, 400],
    ['the metadata endpoint in decimal', { body: withUrl('https://2852039166/') }, 400],
    ['the metadata endpoint in octal', { body: withUrl('https://0251.0376.0251.0376/') }, 400],
    ['the metadata endpoint IPv6-mapped', { body: withUrl('https://[::ffff:a9fe:a9fe]/') }, 400],
    ["AWS's IPv6 metadata endpoint", { body: withUrl('https://[fd00:ec2::254]/') }, 400],
    ['localhost', { body: withUrl('https://localhost/') }, 400],
    ['localhost. with a trailing dot', { body: withUrl('https://localhost./') }, 400],
    ['a subdomain of localhost', { body: withUrl('https://api.localhost/') }, 400],
    ['10.0.0.1', { body: withUrl('https://10.0.0.1/') }, 400],
    ['172.16.0.1', { body: withUrl('https://172.16.0.1/') }, 400],
    ['192.168.1.1', { body: withUrl('https://192.168.1.1/') }, 400],
    ['carrier-grade NAT 100.64.0.1', { body: withUrl('https://100.64.0.1/') }, 400],
    ['0.0.0.0', { body: withUrl('https://0.0.0.0/') }, 400],
    ['multicast 224.0.0.1', { body: withUrl('https://224.0.0.1/') }, 400],
    ['IPv6 link-local', { body: withUrl('https://[fe80::1]/') }, 400],
    ['credentials in the URL', { body: withUrl('https://user:pass@hooks.example.com/') }, 400],
    ['a file: URL', { body: withUrl('file:///etc/passwd') }, 400],
    ['a gopher: URL', { body: withUrl('gopher://hooks.example.com:70/_') }, 400],
    ['a javascript: URL', { body: withUrl('javascript:alert(1)') }, 400],
    ['a relative URL', { body: withUrl('/internal/admin') }, 400],
    ['a name that resolves to a private address', { body: withUrl('https://internal.corp.example/hook') }, 400],
    ['a name that resolves to the metadata endpoint', { body: withUrl('https://metadata.attacker.example/') }, 400],
    ['a name with one public and one loopback address', { body: withUrl('https://split.attacker.example/') }, 400],
    ['a name that resolves to IPv6 loopback', { body: withUrl('https://v6-loopback.attacker.example/') }, 400],
    ['a name that does not resolve', { body: withUrl('https://nowhere.example/') }, 400],
    ["a host outside the tenant's allow-list", { body: withUrl('https://evil.example.net/hook') }, 400],
    [
      'an allowed host as a prefix of another domain',
      { body: withUrl('https://hooks.example.com.evil.example.net/') },
      400,
    ],
    ['a single-label host', { body: withUrl('https://metadata/') }, 400],
    [
      'a queue the deployer did not allow',
      {
        body: {
          ...VALID,
          target: { type: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/payroll' },
        },
      },
      400,
    ],
    [
      'a queue in another account',
      {
        body: {
          ...VALID,
          target: { type: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/210987654321/orders' },
        },
      },
      400,
    ],
    [
      'a queue URL on a non-AWS host',
      { body: { ...VALID, target: { type: 'sqs', queueUrl: 'https://169.254.169.254/123456789012/orders' } } },
      400,
    ],
    [
      'an event bus the deployer did not allow',
      { body: { ...VALID, target: { type: 'eventbridge', eventBusName: 'default' } } },
      400,
    ],
    [
      "another account's event bus ARN",
      {
        body: {
          ...VALID,
          target: { type: 'eventbridge', eventBusName: 'arn:aws:events:us-east-1:210987654321:event-bus/orders' },
        },
      },
      400,
    ],
  ],
  "other tenants' ids": [
    ["reading another tenant's task", { routeKey: 'GET /v1/tasks/{id}', id: () => otherTenantsTask }, 404],
    ["cancelling another tenant's task", { routeKey: 'DELETE /v1/tasks/{id}', id: () => otherTenantsTask }, 404],
    [
      "another tenant's task id, lowercased",
      { routeKey: 'GET /v1/tasks/{id}', id: () => otherTenantsTask.toLowerCase() },
      404,
    ],
  ],
  'forged and truncated ids': [
    ['a 25-character id', { routeKey: 'GET /v1/tasks/{id}', id: () => otherTenantsTask.slice(0, 25) }, 404],
    ['a 27-character id', { routeKey: 'GET /v1/tasks/{id}', id: () => `${otherTenantsTask}0` }, 404],
    [
      'an id with letters Crockford leaves out',
      { routeKey: 'GET /v1/tasks/{id}', id: 'ILOU000000000000000000000U' },
      404,
    ],
    [
      'an id in a shard this deployment does not have',
      { routeKey: 'GET /v1/tasks/{id}', id: newTaskId({ fireAtMs: Date.now(), shard: SHARDS + 1 }) },
      404,
    ],
    [
      'a well-formed id nobody made',
      { routeKey: 'GET /v1/tasks/{id}', id: newTaskId({ fireAtMs: Date.now(), shard: 1 }) },
      404,
    ],
    [
      'cancelling a well-formed id nobody made',
      { routeKey: 'DELETE /v1/tasks/{id}', id: newTaskId({ fireAtMs: Date.now() + 60_000, shard: 0 }) },
      404,
    ],
    ['a path traversal', { routeKey: 'GET /v1/tasks/{id}', id: '../../etc/passwd' }, 404],
    ['a NoSQL injection', { routeKey: 'GET /v1/tasks/{id}', id: "' OR 1=1 --" }, 404],
    ['an empty id', { routeKey: 'GET /v1/tasks/{id}', id: '' }, 404],
  ],
  schedules: [
    ['a bad cron', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: undefined, cron: '61 * * * *' } }, 400],
    [
      'a cron of three fields',
      { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: undefined, cron: '* * *' } },
      400,
    ],
    [
      'a cron that never fires',
      { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: undefined, cron: '0 0 30 2 *' } },
      400,
    ],
    [
      'an unknown time zone',
      { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, timezone: 'Mars/Olympus_Mons' } },
      400,
    ],
    ['a rate of 0', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: '0 seconds' } }, 400],
    [
      'a rate of half a second, more often than once a second',
      { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: '0.5 seconds' } },
      400,
    ],
    ['a rate as a number', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: 5 } }, 400],
    ['a rate in an unknown unit', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: '5 fortnights' } }, 400],
    [
      'endAt before startAt',
      {
        routeKey: 'POST /v1/schedules',
        body: { ...SCHEDULE, startAt: '2031-01-02T00:00:00Z', endAt: '2031-01-01T00:00:00Z' },
      },
      400,
    ],
    ['a window of 0 s', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, window: { seconds: 0 } } }, 400],
    [
      'a window as long as the rate',
      { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: '30 seconds', window: { seconds: 30 } } },
      400,
    ],
    ['a window of 901 s', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, window: { seconds: 901 } } }, 400],
    [
      'endAt in the past',
      { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, endAt: '2001-01-01T00:00:00Z' } },
      400,
    ],
    ['a startAt that is no date', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, startAt: 'tomorrow' } }, 400],
    ['both cron and rate', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, cron: '* * * * *' } }, 400],
    ['neither cron nor rate', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: undefined } }, 400],
    ['an unknown catchUp', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, catchUp: 'all' } }, 400],
    ['no target', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, target: undefined } }, 400],
    [
      'a loopback target',
      { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, target: { type: 'http', url: 'https://127.0.0.1/x' } } },
      400,
    ],
    ['an unknown field', { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, every: 'day' } }, 400],
    [
      'a bad cron with an idempotency key',
      { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: undefined, cron: 'x', idempotencyKey: 'k' } },
      400,
    ],
    [
      'a change to a bad cron',
      { routeKey: 'PATCH /v1/schedules/{id}', id: () => ownSchedule, body: { cron: '61 * * * *' } },
      400,
    ],
    [
      'a change to an unknown zone',
      { routeKey: 'PATCH /v1/schedules/{id}', id: () => ownSchedule, body: { timezone: 'Nowhere/Else' } },
      400,
    ],
    [
      'a change to an endAt before startAt',
      {
        routeKey: 'PATCH /v1/schedules/{id}',
        id: () => ownSchedule,
        body: { startAt: '2031-01-02T00:00:00Z', endAt: '2031-01-01T00:00:00Z' },
      },
      400,
    ],
    [
      'a change with paused as a string',
      { routeKey: 'PATCH /v1/schedules/{id}', id: () => ownSchedule, body: { paused: 'yes' } },
      400,
    ],
    ['a schedule id nobody made', { routeKey: 'GET /v1/schedules/{id}', id: 'sch_00000000000000000000' }, 404],
    [
      "another tenant's task id as a schedule id",
      { routeKey: 'GET /v1/schedules/{id}', id: () => otherTenantsTask },
      404,
    ],
    ['deleting a path traversal', { routeKey: 'DELETE /v1/schedules/{id}', id: '../../etc/passwd' }, 404],
    [
      "a listing cursor that names another tenant's partition",
      { routeKey: 'GET /v1/schedules', query: { cursor: Buffer.from('SCHEDULES#globex').toString('base64url') } },
      400,
    ],
    ['a listing with paused as yes', { routeKey: 'GET /v1/schedules', query: { paused: 'yes' } }, 400],
    ['a listing of 0 a page', { routeKey: 'GET /v1/schedules', query: { limit: '0' } }, 400],
    ['a listing by an unknown filter', { routeKey: 'GET /v1/schedules', query: { tenantId: 'globex' } }, 400],
    [
      'a cron that fires only on 29 February, years apart',
      { routeKey: 'POST /v1/schedules', body: { ...SCHEDULE, rate: undefined, cron: '0 0 29 2 *' } },
      400,
    ],
    ["another tenant's schedule", { routeKey: 'GET /v1/schedules/{id}', id: () => otherTenantsSchedule }, 404],
    [
      "a change to another tenant's schedule",
      { routeKey: 'PATCH /v1/schedules/{id}', id: () => otherTenantsSchedule, body: { paused: true } },
      404,
    ],
    [
      "deleting another tenant's schedule",
      { routeKey: 'DELETE /v1/schedules/{id}', id: () => otherTenantsSchedule },
      404,
    ],
  ],
  'API keys': [
    ['no Authorization header', { body: VALID, authorization: '' }, 401],
    ['an empty bearer', { body: VALID, authorization: 'Bearer ' }, 401],
    ['a Basic credential', { body: VALID, authorization: 'Basic YWNtZTpwYXNz' }, 401],
    ['a revoked key', { body: VALID, authorization: () => `Bearer ${revokedKey}` }, 401],
    ['a key with a changed secret', { body: VALID, authorization: () => `Bearer ${apiKey.slice(0, -3)}abc` }, 401],
    [
      "the key's secret under another tenant's name",
      { body: VALID, authorization: () => `Bearer ${apiKey.replace('tk_acme_', 'tk_globex_')}` },
      401,
    ],
    ['a key with trailing garbage', { body: VALID, authorization: () => `Bearer ${apiKey} admin` }, 401],
    ['a 10 KB header', { body: VALID, authorization: `Bearer ${'k'.repeat(10_000)}` }, 401],
  ],
};

/** Items that are not the rate counters' per-second tallies, which every request adds to. */
async function storedItems(): Promise<string[]> {
  const items: string[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await emulators.dynamo.send(
      new ScanCommand({ TableName: emulators.tableName, ConsistentRead: true, ExclusiveStartKey: startKey }),
    );
    for (const item of page.Items ?? []) {
      const pk = partitionOf(item);
      if (!pk.startsWith(RATE_COUNTER_PREFIX)) items.push(`${pk}|${item[TABLE.sortKey]}`);
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items.sort();
}

const cases = Object.entries(corpus).flatMap(([category, entries]) =>
  entries.map(([name, request, status]) => ({ category, name, request, status })),
);

describe('Hostile-input corpus', () => {
  it('has at least 100 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(100);
  });

  it.each(cases)('$category: $name → $status', async ({ request, status }) => {
    // Act
    const response = await call(request);

    // Assess: the status, and a problem+json body that never echoes internals.
    expect(response.statusCode, response.body).toBe(status);
    expect(response.body).not.toMatch(/at \w+ \(|node_modules|ConditionalCheckFailed|dynalite/);
    if (status !== 207) expect(response.headers?.['content-type']).toBe('application/problem+json');
  });

  it('left nothing new in the table and polluted no prototype', async () => {
    // Prepare
    const before = await storedItems();

    // Act
    for (const { request } of cases) await call(request);

    // Assess
    expect(await storedItems()).toEqual(before);
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});
