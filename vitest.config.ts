import { defineConfig } from 'vitest/config';

import LongestFirst from './test/support/longest-first.js';

const DOCS = 'test/e2e/docs-commands.test.ts';
const SCALE_MODEL = 'test/scale/scale-model.test.ts';
const HOT_ITEMS = 'test/scale/hot-items.test.ts';
/** Files that change the process for good (tracing loads the X-Ray SDK, which patches http and hooks every promise). */
const OWN_PROCESS = ['test/unit/tracer.test.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    // Many files wait on real time (local mode firing tasks, leases running out), so more files run
    // at once than the machine has cores (vitest's default is one fewer than the cores: one on CI);
    // four keep both cores of a 2-core machine 97-100% busy for the whole suite. Five, before the
    // fault files ran their cases side by side, failed a different case in every run beside a
    // second npm test (waits, timeouts, the explorer's run count); six starved the checks.
    maxWorkers: 4,
    sequence: { sequencer: LongestFirst },
    // A timeout catches a hung test, not a slow one: beside a second npm test, files took three to
    // four times as long, and a backlog race that takes 3 s alone passed 30.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    env: {
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_TRACE_ENABLED: 'false',
    },
    projects: [
      {
        // The unit files stub nothing they do not undo, so one process runs them one after
        // another, importing the SDK and the handlers once rather than once a file.
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], exclude: [...OWN_PROCESS], isolate: false },
      },
      {
        // The same for the files that wire the pipeline (a sixth of their CPU was imports): local
        // mode allows one local timer at a time per process (Powertools' switches are
        // process-wide), and each file stops its own.
        extends: true,
        test: {
          name: 'wired',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**', DOCS, SCALE_MODEL, HOT_ITEMS],
          isolate: false,
        },
      },
      { extends: true, test: { name: 'own-process', include: OWN_PROCESS } },
      // npm test runs these three after the others (test/run-all.mjs says why).
      { extends: true, test: { name: 'docs', include: [DOCS] } },
      { extends: true, test: { name: 'scale-model', include: [SCALE_MODEL] } },
      { extends: true, test: { name: 'hot-items', include: [HOT_ITEMS] } },
    ],
  },
});
