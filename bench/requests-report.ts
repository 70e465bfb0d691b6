/** What `npm run bench:requests -- --publish` saves and `npm run plan` prices. */
import type { TimerSettings } from '../functions/contract/topology.js';
import type { PerTaskUsage } from '../lib/construct/plan/cost-model.js';
import { type MeasuredRun, perTaskUsage } from './report.js';

export const REQUESTS_REPORT = 'docs/requests.json';

/** One phase's usage, idle taken off, for `tasks` tasks submitted `tasksPerRequest` to a POST. */
export interface SubmitPhase extends MeasuredRun {
  readonly seconds: number;
  readonly tasksPerRequest: number;
}

export interface RequestsReport {
  readonly measuredAt: string;
  readonly machine: { readonly cpus: number; readonly node: string };
  readonly settings: Partial<TimerSettings> & { readonly shardCount: number };
  /** What the idle timer did in a second: the fixed cost the phases are measured above. */
  readonly idlePerSecond: Omit<MeasuredRun, 'tasks'>;
  readonly phases: { readonly single: SubmitPhase; readonly batch: SubmitPhase };
  /** A delivered task item's billed size (its bytes plus DynamoDB's 100 bytes of overhead). */
  readonly storedBytesPerTask: number;
}

/** Which way a submit comes in: through API Gateway's HTTP API, or straight to the api function's URL. */
export type FrontDoor = 'api-gateway' | 'function-url';

export interface PhaseCostOptions {
  readonly webhookMs: number;
  /** Average days from submit to due, and days a finished task is kept. */
  readonly averageDelayDays: number;
  readonly retentionDays: number;
  readonly frontDoor: FrontDoor;
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

/** What one task submitted as in `phase` costs, in the units the cost model prices. */
export function usageOfPhase(report: RequestsReport, phase: SubmitPhase, options: PhaseCostOptions): PerTaskUsage {
  const usage = perTaskUsage(withLambdaPolling(phase), {
    webhookMs: options.webhookMs,
    tasksPerApiRequest: phase.tasksPerRequest,
    storedBytes: report.storedBytesPerTask,
    storedDays: options.averageDelayDays + options.retentionDays,
  });
  // A function URL has no charge of its own: the api's invocation, already counted, is the price.
  return options.frontDoor === 'function-url' ? { ...usage, apiRequests: 0 } : usage;
}
