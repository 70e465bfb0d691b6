/**
 * A bench report as text and a chart. Everything here is computed from the saved report, so
 * a run can be rendered again (`npm run bench -- --from <report.json>`) after the prices or the
 * cost model change, and `npm run plan` prices a deployment from the same numbers.
 */
import { costPerTask, type IdleMonth, perMillion, PRICES } from '../lib/construct/plan/cost-model.js';
import {
  defaultCostOptions,
  type MeasuredBenchReport,
  type MeasuredScenario,
  referenceRun,
  usageOf,
} from '../lib/construct/plan/measured-quotas.js';
import type { MeasuredRun } from '../lib/construct/plan/measured-usage.js';
import { fmt, markdownTable } from '../lib/construct/plan/table-format.js';
import { renderChart } from './chart.js';
import { costRows } from './report.js';
import type { Bin, KeyPeak, LatenessSummary } from './stats.js';
import type { TimerStorage } from './timer-process.js';

export interface ScenarioResult extends MeasuredScenario {
  readonly system: 'timer' | 'bullmq';
  readonly scenario: string;
  readonly tasks: number;
  readonly submitPerSecond: number;
  readonly deliveredPerSecond: { readonly mean: number; readonly peak: number };
  readonly lateness: LatenessSummary;
  readonly early: number;
  /** Neither delivered nor waiting when the run's window closed. */
  readonly lost: number;
  /** Still waiting when the window closed: the system could not keep up. */
  readonly backlog: number;
  readonly duplicates: number;
  /** From the first task's due second to the last arrival. */
  readonly deliveredWithinSeconds: number;
  readonly requestsPerTask: Record<string, number>;
  readonly cpuMsPerTask: Record<string, number>;
  readonly peakRssMb: number;
  readonly series: number[];
  readonly latenessHistogram: Bin[];
  readonly run: MeasuredRun & { readonly seconds: number };
  readonly hotKeys?: {
    readonly taskKeys: number;
    readonly writes: { readonly busiestSecond: KeyPeak; readonly busiestKey: KeyPeak };
    readonly reads: { readonly busiestSecond: KeyPeak; readonly busiestKey: KeyPeak };
    readonly submitWrites: { readonly busiestSecond: KeyPeak; readonly busiestKey: KeyPeak };
  };
}

export interface LongHorizon {
  readonly tasks: number;
  readonly submitPerSecond: number;
  readonly storage: Omit<TimerStorage, 'pendingKeys'>;
  readonly bytesPerTask: number;
  readonly early: number;
}

export interface BenchReport extends MeasuredBenchReport<ScenarioResult> {
  readonly startedAt: string;
  readonly machine: { readonly cpus: number; readonly node: string };
  readonly settings: {
    readonly rates: number[];
    readonly steadySeconds: number;
    readonly bursts: number[];
    readonly leadMs: number;
    readonly webhookMs: number;
    readonly shardCount: number;
    readonly batch: number;
  };
  readonly results: ScenarioResult[];
  readonly longHorizon: LongHorizon;
  readonly idle: { readonly minutes: number; readonly requestsPerHour: Record<string, number> };
  readonly bundleBytes: Record<string, number>;
  /** Priced when the run was made: an idle deployment's month. */
  readonly cost: { readonly idleMonth: IdleMonth };
}

const sum = (values: Record<string, number>) => Object.values(values).reduce((total, value) => total + value, 0);

/** The emulators a timer run's CPU time is set apart for: they stand in for DynamoDB and SQS. */
const EMULATORS = ['dynalite', 'fauxqs'] as const;

/**
 * CPU ms per task of the system itself: the timer's handlers' process (functions and local
 * runtime, the emulators apart), or all of BullMQ's processes (worker and Redis).
 */
export function systemCpuPerTask(result: ScenarioResult): number {
  const cpu = result.cpuMsPerTask;
  if (result.system === 'bullmq') return sum(cpu);
  return cpu['whole process'] ?? sum(cpu);
}

/** CPU ms per task of the emulators' processes; undefined for BullMQ and for reports made before they were measured. */
export function emulatorCpuPerTask(result: ScenarioResult): number | undefined {
  const measured = EMULATORS.filter((name) => name in result.cpuMsPerTask);
  if (measured.length === 0) return undefined;
  return measured.reduce((total, name) => total + (result.cpuMsPerTask[name] ?? 0), 0);
}

const ratioOf = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || b === 0 ? '–' : `${(a / b).toFixed(2)}×`;

/**
 * The run in one line, the figures issue 25 judges the timer by, each timer ÷ BullMQ: CPU per
 * task at every steady rate, delivered/s at 500/s, p99 lateness at 200/s, and the time the first
 * burst was done after its due second. A scenario the run left out reads `–`.
 */
export function headline(report: BenchReport): string {
  const pair = (scenario: string) => {
    const of = (system: ScenarioResult['system']) =>
      report.results.find((result) => result.system === system && result.scenario === scenario);
    return { ours: of('timer'), peer: of('bullmq') };
  };
  const steady = report.settings.rates.map((rate) => pair(`steady ${rate}/s`));
  const cpu = steady.map(({ ours, peer }) => ratioOf(ours && systemCpuPerTask(ours), peer && systemCpuPerTask(peer)));
  const at500 = pair('steady 500/s');
  const at200 = pair('steady 200/s');
  const burst = pair(`burst ${report.settings.bursts[0]}`);
  return [
    `timer ÷ BullMQ: CPU per task ${cpu.join(', ')} at ${report.settings.rates.join(', ')}/s`,
    `500/s delivered ${ratioOf(at500.ours?.deliveredPerSecond.mean, at500.peer?.deliveredPerSecond.mean)}`,
    `200/s p99 ${ratioOf(at200.ours?.lateness.p99, at200.peer?.lateness.p99)}`,
    `burst done ${ratioOf(burst.ours?.deliveredWithinSeconds, burst.peer?.deliveredWithinSeconds)}`,
  ].join('; ');
}

export function renderMarkdown(report: BenchReport): string {
  const { results } = report;
  const mainTable = markdownTable(
    [
      'system',
      'scenario',
      'tasks',
      'submit/s',
      'delivered/s',
      'peak/s',
      'p50 ms',
      'p95 ms',
      'p99 ms',
      'max ms',
      'early',
      'lost',
      'backlog',
      'dup',
      'done after due s',
      'CPU ms/task',
      'emulators CPU ms/task',
      'peak MB',
    ],
    results.map((result) => [
      result.system,
      result.scenario,
      result.tasks,
      Math.round(result.submitPerSecond),
      Math.round(result.deliveredPerSecond.mean),
      result.deliveredPerSecond.peak,
      Math.round(result.lateness.p50),
      Math.round(result.lateness.p95),
      Math.round(result.lateness.p99),
      Math.round(result.lateness.max),
      result.early,
      result.lost,
      result.backlog,
      result.duplicates,
      Number(result.deliveredWithinSeconds.toFixed(1)),
      Number(systemCpuPerTask(result).toFixed(2)),
      ((emulators) => (emulators === undefined ? '–' : Number(emulators.toFixed(2))))(emulatorCpuPerTask(result)),
      Math.round(result.peakRssMb),
    ]),
  );
  const pairs = results
    .filter((result) => result.system === 'timer')
    .flatMap((ours) => {
      const peer = results.find((result) => result.system === 'bullmq' && result.scenario === ours.scenario);
      if (!peer) return [];
      const emulators = emulatorCpuPerTask(ours);
      return [
        [
          ours.scenario,
          ratioOf(ours.lateness.p99, peer.lateness.p99),
          ratioOf(ours.deliveredPerSecond.mean, peer.deliveredPerSecond.mean),
          ratioOf(ours.submitPerSecond, peer.submitPerSecond),
          ratioOf(systemCpuPerTask(ours), systemCpuPerTask(peer)),
          ratioOf(emulators === undefined ? undefined : systemCpuPerTask(ours) + emulators, systemCpuPerTask(peer)),
        ],
      ];
    });
  const ratioTable = markdownTable(
    [
      'scenario',
      'p99 lateness',
      'delivered/s',
      'submit/s',
      'CPU per task (whole processes)',
      'CPU per task, emulators included',
    ],
    pairs,
  );
  const requestTable = markdownTable(
    ['system', 'scenario', 'requests per task'],
    results.map((result) => [
      result.system,
      result.scenario,
      Object.entries(result.requestsPerTask)
        .map(([name, count]) => `${name} ${count}`)
        .join(', '),
    ]),
  );
  const cpuTable = markdownTable(
    [
      'system',
      'scenario',
      "CPU ms per task: by function, the whole handlers' process and each emulator's (timer), by process (BullMQ)",
    ],
    results.map((result) => [
      result.system,
      result.scenario,
      Object.entries(result.cpuMsPerTask)
        .map(([name, ms]) => `${name} ${ms}`)
        .join(', '),
    ]),
  );
  const hotTable = markdownTable(
    [
      'scenario',
      'task keys',
      'most write units on one key in one second',
      'most read units on one key in one second',
      'most write units on one key, whole delivery',
    ],
    results
      .filter((result) => result.system === 'timer' && result.hotKeys && result.scenario.startsWith('burst'))
      .map((result) => [
        result.scenario,
        result.hotKeys?.taskKeys ?? 0,
        result.hotKeys?.writes.busiestSecond.perSecond ?? 0,
        result.hotKeys?.reads.busiestSecond.perSecond ?? 0,
        result.hotKeys?.writes.busiestKey.total ?? 0,
      ]),
  );
  const reference = referenceRun(report);
  const options = defaultCostOptions(report);
  const usage = reference && usageOf(report, reference, options);
  const costTable = usage
    ? (() => {
        const onDemand = costRows(perMillion(costPerTask(usage, 'on-demand')), 3);
        const provisioned = costRows(perMillion(costPerTask(usage, 'provisioned')), 3);
        return markdownTable(
          ['component', '$ per million, on demand', '$ per million, provisioned (70% target)'],
          onDemand.map(([component, dollars], index) => [component, dollars, provisioned[index]?.[1] ?? '']),
        );
      })()
    : 'No steady run delivered everything, so there is nothing to price.';
  const idle = report.cost.idleMonth;
  const idleCostTable = markdownTable(
    ['idle month', '$'],
    [
      ...costRows(idle.running, 3),
      ['fixed resources (the alarms, dashboard and KMS key of the synthesized stack)', `$${fmt(idle.fixed, 2)}`],
    ],
  );
  const horizon = report.longHorizon;
  const taskItems = horizon.storage.byKind.B;
  return [
    `Run ${report.startedAt} on ${report.machine.cpus} cores, Node ${report.machine.node}; ${report.settings.shardCount} shards.`,
    '',
    mainTable,
    '',
    "Timer ÷ BullMQ (below 1× is better for lateness and CPU, above 1× for rates). Whole processes: the timer's handlers' process against BullMQ's worker and Redis; the emulators, which stand in for DynamoDB and SQS, are set apart, and added back in the last column:",
    '',
    ratioTable,
    '',
    headline(report),
    '',
    requestTable,
    '',
    cpuTable,
    '',
    'The hot second, per task partition key (the delivery phase: from 5 s before the due second on, which takes in the scan):',
    '',
    hotTable,
    '',
    `Long horizon: ${fmt(horizon.tasks)} tasks due 1 minute to 30 days ahead, submitted at ${fmt(horizon.submitPerSecond)}/s; ${fmt(horizon.bytesPerTask)} bytes stored per task, of which the task item ${fmt(taskItems ? taskItems.bytes / taskItems.items : 0)} (with DynamoDB's 100 bytes of overhead) and the rest occupancy index items; ${horizon.early} early.`,
    '',
    `Idle, counted for ${report.idle.minutes} minutes and scaled to an hour (the local pollers' receives stand for Lambda's event source mappings, priced at their 20 s long polls instead):`,
    '',
    markdownTable(['request', 'per hour idle'], Object.entries(report.idle.requestsPerHour)),
    '',
    `Cost per million timers, from ${reference?.scenario ?? 'no run'} (webhooks answering in ${options.webhookMs} ms, batches of ${options.tasksPerApiRequest}, a day's wait and ${options.retentionDays} days' retention); EventBridge Scheduler: $${fmt(PRICES.schedulerInvocation * 1e6, 2)} per million invocations, before its targets:`,
    '',
    costTable,
    '',
    idleCostTable,
    '',
    markdownTable(
      ['function', 'bundle KiB (minified, AWS SDK external)'],
      Object.entries(report.bundleBytes).map(([name, bytes]) => [name, Number((bytes / 1024).toFixed(1))]),
    ),
    '',
  ].join('\n');
}

/** The chart for the reference rate: the timer's and BullMQ's lateness and deliveries per second. */
export function renderReportChart(report: BenchReport): string {
  const scenario = referenceRun(report)?.scenario ?? `steady ${report.settings.rates[0]}/s`;
  const of = (system: string) =>
    report.results.find((result) => result.system === system && result.scenario === scenario);
  const systems = [
    { label: 'timer (local mode)', color: '#1f77b4', result: of('timer') },
    { label: 'BullMQ', color: '#ff7f0e', result: of('bullmq') },
  ].filter((entry) => entry.result !== undefined);
  return renderChart({
    title: `${scenario}: the timer in local mode and BullMQ on Redis, same machine, same receiver`,
    histograms: systems.map(({ label, color, result }) => ({ label, color, bins: result?.latenessHistogram ?? [] })),
    series: systems.map(({ label, color, result }) => ({ label, color, values: result?.series ?? [] })),
  });
}
