/**
 * The quotas a deployment needs, from the full bench's report (docs/benchmarks.json): its steady
 * run nearest 1,000 tasks/s is the measurement the planner sizes and prices a deployment by.
 */
import { DEFAULT_SETTINGS } from '../../../functions/contract/topology.js';
import type { IdleMonth, PerTaskUsage } from './cost-model.js';
import { type MeasuredRun, perTaskUsage, secondsPerInvocation } from './measured-usage.js';
import { type Quotas, quotasFor } from './quotas.js';

/** One scenario of the bench's report, as far as the planner reads it. */
export interface MeasuredScenario {
  readonly system: string;
  readonly scenario: string;
  readonly tasks: number;
  /** Neither delivered nor waiting when the run's window closed. */
  readonly lost: number;
  /** Still waiting when the window closed: the system could not keep up. */
  readonly backlog: number;
  readonly run: MeasuredRun & { readonly seconds: number };
}

/** The bench's report (bench/render.ts's BenchReport), as far as the planner reads it. */
export interface MeasuredBenchReport<Scenario extends MeasuredScenario = MeasuredScenario> {
  readonly settings: { readonly steadySeconds: number; readonly webhookMs: number; readonly batch: number };
  readonly results: readonly Scenario[];
  /** Billed bytes of the stored items by kind (the partition key's prefix) after the long-horizon run. */
  readonly longHorizon: { readonly storage: { readonly byKind: Record<string, { items: number; bytes: number }> } };
  readonly idle: { readonly requestsPerHour: Record<string, number> };
  /** Priced when the run was made: an idle deployment's month. */
  readonly cost: { readonly idleMonth: IdleMonth };
}

/** The timer's steady run nearest 1,000 tasks/s that delivered everything: what the cost model prices. */
export function referenceRun<Scenario extends MeasuredScenario>(
  report: MeasuredBenchReport<Scenario>,
): Scenario | undefined {
  const complete = report.results.filter(
    (result) =>
      result.system === 'timer' && result.scenario.startsWith('steady') && result.lost === 0 && result.backlog === 0,
  );
  const rate = (result: Scenario) => result.tasks / report.settings.steadySeconds;
  return [...complete].sort((a, b) => Math.abs(rate(a) - 1000) - Math.abs(rate(b) - 1000))[0];
}

export interface CostOptions {
  readonly webhookMs: number;
  readonly tasksPerApiRequest: number;
  /** Average days from submit to due, and days a finished task is kept. */
  readonly averageDelayDays: number;
  readonly retentionDays: number;
}

export const defaultCostOptions = (report: MeasuredBenchReport): CostOptions => ({
  webhookMs: report.settings.webhookMs,
  tasksPerApiRequest: report.settings.batch,
  averageDelayDays: 1,
  retentionDays: DEFAULT_SETTINGS.retentionDays,
});

/** What one task costs, from the reference run less what idling costs over its length. */
export function usageOf(report: MeasuredBenchReport, reference: MeasuredScenario, options: CostOptions): PerTaskUsage {
  const { run } = reference;
  const idlePerSecond = (name: string) => (report.idle.requestsPerHour[name] ?? 0) / 3600;
  const busy: MeasuredRun = {
    ...run,
    requests: Object.fromEntries(
      Object.entries(run.requests).map(([name, count]) => [
        name,
        Math.max(0, count - idlePerSecond(name) * run.seconds),
      ]),
    ),
  };
  const tasks = report.longHorizon.storage.byKind.B;
  return perTaskUsage(busy, {
    webhookMs: options.webhookMs,
    tasksPerApiRequest: options.tasksPerApiRequest,
    storedBytes: tasks ? tasks.bytes / tasks.items : 0,
    storedDays: options.averageDelayDays + options.retentionDays,
  });
}

/**
 * What a deployment of `perDay` timers with `peakPerSecond` due in its busiest second needs of
 * the stack's limits and of AWS's quotas, from the per-task usage the bench measured.
 */
export function measuredQuotas(
  report: MeasuredBenchReport,
  options: { perDay: number; peakPerSecond: number; tasksPerApiRequest: number },
): Quotas {
  const reference = referenceRun(report);
  if (!reference) throw new Error('the bench report has no steady run that delivered everything; run npm run bench');
  const costOptions = { ...defaultCostOptions(report), tasksPerApiRequest: options.tasksPerApiRequest };
  const usage = usageOf(report, reference, costOptions);
  return quotasFor({
    ...options,
    apiSecondsPerRequest: secondsPerInvocation(reference.run, 'api', costOptions.webhookMs),
    writeUnitsPerTask: usage.dynamoWriteUnits,
    readUnitsPerTask: usage.dynamoReadUnits,
    // The updates a task's own item takes in the second it is delivered, as the full bench's run measured them.
    deliveryWriteUnitsPerTask: Math.round((reference.run.requests['DynamoDB.UpdateItem'] ?? 0) / reference.tasks),
  });
}
