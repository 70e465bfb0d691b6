/**
 * The one place a function's environment is read. Each loader turns the variables the stack
 * sets (ENV, through `environmentFor`) plus the few Lambda and Powertools ones into a typed,
 * frozen config, once per cold start, and fails fast naming the variable, so a misconfigured
 * function breaks at deploy-time smoke tests instead of mid-delivery. Local mode and the tests
 * hand the loaders an environment of their own instead of mutating `process.env`.
 */
import { LogLevel } from '@aws-lambda-powertools/logger';

import { ENV, type EnvName, type FunctionEnvName, type FunctionName, FUNCTIONS } from '../contract/topology.js';
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

/** What a function that records, plans or reads occupied seconds is given: the api, ticker, scanner, sweeper and callback. */
export interface OccupancyConfig {
  readonly table: TableConfig;
  /** Dense mode: every second is taken as occupied and no index is kept (TimerSettings.tickEverySecond). */
  readonly tickEverySecond: boolean;
}

/** What every function is configured with. */
export interface FunctionConfig {
  readonly aws: AwsConfig;
  readonly observability: ObservabilityConfig;
  readonly table: TableConfig;
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

function bucketCount(env: Environment, name: EnvName): number {
  const value = integer(env, name);
  if (value < 1) throw new Error(`Environment variable ${name} must be at least 1`);
  return value;
}

function shardCount(env: Environment, name: EnvName): number {
  const value = integer(env, name);
  if (value < 1 || value > MAX_SHARDS) {
    throw new Error(
      `Environment variable ${name} must be between 1 and ${MAX_SHARDS} (task ids hold the shard in two characters)`,
    );
  }
  return value;
}

/** Unset means any target (local mode), so an allow-list is read as it is, not required. */
const allowList = (env: Environment, name: EnvName): AllowList => parseAllowList(env[name]);

/**
 * How each variable ENV names is read, by its ENV key: the one place a setting's type and check
 * live. A function's config holds each variable FUNCTIONS[fn].env lists under that key.
 */
const READERS = {
  tableName: required,
  bucketCount,
  shardCount,
  tickQueueUrl: required,
  deliveryQueueUrl: required,
  expressQueueUrl: required,
  deliveryDlqUrl: required,
  lookaheadSeconds: integer,
  maxAttempts: integer,
  backoffBaseSeconds: integer,
  backoffMaxSeconds: integer,
  webhookTimeoutMs: integer,
  allowInsecureTargets: boolean,
  retentionDays: integer,
  sweepMaxSecondsPerRun: integer,
  sweepGraceSeconds: integer,
  overdueGraceSeconds: integer,
  maxHorizonDays: integer,
  tickEverySecond: boolean,
  awsAccount: required,
  awsPartition: required,
  allowedQueueArns: allowList,
  allowedEventBusArns: allowList,
} as const satisfies { readonly [K in EnvKey]: (env: Environment, name: EnvName) => unknown };

type EnvKey = keyof typeof ENV;
/** The ENV key of a variable name: `TIMER_TICK_EVERY_SECOND` is `tickEverySecond`. */
type KeyOf<Name extends EnvName> = { [K in EnvKey]: (typeof ENV)[K] extends Name ? K : never }[EnvKey];
const KEY_OF = Object.fromEntries(Object.entries(ENV).map(([key, name]) => [name, key])) as Record<EnvName, EnvKey>;

/** Every function reads the table's variables; they are grouped as `table`, the rest lie flat. */
type TableKey = keyof TableConfig;
const TABLE_KEYS: readonly TableKey[] = ['tableName', 'bucketCount', 'shardCount'];

/** What a function reads besides the table and runtime: each variable FUNCTIONS[fn].env lists, typed by its reader. */
export type SettingsOf<F extends FunctionName> = {
  readonly [K in Exclude<KeyOf<FunctionEnvName<F>>, TableKey>]: ReturnType<(typeof READERS)[K]>;
};

/** A function's config: the runtime's, the table's, and the settings its topology entry lists. */
export type ConfigOf<F extends FunctionName> = FunctionConfig & SettingsOf<F>;

export type ApiConfig = ConfigOf<'api'>;
export type TickerConfig = ConfigOf<'ticker'>;
export type ScannerConfig = ConfigOf<'scanner'>;
export type CallbackConfig = ConfigOf<'callback'>;
export type SweeperConfig = ConfigOf<'sweeper'>;

function tableConfig(env: Environment): TableConfig {
  return {
    tableName: READERS.tableName(env, ENV.tableName),
    bucketCount: READERS.bucketCount(env, ENV.bucketCount),
    shardCount: READERS.shardCount(env, ENV.shardCount),
  };
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

/**
 * Reads function `fn`'s config: exactly the variables FUNCTIONS[fn].env lists, each by its reader,
 * plus the runtime's. Throws naming the first variable that is missing or malformed.
 */
export function loadConfig<F extends FunctionName>(fn: F, env: Environment): ConfigOf<F> {
  const settings: Record<string, unknown> = {};
  for (const name of FUNCTIONS[fn].env) {
    const key = KEY_OF[name];
    if (!(TABLE_KEYS as readonly string[]).includes(key)) settings[key] = READERS[key](env, name);
  }
  return frozen({ ...functionConfig(env), ...settings }) as ConfigOf<F>;
}
