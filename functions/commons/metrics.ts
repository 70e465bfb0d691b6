import { Metrics } from '@aws-lambda-powertools/metrics';

import { METRICS } from '../contract/topology.js';

/** One embedded-metric-format publisher per function; the lambda chain flushes it after each invocation that added metrics. */
export function createMetrics(): Metrics {
  return new Metrics({ namespace: METRICS.namespace, serviceName: METRICS.dimensions.service });
}
