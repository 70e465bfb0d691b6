/**
 * `npm run bench:requests`: what one task costs in AWS requests on its way through,
 * measured on local mode (the same handlers and request patterns as the cloud).
 *
 * 1. Idle: the timer runs with nothing due; its requests per second are the fixed cost.
 * 2. Single: tasks submitted one POST each. 3. Batch: tasks submitted 100 per POST.
 * Each phase's requests minus the idle rate over the phase's duration, divided by its
 * tasks, is the per-task cost. Takes about a minute and a half.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { startLocalTimer } from '../lib/local/runtime.js';

const IDLE_SECONDS = 20;
const SINGLE_TASKS = 200;
const BATCH_TASKS = 1000;

const delivered = new Set<string>();
const receiver = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => {
    body += chunk.toString('utf8');
  });
  request.on('end', () => {
    delivered.add((JSON.parse(body) as { id: string }).id);
    response.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

const timer = await startLocalTimer({ port: 0, logLevel: 'SILENT' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const diff = (after: Record<string, number>, before: Record<string, number>) =>
  Object.fromEntries(Object.entries(after).map(([name, count]) => [name, count - (before[name] ?? 0)]));

async function post(path: string, body: unknown): Promise<{ id?: string; results?: Array<{ task: { id: string } }> }> {
  const response = await fetch(`${timer.apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${timer.apiKey}` },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  return response.json() as Promise<{ id?: string; results?: Array<{ task: { id: string } }> }>;
}

const task = (index: number, count: number) => ({
  // Spread over ten seconds starting five seconds out, so they go through the scanner.
  dueAt: Date.now() + 5000 + Math.floor((index * 10_000) / count),
  target: { type: 'http', url: hookUrl },
  payload: { index },
});

async function phase(submit: () => Promise<string[]>) {
  const before = timer.requestCounts();
  const startedAt = Date.now();
  const ids = await submit();
  for (let polls = 0; polls < 120 && !ids.every((id) => delivered.has(id)); polls++) await sleep(500);
  const missing = ids.filter((id) => !delivered.has(id)).length;
  if (missing > 0) throw new Error(`${missing} tasks were not delivered`);
  return { tasks: ids.length, seconds: (Date.now() - startedAt) / 1000, requests: diff(timer.requestCounts(), before) };
}

process.stderr.write(`measuring ${IDLE_SECONDS} s idle…\n`);
await sleep(5000); // let start-up work (first ticks, first sweep) pass
const idleBefore = timer.requestCounts();
await sleep(IDLE_SECONDS * 1000);
const idlePerSecond = Object.fromEntries(
  Object.entries(diff(timer.requestCounts(), idleBefore)).map(([name, count]) => [name, count / IDLE_SECONDS]),
);

process.stderr.write(`submitting ${SINGLE_TASKS} tasks one per POST…\n`);
const single = await phase(async () => {
  const ids: string[] = [];
  for (let index = 0; index < SINGLE_TASKS; index++)
    ids.push((await post('/v1/tasks', task(index, SINGLE_TASKS))).id ?? '');
  return ids;
});
process.stderr.write(`submitting ${BATCH_TASKS} tasks 100 per POST…\n`);
const batch = await phase(async () => {
  const ids: string[] = [];
  for (let offset = 0; offset < BATCH_TASKS; offset += 100) {
    const tasks = Array.from({ length: 100 }, (_, index) => task(offset + index, BATCH_TASKS));
    ids.push(...((await post('/v1/tasks/batch', { tasks })).results ?? []).map((result) => result.task.id));
  }
  return ids;
});

const perTask = (run: Awaited<ReturnType<typeof phase>>, name: string) =>
  Math.max(0, ((run.requests[name] ?? 0) - (idlePerSecond[name] ?? 0) * run.seconds) / run.tasks);
const names = [
  ...new Set([...Object.keys(idlePerSecond), ...Object.keys(single.requests), ...Object.keys(batch.requests)]),
].sort();
const rows = names.map((name) => ({
  request: name,
  'idle per second': Number((idlePerSecond[name] ?? 0).toFixed(2)),
  'per task (single POST)': Number(perTask(single, name).toFixed(3)),
  'per task (batch POST)': Number(perTask(batch, name).toFixed(3)),
}));
console.table(rows);
console.log(
  'EventSourceMapping.* are the local pollers standing in for Lambda event source mappings; ' +
    'their idle rate depends on the number of pollers and their long-poll wait, not on tasks.',
);
await timer.stop();
receiver.close();
