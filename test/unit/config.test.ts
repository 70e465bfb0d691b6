import { describe, expect, it } from 'vitest';

import {
  type Environment,
  loadApiConfig,
  loadCallbackConfig,
  loadScannerConfig,
  loadSweeperConfig,
  loadTickerConfig,
} from '../../functions/commons/config.js';
import {
  DEFAULT_SETTINGS,
  ENV,
  environmentFor,
  type FunctionName,
  FUNCTIONS,
} from '../../functions/contract/topology.js';
import { MAX_SHARDS } from '../../functions/core/kernel/ids.js';

const LOADERS: Record<FunctionName, (env: Environment) => object> = {
  api: loadApiConfig,
  ticker: loadTickerConfig,
  scanner: loadScannerConfig,
  callback: loadCallbackConfig,
  sweeper: loadSweeperConfig,
};

const RESOURCES = {
  [ENV.tableName]: 'timer-tasks',
  [ENV.tickQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/timer-tick',
  [ENV.deliveryQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/timer-delivery',
  [ENV.deliveryDlqUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/timer-delivery-dlq',
  [ENV.awsAccount]: '123456789012',
  [ENV.awsPartition]: 'aws',
};

/** The environment the stack gives a function, plus the region Lambda adds. */
const deployedEnv = (fn: FunctionName, settings = DEFAULT_SETTINGS): Environment => ({
  AWS_REGION: 'eu-west-1',
  ...environmentFor(fn, settings, RESOURCES),
});

describe('Function: config loaders', () => {
  it.each(Object.keys(FUNCTIONS) as FunctionName[])(
    'loads %s from exactly the variables the topology says the stack sets for it',
    (fn) => {
      // Act
      const config = LOADERS[fn](deployedEnv(fn));

      // Assess
      expect(config).toMatchObject({
        aws: { region: 'eu-west-1', endpoints: {} },
        observability: { tracingEnabled: true },
        table: {
          tableName: 'timer-tasks',
          bucketCount: DEFAULT_SETTINGS.bucketCount,
          shardCount: DEFAULT_SETTINGS.shardCount,
        },
      });
    },
  );

  it('types each setting and reads unset allow-lists as any target', () => {
    // Act
    const config = loadApiConfig(deployedEnv('api'));

    // Assess
    expect(config).toMatchObject({
      deliveryQueueUrl: RESOURCES[ENV.deliveryQueueUrl],
      tickQueueUrl: RESOURCES[ENV.tickQueueUrl],
      lookaheadSeconds: DEFAULT_SETTINGS.lookaheadSeconds,
      allowInsecureTargets: false,
      retentionDays: DEFAULT_SETTINGS.retentionDays,
      maxHorizonDays: DEFAULT_SETTINGS.maxHorizonDays,
      account: '123456789012',
      partition: 'aws',
      allowedQueueArns: 'any',
      allowedEventBusArns: 'any',
    });
  });

  it.each(['api', 'ticker', 'scanner', 'sweeper'] as const)(
    'tells %s whether the deployment ticks every second, off unless it is set to "true"',
    (fn) => {
      // Act
      const sparse = LOADERS[fn](deployedEnv(fn));
      const dense = LOADERS[fn](deployedEnv(fn, { ...DEFAULT_SETTINGS, tickEverySecond: true }));

      // Assess
      expect(sparse).toMatchObject({ tickEverySecond: false });
      expect(dense).toMatchObject({ tickEverySecond: true });
    },
  );

  it('returns a frozen config, so no invocation can change what the next one sees', () => {
    // Act
    const config = loadCallbackConfig(deployedEnv('callback'));

    // Assess
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.table)).toBe(true);
    expect(Object.isFrozen(config.aws.endpoints)).toBe(true);
  });

  it('takes the region, emulator endpoints and Powertools switches from the environment it is given', () => {
    // Act
    const config = loadTickerConfig({
      ...deployedEnv('ticker'),
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:4567',
      AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4568',
      POWERTOOLS_LOG_LEVEL: 'debug',
      POWERTOOLS_TRACE_ENABLED: 'false',
    });

    // Assess
    expect(config.aws.endpoints).toEqual({ dynamodb: 'http://127.0.0.1:4567', sqs: 'http://127.0.0.1:4568' });
    expect(config.observability).toEqual({ logLevel: 'DEBUG', tracingEnabled: false });
  });

  it.each([
    ['a missing setting', { [ENV.tableName]: undefined }, /TIMER_TABLE_NAME is not set/],
    ['an empty setting', { [ENV.deliveryQueueUrl]: '' }, /TIMER_DELIVERY_QUEUE_URL is not set/],
    ['a missing region', { AWS_REGION: undefined }, /AWS_REGION is not set/],
    ['a number that is not one', { [ENV.lookaheadSeconds]: 'two' }, /TIMER_LOOKAHEAD_SECONDS must be a non-negative/],
    ['a boolean that is not one', { [ENV.allowInsecureTargets]: 'yes' }, /TIMER_ALLOW_INSECURE_TARGETS must be "true"/],
    ['dense mode spelled loosely', { [ENV.tickEverySecond]: '1' }, /TIMER_TICK_EVERY_SECOND must be "true" or "false"/],
    ['dense mode left unset', { [ENV.tickEverySecond]: undefined }, /TIMER_TICK_EVERY_SECOND is not set/],
    ['too many shards', { [ENV.shardCount]: String(MAX_SHARDS + 1) }, /TIMER_SHARD_COUNT must be between 1 and/],
    ['no buckets', { [ENV.bucketCount]: '0' }, /TIMER_BUCKET_COUNT must be at least 1/],
    ['an unknown log level', { POWERTOOLS_LOG_LEVEL: 'LOUD' }, /POWERTOOLS_LOG_LEVEL must be one of .* got "LOUD"/],
  ])('fails fast naming the variable on %s', (_case, change, message) => {
    // Act & Assess
    expect(() => loadApiConfig({ ...deployedEnv('api'), ...change })).toThrow(message);
  });
});
