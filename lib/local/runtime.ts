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

import { DynamoTenantStore } from '../../functions/adapters/dynamo/tenant-store.js';
import { redriveByCopy } from '../../functions/adapters/sqs-queues.js';
import { awsClients } from '../../functions/commons/clients.js';
import type { Environment } from '../../functions/commons/config.js';
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
import { decodeDeliveryBody } from '../../functions/core/kernel/task-kernel.js';
import { activeSigningSecrets } from '../../functions/core/tenants/tenants.js';
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
import {
  type AnyHandler,
  type AwsRequest,
  countRequests,
  environmentFactories,
  mapFunctions,
  tagEnvironment,
} from './function-wiring.js';
import { type LocalRoute, startHttpGateway } from './http-gateway.js';
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
import { type MappingQueue, sqsJsonQueue } from './mapping-queue.js';
import { LOCAL_INBOX_PATH, LOCAL_REDRIVE_PATH } from './paths.js';
import { type SqsEventSourceStats, startSqsEventSource } from './queue-poller.js';
import { requeueLostTicks, type RestoredMessages, restoreLostMessages } from './restart-recovery.js';
import { createWebhookInbox } from './webhook-inbox.js';

export { LOCAL_TABLE_NAME } from './dynamodb.js';
export type { AwsRequest } from './function-wiring.js';

/** The gateway's routes served by local mode itself rather than the api function. */
type LocalRoutes = Record<string, LocalRoute>;

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
  /**
   * CPU time (ms) the emulators' processes have used so far: the cost of standing in for
   * DynamoDB and SQS on this machine, which no function pays in the cloud.
   */
  emulatorCpuMs(): Promise<{ dynalite: number; fauxqs: number }>;
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

function logLine(level: string, message: string, fields: Record<string, unknown> = {}) {
  process.stderr.write(
    `${JSON.stringify({ level, message, service: 'timer-local', timestamp: new Date().toISOString(), ...fields })}\n`,
  );
}

const describeError = (error: unknown) =>
  error instanceof Error ? { name: error.name, message: error.message, stack: error.stack } : { error: String(error) };

/** The emulators, the clients local mode itself uses, and the table and queues it made in them. */
interface Backends {
  readonly localDynamo: Awaited<ReturnType<typeof startEmulatorProcess>>;
  readonly sqsServer: Awaited<ReturnType<typeof startEmulatorProcess>>;
  readonly sink: Awaited<ReturnType<typeof startEventBridgeSink>>;
  readonly scaleModel: RunningScaleModel | undefined;
  /** Where the handlers and pollers send their requests: through the scale model's proxies when there is one. */
  readonly limited: { readonly dynamodb: string; readonly sqs: string };
  readonly dynamo: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly queues: Record<keyof typeof QUEUES, LocalQueue>;
}

/** Starts dynalite, fauxqs, the EventBridge sink and the scale model, and makes the table and the queues. */
async function startBackends(options: LocalTimerOptions): Promise<Backends> {
  const [localDynamo, sqsServer] = await Promise.all([
    startEmulatorProcess('dynamodb', options.dataDir),
    startEmulatorProcess('sqs'),
  ]);
  // Only the handlers and the event source mappings meet the model; local mode's own setup and console do not.
  const scaleModel =
    options.scaleModel &&
    (await startScaleModelProcess(options.scaleModel, {
      dynamodbEndpoint: localDynamo.endpoint,
      sqsEndpoint: sqsServer.endpoint,
    }));
  const sink = await startEventBridgeSink({
    ...(options.dataDir && { logFile: join(options.dataDir, 'eventbridge-events.jsonl') }),
    ...(scaleModel && { admit: (entries: number) => scaleModel.putEventsThrottle.admit(entries) }),
  });
  const { raw: rawDynamo, dynamo } = localDynamoClients(localDynamo.endpoint);
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
    express: await createQueue(sqs, QUEUES.express, {
      dlqArn: deliveryDlq.arn,
      maxReceiveCount: DELIVERY_MAX_RECEIVE_COUNT,
    }),
    deliveryDlq,
  };
  return {
    localDynamo,
    sqsServer,
    sink,
    scaleModel,
    limited: {
      dynamodb: scaleModel?.dynamodbEndpoint ?? localDynamo.endpoint,
      sqs: scaleModel?.sqsEndpoint ?? sqsServer.endpoint,
    },
    dynamo,
    sqs,
    queues,
  };
}

/** The environment the stack would give function `fn`, with the local resources in place of the cloud's. */
function localEnvironment(
  settings: TimerSettings,
  queues: Backends['queues'],
  logLevel: string | undefined,
): (fn: FunctionName) => Environment {
  // The target allow-lists (ENV.allowedQueueArns, ENV.allowedEventBusArns) stay unset, which means
  // any queue or event bus: local targets are fauxqs queues, whose URLs name no ARN, and the sink.
  const resources = {
    [ENV.tableName]: LOCAL_TABLE_NAME,
    [ENV.tickQueueUrl]: queues.tick.url,
    [ENV.deliveryQueueUrl]: queues.delivery.url,
    [ENV.expressQueueUrl]: queues.express.url,
    [ENV.deliveryDlqUrl]: queues.deliveryDlq.url,
    // Any account will do: local allow-lists stay unset (any target), so no bus name becomes an ARN to check.
    [ENV.awsAccount]: '000000000000',
    [ENV.awsPartition]: 'aws',
  };
  // The handlers are handed clients pointed at the emulators, so their environment names no endpoints.
  return (fn) => ({
    AWS_REGION: LOCAL_REGION,
    POWERTOOLS_LOG_LEVEL: logLevel ?? 'INFO',
    // No X-Ray daemon locally; the tracer's segments would only fail to send.
    POWERTOOLS_TRACE_ENABLED: 'false',
    ...environmentFor(fn, settings, resources),
  });
}

/** Re-sends what the last run's queues held and logs what it restored (restart-recovery.ts). */
async function recoverQueues(backends: Backends, settings: TimerSettings): Promise<RestoredMessages> {
  const { dynamo, sqs, queues } = backends;
  const restored = await restoreLostMessages(dynamo, sqs, {
    delivery: queues.delivery.url,
    express: queues.express.url,
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
  return restored;
}

/**
 * What drives the functions as AWS would: a Lambda service (with the scale model's concurrency
 * limits, if any), an SQS event source mapping per consumed queue, and EventBridge Scheduler's
 * schedules.
 */
function startInvokers(
  handlers: Record<FunctionName, EnvironmentFactory>,
  pollerQueue: MappingQueue,
  queues: Backends['queues'],
  lambdaLimits: ReturnType<typeof scaledLambdaLimits> | undefined,
  onError: (source: string) => (error: unknown) => void,
) {
  const lambda = createLambdaService({
    handlers,
    onError: (fn, error) => onError(fn)(error),
    ...(lambdaLimits && {
      accountConcurrency: lambdaLimits.accountConcurrency,
      newEnvironmentsPer10Seconds: lambdaLimits.newEnvironmentsPer10Seconds,
      ...(lambdaLimits.cloudDurationMs && { cloudDurationMs: lambdaLimits.cloudDurationMs }),
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
      queue: pollerQueue,
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
  return { lambda, eventSources, timers };
}

/** The gateway's local-only routes: the webhook inbox, the DLQ redrive and the console. */
async function localRoutes(
  backends: Backends,
  tenantStore: DynamoTenantStore,
  settings: TimerSettings,
): Promise<{ inbox: ReturnType<typeof createWebhookInbox>; routes: LocalRoutes }> {
  const { dynamo, sqs, queues } = backends;
  // Any local tenant may send to the inbox (tenants made with `timer tenants create` too), so it knows all their secrets.
  const localSigningSecrets = async () => {
    const nowMs = Date.now();
    return (await tenantStore.listTenants()).flatMap((tenant) => activeSigningSecrets(tenant, nowMs));
  };
  const inbox = createWebhookInbox(localSigningSecrets, (message, fields) => logLine('INFO', message, fields));
  const routes: LocalRoutes = {
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
  };
  return { inbox, routes };
}

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
  const backends = await startBackends(options);
  const { localDynamo, sqsServer, sink, scaleModel, limited, dynamo, sqs, queues } = backends;
  const lambdaLimits = scaleModel && scaledLambdaLimits(options.scaleModel?.k ?? 1, options.scaleModel?.quotas);
  const tenantStore = new DynamoTenantStore({ client: dynamo, tableName: LOCAL_TABLE_NAME });
  const devTenant = await ensureDevTenant(tenantStore, options.dataDir, Date.now());

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
    for (const client of [clients.dynamo, clients.sqs, clients.eventBridge]) {
      countRequests(client, counts, options.onRequest, { fn });
      tagEnvironment(client);
    }
    return clients;
  };
  const factories: Record<FunctionName, EnvironmentFactory> = options.loadHandlers
    ? (sharedEnvironments(await options.loadHandlers(local)) as Record<FunctionName, EnvironmentFactory>)
    : environmentFactories(localEnvironment(settings, queues, options.logLevel), clientsFor);
  const wrap = options.wrapHandler ?? ((_fn: FunctionName, handler: AnyHandler) => handler);
  const handlers = mapFunctions(factories, (start, fn) => async () => wrap(fn, await start()));
  // The pollers' requests are counted apart from the functions', under EventSourceMapping.SQS.
  const pollerQueue = sqsJsonQueue(limited.sqs, (request) => {
    counts.set(request.name, (counts.get(request.name) ?? 0) + 1);
    options.onRequest?.(request);
  });
  const onError = (source: string) => (error: unknown) => logLine('ERROR', `${source} failed`, describeError(error));

  if (settings.allowInsecureTargets) {
    logLine(
      'WARN',
      'local mode accepts http:// webhooks and delivers to loopback and private addresses; the cloud stack allows only https:// to public hosts',
    );
  }
  const restored = await recoverQueues(backends, settings);
  const { lambda, eventSources, timers } = startInvokers(handlers, pollerQueue, queues, lambdaLimits, onError);
  const { inbox, routes } = await localRoutes(backends, tenantStore, settings);
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
    localRoutes: routes,
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
      dynamodbEndpoint: localDynamo.endpoint,
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
    async emulatorCpuMs() {
      const [dynalite, fauxqs] = await Promise.all([localDynamo.cpuMs(), sqsServer.cpuMs()]);
      return { dynalite, fauxqs };
    },
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
