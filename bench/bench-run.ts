/** The run behind `npm run bench` (bench/bench.ts says what it does), loaded once its flags are read. */
import { fork } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { join } from 'node:path';

import { Queue } from 'bullmq';
import * as esbuild from 'esbuild';

import { isTaskPartition, TASK_PARTITION_PREFIX } from '../functions/adapters/dynamo/table-schema.js';
import { DEFAULT_SETTINGS, FUNCTIONS } from '../functions/contract/topology.js';
import { isLateArrival } from '../functions/core/kernel/task-kernel.js';
import { idleMonth } from '../lib/construct/plan/cost-model.js';
import { idleUsage, type MeasuredRun } from '../lib/construct/plan/measured-usage.js';
import { timerStackInventory } from '../lib/construct/plan/stack-inventory.js';
import { fmt } from '../lib/construct/plan/table-format.js';
import { flags } from './bench-flags.js';
import type { BenchJob, WorkerMessage, WorkerRequest } from './bullmq-worker.js';
import { monotonicUsAt, profilingEnv, readProfiles, renderProfile, summarizeProfiles } from './profile.js';
import { type BenchRedis, ensureRedisInstalled, startRedis } from './redis.js';
import {
  type BenchReport,
  emulatorCpuPerTask,
  headline,
  type LongHorizon,
  renderMarkdown,
  renderReportChart,
  type ScenarioResult,
} from './render.js';
import { progress } from './report.js';
import { histogram, type KeyActivity, peakPerKey, perSecond, summarize } from './stats.js';
import { ask, childOptions, forkTimer } from './timer-child.js';
import type { TimerStorage } from './timer-process.js';
const quick = flags.quick ?? false;
const RATES = (flags.rates ?? (quick ? '100,200,500' : '100,200,500,1000,2000')).split(',').map(Number);
const BURSTS = (flags.bursts ?? (quick ? '2000' : '10000,20000')).split(',').map(Number);
const STEADY_SECONDS = quick ? 15 : 60;
const LONG_HORIZON_TASKS = quick ? 2000 : 20_000;
const IDLE_MINUTES = Number(flags['idle-minutes'] ?? (quick ? 1 : 4));
const WEBHOOK_MS = Number(flags['webhook-ms']);
/**
 * Tasks are submitted this long before they are due: 5 s past the nearest due time that a submit
 * still hands straight to the delivery queue as a late arrival (`isLateArrival`), whose first
 * attempt takes a lease. Most timers are set further ahead than that, and a run that submitted
 * every task inside it would price only the late path (two task writes each, not a receipt).
 */
const LEAD_MS = lateArrivalHorizonMs() + 5_000;
/**
 * The nearest due time, from the submit's start, that is past the late-arrival bound whatever the
 * submit's place in its second: found by asking `isLateArrival`, so it follows the rule's changes.
 */
function lateArrivalHorizonMs(): number {
  let leadMs = 0;
  while (
    [0, 999].some((createdAtMs) => isLateArrival(createdAtMs + leadMs, createdAtMs, DEFAULT_SETTINGS.lookaheadSeconds))
  )
    leadMs += 1000;
  return leadMs;
}
/** After the last task is due, how long to wait for stragglers before counting the rest lost. */
const DRAIN_MS = 30_000;
/** A burst may take longer to deliver than a steady second; its window is wider. */
const BURST_DRAIN_MS = 120_000;
const BATCH = 100;
const SUBMITS_IN_FLIGHT = 8;

const log = (line: string) => process.stderr.write(`${line}\n`);

// ── The webhook receiver ───────────────────────────────────────────────────────────────

interface Receipt {
  readonly key: string;
  readonly dueAtMs: number;
  readonly receivedAtMs: number;
}

const receipts = new Map<string, Receipt[]>();
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const receivedAtMs = Date.now();
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { dueAt: string; payload: { key: string } };
    const scenario = body.payload.key.slice(0, body.payload.key.lastIndexOf('/'));
    const list = receipts.get(scenario) ?? [];
    list.push({ key: body.payload.key, dueAtMs: Date.parse(body.dueAt), receivedAtMs });
    receipts.set(scenario, list);
    response.writeHead(204).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

// ── Systems under test ─────────────────────────────────────────────────────────────────

interface BenchTask {
  /** `<scenario>/<seq>`: the receiver files arrivals under the scenario. */
  readonly key: string;
  readonly dueAtMs: number;
}

interface Measure {
  readonly requests: Record<string, number>;
  readonly cpuMs: Record<string, number>;
  readonly invocations: Record<string, number>;
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly callbackWaitMs: number;
  readonly peakRssBytes: number;
  readonly logBytes: number;
  readonly keys?: KeyActivity;
}

interface System {
  readonly name: 'timer' | 'bullmq';
  submit(tasks: readonly BenchTask[]): Promise<void>;
  measure(): Promise<Measure>;
  /** The keys of the tasks still waiting or in delivery: a backlog, not a loss. */
  pending(): Promise<Set<string>>;
  stop(): Promise<void>;
}

/**
 * Every call the bench makes to the timer's API goes through here, with its headers in one
 * place (an API key, once the API takes one, is one line here).
 */
async function callTimerApi(
  apiUrl: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<unknown> {
  const response = await fetch(`${apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  if (response.status !== 201)
    throw new Error(`${path} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  return response.json();
}

interface TimerSystem extends System {
  /** The handlers' process. */
  readonly pid: number;
  storage(): Promise<TimerStorage>;
  resetKeys(): void;
}

/** The timer in local mode; given `profileDir`, its processes write their CPU profiles there. */
async function startTimer(profileDir?: string): Promise<TimerSystem> {
  const timer = await forkTimer({}, profileDir ? profilingEnv(profileDir) : {});
  return {
    name: 'timer',
    pid: timer.pid,
    async submit(tasks) {
      await callTimerApi(
        timer.apiUrl,
        '/v1/tasks/batch',
        {
          tasks: tasks.map((task) => ({
            dueAt: task.dueAtMs,
            target: { type: 'http', url: hookUrl },
            payload: { key: task.key },
          })),
        },
        { authorization: `Bearer ${timer.apiKey}` },
      );
    },
    async measure() {
      const snapshot = await timer.snapshot();
      return {
        requests: snapshot.requests,
        cpuMs: {
          ...(snapshot.cpuMs as Record<string, number>),
          'whole process': snapshot.processCpuMs,
          ...snapshot.emulatorCpuMs,
        },
        invocations: snapshot.invocations,
        writeUnits: snapshot.writeUnits,
        readUnits: snapshot.readUnits,
        callbackWaitMs: snapshot.callbackWaitMs,
        peakRssBytes: snapshot.peakRssBytes,
        logBytes: snapshot.logBytes,
        keys: new Map(snapshot.keys.map(([key, seconds]) => [key, new Map(seconds)])),
      };
    },
    storage: () => timer.storage(),
    async pending() {
      return new Set((await timer.storage()).pendingKeys);
    },
    resetKeys: () => timer.resetKeys(),
    stop: () => timer.stop(),
  };
}

async function startBullmq(redis: BenchRedis, queueName: string): Promise<System> {
  await redis.client.flushall();
  const queue = new Queue<BenchJob>(queueName, { connection: { host: '127.0.0.1', port: redis.port } });
  const worker = fork('bench/bullmq-worker.ts', [], {
    ...childOptions,
    env: { ...process.env, BENCH_QUEUE: queueName, BENCH_REDIS_PORT: String(redis.port) },
  });
  worker.stdout?.resume();
  worker.stderr?.resume();
  await new Promise<void>((resolve) =>
    worker.on('message', (message: WorkerMessage) => message.type === 'ready' && resolve()),
  );
  return {
    name: 'bullmq',
    async submit(tasks) {
      const now = Date.now();
      await queue.addBulk(
        tasks.map((task) => ({
          name: 'timer',
          data: { key: task.key, dueAtMs: task.dueAtMs, url: hookUrl },
          // Like the timer's maxAttempts, and nothing kept once done, as the timer's TTL does later.
          opts: {
            delay: Math.max(0, task.dueAtMs - now),
            attempts: 8,
            backoff: { type: 'exponential', delay: 5000 },
            removeOnComplete: true,
          },
        })),
      );
    },
    async measure() {
      const [snapshot, usage] = await Promise.all([
        ask<Extract<WorkerMessage, { type: 'snapshot' }>>(
          worker,
          { type: 'snapshot' } satisfies WorkerRequest,
          'snapshot',
        ),
        redis.usage(),
      ]);
      return {
        requests: { 'Redis.commands': usage.commands },
        cpuMs: { worker: snapshot.cpuMs, redis: usage.cpuMs },
        invocations: {},
        writeUnits: 0,
        readUnits: 0,
        callbackWaitMs: 0,
        peakRssBytes: snapshot.peakRssBytes + usage.rssBytes,
        logBytes: 0,
      };
    },
    async pending() {
      const jobs = await queue.getJobs(['delayed', 'waiting', 'active', 'prioritized']);
      return new Set(jobs.map((job) => job.data.key));
    },
    async stop() {
      worker.send({ type: 'stop' } satisfies WorkerRequest);
      await new Promise((resolve) => worker.once('exit', resolve));
      await queue.close();
    },
  };
}

// ── Running a scenario ─────────────────────────────────────────────────────────────────

interface SubmitReport {
  readonly seconds: number;
  /** When each submitted task's batch was accepted, by key. */
  readonly acceptedAtMs: Map<string, number>;
}

/**
 * Submits in batches of 100, each no earlier than `leadMs` before its first task is due, 8 at a
 * time. A system that cannot take tasks in as fast as they fall due would drag a run on for
 * minutes: batches not started by `deadlineMs` are left out, and the run counts only those sent.
 */
async function submitPaced(
  system: System,
  tasks: readonly BenchTask[],
  leadMs: number,
  onBatch: () => void,
  deadlineMs = Number.POSITIVE_INFINITY,
): Promise<SubmitReport> {
  const startedAt = Date.now();
  const acceptedAtMs = new Map<string, number>();
  const batches: BenchTask[][] = [];
  for (let start = 0; start < tasks.length; start += BATCH) batches.push(tasks.slice(start, start + BATCH));
  let next = 0;
  const worker = async () => {
    while (next < batches.length && Date.now() < deadlineMs) {
      const batch = batches[next++] ?? [];
      const wait = (batch[0]?.dueAtMs ?? 0) - leadMs - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      await system.submit(batch);
      const now = Date.now();
      for (const task of batch) acceptedAtMs.set(task.key, now);
      onBatch();
    }
  };
  await Promise.all(Array.from({ length: SUBMITS_IN_FLIGHT }, worker));
  return { seconds: (Date.now() - startedAt) / 1000, acceptedAtMs };
}

const LATENESS_EDGES = [50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 5000, 10000];

const diff = (after: Record<string, number>, before: Record<string, number>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(after)
      .map(([name, value]) => [name, value - (before[name] ?? 0)])
      .filter(([, value]) => (value as number) > 0),
  );
/** What a system used between two of its measures: requests, units, callback waits, invocations, CPU and log bytes. */
const usageBetween = (before: Measure, after: Measure) => ({
  requests: diff(after.requests, before.requests),
  writeUnits: after.writeUnits - before.writeUnits,
  readUnits: after.readUnits - before.readUnits,
  callbackWaitMs: after.callbackWaitMs - before.callbackWaitMs,
  invocations: diff(after.invocations, before.invocations),
  cpuMs: diff(after.cpuMs, before.cpuMs),
  logBytes: after.logBytes - before.logBytes,
});
const perTask = (values: Record<string, number>, tasks: number, digits = 3) =>
  Object.fromEntries(Object.entries(values).map(([name, value]) => [name, Number((value / tasks).toFixed(digits))]));

/** The busiest task partition keys while a hot second was delivered: the shard count at work. */
export function hotKeysOf(keys: KeyActivity | undefined, fromSecond: number) {
  const delivery: KeyActivity = new Map(
    [...(keys ?? new Map())].map(([key, seconds]) => [
      key,
      new Map([...seconds].filter(([second]) => second >= fromSecond)),
    ]),
  );
  const taskKeys = [...delivery.keys()].filter((key) => isTaskPartition(key) && (delivery.get(key)?.size ?? 0) > 0);
  return {
    taskKeys: taskKeys.length,
    writes: peakPerKey(delivery, 'writes', TASK_PARTITION_PREFIX),
    reads: peakPerKey(delivery, 'reads', TASK_PARTITION_PREFIX),
    submitWrites: peakPerKey(keys ?? new Map(), 'writes', TASK_PARTITION_PREFIX),
  };
}

async function runScenario(
  system: System,
  scenario: string,
  planned: readonly BenchTask[],
  options: { leadMs: number; drainMs: number; submitDeadlineMs?: number },
): Promise<ScenarioResult> {
  receipts.set(`${system.name}:${scenario}`, []);
  const before = await system.measure();
  let submitted = 0;
  const startedAt = Date.now();
  const arrived = () => receipts.get(`${system.name}:${scenario}`) ?? [];
  const done = progress(`${system.name} ${scenario}`, () => ({
    done: new Set(arrived().map((receipt) => receipt.key)).size,
    total: planned.length,
    detail: `submitted ${fmt(submitted)}/${fmt(planned.length)}, delivered ${fmt(new Set(arrived().map((receipt) => receipt.key)).size)}, ${Math.round((Date.now() - startedAt) / 1000)} s`,
  }));
  const submit = await submitPaced(
    system,
    planned,
    options.leadMs,
    () => {
      submitted = Math.min(planned.length, submitted + BATCH);
    },
    options.submitDeadlineMs,
  );
  const tasks = planned.filter((task) => submit.acceptedAtMs.has(task.key));
  const lastDue = Math.max(...tasks.map((task) => task.dueAtMs));
  while (
    new Set(arrived().map((receipt) => receipt.key)).size < tasks.length &&
    Date.now() < lastDue + options.drainMs
  ) {
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  // Stragglers and duplicates.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  done();
  const after = await system.measure();
  // What is still waiting is read before the arrivals are counted: a task neither arrived by then
  // nor waiting before then was lost (a delivery reaches the receiver before it is marked done).
  const pending = await system.pending();

  const firstArrival = new Map<string, Receipt>();
  for (const receipt of arrived()) if (!firstArrival.has(receipt.key)) firstArrival.set(receipt.key, receipt);
  const undelivered = tasks.filter((task) => !firstArrival.has(task.key));
  const backlog = undelivered.filter((task) => pending.has(task.key)).length;
  const lateness = [...firstArrival.values()].map(
    (receipt) => receipt.receivedAtMs - Math.max(receipt.dueAtMs, submit.acceptedAtMs.get(receipt.key) ?? 0),
  );
  const firstDue = Math.min(...tasks.map((task) => task.dueAtMs));
  const firstDueSecondMs = Math.floor(firstDue / 1000) * 1000;
  const arrivals = [...firstArrival.values()].map((receipt) => receipt.receivedAtMs);
  const series = perSecond(arrivals, firstDueSecondMs);
  const lastArrival = Math.max(firstDueSecondMs, ...arrivals);
  const run: MeasuredRun & { seconds: number } = {
    tasks: tasks.length,
    seconds: (Date.now() - startedAt) / 1000,
    ...usageBetween(before, after),
  };
  return {
    system: system.name,
    scenario,
    tasks: tasks.length,
    submitPerSecond: tasks.length / submit.seconds,
    deliveredPerSecond: {
      mean: firstArrival.size / Math.max(1, (lastArrival - firstDueSecondMs) / 1000),
      peak: Math.max(0, ...series),
    },
    lateness: summarize(lateness),
    early: arrived().filter((receipt) => receipt.receivedAtMs < receipt.dueAtMs).length,
    lost: undelivered.length - backlog,
    backlog,
    duplicates: arrived().length - firstArrival.size,
    deliveredWithinSeconds: (lastArrival - firstDueSecondMs) / 1000,
    requestsPerTask: perTask(run.requests, tasks.length),
    cpuMsPerTask: perTask(run.cpuMs, tasks.length),
    peakRssMb: after.peakRssBytes / 2 ** 20,
    series,
    latenessHistogram: histogram(lateness, LATENESS_EDGES),
    run,
    // The scan of a second happens a lookahead before it: the delivery phase starts a little earlier.
    ...(after.keys && { hotKeys: hotKeysOf(after.keys, Math.floor(firstDue / 1000) - 5) }),
  };
}

function steadyTasks(name: string, rate: number, seconds: number): BenchTask[] {
  const start = Date.now() + LEAD_MS + 2000;
  return Array.from({ length: rate * seconds }, (_, index) => ({
    key: `${name}/${index}`,
    dueAtMs: start + Math.floor((index * 1000) / rate),
  }));
}

function burstTasks(name: string, count: number, submitPerSecond: number): BenchTask[] {
  // Due once all are surely in, spread over one second, and at least LEAD_MS after the last is in.
  const dueSecondMs = (Math.ceil((Date.now() + (count / submitPerSecond) * 1500 + LEAD_MS) / 1000) + 1) * 1000;
  return Array.from({ length: count }, (_, index) => ({
    key: `${name}/${index}`,
    dueAtMs: dueSecondMs + (index % 1000),
  }));
}

// ── The scenarios ──────────────────────────────────────────────────────────────────────

const results: ScenarioResult[] = [];
/**
 * How fast each system takes tasks in, so a burst can be due just after all of it is in: the
 * timer's is measured by the long-horizon scenario, run first; BullMQ's addBulk is far faster.
 */
const submitCapacity: Record<string, number> = { bullmq: 5000 };

async function steadyAndBurst(start: () => Promise<System>, systemName: string) {
  for (const rate of RATES) {
    const system = await start();
    const scenario = `steady ${rate}/s`;
    const tasks = steadyTasks(`${systemName}:${scenario}`, rate, STEADY_SECONDS);
    const lastDue = tasks[tasks.length - 1]?.dueAtMs ?? Date.now();
    results.push(
      await runScenario(system, scenario, tasks, { leadMs: LEAD_MS, drainMs: DRAIN_MS, submitDeadlineMs: lastDue }),
    );
    await system.stop();
  }
  for (const count of BURSTS) {
    const system = await start();
    (system as Partial<TimerSystem>).resetKeys?.();
    const scenario = `burst ${count}`;
    const tasks = burstTasks(`${systemName}:${scenario}`, count, submitCapacity[systemName] ?? 1000);
    results.push(
      await runScenario(system, scenario, tasks, { leadMs: Number.POSITIVE_INFINITY, drainMs: BURST_DRAIN_MS }),
    );
    await system.stop();
  }
}

async function longHorizon(): Promise<LongHorizon> {
  const system = await startTimer();
  const now = Date.now();
  const scenario = 'timer:long horizon';
  receipts.set(scenario, []);
  // Spread evenly over due times from one minute to thirty days ahead, submitted as fast as the API takes them.
  const span = 30 * 86_400_000 - 60_000;
  const tasks = Array.from({ length: LONG_HORIZON_TASKS }, (_, index) => ({
    key: `${scenario}/${index}`,
    dueAtMs: now + 60_000 + Math.floor((index * span) / LONG_HORIZON_TASKS),
  }));
  let submitted = 0;
  const done = progress('timer long horizon', () => ({
    done: submitted,
    total: tasks.length,
    detail: `submitted ${fmt(submitted)}`,
  }));
  const submit = await submitPaced(system, tasks, Number.POSITIVE_INFINITY, () => {
    submitted = Math.min(tasks.length, submitted + BATCH);
  });
  done();
  // What is stored, not which tasks still wait: that list would be the whole run.
  const { byKind, statuses } = await system.storage();
  const storage = { byKind, statuses };
  await system.stop();
  const bytes = Object.values(storage.byKind).reduce((sum, kind) => sum + kind.bytes, 0);
  const early = (receipts.get(scenario) ?? []).filter((receipt) => receipt.receivedAtMs < receipt.dueAtMs).length;
  return {
    tasks: tasks.length,
    submitPerSecond: tasks.length / submit.seconds,
    storage,
    bytesPerTask: bytes / tasks.length,
    early,
  };
}

/** Runs beside the BullMQ scenarios: it only counts requests, which the other load does not change. */
async function idle(): Promise<{
  minutes: number;
  perHour: Record<string, number>;
  run: MeasuredRun & { seconds: number };
}> {
  const system = await startTimer();
  // A deployment that has been used: its clock runs (the first submit starts it), and nothing is due for a month.
  await system.submit([{ key: 'timer:idle/0', dueAtMs: Date.now() + 30 * 86_400_000 }]);
  // Past start-up work (the first ticker and sweeper runs happen at once).
  await new Promise((resolve) => setTimeout(resolve, 5000));
  const before = await system.measure();
  const startedAt = Date.now();
  log(`timer idle: counting requests for ${IDLE_MINUTES} min, beside the next scenarios`);
  await new Promise((resolve) => setTimeout(resolve, IDLE_MINUTES * 60_000));
  log('timer idle: done');
  const after = await system.measure();
  await system.stop();
  const seconds = (Date.now() - startedAt) / 1000;
  const requests = diff(after.requests, before.requests);
  return {
    minutes: IDLE_MINUTES,
    perHour: Object.fromEntries(
      Object.entries(requests).map(([name, count]) => [name, Math.round((count * 3600) / seconds)]),
    ),
    run: {
      tasks: 0,
      seconds,
      ...usageBetween(before, after),
    },
  };
}

/** Minified ESM bundles as the stack builds them (the AWS SDK is in the Lambda runtime, so left out). */
async function bundleSizes(): Promise<Record<string, number>> {
  const sizes: Record<string, number> = {};
  for (const [name, spec] of Object.entries(FUNCTIONS)) {
    const built = await esbuild.build({
      entryPoints: [spec.entry],
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'node',
      target: 'node22',
      external: ['@aws-sdk/*'],
      write: false,
      logLevel: 'silent',
    });
    sizes[name] = built.outputFiles.reduce((sum, file) => sum + file.contents.length, 0);
  }
  return sizes;
}

// ── Main ───────────────────────────────────────────────────────────────────────────────

/** Writes the report, its tables and its chart under reports/ (and, publishing, into docs/). */
async function writeReport(report: BenchReport, publish: boolean): Promise<void> {
  const markdown = renderMarkdown(report);
  const chart = renderReportChart(report);
  await mkdir('reports', { recursive: true });
  const stamp = report.startedAt.replace(/[:.]/g, '-');
  const json = `${JSON.stringify(report, null, 2)}\n`;
  for (const base of [`bench-${stamp}`, 'latest']) {
    await writeFile(join('reports', `${base}.json`), json);
    await writeFile(join('reports', `${base}.md`), markdown);
    await writeFile(join('reports', `${base}.svg`), chart);
  }
  if (publish) {
    await writeFile('docs/benchmarks.json', json);
    await writeFile('docs/benchmarks.svg', chart);
    const page = await readFile('docs/benchmarks.md', 'utf8');
    // A replacer function: the tables' dollar amounts must not be read as `$1`-style patterns.
    await writeFile(
      'docs/benchmarks.md',
      page.replace(
        /(<!-- bench:start -->\n)[\s\S]*(<!-- bench:end -->)/,
        (_match, start: string, end: string) => `${start}${markdown}\n${end}`,
      ),
    );
  }
  process.stdout.write(
    `${markdown}\nReport: reports/bench-${stamp}.json, chart: reports/bench-${stamp}.svg\n${headline(report)}\n`,
  );
}

// `--from <report.json>` renders a saved run again (after a price or model change) without running anything.
if (flags.from) {
  await writeReport(JSON.parse(await readFile(flags.from, 'utf8')) as BenchReport, flags.publish ?? false);
  process.exit(0);
}

/**
 * `--profile`: the timer alone at the highest steady rate, every process of it profiled; the
 * summary covers the seconds its tasks fall due, when submits and deliveries both run.
 */
async function profileHottestRate(): Promise<void> {
  const rate = Math.max(...RATES);
  const dir = join('reports', `profile-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  await mkdir(dir, { recursive: true });
  const system = await startTimer(dir);
  const scenario = `steady ${rate}/s`;
  const tasks = steadyTasks(`timer:${scenario}`, rate, STEADY_SECONDS);
  const firstDue = tasks[0]?.dueAtMs ?? Date.now();
  const lastDue = tasks[tasks.length - 1]?.dueAtMs ?? Date.now();
  const result = await runScenario(system, scenario, tasks, {
    leadMs: LEAD_MS,
    drainMs: DRAIN_MS,
    submitDeadlineMs: lastDue,
  });
  const window = { fromUs: monotonicUsAt(firstDue), toUs: monotonicUsAt(lastDue) };
  await system.stop();
  const summary = summarizeProfiles(await readProfiles(dir, system.pid), window, process.cwd());
  const cpu = result.cpuMsPerTask;
  process.stdout.write(
    [
      `timer ${scenario}: ${fmt(result.tasks)} tasks, delivered ${fmt(result.deliveredPerSecond.mean)}/s, p99 ${fmt(result.lateness.p99)} ms, ${result.early} early, ${result.lost} lost, ${result.backlog} backlog`,
      `CPU ms per task (profiling on): handlers' process ${fmt(cpu['whole process'], 3)}, emulators ${fmt(emulatorCpuPerTask(result), 3)} (dynalite ${fmt(cpu.dynalite, 3)}, fauxqs ${fmt(cpu.fauxqs, 3)})`,
      '',
      renderProfile(summary),
      '',
      `Profiles: ${dir}/`,
      '',
    ].join('\n'),
  );
}

if (flags.profile) {
  await profileHottestRate();
  receiver.close();
  process.exit(0);
}

const startedAt = new Date();
log(
  `bench: rates ${RATES.join(', ')}/s for ${STEADY_SECONDS} s, bursts ${BURSTS.join(', ')}, long horizon ${LONG_HORIZON_TASKS}, idle ${IDLE_MINUTES} min${quick ? ' (quick)' : ''}`,
);
const horizon = await longHorizon();
submitCapacity.timer = horizon.submitPerSecond;
await steadyAndBurst(() => startTimer(), 'timer');
const idling = idle();
if (!flags['no-peer']) {
  ensureRedisInstalled(log);
  const redis = await startRedis();
  let queues = 0;
  await steadyAndBurst(() => startBullmq(redis, `bench-${++queues}`), 'bullmq');
  await redis.stop();
}
const idleRun = await idling;
const bundles = await bundleSizes();

// Metrics an idle deployment still publishes every hour: the sweeper's four. The fixed resources are the stack's.
const idleCost = idleMonth(idleUsage(idleRun.run, WEBHOOK_MS, 4), timerStackInventory());
const report: BenchReport = {
  startedAt: startedAt.toISOString(),
  machine: { cpus: cpus().length, node: process.version },
  settings: {
    rates: RATES,
    steadySeconds: STEADY_SECONDS,
    bursts: BURSTS,
    leadMs: LEAD_MS,
    webhookMs: WEBHOOK_MS,
    shardCount: DEFAULT_SETTINGS.shardCount,
    batch: BATCH,
  },
  results,
  longHorizon: horizon,
  idle: { minutes: idleRun.minutes, requestsPerHour: idleRun.perHour },
  bundleBytes: bundles,
  cost: { idleMonth: idleCost },
};
await writeReport(report, flags.publish ?? false);
receiver.close();
process.exit(0);
