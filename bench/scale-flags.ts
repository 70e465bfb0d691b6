/** `npm run scale`'s flags, read and checked (and `--help` answered) before the run's modules load. */
import { parseArgs } from 'node:util';

import { exitWithUsageIfAsked } from './usage.js';

export const { values: flags } = parseArgs({
  options: {
    k: { type: 'string' },
    quick: { type: 'boolean' },
    'within-run': { type: 'string' },
    only: { type: 'string' },
    tenants: { type: 'string' },
    'hot-second': { type: 'boolean' },
    publish: { type: 'boolean' },
    help: { type: 'boolean' },
  },
});
exitWithUsageIfAsked(
  flags.help,
  'Usage: npm run scale -- [--k N] [--quick] [--within-run SHARE] [--tenants N] [--only a,b,c,d,e | --hot-second] [--publish]',
);
if (flags.publish && (flags.only || flags['hot-second']))
  throw new Error('--publish writes docs/scale.md from all five scenarios: drop --only and --hot-second');
