import { defineConfig } from 'vitest/config';

import LongestFirst from './test/support/longest-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A process hosts one local timer at a time (Powertools' switches are process-wide), so every file gets its own.
    pool: 'forks',
    // Most of the suite's time is spent waiting on real time, not computing, so more files run at
    // once than the machine has cores (vitest's default is one fewer than the cores: one on CI).
    maxWorkers: 4,
    sequence: { sequencer: LongestFirst },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: {
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_TRACE_ENABLED: 'false',
    },
  },
});
