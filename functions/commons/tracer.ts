import type { Tracer } from '@aws-lambda-powertools/tracer';

/**
 * A function's tracer, or none when tracing is off: an X-Ray segment per invocation
 * (captureLambdaHandler) with a subsegment per AWS call (the clients are captured where they are
 * built). Local mode and the tests turn it off: there is no X-Ray daemon.
 *
 * The module is imported only when tracing is on. Loading it loads the X-Ray SDK, which installs
 * an async hook for its context on every promise the process makes whether or not a segment is
 * ever written; a disabled Powertools Tracer still pays for that hook.
 */
export async function loadTracer(enabled: boolean): Promise<Tracer | undefined> {
  if (!enabled) return undefined;
  const { Tracer } = await import('@aws-lambda-powertools/tracer');
  return new Tracer({ serviceName: 'distributed-timer', enabled });
}
