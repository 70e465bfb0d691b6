/**
 * The entry of an emulator's own process: dynalite or fauxqs, started by emulators.ts so their
 * request handling runs on another core than the handlers' event loop. It reports its endpoint
 * to the parent over IPC, closes cleanly when told to stop, and exits as soon as the parent is
 * gone (even SIGKILLed), so no emulator outlives the local timer that started it.
 */
import { startFauxqs } from 'fauxqs';

import { startLocalDynamo } from './dynamodb.js';
import type { EmulatorKind, EmulatorMessage } from './emulators.js';

async function start(kind: EmulatorKind, dataDir: string | undefined) {
  if (kind === 'dynamodb') {
    const dynamo = await startLocalDynamo(dataDir);
    return { endpoint: dynamo.endpoint, stop: () => dynamo.close() };
  }
  const sqs = await startFauxqs({ port: 0, logger: false, host: 'localhost' });
  return { endpoint: sqs.address, stop: () => sqs.stop() };
}

const send = (message: EmulatorMessage) => process.send?.(message);

process.on('disconnect', () => process.exit(0));
const [kind, dataDir] = process.argv.slice(2) as [EmulatorKind, string | undefined];
try {
  const emulator = await start(kind, dataDir || undefined);
  process.on('message', (message: string) => {
    if (message !== 'stop') return;
    emulator.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
  send({ ready: emulator.endpoint });
} catch (error) {
  send({ failed: error instanceof Error ? error.message : String(error) });
  process.exit(1);
}
