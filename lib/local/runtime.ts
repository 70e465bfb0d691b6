/**
 * Local mode: the whole service on one machine. dynalite stands in for DynamoDB (on disk,
 * so tasks survive a restart), fauxqs for SQS (in memory), a small sink for EventBridge;
 * the real handlers run unchanged, driven the way Lambda drives them, with every queue,
 * batch size, timeout and schedule taken from the topology the CDK stack also reads.
 */
import { join } from 'node:path';

import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, SQSBatchResponse, SQSEvent } from 'aws-lambda';

import { DynamoClockStore } from '../../functions/adapters/dynamo/clock-store.js';
import { scanTasks } from '../../functions/adapters/dynamo/task-store.js';
import { DynamoTenantStore } from '../../functions/adapters/dynamo/tenant-store.js';
import {
  redriveByCopy,
  SqsDeadLetterQueue,
  sqsDeliveryQueue,
  sqsTickQueue,
} from '../../functions/adapters/sqs-queues.js';
import { createApiHandler } from '../../functions/api/app.js';
import { createCallbackHandler } from '../../functions/callback/app.js';
import { type AwsClients, awsClients } from '../../functions/commons/clients.js';
import {
  type Environment,
  type FunctionConfig,
  loadApiConfig,
  loadCallbackConfig,
  loadScannerConfig,
  loadSweeperConfig,
  loadTickerConfig,
} from '../../functions/commons/config.js';
import { assembleHandler, type HandlerDeps } from '../../functions/commons/lambda-chain.js';
import { occupancyIndex } from '../../functions/commons/stores.js';
import {
  DEFAULT_SETTINGS,
  DELIVERY_MAX_RECEIVE_COUNT,
  ENV,
  environmentFor,
  type FunctionName,
  QUEUES,
  type QueueSpec,
  SCHEDULES,
  type TimerSettings,
} from '../../functions/contract/topology.js';
import { minuteOf, secondOf } from '../../functions/core/clock.js';
import type { DeliveryMessage, Task } from '../../functions/core/task.js';
import { decodeDeliveryBody, deliveryMessageFor } from '../../functions/core/task-kernel.js';
import { activeSigningSecrets } from '../../functions/core/tenants.js';
import { type Tick, tickFor } from '../../functions/core/tick.js';
import { createScannerHandler } from '../../functions/scanner/app.js';
import { createSweeperHandler } from '../../functions/sweeper/app.js';
import { createTickerHandler } from '../../functions/ticker/app.js';
import { consoleRoutes } from './console/routes.js';
import type { RedriveResult } from './console/wire.js';
import { type DevTenant, ensureDevTenant } from './dev-tenant.js';
import {
  ensureLocalTaskTable,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  LOCAL_TABLE_NAME,
  localDynamoClients,
} from './dynamodb.js';
import { startEmulatorProcess } from './emulators.js';
import { removeLocalEndpoints, writeLocalEndpoints } from './endpoints.js';
import { startEventBridgeSink, type SunkEvent } from './eventbridge-sink.js';
import { startHttpGateway } from './http-gateway.js';
import type { LambdaHandler } from './lambda-context.js';
import {
  createLambdaService,
  type EnvironmentFactory,
  type FunctionStats,
  sharedEnvironments,
} from './lambda-service.js';
import {
  type RunningScaleModel,
  scaledLambdaLimits,
  type ScaleModel,
  startScaleModelProcess,
} from './limits/scale-model.js';
import { LOCAL_INBOX_PATH, LOCAL_REDRIVE_PATH } from './paths.js';
import { type SqsEventSourceStats, startSqsEventSource } from './queue-poller.js';
import { createWebhookInbox } from './webhook-inbox.js';

export { LOCAL_TABLE_NAME } from './dynamodb.js';

export interface LocalTimerOptions {
  /** Where dynalite keeps its data and the development API key; omit for a throw-away in-memory run. */
  readonly dataDir?: string;
  /** API port; 0 picks a free one. */
  readonly port?: number;
  /**
   * Overrides of the deployment settings; local mode sets `allowInsecureTargets` (http:// and
   * private-address webhooks) unless told otherwise.
   */
  readonly settings?: Partial<TimerSettings>;
  /** Powertools log level for the handlers, e.g. INFO or ERROR. */
  readonly logLevel?: string;
  /** Indented JSON log lines, for a person at a terminal (Powertools' dev mode); one line per entry otherwise. */
  readonly prettyLogs?: boolean;
  /**
   * Whether the functions print their metrics as EMF lines, as in Lambda. Off by default: locally
   * they would only bury the logs; the bench turns them on to count the bytes CloudWatch ingests.
   */
  readonly publishMetrics?: boolean;
  /** Wraps every handler (each execution environment's) as it is loaded: how a benchmark attributes CPU time to each function. */
  readonly wrapHandler?: (fn: FunctionName, handler: AnyHandler) => AnyHandler;
  /** Told of every AWS request the handlers and pollers make once it has been answered (or failed). */
  readonly onRequest?: (request: AwsRequest) => void;
  /**
   * Supplies the five handlers instead of building them from the sources: how a test runs the
   * bundles `cdk synth` built. Such handlers make their own AWS clients from the environment
   * they are given, so their requests are neither counted nor told to `onRequest`; and each is
   * one execution environment that every invocation of its function shares.
   */
  readonly loadHandlers?: (local: LocalResources) => Promise<Record<FunctionName, AnyHandler>>;
  /**
   * Runs the handlers against a 1/k scale model of AWS's limits (docs/local-mode.md): their
   * DynamoDB and SQS requests go through the model's proxies, the gateway applies its stage
   * throttle, and Lambda's concurrency limits are divided by k. Time is not scaled: divide the
   * load by k too.
   */
  readonly scaleModel?: Omit<ScaleModel, 'clock' | 'schema'>;
}

/** Where local mode keeps what the stack's resources stand for: what a function's environment names locally. */
export interface LocalResources {
  readonly region: string;
  readonly credentials: typeof LOCAL_CREDENTIALS;
  readonly endpoints: { readonly dynamodb: string; readonly sqs: string; readonly eventBridge: string };
  readonly tableName: string;
  readonly queues: Record<keyof typeof QUEUES, LocalQueue>;
}

/** One AWS request: what was asked and, if it succeeded, the answer. */
export interface AwsRequest {
  /** `Client.Command`, e.g. `DynamoDB.Query`, or `EventSourceMapping.SQS.ReceiveMessage` for the pollers. */
  readonly name: string;
  /** The function whose clients made it; absent for the pollers' and local mode's own requests. */
  readonly fn?: FunctionName;
  readonly input: Record<string, unknown>;
  readonly output?: Record<string, unknown>;
}

export interface LocalQueue {
  readonly url: string;
  readonly arn: string;
}

export interface LocalTimer {
  readonly apiUrl: string;
  /** The development tenant's API key and webhook signing secret, and whether this start made the key. */
  readonly devTenant: DevTenant;
  /** Shorthand for devTenant.apiKey: send it as `Authorization: Bearer <apiKey>`. */
  readonly apiKey: string;
  /** Shorthand for devTenant.signingSecret. */
  readonly signingSecret: string;
  readonly tenantStore: DynamoTenantStore;
  readonly settings: TimerSettings;
  readonly queues: Record<keyof typeof QUEUES, LocalQueue>;
  readonly sqs: SQSClient;
  readonly dynamo: DynamoDBDocumentClient;
  readonly eventBridgeEvents: readonly SunkEvent[];
  /** Webhooks delivered to the built-in receiver at LOCAL_INBOX_PATH. */
  readonly inbox: ReturnType<typeof createWebhookInbox>;
  /**
   * AWS requests made so far, by `Client.Command`: the handlers' own calls, and the queue
   * pollers' receives and deletes as `EventSourceMapping.SQS.…` (Lambda's event source
   * mappings make those in the cloud, long-polling whether or not there is work).
   */
  requestCounts(): Record<string, number>;
  /** Tasks re-enqueued at start because the in-memory queues of a previous run were lost. */
  readonly recovered: number;
  /** Dead letters rebuilt at start from the FAILED tasks in the table, for the same reason. */
  readonly restoredDeadLetters: number;
  /**
   * What Lambda's metrics would show: per function its invocations, errors, timeouts, throttles and
   * concurrency; per queue its event source mapping's scaling and batches in flight.
   */
  lambdaStats(): {
    functions: Record<FunctionName, FunctionStats>;
    eventSourceMappings: Partial<Record<keyof typeof QUEUES, SqsEventSourceStats>>;
  };
  /** The scale model the handlers run against, when `scaleModel` was given: its report shows what it throttled. */
  readonly scaleModel: RunningScaleModel | undefined;
  stop(): Promise<void>;
}

let running = false;

async function createQueue(
  sqs: SQSClient,
  spec: QueueSpec,
  redrive?: { dlqArn: string; maxReceiveCount: number },
): Promise<LocalQueue> {
  const created = await sqs.send(
    new CreateQueueCommand({
      QueueName: `timer-${spec.name}`,
      Attributes: {
        VisibilityTimeout: String(spec.visibilityTimeoutSeconds),
        MessageRetentionPeriod: String(spec.retentionSeconds),
        ...(redrive && {
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: redrive.dlqArn,
            maxReceiveCount: String(redrive.maxReceiveCount),
          }),
        }),
      },
    }),
  );
  const url = created.QueueUrl ?? '';
  const attributes = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  return { url, arn: attributes.Attributes?.QueueArn ?? '' };
}

/** What a restart put back into the queues that fauxqs lost. */
interface RestoredMessages {
  /** Tasks re-enqueued: PENDING, or leased by a delivery that died with the process. */
  readonly tasks: number;
  /** Dead letters rebuilt: one per FAILED task still in the table. */
  readonly deadLetters: number;
}

/**
 * fauxqs keeps messages in memory, so a restart loses what was queued; the table holds every
 * fact a task is owed, and the queues are rebuilt from it. Every task whose message may have been
 * queued is sent again (see hadQueuedMessage), never earlier than its retry time or the end of a
 * lease still running, which claimDelivery would refuse. Every FAILED task goes back to the DLQ: a
 * redrive revives FAILED tasks only, so a letter whose task was already revived or has expired
 * would be skipped anyway, and one per FAILED task is exactly what the DLQ listed before the
 * restart, less the letters redriven since.
 */
async function restoreLostMessages(
  dynamo: DynamoDBDocumentClient,
  sqs: SQSClient,
  queueUrls: { delivery: string; deliveryDlq: string },
): Promise<RestoredMessages> {
  const table = { client: dynamo, tableName: LOCAL_TABLE_NAME };
  const clock = await new DynamoClockStore(table).read();
  if (!clock) return { tasks: 0, deadLetters: 0 };
  const nowMs = Date.now();
  const { tasks } = await scanTasks(table, Number.POSITIVE_INFINITY);
  const failed = tasks.filter((task) => task.status === 'FAILED');
  const lost = tasks.filter((task) => hadQueuedMessage(task, clock.cursor)).map((task) => lostTaskMessage(task, nowMs));
  if (lost.length > 0) await sqsDeliveryQueue(sqs, queueUrls.delivery).send(lost);
  if (failed.length > 0) {
    await new SqsDeadLetterQueue(sqs, queueUrls.deliveryDlq).sendMany(
      failed.map((task) => ({ id: task.id, attempt: task.attempts, error: task.lastError ?? '' })),
    );
  }
  return { tasks: lost.length, deadLetters: failed.length };
}

/**
 * Whether a task not yet finished had a message in the queue, or would have had one by now: it
 * is leased by a delivery that died with the process; or it is PENDING in a second a scanner has
 * claimed, or enqueued directly as a late arrival (whose second the scanner, lagging behind, may
 * not have claimed yet), or waiting for a retry. The scanner, which reads PENDING tasks alone,
 * would find only some of these, and only once it caught up; a lapsed lease nothing would find
 * before the sweeper's overdue pass. A PENDING task never attempted in a second not yet claimed
 * is left to the scan that claims it: its first attempt may take no lease, so a second message
 * could call its target twice.
 */
function hadQueuedMessage(task: Task, cursor: number): boolean {
  if (task.status === 'DELIVERING') return true;
  if (task.status !== 'PENDING') return false;
  return secondOf(task.fireAtMs) < cursor || task.lateArrival === true || task.attempts > 0;
}

/** A lost task's message: due at the latest of its fire time, its retry time and its lease's end. */
function lostTaskMessage(task: Task, nowMs: number): DeliveryMessage {
  const notBeforeMs = Math.max(task.retryAtMs ?? 0, (task.leaseUntilMs ?? 0) + 1000);
  return deliveryMessageFor(task, nowMs, notBeforeMs);
}

/**
 * Ticks were in fauxqs's memory too, and the ticker plans each minute only once, so it will
 * not send them again. Ticks go out anew for the seconds with tasks that no scanner has
 * claimed, through the end of the next minute (the last one a ticker can have planned);
 * seconds more than an hour overdue are left to the sweeper's catch-up. Of the seconds already
 * due, one a minute is ticked: a claim takes in up to a minute, so that many scanners share the
 * backlog, and in dense mode, where every second counts as occupied, an hour's downtime is 60
 * ticks, not 3,600.
 */
async function requeueLostTicks(
  dynamo: DynamoDBDocumentClient,
  tickQueueUrl: string,
  sqs: SQSClient,
  settings: TimerSettings,
): Promise<void> {
  const clock = await new DynamoClockStore({ client: dynamo, tableName: LOCAL_TABLE_NAME }).read();
  if (!clock) return;
  const nowMs = Date.now();
  const from = Math.max(clock.cursor, secondOf(nowMs) - 3600);
  const through = (Math.floor(secondOf(nowMs) / 60) + 2) * 60 - 1;
  const occupancy = occupancyIndex(
    { table: { tableName: LOCAL_TABLE_NAME }, tickEverySecond: settings.tickEverySecond },
    dynamo,
  );
  const dueByMinute = new Map<number, Tick>();
  const later: Tick[] = [];
  for (const second of [...(await occupancy.occupied(from, through))].sort((a, b) => a - b)) {
    const tick = tickFor(second, nowMs, settings.lookaheadSeconds);
    if (tick.delaySeconds > 0) later.push(tick);
    else if (!dueByMinute.has(minuteOf(second))) dueByMinute.set(minuteOf(second), tick);
  }
  const ticks = [...dueByMinute.values(), ...later];
  if (ticks.length === 0) return;
  await sqsTickQueue(sqs, tickQueueUrl).send(ticks);
}

export type AnyHandler = LambdaHandler<unknown, unknown>;

/**
 * Counts each request a client sends, so local runs can report AWS requests per task, and
 * tells `onRequest` of it. `prefix` sets apart the requests Lambda's event source mappings
 * make in the cloud (the local pollers' receives and deletes) from the functions' own.
 */
function countRequests(
  client: { middlewareStack: unknown },
  counts: Map<string, number>,
  onRequest: ((request: AwsRequest) => void) | undefined,
  { prefix = '', fn }: { prefix?: string; fn?: FunctionName } = {},
): void {
  // Every SDK v3 client has the same middleware stack; SQS's type stands for all of them.
  (client.middlewareStack as SQSClient['middlewareStack']).add(
    (next, context) => async (args) => {
      const name = `${prefix}${(context.clientName ?? 'Unknown').replace(/Client$/, '')}.${(context.commandName ?? 'Unknown').replace(/Command$/, '')}`;
      counts.set(name, (counts.get(name) ?? 0) + 1);
      const input = args.input as Record<string, unknown>;
      try {
        const result = await next(args);
        onRequest?.({ name, fn, input, output: result.output as unknown as Record<string, unknown> });
        return result;
      } catch (error) {
        onRequest?.({ name, fn, input });
        throw error;
      }
    },
    { step: 'initialize', name: 'countRequests' },
  );
}

function mapFunctions<A, B>(
  byFunction: Record<FunctionName, A>,
  map: (value: A, fn: FunctionName) => B,
): Record<FunctionName, B> {
  return Object.fromEntries(
    (Object.keys(byFunction) as FunctionName[]).map((fn) => [fn, map(byFunction[fn], fn)]),
  ) as Record<FunctionName, B>;
}

/**
 * Starts execution environments of the five functions through their factories, as each Lambda
 * entry does at cold start, but from an environment composed here instead of `process.env`.
 * Each function's environments share a set of clients of its own, so every request is known by
 * the function (and so the role) that made it.
 */
function environmentFactories(
  envFor: (fn: FunctionName) => Environment,
  clientsFor: (fn: FunctionName) => AwsClients,
): Record<FunctionName, EnvironmentFactory> {
  const factory = <TConfig extends FunctionConfig>(
    fn: FunctionName,
    load: (env: Environment) => TConfig,
    create: (config: TConfig, deps: HandlerDeps) => unknown,
  ): EnvironmentFactory => {
    const config = load(envFor(fn));
    const clients = clientsFor(fn);
    return async () => (await assembleHandler(create, config, clients)) as AnyHandler;
  };
  return {
    api: factory('api', loadApiConfig, createApiHandler),
    ticker: factory('ticker', loadTickerConfig, createTickerHandler),
    scanner: factory('scanner', loadScannerConfig, createScannerHandler),
    callback: factory('callback', loadCallbackConfig, createCallbackHandler),
    sweeper: factory('sweeper', loadSweeperConfig, createSweeperHandler),
  };
}

function logLine(level: string, message: string, fields: Record<string, unknown> = {}) {
  process.stderr.write(
    `${JSON.stringify({ level, message, service: 'timer-local', timestamp: new Date().toISOString(), ...fields })}\n`,
  );
}

const describeError = (error: unknown) =>
  error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : { error: String(error) };

/**
 * Starts local mode. Powertools' metrics and dev-mode switches are process-wide settings, so
 * one process hosts one local timer at a time.
 */
export async function startLocalTimer(options: LocalTimerOptions = {}): Promise<LocalTimer> {
  if (running) throw new Error('a local timer is already running in this process; stop it first');
  running = true;
  // The SDK's notice that it will need Node.js 22 concerns this workstation, not Lambda's runtime.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const settings: TimerSettings = { ...DEFAULT_SETTINGS, allowInsecureTargets: true, ...options.settings };
  const [localDynamo, sqsServer] = await Promise.all([
    startEmulatorProcess('dynamodb', options.dataDir),
    startEmulatorProcess('sqs'),
  ]);
  const dynamoEndpoint = localDynamo.endpoint;
  const sink = await startEventBridgeSink(
    options.dataDir ? { logFile: join(options.dataDir, 'eventbridge-events.jsonl') } : {},
  );

  // Only the handlers and the event source mappings meet the model; local mode's own setup and console do not.
  const scaleModel =
    options.scaleModel &&
    (await startScaleModelProcess(options.scaleModel, {
      dynamodbEndpoint: dynamoEndpoint,
      sqsEndpoint: sqsServer.endpoint,
    }));
  const limited = {
    dynamodb: scaleModel?.dynamodbEndpoint ?? dynamoEndpoint,
    sqs: scaleModel?.sqsEndpoint ?? sqsServer.endpoint,
  };
  const lambdaLimits = scaleModel && scaledLambdaLimits(options.scaleModel?.k ?? 1, options.scaleModel?.quotas);

  const { raw: rawDynamo, dynamo } = localDynamoClients(dynamoEndpoint);
  const sqs = new SQSClient({
    region: LOCAL_REGION,
    endpoint: sqsServer.endpoint,
    credentials: LOCAL_CREDENTIALS,
    useQueueUrlAsEndpoint: false,
  });
  await ensureLocalTaskTable(rawDynamo);
  const deliveryDlq = await createQueue(sqs, QUEUES.deliveryDlq);
  const queues = {
    tick: await createQueue(sqs, QUEUES.tick),
    delivery: await createQueue(sqs, QUEUES.delivery, {
      dlqArn: deliveryDlq.arn,
      maxReceiveCount: DELIVERY_MAX_RECEIVE_COUNT,
    }),
    deliveryDlq,
  };
  const tenantStore = new DynamoTenantStore({ client: dynamo, tableName: LOCAL_TABLE_NAME });
  const devTenant = await ensureDevTenant(tenantStore, options.dataDir, Date.now());

  // The target allow-lists (ENV.allowedQueueArns, ENV.allowedEventBusArns) stay unset, which means
  // any queue or event bus: local targets are fauxqs queues, whose URLs name no ARN, and the sink.
  const resources = {
    [ENV.tableName]: LOCAL_TABLE_NAME,
    [ENV.tickQueueUrl]: queues.tick.url,
    [ENV.deliveryQueueUrl]: queues.delivery.url,
    [ENV.deliveryDlqUrl]: queues.deliveryDlq.url,
    // Any account will do: local allow-lists stay unset (any target), so no bus name becomes an ARN to check.
    [ENV.awsAccount]: '000000000000',
    [ENV.awsPartition]: 'aws',
  };
  // The handlers are handed clients pointed at the emulators, so their environment names no endpoints.
  const envFor = (fn: FunctionName): Environment => ({
    AWS_REGION: LOCAL_REGION,
    POWERTOOLS_LOG_LEVEL: options.logLevel ?? 'INFO',
    // No X-Ray daemon locally; the tracer's segments would only fail to send.
    POWERTOOLS_TRACE_ENABLED: 'false',
    ...environmentFor(fn, settings, resources),
  });
  // Powertools reads these two from the process environment only: neither Metrics nor Logger takes them as options.
  process.env.POWERTOOLS_METRICS_DISABLED = String(!(options.publishMetrics ?? false));
  process.env.POWERTOOLS_DEV = String(options.prettyLogs ?? false);
  const local: LocalResources = {
    region: LOCAL_REGION,
    endpoints: { dynamodb: limited.dynamodb, sqs: limited.sqs, eventBridge: sink.endpoint },
    credentials: LOCAL_CREDENTIALS,
    tableName: LOCAL_TABLE_NAME,
    queues,
  };
  const counts = new Map<string, number>();
  countRequests(sqs, counts, options.onRequest);
  const clientsFor = (fn: FunctionName) => {
    const clients = awsClients({ region: local.region, endpoints: local.endpoints, credentials: local.credentials });
    for (const client of [clients.dynamo, clients.sqs, clients.eventBridge])
      countRequests(client, counts, options.onRequest, { fn });
    return clients;
  };
  const factories: Record<FunctionName, EnvironmentFactory> = options.loadHandlers
    ? (sharedEnvironments(await options.loadHandlers(local)) as Record<FunctionName, EnvironmentFactory>)
    : environmentFactories(envFor, clientsFor);
  const wrap = options.wrapHandler ?? ((_fn: FunctionName, handler: AnyHandler) => handler);
  const handlers = mapFunctions(factories, (start, fn) => async () => wrap(fn, await start()));
  // The pollers get a client of their own, so their requests are told apart from the functions'.
  const pollerSqs = new SQSClient({
    region: LOCAL_REGION,
    endpoint: limited.sqs,
    credentials: LOCAL_CREDENTIALS,
    useQueueUrlAsEndpoint: false,
  });
  countRequests(pollerSqs, counts, options.onRequest, { prefix: 'EventSourceMapping.' });
  const onError = (source: string) => (error: unknown) => logLine('ERROR', `${source} failed`, describeError(error));

  if (settings.allowInsecureTargets) {
    logLine(
      'WARN',
      'local mode accepts http:// webhooks and delivers to loopback and private addresses; the cloud stack allows only https:// to public hosts',
    );
  }
  const restored = await restoreLostMessages(dynamo, sqs, {
    delivery: queues.delivery.url,
    deliveryDlq: queues.deliveryDlq.url,
  });
  await requeueLostTicks(dynamo, queues.tick.url, sqs, settings);
  if (restored.tasks > 0)
    logLine('WARN', 're-enqueued tasks whose queue messages were lost with the last run', {
      recovered: restored.tasks,
    });
  if (restored.deadLetters > 0)
    logLine('INFO', 'rebuilt the delivery DLQ from the FAILED tasks in the table', {
      deadLetters: restored.deadLetters,
    });

  const lambda = createLambdaService({
    handlers,
    onError: (fn, error) => onError(fn)(error),
    ...(lambdaLimits && {
      accountConcurrency: lambdaLimits.accountConcurrency,
      newEnvironmentsPer10Seconds: lambdaLimits.newEnvironmentsPer10Seconds,
      limits: Object.fromEntries(
        Object.entries(lambdaLimits.reservedConcurrency).map(([fn, reservedConcurrency]) => [
          fn,
          { reservedConcurrency },
        ]),
      ),
    }),
  });
  const eventSources = (Object.entries(QUEUES) as Array<[keyof typeof QUEUES, QueueSpec]>).flatMap(([name, spec]) => {
    if (!spec.consumer) return [];
    const { fn, batchSize, maxBatchingWindowSeconds, maxConcurrency } = spec.consumer;
    const eventSource = startSqsEventSource({
      sqs: pollerSqs,
      queueUrl: queues[name].url,
      queueArn: queues[name].arn,
      invoke: (event) => lambda.invoke<SQSEvent, SQSBatchResponse | undefined>(fn, event),
      batchSize,
      maxBatchingWindowSeconds,
      maxConcurrency: lambdaLimits ? lambdaLimits.maxConcurrency(maxConcurrency) : maxConcurrency,
      ...(lambdaLimits && { scaling: lambdaLimits.mappingScaling }),
      onError: onError(`${name} event source mapping`),
    });
    return [[name, eventSource] as const];
  });

  // EventBridge Scheduler invokes asynchronously and retries a throttled or failed run itself; the
  // next run a minute later does the same work, so a lost one only waits for it.
  const invokeScheduled = (fn: FunctionName) => () => {
    lambda.invoke(fn, { source: 'local.scheduler' }).catch(onError(fn));
  };
  const timers = Object.values(SCHEDULES).map(({ fn, everySeconds }) => {
    invokeScheduled(fn)();
    return setInterval(invokeScheduled(fn), everySeconds * 1000);
  });

  // Any local tenant may send to the inbox (tenants made with `timer tenants create` too), so it knows all their secrets.
  const localSigningSecrets = async () => {
    const nowMs = Date.now();
    return (await tenantStore.listTenants()).flatMap((tenant) => activeSigningSecrets(tenant, nowMs));
  };
  const inbox = createWebhookInbox(localSigningSecrets, (message, fields) => logLine('INFO', message, fields));
  const stopBehindGateway = async () => {
    for (const timer of timers) clearInterval(timer);
    await Promise.all(eventSources.map(([, eventSource]) => eventSource.stop()));
    await sink.close();
    await scaleModel?.close();
    await Promise.all([sqsServer.stop(), localDynamo.stop()]);
    running = false;
  };
  const gateway = await startHttpGateway({
    port: options.port ?? 0,
    invoke: (event) => lambda.invoke<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>('api', event),
    localRoutes: {
      [LOCAL_INBOX_PATH]: async (method, headers, body) =>
        method === 'POST' ? inbox.receive(headers, body) : { status: 200, body: { webhooks: inbox.entries } },
      [LOCAL_REDRIVE_PATH]: async (method) => {
        if (method !== 'POST') return { status: 405, body: { message: 'POST to redrive the delivery DLQ' } };
        const moved = await redriveByCopy(sqs, queues.deliveryDlq.url, queues.delivery.url);
        const taskIds = moved.flatMap((body) => decodeDeliveryBody(body)?.id ?? []);
        logLine('INFO', 'delivery DLQ redriven', { moved: moved.length });
        return { status: 200, body: { moved: moved.length, taskIds } satisfies RedriveResult };
      },
      ...(await consoleRoutes({
        dynamo,
        sqs,
        tableName: LOCAL_TABLE_NAME,
        deliveryDlqUrl: queues.deliveryDlq.url,
        settings,
      })),
    },
    ...(scaleModel && { admit: () => scaleModel.apiThrottle.admit() }),
    onError: onError('api gateway'),
  }).catch(async (error: unknown) => {
    // A taken port: release what already runs so the caller can say so and exit, or try another port.
    await stopBehindGateway();
    throw error;
  });
  if (options.dataDir) {
    await writeLocalEndpoints(options.dataDir, {
      pid: process.pid,
      apiUrl: gateway.url,
      dynamodbEndpoint: dynamoEndpoint,
      tableName: LOCAL_TABLE_NAME,
    });
  }

  return {
    apiUrl: gateway.url,
    devTenant,
    apiKey: devTenant.apiKey,
    signingSecret: devTenant.signingSecret,
    tenantStore,
    settings,
    queues,
    sqs,
    dynamo,
    requestCounts: () => Object.fromEntries([...counts.entries()].sort(([a], [b]) => a.localeCompare(b))),
    eventBridgeEvents: sink.events,
    inbox,
    recovered: restored.tasks,
    restoredDeadLetters: restored.deadLetters,
    scaleModel,
    lambdaStats: () => ({
      functions: lambda.stats(),
      eventSourceMappings: Object.fromEntries(eventSources.map(([name, eventSource]) => [name, eventSource.stats()])),
    }),
    async stop() {
      if (options.dataDir) await removeLocalEndpoints(options.dataDir);
      await gateway.close();
      await stopBehindGateway();
    },
  };
}
