/** What `npm run bench:requests -- --publish` saves and `npm run plan` prices. */
import type { FunctionName, TimerSettings } from '../functions/contract/topology.js';
import type { PerTaskUsage } from '../lib/cost-model.js';
import { type MeasuredRun, perTaskUsage } from './report.js';

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
