import { describe, expect, it, vi } from 'vitest';

import { createObservability, instrumented } from '../../functions/commons/lambda-chain.js';
import { lambdaContext } from './handlers/setup.js';

const quiet = () => createObservability({ logLevel: 'SILENT', tracingEnabled: false });

describe('Function: instrumented', () => {
  it('runs the work and flushes its metrics once per invocation', async () => {
    // Prepare
    const observability = await quiet();
    const publish = vi.spyOn(observability.metrics, 'publishStoredMetrics');
    const handler = instrumented(observability, async (event: { n: number }) => event.n * 2);

    // Act
    const first = await handler({ n: 2 }, lambdaContext());
    const second = await handler({ n: 3 }, lambdaContext());

    // Assess
    expect([first, second]).toEqual([4, 6]);
    expect(publish).toHaveBeenCalledTimes(2);
  });

  it('publishes nothing for a function that adds no metrics, so it logs no empty-metrics warning', async () => {
    // Prepare
    const observability = await quiet();
    const publish = vi.spyOn(observability.metrics, 'publishStoredMetrics');
    const handler = instrumented(observability, async () => 'done', { publishesMetrics: false });

    // Act
    await handler({}, lambdaContext());

    // Assess
    expect(publish).not.toHaveBeenCalled();
  });

  it("runs a function's own middlewares inside the instrumentation, so their onError can answer for the work", async () => {
    // Prepare
    const observability = await quiet();
    const publish = vi.spyOn(observability.metrics, 'publishStoredMetrics');
    const handler = instrumented<unknown, string>(
      observability,
      async () => {
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
