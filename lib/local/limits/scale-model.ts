/**
 * A scale model of AWS's limits on the local emulators: every rate limit divided by k, so
 * load divided by k meets the limits where the real service would. It starts the proxies
 * in front of dynalite and fauxqs; point the handlers' clients at the endpoints it returns
 * (the SQS client with `useQueueUrlAsEndpoint: false`, or it would talk to fauxqs directly)
 * and have the HTTP gateway call `apiThrottle.admit()` per request.
 */
import { type Clock, systemClock } from '../../../functions/core/task.js';
import { ApiStageThrottle, type ApiThrottleReport } from './api-throttle.js';
import type { KeySchema } from './dynamodb-capacity.js';
import { startDynamoThroughputProxy } from './dynamodb-proxy.js';
import { DynamoThroughputModel, type DynamoThroughputReport } from './dynamodb-throughput.js';
import { SqsInFlightModel, type SqsInFlightReport, startSqsInFlightProxy } from './sqs-in-flight.js';

export interface ScaleModel {
  /** The divisor of AWS's rate limits: 100 makes a 1/100 model. At least 1. */
  readonly k: number;
  /** @default systemClock */
  readonly clock?: Clock;
  /** The DynamoDB tables' keys. @default TASK_TABLE_SCHEMA */
  readonly schema?: KeySchema;
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
}

export interface RunningScaleModel extends EmulatorEndpoints {
  readonly apiThrottle: ApiStageThrottle;
  report(): ScaleModelReport;
  close(): Promise<void>;
}

/** Starts the proxies in front of the emulators and returns the endpoints to use instead of theirs. */
export async function startScaleModel(model: ScaleModel, emulators: EmulatorEndpoints): Promise<RunningScaleModel> {
  const clock = model.clock ?? systemClock;
  const dynamodb = new DynamoThroughputModel({ k: model.k, clock, ...(model.schema && { schema: model.schema }) });
  const sqs = new SqsInFlightModel({ k: model.k, clock });
  const apiThrottle = new ApiStageThrottle({ k: model.k, clock });
  const [dynamoProxy, sqsProxy] = await Promise.all([
    startDynamoThroughputProxy(emulators.dynamodbEndpoint, dynamodb),
    startSqsInFlightProxy(emulators.sqsEndpoint, sqs, clock),
  ]);
  return {
    dynamodbEndpoint: dynamoProxy.endpoint,
    sqsEndpoint: sqsProxy.endpoint,
    apiThrottle,
    report: () => ({ k: model.k, dynamodb: dynamodb.report(), sqs: sqs.report(), api: apiThrottle.report() }),
    close: async () => {
      await Promise.all([dynamoProxy.close(), sqsProxy.close()]);
    },
  };
}
