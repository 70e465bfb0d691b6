/**
 * What the bench measured, read as the cost model's units: a measured run's requests, CPU and
 * logs become per-task usage and billed Lambda seconds. `npm run bench:requests -- --publish`
 * saves its phases here (REQUESTS_REPORT) and `npm run plan` prices them; the bench imports this
 * module, never the reverse, so the planner runs from the package without the bench.
 */
import { type FunctionName, FUNCTIONS, QUEUES, type TimerSettings } from '../../../functions/contract/topology.js';
import { IDLE_POLLS_PER_QUEUE_PER_HOUR, type IdleUsage, type PerTaskUsage } from './cost-model.js';

/** Assumed latencies of the calls on a function's critical path in the cloud, for billed duration. */
export const CLOUD_LATENCY_MS = { dynamo: 6, sqs: 12 } as const;

/**
 * Lambda's own START, END and REPORT lines (about 350 bytes an invocation) are INFO system logs,
 * which the functions' system log level of WARN keeps out of CloudWatch Logs (lib/construct/timer/pipeline.ts),
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

/**
 * Billed seconds per invocation of a function in a measured run, for concurrency planning and
 * pricing: its work, plus, for the callback, the time it waited for its records' due times.
 */
export function secondsPerInvocation(run: MeasuredRun, fn: FunctionName, webhookMs: number): number {
  const invocations = run.invocations[fn] ?? 0;
  if (invocations === 0) return 0;
  const waitedSeconds = fn === 'callback' ? (run.callbackWaitMs ?? 0) / invocations / 1000 : 0;
  return invocationSeconds(fn, (run.cpuMs[fn] ?? 0) / invocations, webhookMs) + waitedSeconds;
}

export const REQUESTS_REPORT = 'docs/requests.json';

/** One phase's usage, idle taken off, for `tasks` tasks submitted `tasksPerRequest` to a POST. */
export interface SubmitPhase extends MeasuredRun {
  readonly seconds: number;
  readonly tasksPerRequest: number;
  /** Whether each task carried an idempotencyKey, as the TypeScript client's do by default. */
  readonly keyed?: boolean;
  /** Bytes of the API's answers (status line, headers, body): what leaves AWS towards the caller; absent from older reports. */
  readonly responseBytes?: number;
}

/**
 * One second seeded as densely as a deployment's average second: `tasksPerShard` tasks on each of
 * `shardCount` shards. What its shard Queries read (the scan, then the sweeper's overdue pass)
 * is the scan's read cost per task at that density; the phases above, a hundred tasks a second
 * over 80 shards, leave every Query nearly empty and so cannot show it.
 */
export interface DenseSecond {
  readonly tasks: number;
  readonly shardCount: number;
  readonly tasksPerShard: number;
  /** Read units of every Query on the second's partitions. */
  readonly queryReadUnits: number;
}

export interface RequestsReport {
  readonly measuredAt: string;
  readonly machine: { readonly cpus: number; readonly node: string };
  readonly settings: Partial<TimerSettings> & { readonly shardCount: number };
  /** What the idle timer did in a second: the fixed cost the phases are measured above. */
  readonly idlePerSecond: Omit<MeasuredRun, 'tasks'>;
  /** The keyed phases, the dense second and the byte counts are absent from reports made before they were measured. */
  readonly phases: {
    readonly single: SubmitPhase;
    readonly batch: SubmitPhase;
    readonly keyedSingle?: SubmitPhase;
    readonly keyedBatch?: SubmitPhase;
  };
  readonly denseSecond?: DenseSecond;
  /** A delivered task item's billed size (its bytes plus DynamoDB's 100 bytes of overhead). */
  readonly storedBytesPerTask: number;
  /** An idempotency key item's billed size; it is kept as long as its task. */
  readonly storedBytesPerKey?: number;
  /** A webhook delivery's request as sent (request line, headers, body): the egress of one call. */
  readonly webhookRequestBytes?: number;
}

/** Which way a submit comes in: through API Gateway's HTTP API, or straight to the api function's URL. */
export type FrontDoor = 'api-gateway' | 'function-url';

/** The share of deliveries going to each target type (they add up to 1). */
export interface TargetMix {
  readonly http: number;
  readonly sqs: number;
  readonly eventbridge: number;
}

export interface PhaseCostOptions {
  readonly webhookMs: number;
  /** Average days from submit to due, and days a finished task is kept. */
  readonly averageDelayDays: number;
  readonly retentionDays: number;
  readonly frontDoor: FrontDoor;
  /** Index entries a task puts in the bizId and bizType indexes: 2 when it carries both. */
  readonly indexEntries: number;
  readonly targets: TargetMix;
  /** Which functions run traced: by default all but the api. */
  readonly traced?: (fn: FunctionName) => boolean;
}

/**
 * The phase's requests as Lambda's event source mappings would make them. Under load a mapping's
 * long poll returns full batches of ten, which it deletes ten at a time: one receive per delete.
 * Local mode's pollers wait a second at most and often come back with fewer, so their receive
 * count says how they poll, not what a task costs.
 */
function withLambdaPolling(phase: SubmitPhase): SubmitPhase {
  const deletes = phase.requests['EventSourceMapping.SQS.DeleteMessageBatch'] ?? 0;
  return { ...phase, requests: { ...phase.requests, 'EventSourceMapping.SQS.ReceiveMessage': deletes } };
}

/**
 * Read units the scan of a task's second spends on it at a realistic density, from the dense
 * second. The phases' own Queries are taken off with the idle rate (each reads its one unit
 * whether its shard holds a task or not), so this is added to their reads, not swapped for them.
 */
export const scanReadUnitsPerTask = (report: RequestsReport): number =>
  report.denseSecond ? report.denseSecond.queryReadUnits / report.denseSecond.tasks : 0;

/** What a report lacks of what the plan prices, for the plan to say so rather than price it as nothing. */
export function unmeasured(report: RequestsReport): string[] {
  return [
    ...(report.denseSecond ? [] : ['scan reads at a dense second']),
    ...(report.phases.keyedBatch && report.phases.keyedSingle ? [] : ['keyed submits']),
    ...(report.webhookRequestBytes === undefined ? ['webhook egress'] : []),
    ...(report.phases.single.responseBytes === undefined ? ["the API's answers' egress"] : []),
  ];
}

/** What one task submitted as in `phase` costs, in the units the cost model prices. */
export function usageOfPhase(report: RequestsReport, phase: SubmitPhase, options: PhaseCostOptions): PerTaskUsage {
  const { targets } = options;
  const usage = perTaskUsage(
    withLambdaPolling({ ...phase, readUnits: phase.readUnits + scanReadUnitsPerTask(report) * phase.tasks }),
    {
      webhookMs: options.webhookMs,
      tasksPerApiRequest: phase.tasksPerRequest,
      // A keyed task's key item lives as long as the task does.
      storedBytes: report.storedBytesPerTask + (phase.keyed ? (report.storedBytesPerKey ?? 0) : 0),
      storedDays: options.averageDelayDays + options.retentionDays,
      ...(options.traced && { traced: options.traced }),
    },
    {
      indexEntries: options.indexEntries,
      eventBridgeEvents: targets.eventbridge,
      targetSqsMessages: targets.sqs,
      egressBytes: targets.http * (report.webhookRequestBytes ?? 0) + (phase.responseBytes ?? 0) / phase.tasks,
    },
  );
  // A function URL has no charge of its own: the api's invocation, already counted, is the price.
  return options.frontDoor === 'function-url' ? { ...usage, apiRequests: 0 } : usage;
}
