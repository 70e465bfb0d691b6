import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * npm run by one test file at a time. The package test packs and installs through npm while the
 * docs test runs `npx timer` from the clone, which installs the repository into npx's cache to link
 * its bin; run side by side (the suite runs files in parallel), npx lost that link and the shell
 * answered `timer: not found`. Both take this lock around their npm work: a directory, since
 * mkdir either creates it or fails, atomically across processes. A holder that died leaves its pid
 * behind, and the lock is taken over.
 */
const LOCK = join(tmpdir(), 'distributed-timer-tests-npm.lock');

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export async function withNpmLock<T>(work: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      await mkdir(LOCK);
      break;
    } catch {
      const holder = Number(await readFile(join(LOCK, 'pid'), 'utf8').catch(() => ''));
      if (holder > 0 && !alive(holder)) await rm(LOCK, { recursive: true, force: true });
      else await new Promise((wake) => setTimeout(wake, 250));
    }
  }
  await writeFile(join(LOCK, 'pid'), String(process.pid));
  try {
    return await work();
  } finally {
    await rm(LOCK, { recursive: true, force: true });
  }
}
