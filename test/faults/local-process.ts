/** Local mode as `npm start` runs it, in a process of its own that a fault test can SIGKILL. */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

import { eventually } from '../support/webhook-receiver.js';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts `npm start`'s entry point on `dataDir` and waits until it prints its API URL. */
export async function startLocalMode(port: number, dataDir: string): Promise<ChildProcess> {
  const process_ = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], {
    env: { ...process.env, TIMER_PORT: String(port), TIMER_DATA_DIR: dataDir, TIMER_LOG_LEVEL: 'ERROR' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  process_.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  process_.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  await eventually(
    `local mode to start (output so far: ${output.slice(-500)})`,
    () => output.includes('Press Ctrl+C'),
    120,
    250,
  );
  return process_;
}
