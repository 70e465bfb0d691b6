import { Tracer } from '@aws-lambda-powertools/tracer';

/**
 * One tracer for the process: an X-Ray segment per invocation (captureLambdaHandler) with a
 * subsegment per AWS call (the clients are captured where they are built). Local mode and
 * the tests turn it off with POWERTOOLS_TRACE_ENABLED=false: there is no X-Ray daemon.
 */
export const tracer = new Tracer({ serviceName: 'distributed-timer' });
