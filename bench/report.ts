/** Turning the bench's results into text: the progress bar, tables, and the usage the cost model prices. */
import { type FunctionName, FUNCTIONS, QUEUES } from '../functions/contract/topology.js';
import {
  type CostBreakdown,
  IDLE_POLLS_PER_QUEUE_PER_HOUR,
  type IdleUsage,
  type PerTaskUsage,
  total,
} from '../lib/cost-model.js';

/** One line of progress, redrawn in place: a bar, a percentage and what the numbers are. */
export function progressLine(label: string, done: number, totalCount: number, detail: string, width = 24): string {
  const share = totalCount > 0 ? Math.min(1, done / totalCount) : 0;
  const filled = Math.round(share * width);
  return `${label.padEnd(22)} [${'█'.repeat(filled)}${'░'.repeat(width - filled)}] ${String(Math.round(share * 100)).padStart(3)}% ${detail}`;
}

/** Redraws a progress line in place on a terminal; elsewhere (a log file, CI) prints one every 10 s. */
export function progress(label: string, status: () => { done: number; total: number; detail: string }) {
  const live = process.stderr.isTTY;
  const draw = (last = false) => {
    const { done, total: all, detail } = status();
    const line = progressLine(label, done, all, detail);
    process.stderr.write(live ? `\r${line}\u001b[K${last ? '\n' : ''}` : `${line}\n`);
  };
  const timer = setInterval(draw, live ? 500 : 10_000);
  return () => {
    clearInterval(timer);
    draw(true);
  };
}

/** A GitHub-flavoured markdown table; numbers are right-aligned. */
export function markdownTable(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const cells = rows.map((row) => row.map((cell) => String(cell)));
  const align = header.map((_, column) => (rows.every((row) => typeof row[column] === 'number') ? '---:' : '---'));
  return [
    `| ${header.join(' | ')} |`,
    `| ${align.join(' | ')} |`,
    ...cells.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

/** A number for a table: thousands separated, `digits` decimals, or a dash for nothing. */
export function fmt(value: number | undefined, digits = 0): string {
  if (value === undefined || Number.isNaN(value)) return '–';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Assumed latencies of the calls on a function's critical path in the cloud, for billed duration. */
export const CLOUD_LATENCY_MS = { dynamo: 6, sqs: 12 } as const;

/**
 * Lambda's own START, END and REPORT lines (about 350 bytes an invocation) are INFO system logs,
 * which the functions' system log level of WARN keeps out of CloudWatch Logs (lib/timer/pipeline.ts),
 * so none are counted. The functions' own lines, their metrics (EMF) among them, are measured:
 * they are the run's logBytes.
 */
const PLATFORM_LOG_BYTES_PER_INVOCATION = 0;

export interface MeasuredRun {
  readonly tasks: number;
  /** AWS requests by name during the run, the pollers' as `EventSourceMapping.*`. */
  readonly requests: Record<string, number>;
  readonly writeUnits: number;
  readonly readUnits: number;
  /**
   * What the callback's invocations spent waiting for their records' due times: billed like work.
   * Absent from reports made before it was measured.
   */
  readonly callbackWaitMs?: number;
  readonly invocations: Partial<Record<FunctionName, number>>;
  readonly cpuMs: Partial<Record<FunctionName, number>>;
  /** Bytes the functions logged (stdout). */
  readonly logBytes: number;
}

/** Lambda gives a function a whole vCPU at this much memory, and a proportional share below it. */
const FULL_VCPU_MB = 1769;

/**
 * Billed seconds of one invocation: its CPU time, stretched by the share of a vCPU its memory
 * buys, plus the calls on its critical path at cloud latencies. Calls made in parallel (a
 * batch's records, a second's shards) count once.
 */
export function invocationSeconds(fn: FunctionName, cpuMsPerInvocation: number, webhookMs: number): number {
  const { dynamo, sqs } = CLOUD_LATENCY_MS;
  const criticalPathMs: Record<FunctionName, number> = {
    // the task write, and the occupancy index update (sparse mode) or a rate lease renewal; a send
    // only for late arrivals
    api: 2 * dynamo,
    // the two plans and a send
    ticker: 2 * dynamo + sqs,
    // clock read, claim, index read, shard queries, send, marker
    scanner: 5 * dynamo + sqs,
    // read (or lease), target, outcome
    callback: 2 * dynamo + webhookMs,
    // clock, watermarks, markers, index and catch-up claim
    sweeper: 8 * dynamo,
  };
  const cpuShare = Math.min(1, FUNCTIONS[fn].memoryMb / FULL_VCPU_MB);
  return (cpuMsPerInvocation / cpuShare + criticalPathMs[fn]) / 1000;
}

/** What a task costs beyond the pipeline a run measures: its index entries, its target's calls, its egress. */
type TaskExtras = Pick<PerTaskUsage, 'indexEntries' | 'eventBridgeEvents' | 'targetSqsMessages' | 'egressBytes'>;

/** For the full bench's table, which prices the pipeline alone (`npm run plan` prices the rest). */
const PIPELINE_ONLY: TaskExtras = {
  indexEntries: 0,
  eventBridgeEvents: 0,
  targetSqsMessages: 0,
  egressBytes: 0,
};

/** What one task costs, from a run of `tasks` tasks (with the idle rate over its duration already taken off). */
export function perTaskUsage(
  run: MeasuredRun,
  options: {
    webhookMs: number;
    tasksPerApiRequest: number;
    storedBytes: number;
    storedDays: number;
    /** Which functions run traced: by default all but the api, as the construct deploys them. */
    traced?: (fn: FunctionName) => boolean;
  },
  extras: TaskExtras = PIPELINE_ONLY,
): PerTaskUsage {
  const perTask = (value: number) => value / run.tasks;
  const sqsRequests = Object.entries(run.requests)
    .filter(([name]) => name.includes('SQS.'))
    .reduce((sum, [, count]) => sum + count, 0);
  const functions = Object.keys(FUNCTIONS) as FunctionName[];
  const invocations = functions.reduce((sum, fn) => sum + (run.invocations[fn] ?? 0), 0);
  const traced = options.traced ?? ((fn: FunctionName) => fn !== 'api');
  const tracedInvocations = functions.reduce((sum, fn) => sum + (traced(fn) ? (run.invocations[fn] ?? 0) : 0), 0);
  const gbSeconds =
    functions.reduce((sum, fn) => {
      const count = run.invocations[fn] ?? 0;
      if (count === 0) return sum;
      return (
        sum +
        count * invocationSeconds(fn, (run.cpuMs[fn] ?? 0) / count, options.webhookMs) * (FUNCTIONS[fn].memoryMb / 1024)
      );
    }, 0) +
    ((run.callbackWaitMs ?? 0) / 1000) * (FUNCTIONS.callback.memoryMb / 1024);
  return {
    dynamoWriteUnits: perTask(run.writeUnits),
    dynamoReadUnits: perTask(run.readUnits),
    sqsRequests: perTask(sqsRequests),
    apiRequests: 1 / options.tasksPerApiRequest,
    lambdaInvocations: perTask(invocations),
    tracedInvocations: perTask(tracedInvocations),
    lambdaGbSeconds: perTask(gbSeconds),
    logBytes: perTask(run.logBytes + invocations * PLATFORM_LOG_BYTES_PER_INVOCATION),
    storedBytes: options.storedBytes,
    storedDays: options.storedDays,
    ...extras,
  };
}

/**
 * An idle hour from a measured idle window. The local pollers' receives are replaced by what
 * Lambda's event source mappings make idle (they long-poll 20 s where the local pollers wait
 * 1 s), one mapping per consumed queue.
 */
export function idleUsage(
  run: MeasuredRun & { readonly seconds: number },
  webhookMs: number,
  metricsPublished: number,
): IdleUsage {
  const perHour = (value: number) => (value * 3600) / run.seconds;
  const functionSqs = Object.entries(run.requests)
    .filter(([name]) => name.startsWith('SQS.'))
    .reduce((sum, [, count]) => sum + count, 0);
  const queuesPolled = Object.values(QUEUES).filter((queue) => 'consumer' in queue).length;
  const usage = perTaskUsage(
    { ...run, tasks: 1 },
    { webhookMs, tasksPerApiRequest: Number.POSITIVE_INFINITY, storedBytes: 0, storedDays: 0 },
  );
  return {
    dynamoWriteUnitsPerHour: perHour(run.writeUnits),
    dynamoReadUnitsPerHour: perHour(run.readUnits),
    sqsRequestsPerHour: perHour(functionSqs) + queuesPolled * IDLE_POLLS_PER_QUEUE_PER_HOUR,
    lambdaInvocationsPerHour: perHour(usage.lambdaInvocations),
    lambdaGbSecondsPerHour: perHour(usage.lambdaGbSeconds),
    logBytesPerHour: perHour(usage.logBytes),
    metricsPublished,
  };
}

/** A cost breakdown as table rows, in dollars with `digits` decimals, plus a total row. */
export function costRows(breakdown: CostBreakdown, digits: number): Array<[string, string]> {
  return [
    ...Object.entries(breakdown).map(([component, dollars]): [string, string] => [
      component,
      `$${fmt(dollars, digits)}`,
    ]),
    ['total', `$${fmt(total(breakdown), digits)}`],
  ];
}
