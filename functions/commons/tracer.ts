import { Tracer } from '@aws-lambda-powertools/tracer';

/**
 * A function's tracer: an X-Ray segment per invocation (captureLambdaHandler) with a subsegment
 * per AWS call (the clients are captured where they are built). Local mode and the tests turn it
 * off: there is no X-Ray daemon.
 */
export function createTracer(enabled: boolean): Tracer {
  return new Tracer({ serviceName: 'distributed-timer', enabled });
}
