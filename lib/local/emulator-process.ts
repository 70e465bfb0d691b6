/**
 * The entry of an emulator's own process: dynalite or fauxqs, started by emulators.ts. Each loads
 * only its own emulator's modules: loading both cost the dynalite process 0.2-0.4 CPU-s more at
 * every start of local mode. Once loaded, the process can close its emulator and start a fresh
 * one (empty, on a new port) when asked, so a process that starts local timers one after another
 * pays the process's start once (see emulators.ts).
 */
import type { EmulatorKind, EmulatorQuestion } from './emulators.js';
import { serveLocalProcess } from './local-process.js';

/** This process's CPU time so far (user and system), in ms: the emulator's share of a local run. */
const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

interface Emulator {
  readonly endpoint: string;
  close(): Promise<void>;
}

const [kind, dataDir] = process.argv.slice(2) as [EmulatorKind, string | undefined];

async function startEmulator(): Promise<Emulator> {
  if (kind === 'dynamodb') {
    const { startLocalDynamo } = await import('./dynamodb.js');
    const dynamo = await startLocalDynamo(dataDir || undefined);
    return { endpoint: dynamo.endpoint, close: () => dynamo.close() };
  }
  const { startFauxqs } = await import('fauxqs');
  const sqs = await startFauxqs({ port: 0, logger: false, host: 'localhost' });
  return { endpoint: sqs.address, close: () => sqs.stop() };
}

await serveLocalProcess(async () => {
  let emulator: Emulator | undefined = await startEmulator();
  const close = async () => {
    await emulator?.close();
    emulator = undefined;
  };
  return {
    ready: emulator.endpoint,
    answer: async (question) => {
      switch (question as EmulatorQuestion) {
        case 'cpuMs':
          return cpuMs();
        case 'close':
          return close();
        case 'fresh':
          await close();
          emulator = await startEmulator();
          return emulator.endpoint;
      }
    },
    stop: close,
  };
});
