/**
 * API Gateway's stage throttle for an HTTP API: a token bucket that refills at the steady
 * rate and holds at most the burst, starting full. The local gateway calls `admit` once per
 * request and, when it returns a response, sends that instead of invoking the handler.
 */
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

import { AWS_LIMITS } from '../../../functions/contract/aws-limits.js';
import type { Clock } from '../../../functions/core/kernel/task.js';
import { scaledRate } from './scaled-rate.js';

/** What API Gateway answers a request over the throttle. */
export const TOO_MANY_REQUESTS: APIGatewayProxyStructuredResultV2 = {
  statusCode: 429,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ message: 'Too Many Requests' }),
};

export interface ApiThrottleReport {
  readonly ratePerSecond: number;
  readonly burst: number;
  readonly requests: number;
  readonly throttled: number;
}

export class ApiStageThrottle {
  readonly ratePerSecond: number;
  readonly burst: number;
  private tokens: number;
  private refilledAtMs: number;
  private requests = 0;
  private throttled = 0;

  constructor(
    private readonly options: {
      readonly k: number;
      readonly clock: Pick<Clock, 'now'>;
      /** @default AWS_LIMITS.apiGateway.requestsPerSecond (10,000), divided by k */
      readonly ratePerSecond?: number;
      /** @default AWS_LIMITS.apiGateway.burst (5,000), divided by k */
      readonly burst?: number;
    },
  ) {
    this.ratePerSecond = options.ratePerSecond ?? scaledRate(AWS_LIMITS.apiGateway.requestsPerSecond, options.k);
    this.burst = options.burst ?? scaledRate(AWS_LIMITS.apiGateway.burst, options.k);
    this.tokens = this.burst;
    this.refilledAtMs = options.clock.now();
  }

  /** Takes a token for one request: undefined if it may go on, or the 429 to answer instead. */
  admit(): APIGatewayProxyStructuredResultV2 | undefined {
    const now = this.options.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.refilledAtMs) / 1000) * this.ratePerSecond);
    this.refilledAtMs = now;
    this.requests += 1;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return undefined;
    }
    this.throttled += 1;
    return TOO_MANY_REQUESTS;
  }

  report(): ApiThrottleReport {
    const { ratePerSecond, burst, requests, throttled } = this;
    return { ratePerSecond, burst, requests, throttled };
  }
}
