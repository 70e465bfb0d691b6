import { describe, expect, it } from 'vitest';

import { type Environment, loadConfig } from '../../functions/commons/config.js';
import {
  DEFAULT_SETTINGS,
  ENV,
  environmentFor,
  type FunctionName,
  FUNCTIONS,
} from '../../functions/contract/topology.js';
import { MAX_SHARDS } from '../../functions/core/kernel/ids.js';

const RESOURCES = {
  [ENV.tableName]: 'timer-tasks',
  [ENV.tickQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/timer-tick',
  [ENV.deliveryQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/timer-delivery',
  [ENV.expressQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/123456789012/timer-express',
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
      const config = loadConfig(fn, deployedEnv(fn));

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

  it.each(Object.keys(FUNCTIONS) as FunctionName[])(
    'gives %s a setting for each variable its topology entry lists, named by its ENV key, and no other',
    (fn) => {
      // Prepare
      const keyOf = Object.fromEntries(Object.entries(ENV).map(([key, name]) => [name, key]));
      const tableKeys = ['tableName', 'bucketCount', 'shardCount'];
      const listed = FUNCTIONS[fn].env.map((name) => keyOf[name]).filter((key) => !tableKeys.includes(key!));

      // Act
      const { aws: _aws, observability: _observability, table: _table, ...settings } = loadConfig(fn, deployedEnv(fn));

      // Assess
      expect(Object.keys(settings).sort()).toEqual(listed.sort());
    },
  );

  it('types each setting and reads unset allow-lists as any target', () => {
    // Act
    const config = loadConfig('api', deployedEnv('api'));

    // Assess
    expect(config).toMatchObject({
      deliveryQueueUrl: RESOURCES[ENV.deliveryQueueUrl],
      expressQueueUrl: RESOURCES[ENV.expressQueueUrl],
      tickQueueUrl: RESOURCES[ENV.tickQueueUrl],
      lookaheadSeconds: DEFAULT_SETTINGS.lookaheadSeconds,
      allowInsecureTargets: false,
      retentionDays: DEFAULT_SETTINGS.retentionDays,
      maxHorizonDays: DEFAULT_SETTINGS.maxHorizonDays,
      awsAccount: '123456789012',
      awsPartition: 'aws',
      allowedQueueArns: 'any',
      allowedEventBusArns: 'any',
    });
  });

  it.each(['api', 'ticker', 'scanner', 'sweeper'] as const)(
    'tells %s whether the deployment ticks every second, off unless it is set to "true"',
    (fn) => {
      // Act
      const sparse = loadConfig(fn, deployedEnv(fn));
      const dense = loadConfig(fn, deployedEnv(fn, { ...DEFAULT_SETTINGS, tickEverySecond: true }));

      // Assess
      expect(sparse).toMatchObject({ tickEverySecond: false });
      expect(dense).toMatchObject({ tickEverySecond: true });
    },
  );

  it('returns a frozen config, so no invocation can change what the next one sees', () => {
    // Act
    const config = loadConfig('callback', deployedEnv('callback'));

    // Assess
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.table)).toBe(true);
    expect(Object.isFrozen(config.aws.endpoints)).toBe(true);
  });

  it('takes the region, emulator endpoints and Powertools switches from the environment it is given', () => {
    // Act
    const config = loadConfig('ticker', {
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
    expect(() => loadConfig('api', { ...deployedEnv('api'), ...change })).toThrow(message);
  });
});
