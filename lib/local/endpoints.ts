/**
 * Where a running local mode can be reached. dynalite's LevelDB is locked by the process
 * that opened the data folder, so another process (the `timer` CLI) cannot open it too;
 * it reads this file instead and talks to that process's dynalite and API.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const LOCAL_ENDPOINTS_FILE = 'local-endpoints.json';

export interface LocalEndpoints {
  /** The process running local mode; the file outlives it when that process is killed. */
  readonly pid: number;
  readonly apiUrl: string;
  readonly dynamodbEndpoint: string;
  readonly tableName: string;
}

export async function writeLocalEndpoints(dataDir: string, endpoints: LocalEndpoints): Promise<void> {
  await writeFile(join(dataDir, LOCAL_ENDPOINTS_FILE), `${JSON.stringify(endpoints, null, 2)}\n`);
}

export async function removeLocalEndpoints(dataDir: string): Promise<void> {
  await rm(join(dataDir, LOCAL_ENDPOINTS_FILE), { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The endpoints of the local mode running on this data folder, or undefined if none is (a stale file is ignored). */
export async function runningLocalEndpoints(dataDir: string): Promise<LocalEndpoints | undefined> {
  let text: string;
  try {
    text = await readFile(join(dataDir, LOCAL_ENDPOINTS_FILE), 'utf8');
  } catch {
    return undefined;
  }
  const endpoints = JSON.parse(text) as LocalEndpoints;
  return isAlive(endpoints.pid) ? endpoints : undefined;
}
