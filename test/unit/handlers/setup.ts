/**
 * What every handler test needs: the environment the stack would give each function, the
 * clients its factory is handed (aws-sdk-client-mock stubs every instance of a client class),
 * and a Lambda context.
 */
import type { Context, SQSRecord } from 'aws-lambda';

import { type AwsClients, awsClients } from '../../../functions/commons/clients.js';
import type { Environment, FunctionConfig } from '../../../functions/commons/config.js';
import { assembleHandler, type HandlerDeps } from '../../../functions/commons/lambda-chain.js';
import {
  DEFAULT_SETTINGS,
  ENV,
  environmentFor,
  type FunctionName,
  FUNCTIONS,
  type TimerSettings,
} from '../../../functions/contract/topology.js';

const REGION = 'us-east-1';
export const TABLE_NAME = 'timer-unit';
export const BUCKET_COUNT = 1000;
export const SHARD_COUNT = 2;
export const LOOKAHEAD_SECONDS = 2;
export const MAX_ATTEMPTS = 5;
export const BACKOFF_BASE_SECONDS = 5;
export const SWEEP_GRACE_SECONDS = 5;
export const TICK_QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/timer-tick';
export const DELIVERY_QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/timer-delivery';
export const EXPRESS_QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/timer-express';
export const DELIVERY_DLQ_URL = 'https://sqs.us-east-1.amazonaws.com/123456789012/timer-delivery-dlq';

/**
 * Every variable any handler reads, as `environmentFor` builds it for the stack, with this
 * file's test values, plus what Lambda adds: the region, and Powertools switched to quiet.
 */
export function handlerEnv(): Environment {
  const settings: TimerSettings = {
    ...DEFAULT_SETTINGS,
    bucketCount: BUCKET_COUNT,
    shardCount: SHARD_COUNT,
    lookaheadSeconds: LOOKAHEAD_SECONDS,
    maxAttempts: MAX_ATTEMPTS,
    backoffBaseSeconds: BACKOFF_BASE_SECONDS,
    webhookTimeoutMs: 5000,
    sweepGraceSeconds: SWEEP_GRACE_SECONDS,
  };
  const resources = {
    [ENV.tableName]: TABLE_NAME,
    [ENV.tickQueueUrl]: TICK_QUEUE_URL,
    [ENV.deliveryQueueUrl]: DELIVERY_QUEUE_URL,
    [ENV.expressQueueUrl]: EXPRESS_QUEUE_URL,
    [ENV.deliveryDlqUrl]: DELIVERY_DLQ_URL,
    // The stack passes these from Stack.of(this); the api checks SQS and EventBridge targets against them.
    [ENV.awsAccount]: '123456789012',
    [ENV.awsPartition]: 'aws',
  };
  return Object.assign(
    { AWS_REGION: REGION, POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_TRACE_ENABLED: 'false' },
    ...(Object.keys(FUNCTIONS) as FunctionName[]).map((fn) => environmentFor(fn, settings, resources)),
  );
}

/** Clients with dummy credentials, so no SDK looks further should a call slip past the mocks. */
function unitClients(): AwsClients {
  return awsClients({
    region: REGION,
    endpoints: {},
    credentials: { accessKeyId: 'AKIAUNITTEST', secretAccessKey: 'unit-test-secret' },
  });
}

/** A handler built by its factory, as its Lambda entry builds it at cold start, over unit-test clients. */
export function unitHandler<TConfig extends FunctionConfig, THandler>(
  create: (config: TConfig, deps: HandlerDeps) => THandler,
  config: TConfig,
): Promise<THandler> {
  return assembleHandler(create, config, unitClients());
}

/** A Lambda context with the function's full timeout still ahead of it. */
export function lambdaContext(timeoutMs = 60_000): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'timer-unit',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:timer-unit',
    memoryLimitInMB: '512',
    awsRequestId: 'request-1',
    logGroupName: '/aws/lambda/timer-unit',
    logStreamName: 'unit',
    getRemainingTimeInMillis: () => deadline - Date.now(),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** An SQS record as Lambda hands it over; only the fields the handlers read carry meaning. */
export function sqsRecord(body: string, messageId: string): SQSRecord {
  return {
    messageId,
    receiptHandle: `receipt-${messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: 'AIDAUNITTEST',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:timer-unit',
    awsRegion: 'us-east-1',
  };
}
