/**
 * A scale model of AWS's limits on the local emulators: every rate limit divided by k, so
 * load divided by k meets the limits where the real service would. It starts the proxies
 * in front of dynalite and fauxqs; point the handlers' clients at the endpoints it returns
 * (the SQS client with `useQueueUrlAsEndpoint: false`, or it would talk to fauxqs directly)
 * and have the HTTP gateway call `apiThrottle.admit()` per request.
 */
import { AWS_LIMITS } from '../../../functions/contract/aws-limits.js';
import {
  ACCOUNT_CONCURRENCY,
  type FunctionName,
  FUNCTIONS,
  type FunctionSpec,
} from '../../../functions/contract/topology.js';
import { type Clock, systemClock } from '../../../functions/core/kernel/task.js';
import type { Quotas } from '../../construct/plan/quotas.js';
import { startLocalProcess } from '../local-process.js';
import type { SqsScaling } from '../queue-poller.js';
import { ApiStageThrottle, type ApiThrottleReport } from './api-throttle.js';
import type { KeySchema } from './dynamodb-capacity.js';
import { startDynamoThroughputProxy } from './dynamodb-proxy.js';
import { DynamoThroughputModel, type DynamoThroughputReport } from './dynamodb-throughput.js';
import { PutEventsThrottle, type PutEventsThrottleReport } from './put-events-throttle.js';
import { scaledRate } from './scaled-rate.js';
import { SqsInFlightModel, type SqsInFlightReport, startSqsInFlightProxy } from './sqs-in-flight.js';

export interface ScaleModel {
  /** The divisor of AWS's rate limits: 100 makes a 1/100 model. At least 1. */
  readonly k: number;
  /** @default systemClock */
  readonly clock?: Clock;
  /** The DynamoDB tables' keys. @default TASK_TABLE_SCHEMA */
  readonly schema?: KeySchema;
  /**
   * The deployment's own limits and the AWS quotas raised for it (`npm run plan` says which),
   * in place of AWS's defaults. @default AWS's default quotas and the topology's reservations
   */
  readonly quotas?: Quotas;
  /**
   * The table's partitions (`tablePartitions`), which keys hash into and share the limits of.
   * @default every key its own partition
   */
  readonly partitions?: number;
  /** Whether keys of SHARD_KEY_CLASSES (task shards, schedule shares) are held to their limit (`DynamoThroughputOptions.shardKeysLimited`). @default true */
  readonly shardKeysLimited?: boolean;
}

export interface EmulatorEndpoints {
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
}

export interface ScaleModelReport {
  readonly k: number;
  readonly dynamodb: DynamoThroughputReport;
  readonly sqs: SqsInFlightReport;
  readonly api: ApiThrottleReport;
  readonly eventBridge: PutEventsThrottleReport;
}

export interface RunningScaleModel extends EmulatorEndpoints {
  readonly apiThrottle: ApiStageThrottle;
  /** EventBridge's PutEvents quota, which the local EventBridge sink applies in the handlers' process. */
  readonly putEventsThrottle: PutEventsThrottle;
  report(): Promise<ScaleModelReport>;
  close(): Promise<void>;
}

/** What the proxies saw: the report's DynamoDB and SQS parts. */
type ProxiesReport = Omit<ScaleModelReport, 'k' | 'api' | 'eventBridge'>;

/** The proxies that stand for DynamoDB's and SQS's servers, and what they saw. */
interface LimitProxies extends EmulatorEndpoints {
  report(): ProxiesReport;
  close(): Promise<void>;
}

/** Starts the proxies in front of the emulators, in this process. */
export async function startLimitProxies(model: ScaleModel, emulators: EmulatorEndpoints): Promise<LimitProxies> {
  const clock = model.clock ?? systemClock;
  const dynamodb = new DynamoThroughputModel({
    k: model.k,
    clock,
    ...(model.schema && { schema: model.schema }),
    ...(model.quotas && {
      tableWriteUnitsPerSecond: model.quotas.tableWriteUnitsPerSecond,
      tableReadUnitsPerSecond: model.quotas.tableReadUnitsPerSecond,
    }),
    ...(model.partitions !== undefined && { partitions: model.partitions }),
    ...(model.shardKeysLimited !== undefined && { shardKeysLimited: model.shardKeysLimited }),
  });
  const sqs = new SqsInFlightModel({ k: model.k, clock });
  const [dynamoProxy, sqsProxy] = await Promise.all([
    startDynamoThroughputProxy(emulators.dynamodbEndpoint, dynamodb),
    startSqsInFlightProxy(emulators.sqsEndpoint, sqs, clock),
  ]);
  return {
    dynamodbEndpoint: dynamoProxy.endpoint,
    sqsEndpoint: sqsProxy.endpoint,
    report: () => ({ dynamodb: dynamodb.report(), sqs: sqs.report() }),
    close: async () => {
      await Promise.all([dynamoProxy.close(), sqsProxy.close()]);
    },
  };
}

/** API Gateway's stage throttle, which the local HTTP gateway applies in the handlers' process. */
function apiStageThrottle({ k, quotas, clock = systemClock }: ScaleModel): ApiStageThrottle {
  return new ApiStageThrottle({
    k,
    clock,
    ...(quotas && {
      ratePerSecond: scaledRate(quotas.apiThrottle.rateLimit, k),
      burst: scaledRate(quotas.apiThrottle.burstLimit, k),
    }),
  });
}

/**
 * The scale model with its proxies in this process, where a test can stop the clock they
 * meter by. Every request then costs this event loop its proxying too.
 */
export async function startScaleModel(model: ScaleModel, emulators: EmulatorEndpoints): Promise<RunningScaleModel> {
  const proxies = await startLimitProxies(model, emulators);
  const apiThrottle = apiStageThrottle(model);
  const putEventsThrottle = new PutEventsThrottle({ k: model.k, clock: model.clock ?? systemClock });
  return {
    ...proxies,
    apiThrottle,
    putEventsThrottle,
    report: () =>
      Promise.resolve({
        k: model.k,
        ...proxies.report(),
        api: apiThrottle.report(),
        eventBridge: putEventsThrottle.report(),
      }),
  };
}

/**
 * The scale model with its proxies in a process of their own, by the system clock: they stand
 * for AWS's servers, whose work is not the functions' to pay. In the handlers' process they
 * took a third of the event loop the handlers share (the model's 20,000-task second was
 * delivered up to 1.2 s late with them there, 0.6 s without them).
 */
export async function startScaleModelProcess(
  model: Omit<ScaleModel, 'clock'>,
  emulators: EmulatorEndpoints,
): Promise<RunningScaleModel> {
  const child = await startLocalProcess<EmulatorEndpoints>(import.meta.url, 'scale-model-process', [
    JSON.stringify({ model, emulators }),
  ]);
  const apiThrottle = apiStageThrottle(model);
  const putEventsThrottle = new PutEventsThrottle({ k: model.k, clock: systemClock });
  return {
    ...child.ready,
    apiThrottle,
    putEventsThrottle,
    report: async () => ({
      k: model.k,
      ...(await child.ask<ProxiesReport>()),
      api: apiThrottle.report(),
      eventBridge: putEventsThrottle.report(),
    }),
    close: () => child.stop(),
  };
}

/** Lambda's limits in a 1/k model: the account pool, each reservation and each mapping's cap, and its ramps. */
interface ScaledLambdaLimits {
  readonly accountConcurrency: number;
  readonly reservedConcurrency: Partial<Record<FunctionName, number>>;
  readonly maxConcurrency: (unscaled: number) => number;
  /** New execution environments per function per 10 s, a fraction of Lambda's 1,000. */
  readonly newEnvironmentsPer10Seconds: number;
  /** An SQS mapping's start and ramp (5, then 300 a minute), divided by k and left fractional for the mapping to accumulate. */
  readonly mappingScaling: SqsScaling;
  /** How long an api invocation lasts in the cloud, as the plan sized its reservation (see LambdaServiceOptions). */
  readonly cloudDurationMs?: Partial<Record<FunctionName, number>>;
}

/**
 * Concurrency is a rate in disguise (invocations a second times their duration), so a 1/k load
 * gets 1/k of it, rounded down so the model never has more than its share, and at least one.
 * (At k = 100 the scanner's 50 is 1, so CLOCK contention between scanners needs k ≤ 25.) The
 * ramps are rates too, divided by k without rounding: a mapping's 5 + 300 a minute, which takes
 * some 70 s to reach a hot second's 350 batches at any k, and 1,000 new environments per 10 s.
 * Rounding a reservation up to one must not eat the unreserved pool the other functions share,
 * so the account keeps its scaled unreserved minimum beside the reservations. With the plan's
 * quotas, an api invocation holds its reservation for the duration the plan sized it with, not
 * for what this machine took (LambdaServiceOptions.cloudDurationMs).
 */
export function scaledLambdaLimits(k: number, quotas?: Quotas): ScaledLambdaLimits {
  const scale = (limit: number) => Math.max(1, Math.floor(scaledRate(limit, k)));
  const reservation = (fn: FunctionName, spec: FunctionSpec) =>
    fn === 'api' && quotas ? quotas.apiReservedConcurrency : spec.reservedConcurrency;
  const reservedConcurrency: Partial<Record<FunctionName, number>> = Object.fromEntries(
    (Object.entries(FUNCTIONS) as Array<[FunctionName, FunctionSpec]>).flatMap(([fn, spec]) => {
      const reserved = reservation(fn, spec);
      return reserved === undefined ? [] : [[fn, scale(reserved)]];
    }),
  );
  const reserved = Object.values(reservedConcurrency).reduce((sum, limit) => sum + limit, 0);
  const { lambda } = AWS_LIMITS;
  return {
    newEnvironmentsPer10Seconds: lambda.newEnvironmentsPer10Seconds / k,
    mappingScaling: {
      initialConcurrency: lambda.mappingInitialConcurrency / k,
      scaleUpPerMinute: lambda.mappingScaleUpPerMinute / k,
    },
    accountConcurrency: Math.max(
      scale(quotas?.lambdaConcurrency ?? ACCOUNT_CONCURRENCY),
      reserved + scale(AWS_LIMITS.lambda.unreservedConcurrencyMinimum),
    ),
    reservedConcurrency,
    maxConcurrency: scale,
    ...(quotas && { cloudDurationMs: { api: quotas.apiSecondsPerRequest * 1000 } }),
  };
}
