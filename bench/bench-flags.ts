/** `npm run bench`'s flags, read and checked (and `--help` answered) before the run's modules load. */
import { parseArgs } from 'node:util';

import { exitWithUsageIfAsked } from './usage.js';

export const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'idle-minutes': { type: 'string' },
    rates: { type: 'string' },
    bursts: { type: 'string' },
    'no-peer': { type: 'boolean', default: false },
    publish: { type: 'boolean', default: false },
    'webhook-ms': { type: 'string', default: '100' },
    from: { type: 'string' },
    profile: { type: 'boolean', default: false },
    help: { type: 'boolean' },
  },
});
exitWithUsageIfAsked(
  flags.help,
  [
    'Usage: npm run bench -- [--quick] [--rates 100,500] [--bursts 10000] [--idle-minutes N] [--no-peer] [--webhook-ms N] [--publish] [--from reports/latest.json]',
    '       npm run bench -- --profile [--quick] [--rates 500]',
    '',
    '--profile  runs only the timer at the highest steady rate, with every process of it (handlers and',
    '           emulators) sampling its CPU; writes reports/profile-<time>/<pid>.cpuprofile (open them in',
    '           Chrome DevTools) and prints the top ten frames by self time over the seconds the tasks fall',
    '           due, grouped as SDK, HTTP, emulator, GC, project code, other libraries and Node and V8.',
  ].join('\n'),
);
