import { relative } from 'node:path';

import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Wall seconds of the suite's longest files, in a run of `npm test` on an idle 2-core machine
 * (the package test's includes its build, pack and install before its first test). The
 * suite's wall time is set by its longest files, which wait on real time (local mode firing
 * tasks, a lease running out, a package installed); started first, they overlap each other and
 * the short files fill the gaps beside them. On a fresh clone, as in CI, vitest has no timings
 * cached and would start them in path order. A stale figure only changes the order.
 */
const MEASURED_SECONDS: Readonly<Record<string, number>> = {
  'test/package/consumer.test.ts': 121,
  'test/explore/explorer.test.ts': 98,
  'test/e2e/flexible-window.test.ts': 88,
  'test/faults/live-host-restart.test.ts': 84,
  'test/faults/aws-service-faults.test.ts': 62,
  'test/e2e/schedule-occurrences.test.ts': 39,
  'test/e2e/schedules.test.ts': 38,
  'test/faults/unleased-first-attempt-faults.test.ts': 34,
  'test/e2e/local-mode.test.ts': 29,
  'test/faults/local-restart-schedule.test.ts': 29,
  'test/e2e/synthesized-stack.test.ts': 27,
  'test/integration/sqs-event-source.test.ts': 25,
  'test/faults/local-restart-retry.test.ts': 24,
  'test/faults/local-restart.test.ts': 24,
  'test/faults/callback-faults.test.ts': 24,
  'test/integration/direct-path.test.ts': 22,
  'test/faults/scanner-faults.test.ts': 22,
  'test/e2e/cli.test.ts': 19,
  'test/e2e/console.test.ts': 18,
  'test/e2e/dense-mode.test.ts': 16,
  'test/faults/slow-receiver.test.ts': 16,
  'test/faults/occurrence-faults.test.ts': 15,
  'test/infra/timer-stack.test.ts': 15,
  'test/infra/distributed-timer.test.ts': 15,
  'test/integration/limits/scale-model.test.ts': 13,
  'test/integration/hostile-corpus.test.ts': 12,
  'test/faults/clock-faults.test.ts': 11,
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const seconds = (spec: TestSpecification) => MEASURED_SECONDS[relative(root, spec.moduleId)] ?? 0;
    // A stable sort: the files not listed keep vitest's own order (its cached timings, when it has them).
    return (await super.sort(files)).sort((a, b) => seconds(b) - seconds(a));
  }
}
