/**
 * Local mode's emulators, each in a process of its own. In the handlers' process dynalite and
 * fauxqs took a fifth of the one event loop everything shared; forked, they run on the other
 * core, and the handlers' loop only sends requests.
 */
import { startLocalProcess } from './local-process.js';

export type EmulatorKind = 'dynamodb' | 'sqs';

export interface EmulatorProcess {
  readonly endpoint: string;
  /** The emulator process's CPU time so far, in ms: what a benchmark sets apart from the handlers'. */
  cpuMs(): Promise<number>;
  stop(): Promise<void>;
}

/** Starts dynalite (keeping its data in `<dataDir>/dynamodb` when given) or fauxqs in a child process. */
export async function startEmulatorProcess(kind: EmulatorKind, dataDir?: string): Promise<EmulatorProcess> {
  const child = await startLocalProcess<string>(import.meta.url, 'emulator-process', [kind, dataDir ?? '']);
  return { endpoint: child.ready, cpuMs: () => child.ask<number>(), stop: () => child.stop() };
}
