import { Logger } from '@aws-lambda-powertools/logger';

/**
 * A structured JSON logger for one function. Each handler makes its own: in local mode
 * all five share a process, and one shared logger would stamp one function's Lambda
 * context on another's lines.
 */
export function createLogger(): Logger {
  return new Logger({ serviceName: 'distributed-timer' });
}
