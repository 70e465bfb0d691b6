/**
 * How local mode builds the five functions: execution environments made by the same factories
 * the Lambda entries use, from an environment composed here, with AWS clients whose every request
 * is counted and told by the function that made it.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';

import { createApiHandler } from '../../functions/api/app.js';
import { createCallbackHandler } from '../../functions/callback/app.js';
import type { AwsClients } from '../../functions/commons/clients.js';
import { type ConfigOf, type Environment, loadConfig } from '../../functions/commons/config.js';
import { assembleHandler, type HandlerDeps } from '../../functions/commons/lambda-chain.js';
import type { FunctionName } from '../../functions/contract/topology.js';
import { createScannerHandler } from '../../functions/scanner/app.js';
import { createSweeperHandler } from '../../functions/sweeper/app.js';
import { createTickerHandler } from '../../functions/ticker/app.js';
import type { LambdaHandler } from './lambda-context.js';
import {
  currentEnvironment,
  ENVIRONMENT_HEADER,
  type EnvironmentFactory,
  environmentHeader,
} from './lambda-service.js';

/** One AWS request: what was asked and, if it succeeded, the answer. */
export interface AwsRequest {
  /** `Client.Command`, e.g. `DynamoDB.Query`, or `EventSourceMapping.SQS.ReceiveMessage` for the pollers. */
  readonly name: string;
  /** The function whose clients made it; absent for the pollers' and local mode's own requests. */
  readonly fn?: FunctionName;
  readonly input: Record<string, unknown>;
  readonly output?: Record<string, unknown>;
}

export type AnyHandler = LambdaHandler<unknown, unknown>;

/**
 * Counts each request a client sends, so local runs can report AWS requests per task, and
 * tells `onRequest` of it. The local pollers' receives and deletes, which Lambda's event source
 * mappings make in the cloud, are counted by their own client (mapping-queue.ts).
 */
export function countRequests(
  client: { middlewareStack: unknown },
  counts: Map<string, number>,
  onRequest: ((request: AwsRequest) => void) | undefined,
  { fn }: { fn?: FunctionName } = {},
): void {
  // Every SDK v3 client has the same middleware stack; SQS's type stands for all of them.
  (client.middlewareStack as SQSClient['middlewareStack']).add(
    (next, context) => async (args) => {
      const name = `${(context.clientName ?? 'Unknown').replace(/Client$/, '')}.${(context.commandName ?? 'Unknown').replace(/Command$/, '')}`;
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

/**
 * Names, on each request a client sends, the execution environment that sent it (and whether it
 * was starting), so the scale model can tell what an environment asks once from what it asks
 * per request. The clients are the function's, shared by its environments; the environment is
 * the invocation's, from its async context.
 */
export function tagEnvironment(client: { middlewareStack: unknown }): void {
  (client.middlewareStack as SQSClient['middlewareStack']).add(
    (next) => (args) => {
      const environment = currentEnvironment();
      const request = args.request as { headers?: Record<string, string> };
      if (environment && request.headers) request.headers[ENVIRONMENT_HEADER] = environmentHeader(environment);
      return next(args);
    },
    { step: 'build', name: 'tagEnvironment' },
  );
}

export function mapFunctions<A, B>(
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
export function environmentFactories(
  envFor: (fn: FunctionName) => Environment,
  clientsFor: (fn: FunctionName) => AwsClients,
): Record<FunctionName, EnvironmentFactory> {
  const factory = <F extends FunctionName>(
    fn: F,
    create: (config: ConfigOf<F>, deps: HandlerDeps) => unknown,
  ): EnvironmentFactory => {
    const config = loadConfig(fn, envFor(fn));
    const clients = clientsFor(fn);
    return async () => (await assembleHandler(create, config, clients)) as AnyHandler;
  };
  return {
    api: factory('api', createApiHandler),
    ticker: factory('ticker', createTickerHandler),
    scanner: factory('scanner', createScannerHandler),
    callback: factory('callback', createCallbackHandler),
    sweeper: factory('sweeper', createSweeperHandler),
  };
}
