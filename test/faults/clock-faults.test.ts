/**
 * Fault injection on the whole pipeline (real dynalite, fauxqs and webhook receiver): the api,
 * scanner and sweeper clocks seconds apart.
 */
import { describe, expect } from 'vitest';

import { webhookTasks } from './harness.js';
import { pipelineCase, runCase } from './pipeline-cases.js';

describe.concurrent('Faults: clocks', () => {
  pipelineCase(
    'is never early and loses nothing when the api, scanner and sweeper clocks are seconds apart',
    async ({ start }) => {
      // Prepare: only the callback's clock decides "not before dueAt"; it may lag, never lead (see docs).
      const h = await start({ skewMs: { api: -3000, scanner: 3000, sweeper: -5000, callback: -1000 } });

      // Act
      const { result } = await runCase('clock skew between components', h, [
        ...webhookTasks(h, 30, 2000, 7000),
        ...webhookTasks(h, 5, -3000, 0),
      ]);

      // Assess
      expect(result.delivered).toBe(35);
    },
  );
});
