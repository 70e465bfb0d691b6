/**
 * Preloaded (`NODE_OPTIONS=--import …`) into the timer's process and, through the environment
 * they inherit, its emulators' processes by `npm run bench -- --profile`: each samples its main
 * thread from start to exit and writes `<pid>.cpuprofile` into BENCH_CPU_PROFILE_DIR. Node 20
 * refuses `--cpu-prof` in NODE_OPTIONS, hence the inspector. Plain JavaScript: the loader thread
 * tsx starts runs this preload too, before any TypeScript can be read there.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';

const dir = process.env.BENCH_CPU_PROFILE_DIR;
if (dir && isMainThread) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  // Microseconds: V8's usual interval, fine enough for a run of seconds.
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  // The in-process session answers synchronously, so the profile is written before the process ends.
  process.on('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (!error) writeFileSync(join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
