/**
 * The emulators for one test file: started before its tests and stopped after them.
 */
import { afterAll, beforeAll } from 'vitest';

import { type Emulators, startEmulators } from './emulators.js';

/**
 * Registers the file's beforeAll and afterAll, and answers emulators that read through to the
 * started ones, so a test uses them as it would what startEmulators answers. Hooks a file
 * registers after this run once they are started.
 */
export function emulatorsFixture(): Emulators {
  let started: Emulators | undefined;
  beforeAll(async () => {
    started = await startEmulators();
  });
  afterAll(async () => {
    await started?.stop();
  });
  return new Proxy({} as Emulators, {
    get(_, property) {
      if (!started) throw new Error('the emulators start in beforeAll: use them inside tests and hooks');
      const value: unknown = started[property as keyof Emulators];
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(started) : value;
    },
  });
}
