import { Logger } from '@aws-lambda-powertools/logger';

import type { LogLevelName } from './config.js';

/**
 * A structured JSON logger for one function. Each handler makes its own: in local mode
 * all five share a process, and one shared logger would stamp one function's Lambda
 * context on another's lines. Without a level, Powertools' own default applies.
 */
export function createLogger(logLevel?: LogLevelName): Logger {
  return new Logger({ serviceName: 'distributed-timer', ...(logLevel !== undefined && { logLevel }) });
}
