/**
 * The parent's side of bench/timer-process.ts: forks local mode into a process of its own and
 * asks it for its counters. Shared by `npm run bench` and `npm run bench:requests`, so both
 * measure the same way.
 */
import { type ChildProcess, fork } from 'node:child_process';

import type { TimerSettings } from '../functions/contract/topology.js';
import type { TimerMessage, TimerRequest, TimerSnapshot, TimerStorage } from './timer-process.js';

/** Sends a request to a child process and waits for the reply of the given type. */
export function ask<Reply extends { type: string }>(
  child: ChildProcess,
  message: unknown,
  type: Reply['type'],
): Promise<Reply> {
  return new Promise((resolve) => {
    const onMessage = (reply: Reply) => {
      if (reply.type !== type) return;
      child.off('message', onMessage);
      resolve(reply);
    };
    child.on('message', onMessage);
    child.send(message as object);
  });
}

/** How the bench's children run: TypeScript through tsx, output piped to the parent. */
export const childOptions = {
  execArgv: ['--import', 'tsx'],
  stdio: ['ignore', 'pipe', 'pipe', 'ipc'] as ['ignore', 'pipe', 'pipe', 'ipc'],
};

export interface TimerChild {
  /** The handlers' process: its emulators are its children. */
  readonly pid: number;
  readonly apiUrl: string;
  readonly apiKey: string;
  /** The child's counters, and the bytes its functions have logged so far. */
  snapshot(): Promise<TimerSnapshot & { readonly logBytes: number }>;
  storage(): Promise<TimerStorage>;
  /** Makes `count` new tenants and answers their API keys. */
  tenants(count: number): Promise<string[]>;
  resetKeys(): void;
  stop(): Promise<void>;
}

/** Local mode with `settings`, in a process of its own (with `env` added to this one's), once it is serving. */
export async function forkTimer(
  settings: Partial<TimerSettings> = {},
  env: Record<string, string> = {},
): Promise<TimerChild> {
  const child = fork('bench/timer-process.ts', [], {
    ...childOptions,
    env: { ...process.env, ...env, BENCH_TIMER_SETTINGS: JSON.stringify(settings) },
  });
  let logBytes = 0;
  child.stdout?.on('data', (chunk: Buffer) => {
    logBytes += chunk.length;
  });
  child.stderr?.resume();
  const ready = await new Promise<Extract<TimerMessage, { type: 'ready' }>>((resolve) =>
    child.on('message', (message: TimerMessage) => message.type === 'ready' && resolve(message)),
  );
  return {
    pid: child.pid ?? 0,
    apiUrl: ready.apiUrl,
    apiKey: ready.apiKey,
    async snapshot() {
      const { snapshot } = await ask<{ type: 'snapshot'; snapshot: TimerSnapshot }>(
        child,
        { type: 'snapshot' } satisfies TimerRequest,
        'snapshot',
      );
      return { ...snapshot, logBytes };
    },
    async storage() {
      return (
        await ask<{ type: 'storage'; storage: TimerStorage }>(
          child,
          { type: 'storage' } satisfies TimerRequest,
          'storage',
        )
      ).storage;
    },
    async tenants(count: number) {
      return (
        await ask<{ type: 'tenants'; apiKeys: string[] }>(
          child,
          { type: 'tenants', count } satisfies TimerRequest,
          'tenants',
        )
      ).apiKeys;
    },
    resetKeys() {
      child.send({ type: 'reset' } satisfies TimerRequest);
    },
    async stop() {
      child.send({ type: 'stop' } satisfies TimerRequest);
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}
