/**
 * `npm run bench:requests`: what one task costs in AWS requests, capacity units and compute on
 * its way through, measured on local mode (the same handlers and request patterns as the
 * cloud), for the two ways of submitting: one task per POST, and 100 per batch POST. `npm run
 * plan` prices a deployment from what this measures (`--publish` saves it to
 * docs/requests.json).
 *
 * 1. Idle: the timer runs with nothing due; its rate of everything is the fixed cost.
 * 2. Single: tasks submitted one POST each. 3. Batch: the same number, 100 per POST. 4 and 5:
 * the same two with an idempotencyKey on every task, as the TypeScript client sends them.
 * 6. A dense second, on a timer of its own with few shards: as many tasks on each shard of one
 * second as a billion a day puts there on 80 shards, so its Queries (the scan's, then the
 * sweeper's overdue pass, brought forward to seconds after) read what they would in the cloud.
 * Each phase's tasks fall due over ten seconds, far enough out to go through the scanner and
 * the unleased first attempt as most timers do (a late arrival, due within about 22 s of its
 * submit, takes the lease). Each phase's counts less the idle rate over the phase's duration,
 * divided by its tasks, are the per-task cost. The timer runs in dense mode (tickEverySecond), as
 * a deployment of a billion a day would: the occupancy index's write per submit depends on how
 * spread out due times are, which ten seconds cannot show. Every POST comes from a tenant of its
 * own, as at a billion a day, when some 2,750 api instances serve thousands of tenants: a request
 * is then almost never its tenant's second on its instance within a second (the rate-limit lease)
 * or within the 30 s a tenant and its key are cached, so each takes a lease write and reads its
 * tenant and key, which one tenant on a few instances would share out. Takes about six minutes.
 */
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';

import {
  IDEMPOTENCY_PARTITION_PREFIX,
  partitionKind,
  TASK_PARTITION_PREFIX,
  taskBucketPrefix,
} from '../functions/adapters/dynamo/table-schema.js';
import { DEFAULT_SETTINGS, type FunctionName, type TimerSettings } from '../functions/contract/topology.js';
import { bucketOf } from '../functions/core/kernel/ids.js';
import {
  type DenseSecond,
  type MeasuredRun,
  REQUESTS_REPORT,
  type RequestsReport,
  type SubmitPhase,
} from '../lib/construct/plan/measured-usage.js';
import { fmt } from '../lib/construct/plan/table-format.js';
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
/** How far ahead of its phase's start the first task is due: past the late-arrival bound (`isLateArrival`: about 14 s) with room for submits on a loaded machine. */
const LEAD_MS = 60_000;
const SPREAD_MS = 10_000;
const BATCH = 100;
/** Single POSTs in flight at once, as many callers submitting at the same time. */
const SINGLE_CONCURRENCY = 8;
const SETTINGS: Partial<TimerSettings> = { tickEverySecond: true };
/** A billion tasks a day over the default 80 shards: the tasks one shard holds in an average second. */
const DENSE_TASKS_PER_SHARD = Math.round(1e9 / 86_400 / DEFAULT_SETTINGS.shardCount);
const DENSE_SHARDS = 4;
/** The overdue pass looks at a second this long after it; the sweeper runs once a minute. */
const DENSE_OVERDUE_GRACE_SECONDS = 5;

const delivered = new Set<string>();
/** Bytes of the webhook calls received: request line, headers and body, as they left the callback. */
let webhookBytes = 0;
const headerBytes = (rawHeaders: readonly string[]) =>
  rawHeaders.reduce((sum, part) => sum + Buffer.byteLength(part) + 2, 0) + 2;
const receiver = createServer((request, response) => {
  let body = '';
  webhookBytes += Buffer.byteLength(`${request.method} ${request.url} HTTP/1.1\r\n`) + headerBytes(request.rawHeaders);
  request.on('data', (chunk: Buffer) => {
    webhookBytes += chunk.length;
    body += chunk.toString('utf8');
  });
  request.on('end', () => {
    delivered.add((JSON.parse(body) as { id: string }).id);
    response.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

let timer = await forkTimer(SETTINGS);
/** A tenant for every POST of a phase: the single phases' thousand, which the batch phases' ten reuse. */
const apiKeys = await timer.tenants(TASKS);
let posts = 0;
const nextTenantsKey = () => apiKeys[posts++ % apiKeys.length] ?? '';
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

/** Bytes of the API's answers, as they would leave AWS: status line, headers and body. */
let responseBytes = 0;

async function post(
  path: string,
  body: unknown,
  apiKey: string,
): Promise<{ id?: string; results?: Array<{ task: { id: string } }> }> {
  const response = await fetch(`${timer.apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`${path} answered ${response.status}: ${text}`);
  responseBytes += `HTTP/1.1 ${response.status} Created\r\n\r\n`.length + Buffer.byteLength(text);
  for (const [name, value] of response.headers) responseBytes += `${name}: ${value}\r\n`.length;
  return JSON.parse(text) as { id?: string; results?: Array<{ task: { id: string } }> };
}

let keysMade = 0;
const taskDue = (firstDueMs: number, index: number, keyed: boolean, spreadMs = SPREAD_MS, count = TASKS) => ({
  dueAt: firstDueMs + Math.floor((index * spreadMs) / count),
  target: { type: 'http', url: hookUrl },
  payload: { orderId: `order-${index}`, amountCents: 1999 },
  ...(keyed && { idempotencyKey: `bench-${keysMade++}` }),
});

async function submitInBatches(
  tasks: ReadonlyArray<ReturnType<typeof taskDue>>,
  apiKey: () => string,
): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; offset < tasks.length; offset += BATCH) {
    const results =
      (await post('/v1/tasks/batch', { tasks: tasks.slice(offset, offset + BATCH) }, apiKey())).results ?? [];
    ids.push(...results.map((result) => result.task.id));
  }
  return ids;
}

async function phase(idle: Counters, tasksPerRequest: number, keyed: boolean): Promise<SubmitPhase> {
  const before = countersOf(await timer.snapshot());
  const startedAt = Date.now();
  const firstDueMs = startedAt + LEAD_MS;
  const responseBytesBefore = responseBytes;
  let ids: string[] = [];
  if (tasksPerRequest === 1) {
    let next = 0;
    const worker = async () => {
      while (next < TASKS)
        ids.push((await post('/v1/tasks', taskDue(firstDueMs, next++, keyed), nextTenantsKey())).id ?? '');
    };
    await Promise.all(Array.from({ length: SINGLE_CONCURRENCY }, worker));
  } else {
    ids = await submitInBatches(
      Array.from({ length: TASKS }, (_, index) => taskDue(firstDueMs, index, keyed)),
      nextTenantsKey,
    );
  }
  const answeredBytes = responseBytes - responseBytesBefore;
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
    keyed,
    responseBytes: answeredBytes,
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
const single = await phase(idlePerSecond, 1, false);
process.stderr.write(`submitting ${TASKS} tasks ${BATCH} per POST…\n`);
const batch = await phase(idlePerSecond, BATCH, false);
process.stderr.write(`submitting ${TASKS} keyed tasks one per POST…\n`);
const keyedSingle = await phase(idlePerSecond, 1, true);
process.stderr.write(`submitting ${TASKS} keyed tasks ${BATCH} per POST…\n`);
const keyedBatch = await phase(idlePerSecond, BATCH, true);
const webhookRequestBytes = webhookBytes / delivered.size;
const storage = await timer.storage();
const taskItems = storage.byKind[partitionKind(TASK_PARTITION_PREFIX)];
const keyItems = storage.byKind[partitionKind(IDEMPOTENCY_PARTITION_PREFIX)];
await timer.stop();

/**
 * The dense second: its tasks all fall due in one second, submitted in batches; once they are
 * delivered and the sweeper's overdue pass has looked at the second, every Query of its
 * partitions is counted.
 */
async function denseSecond(): Promise<DenseSecond> {
  timer = await forkTimer({
    ...SETTINGS,
    shardCount: DENSE_SHARDS,
    overdueGraceSeconds: DENSE_OVERDUE_GRACE_SECONDS,
  });
  const tasks = DENSE_TASKS_PER_SHARD * DENSE_SHARDS;
  const dueSecondMs = Math.ceil((Date.now() + LEAD_MS) / 1000) * 1000;
  const ids = await submitInBatches(
    Array.from({ length: tasks }, (_, index) => taskDue(dueSecondMs, index, false, 1000, tasks)),
    () => timer.apiKey,
  );
  for (let polls = 0; polls < 240 && !ids.every((id) => delivered.has(id)); polls++) await sleep(500);
  if (!ids.every((id) => delivered.has(id))) throw new Error('the dense second was not delivered');
  // The sweeper's next run after the grace: it runs once a minute.
  await sleep(Math.max(0, dueSecondMs + (DENSE_OVERDUE_GRACE_SECONDS + 65) * 1000 - Date.now()));
  const bucket = bucketOf(Math.floor(dueSecondMs / 1000), DEFAULT_SETTINGS.bucketCount);
  const { taskQueryReadUnits } = await timer.snapshot();
  await timer.stop();
  return {
    tasks,
    shardCount: DENSE_SHARDS,
    tasksPerShard: DENSE_TASKS_PER_SHARD,
    queryReadUnits: Object.entries(taskQueryReadUnits)
      .filter(([key]) => key.startsWith(taskBucketPrefix(bucket)))
      .reduce((sum, [, units]) => sum + units, 0),
  };
}
process.stderr.write(`seeding a dense second (${DENSE_TASKS_PER_SHARD} tasks on each of ${DENSE_SHARDS} shards)…\n`);
const dense = await denseSecond();
receiver.close();

const phases = { single, batch, keyedSingle, keyedBatch };
const perTask = (run: SubmitPhase, value: number | undefined) => Number(((value ?? 0) / run.tasks).toFixed(4));
const names = (pick: (run: SubmitPhase) => object) => [
  ...new Set(Object.values(phases).flatMap((run) => Object.keys(pick(run)))),
];
const rows = [
  ...names((run) => run.requests)
    .sort()
    .map((name) => [name, (run: SubmitPhase) => run.requests[name]] as const),
  ['DynamoDB write units', (run: SubmitPhase) => run.writeUnits] as const,
  ['DynamoDB read units', (run: SubmitPhase) => run.readUnits] as const,
  ...(names((run) => run.invocations) as FunctionName[]).map(
    (fn) => [`Lambda ${fn} invocations`, (run: SubmitPhase) => run.invocations[fn]] as const,
  ),
  ['Lambda callback wait (ms)', (run: SubmitPhase) => run.callbackWaitMs] as const,
  ['log bytes', (run: SubmitPhase) => run.logBytes] as const,
  ['API answer bytes', (run: SubmitPhase) => run.responseBytes] as const,
].map(([name, value]) => ({
  measure: name,
  ...Object.fromEntries(Object.entries(phases).map(([phaseName, run]) => [phaseName, perTask(run, value(run))])),
}));
console.table(rows);
console.log(
  `dense second: ${fmt(dense.queryReadUnits / dense.tasks, 3)} Query read units per task ` +
    `(${dense.tasksPerShard} tasks on each of ${dense.shardCount} shards, scan and overdue pass); ` +
    `a webhook call is ${fmt(webhookRequestBytes)} bytes`,
);
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
    phases,
    denseSecond: dense,
    storedBytesPerTask: taskItems ? taskItems.bytes / taskItems.items : 0,
    storedBytesPerKey: keyItems ? keyItems.bytes / keyItems.items : 0,
    webhookRequestBytes,
  };
  await writeFile(REQUESTS_REPORT, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`saved to ${REQUESTS_REPORT}`);
}
