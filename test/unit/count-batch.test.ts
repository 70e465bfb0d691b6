import { describe, expect, it, vi } from 'vitest';

import { createObservability } from '../../functions/commons/lambda-chain.js';
import { COUNT_BATCH_MAX_AGE_MS, CountBatch } from '../../functions/commons/metrics.js';
import { METRICS } from '../../functions/contract/topology.js';

describe('Class: CountBatch', () => {
  it('hands the first counts over at once, then sums later invocations into one value per window', async () => {
    // Prepare
    const { metrics } = await createObservability({ logLevel: 'SILENT', tracingEnabled: false });
    const added = vi.spyOn(metrics, 'addMetric');
    let now = 1_000_000;
    const counts = new CountBatch(metrics, () => now);

    // Act: one invocation, then 50 more inside the window, then one after it.
    counts.add(METRICS.tasksCreated, 1);
    counts.endInvocation();
    for (let index = 0; index < 50; index++) {
      now += 100;
      counts.add(METRICS.tasksCreated, 1);
      counts.endInvocation();
    }
    now += COUNT_BATCH_MAX_AGE_MS;
    counts.add(METRICS.tasksCreated, 1);
    counts.endInvocation();

    // Assess
    expect(added.mock.calls.map(([name, , value]) => [name, value])).toEqual([
      [METRICS.tasksCreated, 1],
      [METRICS.tasksCreated, 51],
    ]);
  });
});
