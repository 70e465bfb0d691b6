import { randomUUID } from 'node:crypto';

import type { Context } from 'aws-lambda';

import { type FunctionName, FUNCTIONS } from '../../functions/contract/topology.js';

/** A Lambda context for a local invocation, with the function's timeout behind getRemainingTimeInMillis. */
export function lambdaContext(fn: FunctionName, timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: `timer-${fn}`,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:timer-${fn}`,
    memoryLimitInMB: String(FUNCTIONS[fn].memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/local/timer-${fn}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** The shape every handler has once wrapped by middy. */
export type LambdaHandler<E, R> = (event: E, context: Context) => Promise<R>;
