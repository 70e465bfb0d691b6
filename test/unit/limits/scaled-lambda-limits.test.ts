import { describe, expect, it } from 'vitest';

import { ACCOUNT_CONCURRENCY, FUNCTIONS, QUEUES } from '../../../functions/contract/topology.js';
import { scaledLambdaLimits } from '../../../lib/local/limits/scale-model.js';

describe('Function: scaledLambdaLimits', () => {
  it('divides the account pool, each reservation and each mapping cap by k, rounding down', () => {
    // Act
    const limits = scaledLambdaLimits(10);

    // Assess
    expect(limits.accountConcurrency).toBe(ACCOUNT_CONCURRENCY / 10);
    expect(limits.reservedConcurrency.scanner).toBe(Math.floor((FUNCTIONS.scanner.reservedConcurrency ?? 0) / 10));
    expect(limits.maxConcurrency(QUEUES.delivery.consumer?.maxConcurrency ?? 0)).toBe(45);
    expect(limits.maxConcurrency(25)).toBe(2);
  });

  it("divides Lambda's ramps by k without rounding: a mapping's 5 and 300 a minute, and 1,000 new environments per 10 s", () => {
    // Act
    const limits = scaledLambdaLimits(100);

    // Assess
    expect(limits.mappingScaling).toEqual({ initialConcurrency: 0.05, scaleUpPerMinute: 3 });
    expect(limits.newEnvironmentsPer10Seconds).toBe(10);
  });

  it('never scales a limit below one', () => {
    // Act
    const limits = scaledLambdaLimits(100_000);

    // Assess
    expect(limits.reservedConcurrency.scanner).toBe(1);
    expect(limits.maxConcurrency(50)).toBe(1);
  });

  it('keeps an unreserved pool beside reservations that rounding raised to one', () => {
    // Act: at 1/1000 the account is 1 and the api's and scanner's reservations 1 each, which would leave
    // the other functions no concurrency
    const limits = scaledLambdaLimits(1000);

    // Assess: both reservations, and one unreserved beside them
    expect(limits.reservedConcurrency.scanner).toBe(1);
    expect(limits.reservedConcurrency.api).toBe(1);
    expect(limits.accountConcurrency).toBe(3);
  });

  it('runs the deployment the plan sized: its api reservation and its raised account quota, divided by k', () => {
    // Prepare
    const quotas = {
      apiThrottle: { rateLimit: 35_000, burstLimit: 18_000 },
      apiReservedConcurrency: 2750,
      apiSecondsPerRequest: 0.076,
      apiGatewayRequestsPerSecond: 35_000,
      lambdaConcurrency: 3500,
      tableWriteUnitsPerSecond: 100_000,
      tableReadUnitsPerSecond: 40_000,
    };

    // Act
    const limits = scaledLambdaLimits(100, quotas);

    // Assess
    expect(limits.reservedConcurrency.api).toBe(27);
    expect(limits.reservedConcurrency.scanner).toBe(1);
    expect(limits.accountConcurrency).toBe(35);
    // An api invocation holds its share for as long as the plan sized it with, whatever this machine takes.
    expect(limits.cloudDurationMs).toEqual({ api: 76 });
  });
});
