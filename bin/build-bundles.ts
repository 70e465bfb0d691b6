/**
 * The part of `npm run build` that tsc does not do: each Lambda function bundled into
 * dist/bundles/<name>/, where the compiled construct looks for it, and the local console's
 * page files copied beside the compiled server that reads them.
 */
import { cpSync } from 'node:fs';
import { join } from 'node:path';

import { type FunctionName, FUNCTIONS } from '../functions/contract/topology.js';
import { buildBundle } from '../lib/construct/bundles.js';

const dist = 'dist';

for (const name of Object.keys(FUNCTIONS) as FunctionName[]) buildBundle(name, join(dist, 'bundles', name));
cpSync('lib/local/console/page', join(dist, 'lib/local/console/page'), {
  recursive: true,
  filter: (source) => !source.endsWith('tsconfig.json'),
});
