/**
 * Local mode's emulators, each in a process of its own. In the handlers' process dynalite and
 * fauxqs took a fifth of the one event loop everything shared; forked, they run on the other
 * core, and the handlers' loop only sends requests.
 */
import { fork } from 'node:child_process';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

export type EmulatorKind = 'dynamodb' | 'sqs';

/** What an emulator process tells its parent: its endpoint once it listens, or why it could not start. */
export type EmulatorMessage = { readonly ready: string } | { readonly failed: string };

export interface EmulatorProcess {
  readonly endpoint: string;
  stop(): Promise<void>;
}

/**
 * The entry beside this module: .ts when run from the sources (through tsx's loader), .js in the
 * compiled package.
 */
const here = fileURLToPath(import.meta.url);
const entry = here.replace(/emulators\.[jt]s$/, `emulator-process${extname(here)}`);

/** Starts dynalite (keeping its data in `<dataDir>/dynamodb` when given) or fauxqs in a child process. */
export function startEmulatorProcess(kind: EmulatorKind, dataDir?: string): Promise<EmulatorProcess> {
  const child = fork(entry, [kind, dataDir ?? ''], {
    execArgv: extname(entry) === '.ts' ? ['--import', 'tsx'] : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the ${kind} emulator exited with code ${code} before it listened`)));
    child.once('message', (message: EmulatorMessage) => {
      if ('failed' in message) {
        reject(new Error(`the ${kind} emulator failed to start: ${message.failed}`));
        return;
      }
      // The child lives as long as this process wants it, not the other way round: it alone must not keep it running.
      child.unref();
      child.channel?.unref();
      resolve({
        endpoint: message.ready,
        async stop() {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.ref();
          child.send('stop');
          await exited;
        },
      });
    });
  });
}
