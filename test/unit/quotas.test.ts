import { describe, expect, it } from 'vitest';

import { AWS_LIMITS } from '../../functions/contract/aws-limits.js';
import { ACCOUNT_CONCURRENCY, FUNCTIONS, QUEUES } from '../../functions/contract/topology.js';
import { type QuotaInput, quotasFor, SUBMIT_PEAK_TO_AVERAGE } from '../../lib/construct/plan/quotas.js';

/** A billion timers a day as the bench measures a task: three write units, two of them when it is delivered, and half a read unit. */
const billionADay: QuotaInput = {
  perDay: 1e9,
  peakPerSecond: 20_000,
  tasksPerApiRequest: 100,
  apiSecondsPerRequest: 0.08,
  writeUnitsPerTask: 3,
  deliveryWriteUnitsPerTask: 2,
  readUnitsPerTask: 0.5,
};

describe('Function: quotasFor', () => {
  it("keeps the construct's defaults and AWS's default quotas where batches of 100 fit them", () => {
    // Act
    const quotas = quotasFor(billionADay);

    // Assess: 232 batch requests a second at the daily peak is far below the defaults.
    expect(quotas.apiThrottle.rateLimit).toBe(AWS_LIMITS.apiGateway.requestsPerSecond / 10);
    expect(quotas.apiReservedConcurrency).toBe(FUNCTIONS.api.reservedConcurrency);
    expect(quotas.apiGatewayRequestsPerSecond).toBe(AWS_LIMITS.apiGateway.requestsPerSecond);
    expect(quotas.lambdaConcurrency).toBe(ACCOUNT_CONCURRENCY);
    expect(quotas.tableReadUnitsPerSecond).toBe(AWS_LIMITS.dynamodb.tableReadUnitsPerSecond);
  });

  it('sizes the stage throttle, the api reservation and the raised quotas for single submits at their daily peak', () => {
    // Act
    const quotas = quotasFor({ ...billionADay, tasksPerApiRequest: 1 });

    // Assess: 11,574 submits a second on average, twice that at the daily peak, with half again of headroom.
    const peakRequests = (1e9 / 86_400) * SUBMIT_PEAK_TO_AVERAGE;
    expect(quotas.apiThrottle.rateLimit).toBeGreaterThanOrEqual(peakRequests * 1.5);
    expect(quotas.apiThrottle.rateLimit).toBeLessThan(peakRequests * 1.5 + 1000);
    expect(quotas.apiGatewayRequestsPerSecond).toBe(quotas.apiThrottle.rateLimit);
    expect(quotas.apiReservedConcurrency).toBeGreaterThanOrEqual(peakRequests * 0.08 * 1.5);
    // Every reservation and the delivery mapping's maximum fit in the account's pool beside its unreserved 100.
    const reserved = quotas.apiReservedConcurrency + (FUNCTIONS.scanner.reservedConcurrency ?? 0);
    expect(quotas.lambdaConcurrency).toBeGreaterThanOrEqual(reserved + QUEUES.delivery.consumer.maxConcurrency + 100);
  });

  it("asks for table write units that carry the hot second's deliveries on top of a peak wave of creates", () => {
    // Act
    const quotas = quotasFor(billionADay);

    // Assess: 20,000 × 2 delivery units + 23,148 creates × 1 unit, with half again of headroom.
    const peakUnits = 20_000 * 2 + (1e9 / 86_400) * SUBMIT_PEAK_TO_AVERAGE * 1;
    expect(quotas.tableWriteUnitsPerSecond).toBeGreaterThanOrEqual(peakUnits * 1.5);
    expect(quotas.tableWriteUnitsPerSecond).toBeGreaterThan(AWS_LIMITS.dynamodb.tableWriteUnitsPerSecond);
  });

  it('asks for table write units that carry the hot second created in one second, where a create costs more than a delivery', () => {
    // Act: as receipts make it, a delivery writes a twentieth of a unit and a create a unit.
    const quotas = quotasFor({ ...billionADay, writeUnitsPerTask: 1.05, deliveryWriteUnitsPerTask: 0.05 });

    // Assess: 20,000 creates on top of the peak wave of 23,148, with half again of headroom.
    const peakUnits = 20_000 * 1 + (1e9 / 86_400) * SUBMIT_PEAK_TO_AVERAGE * 1;
    expect(quotas.tableWriteUnitsPerSecond).toBeGreaterThanOrEqual(peakUnits * 1.5);
    expect(quotas.tableWriteUnitsPerSecond).toBeLessThan(peakUnits * 1.5 + 10_000);
  });

  it("asks for table read units that carry the hot second's reads on top of a busy second's deliveries", () => {
    // Act: a task read twice when it falls due (its scan's share and its read before the call).
    const quotas = quotasFor({ ...billionADay, readUnitsPerTask: 1.5 });

    // Assess: (20,000 + 23,148) tasks × 1.5 units = 64,722, with half again of headroom: over AWS's default 40,000.
    const peakUnits = (20_000 + (1e9 / 86_400) * SUBMIT_PEAK_TO_AVERAGE) * 1.5;
    expect(quotas.tableReadUnitsPerSecond).toBeGreaterThanOrEqual(peakUnits * 1.5);
    expect(quotas.tableReadUnitsPerSecond).toBeLessThan(peakUnits * 1.5 + 10_000);
  });
});
