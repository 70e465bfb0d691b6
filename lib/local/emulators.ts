/**
 * Local mode's emulators, each in a process of its own. In the handlers' process dynalite and
 * fauxqs took a fifth of the one event loop everything shared; forked, they run on the other
 * core, and the handlers' loop only sends requests.
 */
import { type LocalProcess, startLocalProcess } from './local-process.js';

export type EmulatorKind = 'dynamodb' | 'sqs';

/**
 * What an emulator process answers: its CPU time so far, or it closes its emulator, or it closes
 * it and starts a fresh one, answering with the new endpoint.
 */
export type EmulatorQuestion = 'cpuMs' | 'close' | 'fresh';

export interface EmulatorProcess {
  readonly endpoint: string;
  /** The emulator's CPU time since it was started, in ms: what a benchmark sets apart from the handlers'. */
  cpuMs(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Processes of in-memory emulators whose local timer stopped, kept for the next one this process
 * starts. A process ready to serve took 0.55-0.9 CPU-s (loading dynalite or fauxqs), a fresh
 * emulator in one already loaded a few ms; npm test starts some 35 local timers in 4 processes.
 * A kept process costs nothing while idle and exits with this one.
 */
const idle: Record<EmulatorKind, Array<LocalProcess<string>>> = { dynamodb: [], sqs: [] };

/**
 * Starts dynalite (keeping its data in `<dataDir>/dynamodb` when given) or fauxqs in a process of
 * its own, or, in memory, in a process an earlier local timer left (empty, on a new port).
 */
export async function startEmulatorProcess(kind: EmulatorKind, dataDir?: string): Promise<EmulatorProcess> {
  if (dataDir) {
    const child = await startLocalProcess<string>(import.meta.url, 'emulator-process', [kind, dataDir]);
    return { endpoint: child.ready, cpuMs: () => ask<number>(child, 'cpuMs'), stop: () => child.stop() };
  }
  const kept = await freshInKept(kind);
  const child = kept?.child ?? (await startLocalProcess<string>(import.meta.url, 'emulator-process', [kind, '']));
  const cpuAtStartMs = kept?.cpuAtStartMs ?? 0;
  return {
    endpoint: kept?.endpoint ?? child.ready,
    cpuMs: async () => (await ask<number>(child, 'cpuMs')) - cpuAtStartMs,
    stop: async () => {
      try {
        await ask(child, 'close');
      } catch {
        return; // The process is gone: nothing to keep.
      }
      idle[kind].push(child);
    },
  };
}

const ask = <Answer>(child: LocalProcess<string>, question: EmulatorQuestion) => child.ask<Answer>(question);

/** A fresh emulator in a kept process, passing over any that has exited meanwhile; undefined when none is kept. */
async function freshInKept(kind: EmulatorKind) {
  for (let child = idle[kind].pop(); child; child = idle[kind].pop()) {
    try {
      const endpoint = await ask<string>(child, 'fresh');
      return { child, endpoint, cpuAtStartMs: await ask<number>(child, 'cpuMs') };
    } catch {
      // Gone (killed, or its parent's channel closed): try the next, or start one.
    }
  }
  return undefined;
}
