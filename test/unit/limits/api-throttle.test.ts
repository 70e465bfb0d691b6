import { describe, expect, it } from 'vitest';

import { ApiStageThrottle, TOO_MANY_REQUESTS } from '../../../lib/local/limits/api-throttle.js';
import { scaledRate } from '../../../lib/local/limits/scaled-rate.js';
import { ManualClock } from '../../support/clock.js';

describe('Class: ApiStageThrottle', () => {
  it('admits the scaled burst at once, answers 429 after it, and refills at the scaled rate', () => {
    // Prepare: k = 1,000 leaves a rate of 10 a second and a burst of 5.
    const clock = new ManualClock(0);
    const throttle = new ApiStageThrottle({ k: 1_000, clock });

    // Act
    const burst = Array.from({ length: 6 }, () => throttle.admit());
    clock.advance(200);
    const refilled = [throttle.admit(), throttle.admit(), throttle.admit()];

    // Assess: 200 ms at 10 a second is two tokens.
    expect(burst.slice(0, 5)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(burst[5]).toBe(TOO_MANY_REQUESTS);
    expect(refilled).toEqual([undefined, undefined, TOO_MANY_REQUESTS]);
    expect(throttle.report()).toEqual({ ratePerSecond: 10, burst: 5, requests: 9, throttled: 2 });
  });

  it('answers as API Gateway does: 429 with a JSON message', () => {
    expect(TOO_MANY_REQUESTS.statusCode).toBe(429);
    expect(JSON.parse(TOO_MANY_REQUESTS.body ?? '')).toEqual({ message: 'Too Many Requests' });
  });
});

describe('Function: scaledRate', () => {
  it('divides a rate by k but never below one, and refuses a k below 1', () => {
    expect(scaledRate(1_000, 100)).toBe(10);
    expect(scaledRate(1_000, 10_000)).toBe(1);
    expect(() => scaledRate(1_000, 0.5)).toThrow(/at least 1/);
  });
});
