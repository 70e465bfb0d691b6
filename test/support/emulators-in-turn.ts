/**
 * A script that starts in-memory emulators three times in turn, stopping each before the next, with
 * nothing else keeping it alive, as `npm run scale` does between scenarios; forked by
 * test/integration/emulators.test.ts, it prints `done` and exits 0 when the kept processes answer.
 */
import { startEmulatorProcess } from '../../lib/local/emulators.js';

for (let turn = 0; turn < 3; turn++) {
  const emulators = await Promise.all([startEmulatorProcess('dynamodb'), startEmulatorProcess('sqs')]);
  await Promise.all(emulators.map((emulator) => emulator.stop()));
}
process.stdout.write('done\n');
