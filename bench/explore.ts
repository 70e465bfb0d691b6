/**
 * Soaks the interleaving explorer: `npm run explore -- --runs N [--seed S] [--path P]`. The last
 * line reads `explored N runs: 0 counterexamples`, or the shrunk counterexample follows and the
 * exit code is 1. A seed and path from a counterexample replay it.
 */
import { parseArgs } from 'node:util';

import { explore } from '../test/explore/explore.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '1000' }, seed: { type: 'string' }, path: { type: 'string' } },
});
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a positive integer, not ${values.runs}`);
const result = await explore({
  runs,
  ...(values.seed !== undefined && { seed: Number(values.seed) }),
  ...(values.path !== undefined && { path: values.path }),
});
if (result.counterexample !== undefined) {
  console.log(result.counterexample);
  console.log(`explored ${result.runs} runs: 1 counterexample`);
  process.exitCode = 1;
} else {
  console.log(`seed ${result.seed}`);
  console.log(`explored ${result.runs} runs: 0 counterexamples`);
}
