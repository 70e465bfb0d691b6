import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

import { METRICS } from '../contract/topology.js';

/** One embedded-metric-format publisher per function; the lambda chain flushes it after each invocation that added metrics. */
export function createMetrics(): Metrics {
  return new Metrics({ namespace: METRICS.namespace, serviceName: METRICS.dimensions.service });
}

/**
 * How long an api instance sums its counts between two EMF lines. A single submit is an
 * invocation of its own, and a line per invocation (about 300 bytes) cost more in logs than the
 * submit's write; summed, a busy instance logs one line per this long. The counts gathered since
 * an instance's last line wait for its next invocation, and are lost if Lambda retires it first:
 * at most this long of one instance's counts, on a dashboard-only metric.
 */
export const COUNT_BATCH_MAX_AGE_MS = 10_000;

/**
 * Counts summed across the invocations of one execution environment and handed to `metrics`, one
 * value each, at the end of an invocation at least `maxAgeMs` after the last hand-over (the first
 * invocation's at once, so a quiet instance publishes as before); the lambda chain publishes them
 * after that invocation. `endInvocation` is called at the end of every invocation.
 */
export class CountBatch {
  private readonly counts = new Map<string, number>();
  private publishedAtMs: number | undefined;

  constructor(
    private readonly metrics: Metrics,
    private readonly nowMs: () => number = Date.now,
    private readonly maxAgeMs = COUNT_BATCH_MAX_AGE_MS,
  ) {}

  add(name: string, count: number): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + count);
  }

  endInvocation(): void {
    if (this.counts.size === 0) return;
    const now = this.nowMs();
    if (this.publishedAtMs !== undefined && now - this.publishedAtMs < this.maxAgeMs) return;
    for (const [name, count] of this.counts) this.metrics.addMetric(name, MetricUnit.Count, count);
    this.counts.clear();
    this.publishedAtMs = now;
  }
}
