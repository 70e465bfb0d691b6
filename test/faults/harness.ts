/**
 * The timer's pipeline on one machine, for fault injection: the api routes, the scanner,
 * the callback's record handling and the sweeper run as the cloud runs them (the same core
 * and handler code, over DynamoDB and SQS adapters speaking to real dynalite and fauxqs),
 * driven by loops that stand in for EventBridge ticks and Lambda's SQS pollers, and
 * delivering to a real webhook receiver.
 *
 * Time is compressed so faults recover in seconds, keeping the invariant that matters: a
 * received message stays invisible (5 s) longer than the callback can hold it before it claims
 * the task (a message surfaces up to about 2 s before its due time: a whole second of delay
 * rounded down, and the delivery mapping's 1 s batching window) plus the delivery lease (1.5 s).
 * Otherwise a crashed attempt's message comes back while its lease is still live, is skipped,
 * and the task is left DELIVERING.
 */
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, SQSEvent } from 'aws-lambda';

import { DynamoBizTypeStore } from '../../functions/adapters/dynamo/biz-type-store.js';
import { DynamoClockStore } from '../../functions/adapters/dynamo/clock-store.js';
import { DynamoIdempotencyStore } from '../../functions/adapters/dynamo/idempotency-store.js';
import { DynamoOccupancyIndex } from '../../functions/adapters/dynamo/occupancy-index.js';
import { DynamoRequestCounter } from '../../functions/adapters/dynamo/request-counter.js';
import { DynamoScheduleStore } from '../../functions/adapters/dynamo/schedule-store.js';
import { CALLBACK_COUNTER_PREFIX, taskNameTexts } from '../../functions/adapters/dynamo/table-schema.js';
import { DynamoTaskIndex } from '../../functions/adapters/dynamo/task-index.js';
import { DynamoTaskStore } from '../../functions/adapters/dynamo/task-store.js';
import { DynamoTenantStore } from '../../functions/adapters/dynamo/tenant-store.js';
import { SqsDeadLetterQueue, sqsDeliveryQueue } from '../../functions/adapters/sqs-queues.js';
import { AwsTargetDispatcher } from '../../functions/adapters/targets.js';
import { WebhookClient } from '../../functions/adapters/webhook-client.js';
import { type ApiPorts, route } from '../../functions/api/routes.js';
import { deliverRecords, type RecordPorts } from '../../functions/callback/records.js';
import { createLogger } from '../../functions/commons/logger.js';
import { createMetrics } from '../../functions/commons/metrics.js';
import { DEFAULT_SETTINGS, WEBHOOK_CONNECT_TIMEOUT_MS } from '../../functions/contract/topology.js';
import { generateSigningSecret } from '../../functions/contract/webhook-signature.js';
import type { DeliveryPorts } from '../../functions/core/deliver/deliver.js';
import type { Clock } from '../../functions/core/kernel/task.js';
import { newPlacement } from '../../functions/core/kernel/task-kernel.js';
import { runScanner, type ScanPorts } from '../../functions/core/scan/scan.js';
import { BIZ_TYPE_CACHE_TTL_MS, cachedBizTypeDirectory } from '../../functions/core/submit/biz-types.js';
import { sweep } from '../../functions/core/sweep/sweep.js';
import { addressPolicy } from '../../functions/core/targets/egress.js';
import {
  cachedTenantDirectory,
  issueApiKey,
  newTenant,
  TENANT_CACHE_TTL_MS,
} from '../../functions/core/tenants/tenants.js';
import { createLambdaService, sharedEnvironments } from '../../lib/local/lambda-service.js';
import { sqsJsonQueue } from '../../lib/local/mapping-queue.js';
import { type SqsEventSource, startSqsEventSource } from '../../lib/local/queue-poller.js';
import { type Emulators, startEmulators } from '../support/emulators.js';
import { testTargetRules } from '../support/target-rules.js';
import { type Responder, startWebhookReceiver } from '../support/webhook-receiver.js';

export const LEASE_MS = 1500;
export const VISIBILITY_SECONDS = 5;
const BUCKETS = 10_000_000;
/** Scanner runs in flight at once, as a reserved concurrency would bound them. */
const MAX_CONCURRENT_SCANS = 8;

/** The real clock, shifted: how a component with a skewed clock sees time. */
export function skewedClock(offsetMs: number): Clock {
  return {
    now: () => Date.now() + offsetMs,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
  };
}

/**
 * Makes a client fail some requests, as throttling or an outage would. `beforeRetries`
 * fails a call outright: the SDK's retries never see the error and the timer's own code
 * has to recover. `withinRetries` fails single attempts inside the SDK's retry loop, as
 * real throttling does, where its backoff must absorb them.
 */
export function injectFaults(
  client: { middlewareStack: unknown },
  where: 'beforeRetries' | 'withinRetries',
  fail: (command: string) => Error | undefined,
): void {
  const stack = client.middlewareStack as SQSClient['middlewareStack'];
  const middleware =
    (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) => async (args: unknown) => {
      const error = fail(context.commandName ?? '');
      if (error) throw error;
      return next(args);
    };
  if (where === 'beforeRetries') stack.add(middleware as never, { step: 'initialize', name: 'injectFailures' });
  else
    stack.addRelativeTo(middleware as never, {
      relation: 'after',
      toMiddleware: 'retryMiddleware',
      name: 'injectThrottling',
    });
}

/** An AWS-looking error, named as the SDK names the service's exceptions (names decide what it retries). */
export function awsError(name: string): Error {
  return Object.assign(new Error(`${name} (injected)`), { name, $fault: 'server', $metadata: {} });
}

/**
 * Fails a share of calls, chosen by a seeded pseudo-random sequence, and records how many
 * of each command it failed. Not "every nth call": a component that makes the same calls
 * every run would then fail at the same step every run, a lock no real outage has.
 */
export function failShare(share: number, errorName: string, failed: Map<string, number>, seed = 1) {
  let state = seed >>> 0;
  const next = () => {
    // mulberry32: small, fast and good enough to pick which calls fail.
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return (command: string) => {
    if (next() >= share) return undefined;
    failed.set(command, (failed.get(command) ?? 0) + 1);
    return awsError(errorName);
  };
}

export interface HarnessOptions {
  readonly shardCount?: number;
  readonly lookaheadSeconds?: number;
  readonly maxAttempts?: number;
  readonly webhookTimeoutMs?: number;
  /**
   * How long a received delivery message stays hidden: VISIBILITY_SECONDS unless given, so that a
   * crashed callback's messages come back within a case. A case that crashes nothing and judges
   * each task called once gives the deployment's (QUEUES.delivery), as a busy machine can keep an
   * invocation past 5 s, and its messages would then be delivered again, as at least once allows.
   */
  readonly visibilitySeconds?: number;
  /** Scanner runs started per tick: more than one models duplicate ticks. */
  readonly scannersPerTick?: number;
  /** Per-component clock offsets in milliseconds. */
  readonly skewMs?: Partial<Record<'api' | 'scanner' | 'callback' | 'sweeper', number>>;
  /** How the webhook receiver answers, by path. */
  readonly responders?: Record<string, Responder>;
  /** Lets a test wrap or break the components' clients before the pipeline is built. */
  readonly clientsFor?: (
    component: 'api' | 'scanner' | 'callback' | 'sweeper',
    clients: { dynamo: DynamoDBDocumentClient; sqs: SQSClient },
  ) => void;
}

export type Harness = Awaited<ReturnType<typeof startHarness>>;

const TENANT_ID = 'faults';

export async function startHarness(options: HarnessOptions = {}) {
  const emulators: Emulators = await startEmulators();
  const receiver = await startWebhookReceiver({ '/ok': () => 204, ...options.responders });
  const dlq = await emulators.createQueue('delivery-dlq');
  const delivery = await emulators.createQueue('delivery', {
    VisibilityTimeout: String(options.visibilitySeconds ?? VISIBILITY_SECONDS),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: '100' }),
  });
  const shardCount = options.shardCount ?? 4;
  const signingSecret = generateSigningSecret();
  const errors: unknown[] = [];

  const component = (name: 'api' | 'scanner' | 'callback' | 'sweeper') => {
    const clients = emulators.clients();
    options.clientsFor?.(name, clients);
    const { dynamo, sqs } = clients;
    const { tableName } = emulators;
    return {
      sqs,
      tenantStore: new DynamoTenantStore({ client: dynamo, tableName }),
      requestCounter: new DynamoRequestCounter({ client: dynamo, tableName }),
      taskStore: new DynamoTaskStore({ client: dynamo, tableName, bucketCount: BUCKETS }),
      taskIndex: new DynamoTaskIndex({ client: dynamo, tableName, bucketCount: BUCKETS }),
      clockStore: new DynamoClockStore({ client: dynamo, tableName }),
      idempotencyStore: new DynamoIdempotencyStore({ client: dynamo, tableName }),
      placement: newPlacement(),
      occupancy: new DynamoOccupancyIndex({ client: dynamo, tableName }),
      bizTypeStore: new DynamoBizTypeStore({ client: dynamo, tableName }),
      scheduleStore: new DynamoScheduleStore({ client: dynamo, tableName }),
      callbackCounter: new DynamoRequestCounter({ client: dynamo, tableName, keyPrefix: CALLBACK_COUNTER_PREFIX }),
      deliveryQueue: sqsDeliveryQueue(sqs, delivery.url),
      clock: skewedClock(options.skewMs?.[name] ?? 0),
      bucketCount: BUCKETS,
      shardCount,
      nameTexts: taskNameTexts,
    };
  };

  const apiParts = component('api');
  // Set up over clients without injected faults: the faults are for the pipeline, not the fixture.
  const setupStore = new DynamoTenantStore({ client: emulators.clients().dynamo, tableName: emulators.tableName });
  await setupStore.createTenant(newTenant(TENANT_ID, Date.now(), { signingSecret, rateLimitPerSecond: 10_000 }));
  const { apiKey } = await issueApiKey(setupStore, TENANT_ID, Date.now());
  const directory = (parts: typeof apiParts) =>
    cachedTenantDirectory(parts.tenantStore, parts.clock, TENANT_CACHE_TTL_MS);
  const lookaheadSeconds = options.lookaheadSeconds ?? 1;
  // The tick loop below starts a scanner every second, a superset of the ticks the api would send.
  const api: ApiPorts = {
    ...apiParts,
    tenants: directory(apiParts),
    bizTypes: cachedBizTypeDirectory(apiParts.bizTypeStore, apiParts.clock, BIZ_TYPE_CACHE_TTL_MS),
    tickQueue: { send: async () => undefined },
    lookaheadSeconds,
    retentionDays: 30,
    allowInsecureTargets: true,
    horizonDays: DEFAULT_SETTINGS.maxHorizonDays,
    targetRules: testTargetRules(true),
  };
  const scanner: ScanPorts & { lookaheadSeconds: number } = { ...component('scanner'), lookaheadSeconds };
  const sweeper: ScanPorts = component('sweeper');
  const callbackParts = component('callback');
  const deliveryPorts: DeliveryPorts = {
    ...callbackParts,
    // The tick loop scans every second, so an occurrence's successor needs no tick of its own.
    occurrences: { ...callbackParts, tickQueue: { send: async () => undefined }, lookaheadSeconds },
    tenants: directory(callbackParts),
    targets: new AwsTargetDispatcher({
      clock: callbackParts.clock,
      sqsFor: () => callbackParts.sqs,
      eventBridge: new EventBridgeClient({ region: 'us-east-1' }),
      // The receiver listens on loopback over http, which only local mode's policy reaches.
      webhooks: new WebhookClient({
        policy: addressPolicy(true),
        connectTimeoutMs: WEBHOOK_CONNECT_TIMEOUT_MS,
        totalTimeoutMs: options.webhookTimeoutMs ?? 1000,
      }),
    }),
    deadLetters: new SqsDeadLetterQueue(callbackParts.sqs, dlq.url),
    maxAttempts: options.maxAttempts ?? 6,
    backoffBaseSeconds: 1,
    backoffMaxSeconds: 2,
    retentionDays: 30,
    leaseMs: LEASE_MS,
    maxEarlyWaitMs: 5000,
  };
  const callback: RecordPorts = {
    delivery: deliveryPorts,
    deliveryQueue: sqsDeliveryQueue(callbackParts.sqs, delivery.url),
    logger: createLogger(),
    metrics: createMetrics(),
  };

  let running = true;
  const loops: Array<Promise<void>> = [];
  const scansInFlight = new Set<Promise<void>>();
  let pollers: SqsEventSource | undefined;
  const every = (ms: number, body: () => Promise<unknown>) =>
    loops.push(
      (async () => {
        while (running) {
          await body().catch((error: unknown) => errors.push(error));
          await new Promise((resolve) => setTimeout(resolve, ms));
        }
      })(),
    );
  /** Calls an api route as the harness's tenant. */
  const call = (routeKey: string, parts: { pathParameters?: Record<string, string>; body?: unknown } = {}) =>
    route(api, {
      routeKey,
      headers: { authorization: `Bearer ${apiKey}` },
      ...(parts.pathParameters && { pathParameters: parts.pathParameters }),
      ...(parts.body !== undefined && { body: JSON.stringify(parts.body) }),
    } as unknown as APIGatewayProxyEventV2);
  /** POSTs until the api accepts (201, or 200 for a replay); idempotency keys make the retries safe. */
  const acceptedIds = async (routeKey: string, body: unknown): Promise<string[]> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await call(routeKey, { body });
        if (response.statusCode !== 201 && response.statusCode !== 200) {
          throw new Error(`${routeKey} answered ${response.statusCode}: ${response.body}`);
        }
        const parsed = JSON.parse(response.body) as { id?: string; results?: Array<{ task?: { id: string } }> };
        return parsed.results ? parsed.results.map((result) => result.task?.id ?? '') : [parsed.id ?? ''];
      } catch (error) {
        if (attempt >= 30) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };

  return {
    emulators,
    receiver,
    api,
    call,
    scanner,
    sweeper,
    callback,
    signingSecret,
    queues: { delivery, dlq },
    errors,
    /** Starts the tick, poller and sweeper loops. */
    run() {
      // Like Lambda, each tick is its own invocation: ticks do not wait for earlier runs to end,
      // which is how a backlog drains in parallel. In-flight runs are bounded, as concurrency is.
      const scanners = options.scannersPerTick ?? 1;
      every(1000, async () => {
        for (let tick = 0; tick < scanners && scansInFlight.size < MAX_CONCURRENT_SCANS; tick++) {
          const scan: Promise<void> = runScanner(scanner, 5000)
            .then(() => undefined)
            .catch((error: unknown) => void errors.push(error))
            .finally(() => scansInFlight.delete(scan));
          scansInFlight.add(scan);
        }
      });
      // Local mode's pollers stand in for Lambda's event source mapping, with their own client:
      // faults injected into the callback's clients do not reach them.
      const lambda = createLambdaService({
        handlers: sharedEnvironments({
          callback: async (event) => deliverRecords(callback, (event as SQSEvent).Records),
        }),
        onError: (_fn, error) => errors.push(error),
      });
      // Two batches at a time at most, so the faults below meet the same load they were tuned for.
      pollers = startSqsEventSource({
        queue: sqsJsonQueue(emulators.sqsEndpoint),
        queueUrl: delivery.url,
        queueArn: delivery.arn,
        invoke: (event) => lambda.invoke('callback', event),
        batchSize: 10,
        maxConcurrency: 2,
        onError: (error) => errors.push(error),
      });
      every(1500, async () => {
        const result = await sweep(sweeper, {
          maxSecondsPerRun: 3600,
          graceSeconds: 3,
          overdueGraceSeconds: 8,
          catchUpGraceSeconds: 3,
          budgetMs: 5000,
        });
        errors.push(...result.errors);
      });
    },
    /**
     * Submits through the api routes, as one batch or one POST per task, retrying (with the
     * same idempotency keys) until every task is accepted, as a careful client would.
     */
    async submit(
      tasks: ReadonlyArray<Record<string, unknown>>,
      options: { oneByOne?: boolean } = {},
    ): Promise<string[]> {
      if (options.oneByOne)
        return Promise.all(tasks.map((task) => acceptedIds('POST /v1/tasks', task))).then((ids) => ids.flat());
      return acceptedIds('POST /v1/tasks/batch', { tasks });
    },
    async stop() {
      running = false;
      await Promise.all([...loops, ...scansInFlight, pollers?.stop()]);
      await receiver.close();
      await emulators.stop();
    },
  };
}

let taskSets = 0;

/** Webhook tasks due `fromMs`..`toMs` from now, spread evenly, each with its own idempotency key. */
export function webhookTasks(harness: Harness, count: number, fromMs: number, toMs: number, path = '/ok') {
  const start = Date.now();
  const set = ++taskSets;
  return Array.from({ length: count }, (_, index) => ({
    dueAt: start + fromMs + Math.floor(((toMs - fromMs) * index) / Math.max(1, count - 1)),
    target: { type: 'http', url: harness.receiver.url(path) },
    payload: { index },
    idempotencyKey: `set-${set}-task-${index}`,
  }));
}

export interface FaultReport {
  readonly submitted: number;
  readonly delivered: number;
  readonly duplicates: number;
  readonly lost: string[];
  readonly early: string[];
}

/** Receipts the receiver took (answered 2xx): a failed attempt reached it, but was not a delivery. */
const acknowledged = (harness: Harness) =>
  harness.receiver.receipts.filter((receipt) => receipt.status >= 200 && receipt.status < 300);

/** What the receiver saw of `ids`, by its own clock; any attempt before dueAt, failed or not, counts as early. */
export function report(harness: Harness, ids: readonly string[]): FaultReport {
  const wanted = new Set(ids);
  const taken = acknowledged(harness).filter((receipt) => wanted.has(receipt.body.id));
  const delivered = new Set(taken.map((receipt) => receipt.body.id));
  return {
    submitted: ids.length,
    delivered: delivered.size,
    duplicates: taken.length - delivered.size,
    lost: ids.filter((id) => !delivered.has(id)),
    early: harness.receiver.receipts
      .filter((receipt) => wanted.has(receipt.body.id) && receipt.receivedAtMs < Date.parse(receipt.body.dueAt))
      .map((receipt) => receipt.body.id),
  };
}

/** One line per case, for the record of what each fault cost. */
export function printReport(name: string, result: FaultReport): void {
  console.log(
    `fault "${name}": submitted ${result.submitted}, delivered ${result.delivered}, duplicates ${result.duplicates}, lost ${result.lost.length}, early ${result.early.length}`,
  );
}

/** Polls until every id has arrived (bounded), then lets stragglers and duplicates land. */
export async function waitForDeliveries(harness: Harness, ids: readonly string[], timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const delivered = () => new Set(acknowledged(harness).map((receipt) => receipt.body.id));
  while (Date.now() < deadline && !ids.every((id) => delivered().has(id))) {
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await new Promise((resolve) => setTimeout(resolve, 1500));
}

/** What the receiver saw of one schedule's occurrences: each by its nominal time, with the task ids that carried it. */
export interface OccurrenceReport {
  /** Occurrence times received (acknowledged), in order. */
  readonly occurrences: number[];
  /** Occurrence times between the first and the last received that never arrived. */
  readonly gaps: number[];
  /** Occurrence times that arrived under more than one task: a second occurrence for the same time. */
  readonly doubles: number[];
  /** Redeliveries of the same task (at-least-once, recognisable by the task id). */
  readonly duplicates: number;
  /** Attempts that reached the receiver before the occurrence's time. */
  readonly early: number;
}

/** The schedule's occurrences as the receiver saw them, checked against a fixed interval. */
export function occurrenceReport(harness: Harness, scheduleId: string, intervalMs: number): OccurrenceReport {
  const receipts = harness.receiver.receipts.filter((receipt) => receipt.body.scheduleId === scheduleId);
  const taken = receipts.filter((receipt) => receipt.status >= 200 && receipt.status < 300);
  const idsByTime = new Map<number, Set<string>>();
  for (const receipt of taken) {
    const atMs = Date.parse(receipt.body.occurrence ?? '');
    idsByTime.set(atMs, (idsByTime.get(atMs) ?? new Set()).add(receipt.body.id));
  }
  const occurrences = [...idsByTime.keys()].sort((a, b) => a - b);
  const gaps: number[] = [];
  const first = occurrences[0];
  const last = occurrences.at(-1);
  if (first !== undefined && last !== undefined) {
    for (let atMs = first; atMs <= last; atMs += intervalMs) if (!idsByTime.has(atMs)) gaps.push(atMs);
  }
  return {
    occurrences,
    gaps,
    doubles: occurrences.filter((atMs) => (idsByTime.get(atMs)?.size ?? 0) > 1),
    duplicates: taken.length - [...idsByTime.values()].reduce((sum, ids) => sum + ids.size, 0),
    early: receipts.filter((receipt) => receipt.receivedAtMs < Date.parse(receipt.body.occurrence ?? '')).length,
  };
}
