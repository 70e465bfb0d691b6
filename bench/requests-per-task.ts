/**
 * `npm run bench:requests`: what one task costs in AWS requests, capacity units and compute on
 * its way through, measured on local mode (the same handlers and request patterns as the
 * cloud), for the two ways of submitting: one task per POST, and 100 per batch POST. `npm run
 * plan` prices a deployment from what this measures (`--publish` saves it to
 * docs/requests.json).
 *
 * 1. Idle: the timer runs with nothing due; its rate of everything is the fixed cost.
 * 2. Single: tasks submitted one POST each. 3. Batch: the same number, 100 per POST.
 * Each phase's tasks fall due over ten seconds, far enough out to go through the scanner and
 * the unleased first attempt as most timers do (a late arrival, due within about 22 s of its
 * submit, takes the lease). Each phase's counts less the idle rate over the phase's duration,
 * divided by its tasks, are the per-task cost. The timer runs in dense mode (tickEverySecond), as
 * a deployment of a billion a day would: the occupancy index's write per submit depends on how
 * spread out due times are, which ten seconds cannot show. Takes about three minutes.
 */
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';

import { DEFAULT_SETTINGS, type FunctionName, type TimerSettings } from '../functions/contract/topology.js';
import {
  type MeasuredRun,
  REQUESTS_REPORT,
  type RequestsReport,
  type SubmitPhase,
} from '../lib/construct/plan/measured-usage.js';
import { forkTimer } from './timer-child.js';
import type { TimerSnapshot } from './timer-process.js';
import { exitWithUsageIfAsked } from './usage.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '1000' },
    publish: { type: 'boolean', default: false },
    help: { type: 'boolean' },
  },
});
exitWithUsageIfAsked(values.help, 'Usage: npm run bench:requests -- [--tasks N] [--publish]');

const IDLE_SECONDS = 20;
const TASKS = Number(values.tasks);
/** How far ahead of its phase's start the first task is due: past the late-arrival bound. */
const LEAD_MS = 35_000;
const SPREAD_MS = 10_000;
const BATCH = 100;
/** Single POSTs in flight at once, as many callers submitting at the same time. */
const SINGLE_CONCURRENCY = 8;
const SETTINGS: Partial<TimerSettings> = { tickEverySecond: true };

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

const timer = await forkTimer(SETTINGS);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Counters = Omit<MeasuredRun, 'tasks'>;
const countersOf = (snapshot: TimerSnapshot & { logBytes: number }): Counters => ({
  requests: snapshot.requests,
  writeUnits: snapshot.writeUnits,
  readUnits: snapshot.readUnits,
  callbackWaitMs: snapshot.callbackWaitMs,
  invocations: snapshot.invocations,
  cpuMs: snapshot.cpuMs,
  logBytes: snapshot.logBytes,
});
const record = (values: Partial<Record<string, number>>) => values as Record<string, number>;
const combine = (
  a: Record<string, number>,
  b: Record<string, number>,
  how: (a: number, b: number) => number,
): Record<string, number> =>
  Object.fromEntries(
    [...new Set([...Object.keys(a), ...Object.keys(b)])].map((key) => [key, how(a[key] ?? 0, b[key] ?? 0)]),
  );

/** `after - before - idle × seconds`, each counter floored at zero. */
function usageBetween(after: Counters, before: Counters, idle: Counters, seconds: number): Counters {
  const net = (a: number, b: number, rate: number) => Math.max(0, a - b - rate * seconds);
  const byName = (a: Record<string, number>, b: Record<string, number>, rate: Record<string, number>) =>
    combine(
      combine(a, b, (x, y) => x - y),
      rate,
      (x, r) => Math.max(0, x - r * seconds),
    );
  return {
    requests: byName(after.requests, before.requests, idle.requests),
    writeUnits: net(after.writeUnits, before.writeUnits, idle.writeUnits),
    readUnits: net(after.readUnits, before.readUnits, idle.readUnits),
    callbackWaitMs: net(after.callbackWaitMs ?? 0, before.callbackWaitMs ?? 0, idle.callbackWaitMs ?? 0),
    invocations: byName(record(after.invocations), record(before.invocations), record(idle.invocations)),
    cpuMs: byName(record(after.cpuMs), record(before.cpuMs), record(idle.cpuMs)),
    logBytes: net(after.logBytes, before.logBytes, idle.logBytes),
  };
}

async function post(path: string, body: unknown): Promise<{ id?: string; results?: Array<{ task: { id: string } }> }> {
  const response = await fetch(`${timer.apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${timer.apiKey}` },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
  return response.json() as Promise<{ id?: string; results?: Array<{ task: { id: string } }> }>;
}

const taskDue = (firstDueMs: number, index: number) => ({
  dueAt: firstDueMs + Math.floor((index * SPREAD_MS) / TASKS),
  target: { type: 'http', url: hookUrl },
  payload: { orderId: `order-${index}`, amountCents: 1999 },
});

async function phase(idle: Counters, tasksPerRequest: number): Promise<SubmitPhase> {
  const before = countersOf(await timer.snapshot());
  const startedAt = Date.now();
  const firstDueMs = startedAt + LEAD_MS;
  const ids: string[] = [];
  if (tasksPerRequest === 1) {
    let next = 0;
    const worker = async () => {
      while (next < TASKS) ids.push((await post('/v1/tasks', taskDue(firstDueMs, next++))).id ?? '');
    };
    await Promise.all(Array.from({ length: SINGLE_CONCURRENCY }, worker));
  } else {
    for (let offset = 0; offset < TASKS; offset += tasksPerRequest) {
      const tasks = Array.from({ length: Math.min(tasksPerRequest, TASKS - offset) }, (_, index) =>
        taskDue(firstDueMs, offset + index),
      );
      ids.push(...((await post('/v1/tasks/batch', { tasks })).results ?? []).map((result) => result.task.id));
    }
  }
  if (Date.now() > firstDueMs - 22_000)
    throw new Error('submitting took so long that some tasks became late arrivals; run with fewer --tasks');
  for (let polls = 0; polls < 240 && !ids.every((id) => delivered.has(id)); polls++) await sleep(500);
  const missing = ids.filter((id) => !delivered.has(id)).length;
  if (missing > 0) throw new Error(`${missing} tasks were not delivered`);
  // Let the last outcomes' writes and the queue's deletes land before counting.
  await sleep(2000);
  const seconds = (Date.now() - startedAt) / 1000;
  return {
    tasks: ids.length,
    seconds,
    tasksPerRequest,
    ...usageBetween(countersOf(await timer.snapshot()), before, idle, seconds),
  };
}

process.stderr.write(`measuring ${IDLE_SECONDS} s idle (dense mode)…\n`);
await sleep(5000); // let start-up work (first ticks, first sweep) pass
const idleBefore = countersOf(await timer.snapshot());
await sleep(IDLE_SECONDS * 1000);
const zero: Counters = {
  requests: {},
  writeUnits: 0,
  readUnits: 0,
  callbackWaitMs: 0,
  invocations: {},
  cpuMs: {},
  logBytes: 0,
};
const idleTotal = usageBetween(countersOf(await timer.snapshot()), idleBefore, zero, 0);
const perSecond = (value: number) => value / IDLE_SECONDS;
const idlePerSecond: Counters = {
  requests: combine(idleTotal.requests, {}, perSecond),
  writeUnits: perSecond(idleTotal.writeUnits),
  readUnits: perSecond(idleTotal.readUnits),
  callbackWaitMs: perSecond(idleTotal.callbackWaitMs ?? 0),
  invocations: combine(record(idleTotal.invocations), {}, perSecond),
  cpuMs: combine(record(idleTotal.cpuMs), {}, perSecond),
  logBytes: perSecond(idleTotal.logBytes),
};

process.stderr.write(`submitting ${TASKS} tasks one per POST…\n`);
const single = await phase(idlePerSecond, 1);
process.stderr.write(`submitting ${TASKS} tasks ${BATCH} per POST…\n`);
const batch = await phase(idlePerSecond, BATCH);
const storage = await timer.storage();
const taskItems = storage.byKind.B;
await timer.stop();
receiver.close();

const perTask = (run: SubmitPhase, value: number | undefined) => Number(((value ?? 0) / run.tasks).toFixed(4));
const functions = [
  ...new Set([...Object.keys(single.invocations), ...Object.keys(batch.invocations)]),
] as FunctionName[];
const rows = [
  ...[...new Set([...Object.keys(single.requests), ...Object.keys(batch.requests)])]
    .sort()
    .map((name) => [name, single.requests[name], batch.requests[name]] as const),
  ['DynamoDB write units', single.writeUnits, batch.writeUnits] as const,
  ['DynamoDB read units', single.readUnits, batch.readUnits] as const,
  ...functions.map((fn) => [`Lambda ${fn} invocations`, single.invocations[fn], batch.invocations[fn]] as const),
  ['Lambda callback wait (ms)', single.callbackWaitMs, batch.callbackWaitMs] as const,
  ['log bytes', single.logBytes, batch.logBytes] as const,
].map(([name, one, hundred]) => ({
  measure: name,
  'per task (single POST)': perTask(single, one),
  'per task (batch POST)': perTask(batch, hundred),
}));
console.table(rows);
console.log(
  'EventSourceMapping.* are the local pollers standing in for Lambda event source mappings; their rate ' +
    'depends on the number of pollers and their long-poll wait, not on tasks (npm run plan prices what Lambda makes).',
);

if (values.publish) {
  const report: RequestsReport = {
    measuredAt: new Date().toISOString(),
    machine: { cpus: cpus().length, node: process.version },
    settings: { ...SETTINGS, shardCount: DEFAULT_SETTINGS.shardCount },
    idlePerSecond,
    phases: { single, batch },
    storedBytesPerTask: taskItems ? taskItems.bytes / taskItems.items : 0,
  };
  await writeFile(REQUESTS_REPORT, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`saved to ${REQUESTS_REPORT}`);
}
