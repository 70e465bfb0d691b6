/**
 * A Redis of the bench's own for the BullMQ side: installed from the OS packages when the
 * machine has none, started on a free port with persistence off (the timer's local mode keeps
 * its queues in memory too), and watched for CPU, memory and commands served.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

import { Redis } from 'ioredis';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const onPath = (command: string) => {
  try {
    execFileSync('which', [command], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** Installs redis-server with apt when it is missing (as root, which this machine's user is). */
export function ensureRedisInstalled(log: (line: string) => void): void {
  if (onPath('redis-server')) return;
  log('redis-server not found; installing it with apt-get (needs root)…');
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'redis-server'], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

export interface RedisUsage {
  readonly cpuMs: number;
  readonly commands: number;
  readonly rssBytes: number;
}

export interface BenchRedis {
  readonly port: number;
  readonly client: Redis;
  usage(): Promise<RedisUsage>;
  stop(): Promise<void>;
}

/** CPU time of a process from /proc, in ms (user + system). */
function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / 100;
}

export async function startRedis(): Promise<BenchRedis> {
  const port = await freePort();
  const server: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1'],
    {
      stdio: 'ignore',
    },
  );
  // The client retries until the server listens, and holds commands meanwhile: the first PING answers once it is up.
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null, retryStrategy: () => 100 });
  client.on('error', () => undefined);
  await client.ping();
  return {
    port,
    client,
    async usage() {
      const [stats, memory] = await Promise.all([client.info('commandstats'), client.info('memory')]);
      const commands = [...stats.matchAll(/calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
      const rssBytes = Number(/used_memory_rss:(\d+)/.exec(memory)?.[1] ?? 0);
      return { cpuMs: processCpuMs(server.pid ?? 0), commands, rssBytes };
    },
    async stop() {
      client.disconnect();
      server.kill('SIGTERM');
      await new Promise((resolve) => server.once('exit', resolve));
    },
  };
}
