import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { describe, expect, it, vi } from 'vitest';

import { createObservability, instrumented } from '../../functions/commons/lambda-chain.js';
import { lambdaContext } from './handlers/setup.js';

const quiet = () => createObservability({ logLevel: 'SILENT', tracingEnabled: false });

describe('Function: instrumented', () => {
  it('runs the work and flushes its metrics once per invocation', async () => {
    // Prepare
    const observability = await quiet();
    const publish = vi.spyOn(observability.metrics, 'publishStoredMetrics');
    const handler = instrumented(observability, async (event: { n: number }) => {
      observability.metrics.addMetric('doubled', MetricUnit.Count, 1);
      return event.n * 2;
    });

    // Act
    const first = await handler({ n: 2 }, lambdaContext());
    const second = await handler({ n: 3 }, lambdaContext());

    // Assess
    expect([first, second]).toEqual([4, 6]);
    expect(publish).toHaveBeenCalledTimes(2);
  });

  it('publishes only after invocations that added metrics, so one that added none logs no empty-metrics warning', async () => {
    // Prepare
    const observability = await quiet();
    const publish = vi.spyOn(observability.metrics, 'publishStoredMetrics');
    const warn = vi.spyOn(console, 'warn');
    const handler = instrumented(observability, async (event: { count: number }) => {
      if (event.count > 0) observability.metrics.addMetric('things', MetricUnit.Count, event.count);
    });

    // Act
    await handler({ count: 0 }, lambdaContext());
    await handler({ count: 2 }, lambdaContext());
    await handler({ count: 0 }, lambdaContext());

    // Assess
    expect(publish).toHaveBeenCalledTimes(1);
    expect(warn).not.toHaveBeenCalledWith(expect.stringContaining('No application metrics to publish'));
  });

  it("runs a function's own middlewares inside the instrumentation, so their onError can answer for the work", async () => {
    // Prepare
    const observability = await quiet();
    const publish = vi.spyOn(observability.metrics, 'publishStoredMetrics');
    const handler = instrumented<unknown, string>(
      observability,
      async () => {
        observability.metrics.addMetric('attempts', MetricUnit.Count, 1);
        throw new Error('boom');
      },
      {
        middlewares: [
          {
            onError: async function answer(request) {
              request.response = `answered ${(request.error as Error).message}`;
            },
          },
        ],
      },
    );

    // Act
    const response = await handler({}, lambdaContext());

    // Assess: the metrics still go out for the failed invocation.
    expect(response).toBe('answered boom');
    expect(publish).toHaveBeenCalledTimes(1);
  });
});
