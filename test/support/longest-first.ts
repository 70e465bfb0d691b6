import { relative } from 'node:path';

import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Folders in the order their files start. The suite's wall time is set by its longest files, which
 * wait on real time (local mode firing tasks, a lease running out, a package installed), not on
 * the CPU; started first, they overlap each other and the short files fill the gaps beside them.
 * On a fresh clone vitest has no timings cached, and its default order would leave them to the end.
 */
const STARTING_ORDER = ['package', 'faults', 'e2e', 'infra', 'explore', 'integration', 'scale', 'unit'];

const rank = (root: string, spec: TestSpecification): number => {
  const folder = relative(root, spec.moduleId).split('/')[1] ?? '';
  const index = STARTING_ORDER.indexOf(folder);
  return index === -1 ? STARTING_ORDER.length : index;
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const byCache = await super.sort(files);
    return byCache.sort((a, b) => rank(root, a) - rank(root, b));
  }
}
