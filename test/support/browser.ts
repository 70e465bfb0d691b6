/**
 * Headless Chromium for the browser tests: Debian's package, driven by playwright-core.
 * Playwright's own browser download cannot be fetched where these tests run (CI and the
 * developers' machines reach Debian's mirror and the npm registry only), so a missing
 * /usr/bin/chromium is installed with apt-get on first use.
 */
import { execFile } from 'node:child_process';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Long enough for apt-get update and a first install from Debian's mirror (about 80 s seen on CI's kind of machine). */
export const CHROMIUM_INSTALL_TIMEOUT_MS = 10 * 60_000;

/**
 * Without the background-networking flags Chromium keeps calling Google's hosts, which a
 * closed network refuses, many at a time. As root it needs --no-sandbox.
 */
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Fonts are only recommended by the package, and a page without them renders as boxes. */
const INSTALL_STEPS: ReadonlyArray<readonly string[]> = [
  ['update'],
  ['install', '-y', '--no-install-recommends', 'chromium', 'fonts-liberation'],
];

const run = promisify(execFile);

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

/** Installs Debian's chromium unless it is there; throws saying what to do where it cannot. */
export async function ensureChromium(): Promise<void> {
  if (await exists(CHROMIUM_PATH)) return;
  const command = `apt-get ${INSTALL_STEPS.map((step) => step.join(' ')).join(' && apt-get ')}`;
  const cannot = (why: string) =>
    new Error(`The browser tests need Chromium at ${CHROMIUM_PATH}, and ${why}. Install it yourself: ${command}`);
  if (process.getuid?.() !== 0) throw cannot('only root can install it with apt-get');
  if (!(await exists('/usr/bin/apt-get'))) throw cannot('this machine has no apt-get');
  const startedAt = Date.now();
  for (const step of INSTALL_STEPS) {
    try {
      // Waits for another apt-get (a parallel test file, unattended upgrades) instead of failing on its lock.
      await run('apt-get', ['-o', 'DPkg::Lock::Timeout=300', ...step], {
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
        maxBuffer: 64 * 1024 * 1024,
      });
    } catch (error) {
      const output = (error as { stderr?: string }).stderr?.trim().split('\n').slice(-5).join('\n') ?? String(error);
      throw cannot(`apt-get ${step.join(' ')} failed:\n${output}`);
    }
  }
  if (!(await exists(CHROMIUM_PATH))) throw cannot(`apt-get installed chromium but left nothing at ${CHROMIUM_PATH}`);
  console.log(`Installed Debian's chromium for the browser tests in ${Math.round((Date.now() - startedAt) / 1000)} s`);
}

/** A headless Chromium with a fresh profile, which `close` deletes. */
export async function openBrowser(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  await ensureChromium();
  const userDataDir = await mkdtemp(join(tmpdir(), 'timer-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1440, height: 900 },
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}
