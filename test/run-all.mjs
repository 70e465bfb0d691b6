/**
 * `npm test`: the type check and lint, then the suite, then the docs test and the scale tests,
 * each step alone. The checks do not run beside the suite: they took its first two minutes' CPU,
 * when the fault tests, whose deliveries are timed, run. The docs test's npx cache entry suffers
 * beside the package test's npm work, and the scale tests measure request rates, which a
 * neighbour skews. A failing step ends the run, and stops whatever it started. Each step's wall
 * time is printed at the end, as the README's test time is read from it.
 */
import { spawn } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const vitest = ['exec', '--', 'vitest', 'run'];
const steps = {
  checks: [npm, ['run', '--silent', 'checks']],
  suite: [npm, [...vitest, '--exclude', 'test/scale/**', '--exclude', 'test/e2e/docs-commands.test.ts']],
  docs: [npm, [...vitest, 'test/e2e/docs-commands.test.ts']],
  scale: [npm, [...vitest, 'test/scale', '--maxWorkers=1']],
};
const running = new Set();
const took = [];

/** Runs a step, its output going straight through. */
function run(name) {
  const [command, args] = steps[name];
  const startedAt = Date.now();
  // A process group of its own, so that stopping the step stops what npm started under it.
  const child = spawn(command, args, { stdio: 'inherit', detached: true });
  running.add(child);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      running.delete(child);
      took.push(`${name} ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
      resolve({ name, ok: code === 0, code: code ?? signal });
    });
  });
}

function stopRunning() {
  for (const child of running) {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // Already gone.
    }
  }
}

function finish(failed) {
  stopRunning();
  const wall = ((Date.now() - startedAtMs) / 1000).toFixed(0);
  console.log(
    `\nnpm test: ${failed ? `failed at ${failed.name} (exit ${failed.code})` : 'passed'}; ${took.join(', ')}; ${wall} s in all`,
  );
  process.exit(failed ? 1 : 0);
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopRunning();
    process.exit(130);
  });
}

const startedAtMs = Date.now();
for (const name of Object.keys(steps)) {
  const result = await run(name);
  if (!result.ok) finish(result);
}
finish();
