/**
 * `npm test`: every check and every vitest project (vitest.config.ts), in four steps.
 *
 * 1. The suite (the projects `wired` and `own-process`, four files at a time) runs at normal
 *    priority, and beside it, at the lowest priority, `npm run checks` (test/checks.mjs). The
 *    suite keeps both cores busy, and at the lowest priority the checks take no CPU its timed
 *    fault tests want (they did at normal priority): they run in what it leaves, and mostly in
 *    the idle time of the steps after it, which wait on real time.
 * 2. Then the unit files, at normal priority, beside what is left of the checks. Run after the
 *    checks they were the last step to end; run at the lowest priority after the suite, a unit
 *    file that times a real socket (300 ms) starved beside a second npm test. They run in a
 *    vitest of their own, so that no process runs both a unit file and a wired one.
 * 3. Then the docs test beside the scale model's small run (`docs` and `scale-model`). The docs
 *    test runs after the suite because its npx cache entry suffered beside the package test's npm
 *    work (see test/e2e/docs-commands.test.ts).
 * 4. Then the growth test (`hot-items`) alone, but for what is left of the checks (at the lowest
 *    priority): it measures how busy items get as the load grows, and a busy machine grows the
 *    api's fleet, and with it the items each environment writes, which a neighbour skews (beside
 *    the docs test its fleet grew from 25-62 environments to 127-200, and the occupancy slots
 *    with it).
 *
 * A failing step ends the run and stops whatever it started. The suite's output goes straight
 * through; the other steps' output is printed whole when they end, so that lines never mix. Each
 * step's wall time is printed at the end, as the README's test time is read from it.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const vitest = (...projects) => [
  npm,
  ['exec', '--', 'vitest', 'run', ...projects.flatMap((name) => ['--project', name])],
];
/** `nice` where there is one: Windows has none, and runs the step at normal priority. */
const lowPriority = ([command, args]) =>
  process.platform === 'win32' ? [command, args] : ['nice', ['-n', '19', command, ...args], { lowPriority: true }];

/**
 * Linux with autogroup scheduling (the default on most distributions) weighs each session
 * against the others first, and a process's nice value only within its own session. A step runs
 * in a session of its own (see `run`), so `nice` alone left the checks an equal share beside the
 * suite; lowering the session's own weight gives them only what the suite leaves idle.
 */
function lowerSessionPriority(pid) {
  try {
    writeFileSync(`/proc/${pid}/autogroup`, '19');
  } catch {
    // No autogroup here (another system, or it is off): `nice` is enough.
  }
}

const steps = {
  suite: vitest('wired', 'own-process'),
  checks: lowPriority([npm, ['run', '--silent', 'checks']]),
  unit: vitest('unit'),
  'docs and scale model': vitest('docs', 'scale-model'),
  'growth test': vitest('hot-items'),
};
const running = new Set();
const took = [];

/** Runs a step, its output going straight through, or held and printed when it ends when `held`. */
function run(name, { held = true } = {}) {
  const [command, args, { lowPriority = false } = {}] = steps[name];
  const startedAt = Date.now();
  // A process group of its own, so that stopping the step stops what npm started under it.
  const child = spawn(command, args, { stdio: held ? ['ignore', 'pipe', 'pipe'] : 'inherit', detached: true });
  if (lowPriority) lowerSessionPriority(child.pid);
  running.add(child);
  const output = [];
  child.stdout?.on('data', (chunk) => output.push(chunk));
  child.stderr?.on('data', (chunk) => output.push(chunk));
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      running.delete(child);
      took.push(`${name} ${((Date.now() - startedAt) / 1000).toFixed(0)} s`);
      if (held) process.stdout.write(Buffer.concat(output));
      const result = { name, ok: code === 0, code: code ?? signal };
      if (!result.ok) finish(result);
      resolve(result);
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
const checks = run('checks');
await run('suite', { held: false });
await run('unit');
await run('docs and scale model');
await Promise.all([checks, run('growth test')]);
finish();
