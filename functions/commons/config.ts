/**
 * The one place a function's environment is read. Each loader turns the variables the stack
 * sets (ENV, through `environmentFor`) plus the few Lambda and Powertools ones into a typed,
 * frozen config, once per cold start, and fails fast naming the variable, so a misconfigured
 * function breaks at deploy-time smoke tests instead of mid-delivery. Local mode and the tests
 * hand the loaders an environment of their own instead of mutating `process.env`.
 */
import { LogLevel } from '@aws-lambda-powertools/logger';

import { ENV, type EnvName } from '../contract/topology.js';
import { MAX_SHARDS } from '../core/kernel/ids.js';
import { type AllowList, parseAllowList } from '../core/targets/allowed-targets.js';

/** An environment to read: `process.env` in Lambda, a composed record in local mode and the tests. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** Where the AWS clients send their requests. */
export interface AwsConfig {
  /** AWS_REGION: Lambda always sets it (and reserves the name). */
  readonly region: string;
  /**
   * The SDK's AWS_ENDPOINT_URL_<SERVICE> overrides, which point the clients at emulators; unset in
   * the cloud, where each client finds its service's regional endpoint.
   */
  readonly endpoints: {
    readonly dynamodb?: string;
    readonly sqs?: string;
    readonly eventBridge?: string;
  };
}

/** The Powertools switches a function's logger and tracer are built with. */
export interface ObservabilityConfig {
  /** POWERTOOLS_LOG_LEVEL; unset leaves Powertools' default (INFO, or Lambda's advanced logging level). */
  readonly logLevel?: LogLevelName;
  /** POWERTOOLS_TRACE_ENABLED: off where there is no X-Ray daemon (local mode, tests). */
  readonly tracingEnabled: boolean;
}

/** The task table and how its keys are spread. */
export interface TableConfig {
  readonly tableName: string;
  readonly bucketCount: number;
  readonly shardCount: number;
}

export type LogLevelName = keyof typeof LogLevel;

/** What every function is configured with. */
export interface FunctionConfig {
  readonly aws: AwsConfig;
  readonly observability: ObservabilityConfig;
  readonly table: TableConfig;
}

/** How a function that records, plans or reads occupied seconds knows them: the api, ticker, scanner, sweeper and callback. */
export interface OccupancyConfig {
  readonly table: TableConfig;
  /** Dense mode: every second is taken as occupied and no index is kept (TimerSettings.tickEverySecond). */
  readonly tickEverySecond: boolean;
}

export interface ApiConfig extends FunctionConfig, OccupancyConfig {
  readonly deliveryQueueUrl: string;
  readonly tickQueueUrl: string;
  readonly lookaheadSeconds: number;
  readonly allowInsecureTargets: boolean;
  readonly retentionDays: number;
  readonly maxHorizonDays: number;
  /** The deployment's account and partition, to turn a bare event bus name into an ARN. */
  readonly account: string;
  readonly partition: string;
  readonly allowedQueueArns: AllowList;
  readonly allowedEventBusArns: AllowList;
}

export interface TickerConfig extends FunctionConfig, OccupancyConfig {
  readonly tickQueueUrl: string;
  readonly lookaheadSeconds: number;
}

export interface ScannerConfig extends FunctionConfig, OccupancyConfig {
  readonly deliveryQueueUrl: string;
  readonly lookaheadSeconds: number;
}

export interface CallbackConfig extends FunctionConfig, OccupancyConfig {
  readonly deliveryQueueUrl: string;
  /** Where a schedule's occurrence ticks the second of the successor it stores, when the ticker has planned it already. */
  readonly tickQueueUrl: string;
  readonly lookaheadSeconds: number;
  readonly deliveryDlqUrl: string;
  readonly maxAttempts: number;
  readonly backoffBaseSeconds: number;
  readonly backoffMaxSeconds: number;
  readonly webhookTimeoutMs: number;
  readonly allowInsecureTargets: boolean;
  readonly retentionDays: number;
}

export interface SweeperConfig extends FunctionConfig, OccupancyConfig {
  readonly deliveryQueueUrl: string;
  readonly sweepMaxSecondsPerRun: number;
  readonly sweepGraceSeconds: number;
  readonly overdueGraceSeconds: number;
}

/** The variables a function reads besides ENV's: Lambda's own and the Powertools ones. */
const RUNTIME_ENV = {
  region: 'AWS_REGION',
  dynamodbEndpoint: 'AWS_ENDPOINT_URL_DYNAMODB',
  sqsEndpoint: 'AWS_ENDPOINT_URL_SQS',
  eventBridgeEndpoint: 'AWS_ENDPOINT_URL_EVENTBRIDGE',
  logLevel: 'POWERTOOLS_LOG_LEVEL',
  tracingEnabled: 'POWERTOOLS_TRACE_ENABLED',
} as const;

type VariableName = EnvName | (typeof RUNTIME_ENV)[keyof typeof RUNTIME_ENV];

function optional(env: Environment, name: VariableName): string | undefined {
  const value = env[name];
  return value === '' ? undefined : value;
}

function required(env: Environment, name: VariableName): string {
  const value = optional(env, name);
  if (value === undefined) {
    throw new Error(`Environment variable ${name} is not set; the stack (or the local runtime) must provide it`);
  }
  return value;
}

function integer(env: Environment, name: EnvName): number {
  const text = required(env, name);
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Error(`Environment variable ${name} must be a non-negative integer, got "${text}"`);
  }
  return value;
}

function boolean(env: Environment, name: EnvName): boolean {
  const text = required(env, name);
  if (text !== 'true' && text !== 'false') {
    throw new Error(`Environment variable ${name} must be "true" or "false", got "${text}"`);
  }
  return text === 'true';
}

function logLevel(env: Environment): LogLevelName | undefined {
  const text = optional(env, RUNTIME_ENV.logLevel);
  if (text === undefined) return undefined;
  // Powertools takes either case.
  const level = text.toUpperCase();
  if (!(level in LogLevel)) {
    throw new Error(
      `Environment variable ${RUNTIME_ENV.logLevel} must be one of ${Object.keys(LogLevel).join(', ')}, got "${text}"`,
    );
  }
  return level as LogLevelName;
}

function tableConfig(env: Environment): TableConfig {
  const bucketCount = integer(env, ENV.bucketCount);
  const shardCount = integer(env, ENV.shardCount);
  if (bucketCount < 1) throw new Error(`Environment variable ${ENV.bucketCount} must be at least 1`);
  if (shardCount < 1 || shardCount > MAX_SHARDS) {
    throw new Error(
      `Environment variable ${ENV.shardCount} must be between 1 and ${MAX_SHARDS} (task ids hold the shard in two characters)`,
    );
  }
  return { tableName: required(env, ENV.tableName), bucketCount, shardCount };
}

function functionConfig(env: Environment): FunctionConfig {
  const level = logLevel(env);
  return {
    aws: {
      region: required(env, RUNTIME_ENV.region),
      endpoints: {
        dynamodb: optional(env, RUNTIME_ENV.dynamodbEndpoint),
        sqs: optional(env, RUNTIME_ENV.sqsEndpoint),
        eventBridge: optional(env, RUNTIME_ENV.eventBridgeEndpoint),
      },
    },
    observability: {
      ...(level !== undefined && { logLevel: level }),
      // As Powertools reads it: only "false" turns tracing off.
      tracingEnabled: optional(env, RUNTIME_ENV.tracingEnabled) !== 'false',
    },
    table: tableConfig(env),
  };
}

/** Freezes a config and the objects inside it, so no invocation can change what the next one sees. */
function frozen<T extends object>(config: T): T {
  for (const value of Object.values(config)) {
    if (typeof value === 'object' && value !== null) frozen(value);
  }
  return Object.freeze(config);
}

export function loadApiConfig(env: Environment): ApiConfig {
  return frozen({
    ...functionConfig(env),
    deliveryQueueUrl: required(env, ENV.deliveryQueueUrl),
    tickQueueUrl: required(env, ENV.tickQueueUrl),
    lookaheadSeconds: integer(env, ENV.lookaheadSeconds),
    allowInsecureTargets: boolean(env, ENV.allowInsecureTargets),
    retentionDays: integer(env, ENV.retentionDays),
    maxHorizonDays: integer(env, ENV.maxHorizonDays),
    tickEverySecond: boolean(env, ENV.tickEverySecond),
    account: required(env, ENV.awsAccount),
    partition: required(env, ENV.awsPartition),
    // Unset means any target (local mode), so these are read as they are, not required.
    allowedQueueArns: parseAllowList(env[ENV.allowedQueueArns]),
    allowedEventBusArns: parseAllowList(env[ENV.allowedEventBusArns]),
  });
}

export function loadTickerConfig(env: Environment): TickerConfig {
  return frozen({
    ...functionConfig(env),
    tickQueueUrl: required(env, ENV.tickQueueUrl),
    lookaheadSeconds: integer(env, ENV.lookaheadSeconds),
    tickEverySecond: boolean(env, ENV.tickEverySecond),
  });
}

export function loadScannerConfig(env: Environment): ScannerConfig {
  return frozen({
    ...functionConfig(env),
    deliveryQueueUrl: required(env, ENV.deliveryQueueUrl),
    lookaheadSeconds: integer(env, ENV.lookaheadSeconds),
    tickEverySecond: boolean(env, ENV.tickEverySecond),
  });
}

export function loadCallbackConfig(env: Environment): CallbackConfig {
  return frozen({
    ...functionConfig(env),
    deliveryQueueUrl: required(env, ENV.deliveryQueueUrl),
    deliveryDlqUrl: required(env, ENV.deliveryDlqUrl),
    tickQueueUrl: required(env, ENV.tickQueueUrl),
    lookaheadSeconds: integer(env, ENV.lookaheadSeconds),
    tickEverySecond: boolean(env, ENV.tickEverySecond),
    maxAttempts: integer(env, ENV.maxAttempts),
    backoffBaseSeconds: integer(env, ENV.backoffBaseSeconds),
    backoffMaxSeconds: integer(env, ENV.backoffMaxSeconds),
    webhookTimeoutMs: integer(env, ENV.webhookTimeoutMs),
    allowInsecureTargets: boolean(env, ENV.allowInsecureTargets),
    retentionDays: integer(env, ENV.retentionDays),
  });
}

export function loadSweeperConfig(env: Environment): SweeperConfig {
  return frozen({
    ...functionConfig(env),
    deliveryQueueUrl: required(env, ENV.deliveryQueueUrl),
    sweepMaxSecondsPerRun: integer(env, ENV.sweepMaxSecondsPerRun),
    sweepGraceSeconds: integer(env, ENV.sweepGraceSeconds),
    overdueGraceSeconds: integer(env, ENV.overdueGraceSeconds),
    tickEverySecond: boolean(env, ENV.tickEverySecond),
  });
}
