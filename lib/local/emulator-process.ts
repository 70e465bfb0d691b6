/**
 * The entry of an emulator's own process: dynalite or fauxqs, started by emulators.ts. Each loads
 * only its own emulator's modules: loading both cost the dynalite process 0.2-0.4 CPU-s more at
 * every start of local mode.
 */
import type { EmulatorKind } from './emulators.js';
import { serveLocalProcess } from './local-process.js';

/** This process's CPU time so far (user and system), in ms: the emulator's share of a local run. */
const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

const [kind, dataDir] = process.argv.slice(2) as [EmulatorKind, string | undefined];
await serveLocalProcess(async () => {
  if (kind === 'dynamodb') {
    const { startLocalDynamo } = await import('./dynamodb.js');
    const dynamo = await startLocalDynamo(dataDir || undefined);
    return { ready: dynamo.endpoint, answer: cpuMs, stop: () => dynamo.close() };
  }
  const { startFauxqs } = await import('fauxqs');
  const sqs = await startFauxqs({ port: 0, logger: false, host: 'localhost' });
  return { ready: sqs.address, answer: cpuMs, stop: () => sqs.stop() };
});
