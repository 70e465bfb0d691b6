/** Local mode as `npm start` runs it, in a process of its own that a fault test can SIGKILL. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { afterAll, beforeAll } from 'vitest';

import { DEV_API_KEY_FILE } from '../../lib/local/dev-tenant.js';
import { plainEntry } from '../../lib/local/local-process.js';
import { eventually, type Responder, startWebhookReceiver } from '../support/webhook-receiver.js';

/**
 * Ports picked below Linux's ephemeral range (32768-60999), where `listen(0)` never lands: a
 * restart reuses its port seconds after the kill, and beside a second npm test a port the kernel
 * had handed out was given to another process in that gap ("port … is already in use").
 */
const PICKED_PORTS = { from: 20_000, count: 10_000 };

/** A port nothing listens on now, picked at random from PICKED_PORTS. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = PICKED_PORTS.from + Math.floor(Math.random() * PICKED_PORTS.count);
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (bound) {
      await new Promise((resolve) => server.close(resolve));
      return port;
    }
  }
}

const outputs = new WeakMap<ChildProcess, () => string>();

/** The last `chars` a process startLocalMode started has printed (at its log level: ERROR unless asked). */
export function outputOf(child: ChildProcess | undefined, chars = 2000): string {
  return (child && outputs.get(child)?.().slice(-chars)) ?? '';
}

/**
 * Starts `npm start`'s entry point on `dataDir` and waits until it prints its API URL. It runs as
 * local mode's own children do from a clone (plainEntry: the same sources, bundled), not through
 * tsx as `npm start` does: ready after 2.6-2.8 CPU-s instead of 3.2-4.5, and these files start it ten times.
 */
export async function startLocalMode(port: number, dataDir: string, logLevel = 'ERROR'): Promise<ChildProcess> {
  const process_ = spawn(process.execPath, [await plainEntry(resolve('bin/local.ts'))], {
    env: { ...process.env, TIMER_PORT: String(port), TIMER_DATA_DIR: dataDir, TIMER_LOG_LEVEL: logLevel },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  process_.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  process_.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  outputs.set(process_, () => output);
  // Up to two minutes (a wait that ends as soon as it starts): beside a second npm test, local
  // mode took more than 30 s to print its URL.
  await eventually('local mode to start', () => output.includes('Press Ctrl+C'), 480, 250).catch((error: unknown) => {
    throw new Error(`${String(error)}; output so far: ${output.slice(-500)}`);
  });
  return process_;
}

/** What a test file that kills local mode holds: its data folder, its receiver and the running process. */
export interface KilledLocalMode {
  dataDir: string;
  receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  child?: ChildProcess;
}

/**
 * A data folder and a webhook receiver of a test file's own, made before its tests and removed,
 * with the local-mode process it left running, after them. Call it at the top of the file.
 */
export function killedLocalMode(name: string, responders: Record<string, Responder>): KilledLocalMode {
  const fixture = {} as KilledLocalMode;
  beforeAll(async () => {
    fixture.dataDir = await mkdtemp(join(tmpdir(), `timer-${name}-`));
    fixture.receiver = await startWebhookReceiver(responders);
  });
  afterAll(async () => {
    fixture.child?.kill('SIGKILL');
    await fixture.receiver?.close();
    await rm(fixture.dataDir, { recursive: true, force: true });
  });
  return fixture;
}

/**
 * Starts the fixture's local mode on a free port: the process, and what a test calls its api with
 * (the base URL, the development tenant's API key and its headers). A restart reuses the port
 * (`startLocalMode`).
 */
export async function startOnFreePort(local: KilledLocalMode, logLevel?: string) {
  const port = await freePort();
  const child = await startLocalMode(port, local.dataDir, logLevel);
  local.child = child;
  const apiKey = (await readFile(join(local.dataDir, DEV_API_KEY_FILE), 'utf8')).trim();
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
  return { port, child, api: `http://127.0.0.1:${port}`, apiKey, headers };
}
