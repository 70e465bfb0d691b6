/**
 * The middy chain every function runs in, held in one place: an X-Ray segment per invocation,
 * the Lambda context on every log line, and the invocation's metrics flushed as one EMF line.
 * Also what a handler factory is given, and how a Lambda entry assembles one at cold start.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';

import { type AwsClients, awsClients } from './clients.js';
import type { FunctionConfig, ObservabilityConfig } from './config.js';
import { createLogger } from './logger.js';
import { createMetrics } from './metrics.js';
import { loadTracer } from './tracer.js';

/** One function's logger, metrics publisher and, when tracing is on, tracer. */
export interface Observability {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly tracer?: Tracer;
}

export async function createObservability(config: ObservabilityConfig): Promise<Observability> {
  const tracer = await loadTracer(config.tracingEnabled);
  return { logger: createLogger(config.logLevel), metrics: createMetrics(), ...(tracer && { tracer }) };
}

/** What a handler factory needs besides its config: the clients it talks through and its instrumentation. */
export interface HandlerDeps {
  readonly clients: AwsClients;
  readonly observability: Observability;
}

/** A function as Lambda (or local mode) invokes it. */
export type LambdaFunction<TEvent, TResult> = (event: TEvent, context: Context) => Promise<TResult>;

export interface ChainOptions<TEvent, TResult> {
  /** Middlewares innermost in the chain, after the instrumentation: their onError sees the handler's error first. */
  readonly middlewares?: ReadonlyArray<middy.MiddlewareObj<TEvent, TResult>>;
}

/**
 * Powertools' `logMetrics`, less its warning on an invocation that added no metric (an api read,
 * a ticker run): `publishStoredMetrics` logs "No application metrics to publish" then, once a
 * minute from the schedules alone. Nothing is lost: an invocation that added metrics flushes them,
 * failed or not.
 */
function publishAddedMetrics<TEvent, TResult>(metrics: Metrics): middy.MiddlewareObj<TEvent, TResult> {
  const publish = async function publishIfAdded() {
    if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
  };
  return { after: publish, onError: publish };
}

/** Wraps a function's own work in the instrumentation chain. */
export function instrumented<TEvent, TResult>(
  { logger, metrics, tracer }: Observability,
  work: LambdaFunction<TEvent, TResult>,
  { middlewares = [] }: ChainOptions<TEvent, TResult> = {},
): LambdaFunction<TEvent, TResult> {
  const chain = middy<TEvent, TResult>();
  if (tracer) chain.use(captureLambdaHandler(tracer));
  chain.use(injectLambdaContext(logger)).use(publishAddedMetrics(metrics));
  for (const middleware of middlewares) chain.use(middleware);
  return chain.handler(work);
}

/**
 * Builds a function's handler the way its Lambda entry does at cold start: its instrumentation
 * from its config, and AWS clients captured by its tracer unless `clients` are given (local mode
 * shares one set among all five functions).
 */
export async function assembleHandler<TConfig extends FunctionConfig, THandler>(
  create: (config: TConfig, deps: HandlerDeps) => THandler,
  config: TConfig,
  clients?: AwsClients,
): Promise<THandler> {
  const observability = await createObservability(config.observability);
  return create(config, {
    clients: clients ?? awsClients({ ...config.aws, tracer: observability.tracer }),
    observability,
  });
}
