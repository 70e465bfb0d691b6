/**
 * One scenario of the scale model (`npm run scale`, test/scale): local mode behind a 1/k model
 * of AWS's limits, several tenants each with its own API key and webhook on a local receiver,
 * tasks submitted at planned times, and every arrival checked against its signature and due
 * time. Each scenario gets a fresh local timer, so the model's report is the scenario's own.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

import { CreateQueueCommand, DeleteMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';

import type { TimerSettings } from '../functions/contract/topology.js';
import type { ScheduleView, Target, WebhookNotification } from '../functions/contract/wire.js';
import { issueApiKey, newTenant } from '../functions/core/tenants/tenants.js';
import type { Quotas } from '../lib/construct/plan/quotas.js';
import type { FunctionStats } from '../lib/local/lambda-service.js';
import { SHARD_KEY_CLASSES } from '../lib/local/limits/dynamodb-throughput.js';
import type { ScaleModelReport } from '../lib/local/limits/scale-model.js';
import { type LocalTimer, startLocalTimer } from '../lib/local/runtime.js';
import { summarize } from './stats.js';
import {
  type Arrival,
  occurrenceKey,
  type ReceiverLimits,
  type ReceiverResult,
  startReceiver,
  type WebhookBehaviour,
} from './webhook-receiver.js';

/** Where a task is delivered: the tenant's webhook, the scenario's SQS target queue, or its EventBridge bus (the local sink). */
export type TargetKind = 'http' | 'sqs' | 'eventbridge';

export interface PlannedTask {
  readonly tenant: string;
  /** When to submit it, from the scenario's start. */
  readonly submitAtMs: number;
  /** When it falls due, from the scenario's start; rounded to a whole second, which is the service's precision. */
  readonly dueAtMs: number;
  /** @default 'http' */
  readonly target?: TargetKind;
  readonly bizType?: string;
  readonly bizId?: string;
  /** A group the report judges apart, such as a hot second laid over a steady load. */
  readonly group?: string;
}

/** A schedule a tenant creates during the run (POST /v1/schedules), firing at a rate to its webhook. */
export interface PlannedSchedule {
  readonly tenant: string;
  /** The schedule's rate, such as "1 second" or "1 minute", and the same in milliseconds. */
  readonly rate: string;
  readonly everyMs: number;
  /** When to create it, from the scenario's start. */
  readonly createAtMs: number;
  /** Its first occurrence, from the scenario's start (a whole second); it fires every `everyMs` after. */
  readonly startAtMs: number;
  /** Its last occurrence may be no later than this, from the scenario's start. */
  readonly endAtMs: number;
  readonly bizType?: string;
  readonly bizId?: string;
}

export interface ScenarioSpec {
  readonly name: string;
  readonly tenants: Readonly<Record<string, WebhookBehaviour>>;
  /** One POST /v1/tasks per task, or POST /v1/tasks/batch of up to 100 tasks submitted at the same moment. */
  readonly submit: 'single' | 'batch';
  readonly tasks: readonly PlannedTask[];
  /** Tasks due by then (from the start) are measured; the rest are load that comes due after the run. */
  readonly runMs: number;
  /** How long after `runMs` deliveries may still arrive before the missing ones count as lost. */
  readonly drainMs: number;
  /**
   * How many of the accepted tasks due after the run to look up by GET, spread evenly over them.
   * @default all of them
   */
  readonly lookupsAfterRun?: number;
  /** Schedules the tenants create during the run; their occurrences due within the run are measured. */
  readonly schedules?: readonly PlannedSchedule[];
  /** A concurrency cap per webhook host. @default none: every request is answered at once */
  readonly receiver?: ReceiverLimits;
  /** A window (from the start) whose deliveries per second are reported, to show a steady state. */
  readonly steadyWindowMs?: { readonly fromMs: number; readonly toMs: number };
}

interface TenantResult {
  readonly webhook: WebhookBehaviour;
  readonly submitted: number;
  /** Planned tasks not sent because the local machine fell behind the plan (a harness shortfall, not the service's). */
  readonly unsent: number;
  /** Tasks the API refused for good, or still answered 429 or 5xx after every retry. */
  readonly rejected: number;
  /** 429 answers to this tenant's submits (each retried with backoff). */
  readonly api429: number;
  /** 5xx answers (the api function throttled, failed or timed out), retried the same way. */
  readonly api5xx: number;
  /** Accepted tasks due before the run ended: the ones whose delivery is measured. */
  readonly dueWithinRun: number;
  /** Due within the run and delivered to a webhook that answers (the lateness sample). */
  readonly delivered: number;
  /**
   * Due within the run and never reached the webhook (for a hanging webhook: never even
   * attempted), or due after it and not found by GET once the run ended.
   */
  readonly lost: number;
  /** Accepted tasks due after the run looked up by GET after it (all, or `lookupsAfterRun` of them): those not found count as lost. */
  readonly checkedAfterRun: number;
  readonly early: number;
  /** Tasks that reached the webhook more than once after a 2xx answer. */
  readonly duplicates: number;
  readonly badSignatures: number;
  /** Every arrival, retries of a failing webhook included. */
  readonly attempts: number;
  readonly latenessMs: { readonly p50: number; readonly p99: number; readonly max: number };
}

export interface ScenarioResult {
  readonly name: string;
  readonly k: number;
  readonly seconds: number;
  /**
   * The most submits the API accepted in one second: the load the run reached, which a machine
   * that falls behind its plan keeps below the planned rate.
   */
  readonly peakAcceptedPerSecond: number;
  /** How long submit requests took to be answered for good, retries included. */
  readonly submitMs: { readonly p50: number; readonly p99: number; readonly max: number };
  readonly tenants: Readonly<Record<string, TenantResult>>;
  readonly model: ScaleModelReport;
  readonly lambda: Readonly<Record<string, FunctionStats>>;
  /** The healthy tenants' latest deliveries, latest first. */
  readonly latest: readonly LateDelivery[];
  /**
   * How long this process's event loop was held up: every local function, the emulators' proxies
   * and the harness share it, so a stall lengthens every invocation in flight at once, which no
   * Lambda fleet does.
   */
  readonly eventLoopDelayMs: { readonly p99: number; readonly max: number };
  /** The measured tasks by where they were delivered (webhooks of every tenant, the SQS queue, the EventBridge bus). */
  readonly byTarget: Readonly<Partial<Record<TargetKind, TargetResult>>>;
  /** The measured tasks of each named group (PlannedTask.group), judged apart. */
  readonly byGroup: Readonly<Record<string, TargetResult>>;
  /** The schedules' occurrences, when the scenario has schedules. */
  readonly schedules?: ScheduleResult;
  /** The receiver's concurrency per host, when it has a cap. */
  readonly receiver?: ReceiverResult;
  /** Deliveries per second over the steady window, when the scenario names one. */
  readonly steady?: SteadyResult;
}

export interface TargetResult {
  readonly dueWithinRun: number;
  readonly delivered: number;
  readonly lost: number;
  readonly early: number;
  readonly latenessMs: { readonly p50: number; readonly p99: number; readonly max: number };
}

export interface ScheduleResult {
  readonly planned: number;
  readonly created: number;
  /** Creates refused for good, or still answered 429 or 5xx after every retry. */
  readonly refused: number;
  /** Why creates were refused: status and problem title, with counts. */
  readonly refusedBecause: Readonly<Record<string, number>>;
  readonly api429: number;
  readonly api5xx: number;
  /**
   * Occurrences of the created schedules due within the run, from the first one each create's
   * answer named: a schedule fires from its creation on, never for a time before it.
   */
  readonly occurrencesDue: number;
  /** Planned occurrences (from each plan's startAt) before both their schedule's create was answered and the first it named. */
  readonly beforeCreated: number;
  readonly delivered: number;
  /** Due within the run and never arrived (a chain that fell behind and skipped an occurrence included). */
  readonly lost: number;
  readonly early: number;
  readonly duplicates: number;
  /** Arrivals for an occurrence that was not due within the run, or of no schedule the run created. */
  readonly unexpected: number;
  readonly badSignatures: number;
  readonly latenessMs: { readonly p50: number; readonly p99: number; readonly max: number };
  /** Up to ten lost occurrences, seconds from the run's start: when each was due, and when its schedule's create was answered. */
  readonly lostSample: ReadonlyArray<{ readonly rate: string; readonly dueS: number; readonly createdS: number }>;
  /** The same by the schedules' rate ("1 second", "1 minute"). */
  readonly byRate: Readonly<
    Record<
      string,
      {
        readonly occurrencesDue: number;
        readonly delivered: number;
        readonly latenessMs: { readonly p50: number; readonly p99: number; readonly max: number };
      }
    >
  >;
}

export interface SteadyResult {
  readonly fromS: number;
  readonly toS: number;
  /** Tasks planned to fall due in each second of the window. */
  readonly plannedDuePerSecond: { readonly mean: number; readonly min: number; readonly max: number };
  /** Tasks whose first arrival fell in each second of the window. */
  readonly deliveredPerSecond: { readonly mean: number; readonly min: number; readonly max: number };
  /** The measured tasks' lateness by when they fell due, in 10 s spans from the start: where lateness built up and drained. */
  readonly latenessByDueSpan: ReadonlyArray<{ readonly fromS: number; readonly p50: number; readonly max: number }>;
}

interface RunOptions {
  readonly k: number;
  /** The deployment's limits and raised quotas the model applies (see lib/construct/plan/quotas.ts). */
  readonly quotas?: Quotas;
  /** The table's partitions, for the model's partition mode. @default every key its own */
  readonly partitions?: number;
  /** Whether keys of SHARD_KEY_CLASSES (task shards, schedule shares) are held to their limit (see ScaleModel). @default true */
  readonly shardKeysLimited?: boolean;
  /** The deployment's settings. @default the construct's defaults */
  readonly settings?: Partial<TimerSettings>;
  /** Shows a progress bar that reads `status` (bench/report.ts's `progress`); returns what ends it. */
  readonly showProgress?: (status: () => { done: number; total: number; detail: string }) => () => void;
}

/** Submits in flight at once, so a slow API backs the load up instead of piling up sockets. */
const MAX_SUBMITS_IN_FLIGHT = 256;
/**
 * A client's retries of a 429 or 5xx, with exponential backoff from 100 ms (about 25 s in all).
 * Each 5xx still counts as a throttle in the run's summary; the retries decide only whether the
 * task is refused for good. Five (about 3 s) were not enough for the 1/100 model beside a second
 * `npm test`: its two api environments took seconds a batch, and two batches met 5xx six times.
 */
const MAX_RETRIES = 8;
/**
 * A request this far behind its planned time is not sent: the machine running the model cannot
 * keep up, and sending it late would only stretch the run while measuring the wrong rate.
 */
const MAX_SUBMIT_LAG_MS = 5_000;

interface Sent {
  readonly tenant: string;
  readonly target: TargetKind;
  readonly group?: string;
  readonly dueAtMs: number;
  /** When the API answered its submit. */
  readonly acceptedAtMs: number;
}

/** One of a scenario's latest deliveries, to see where lateness comes from. */
export interface LateDelivery {
  readonly tenant: string;
  readonly taskId: string;
  /** How long before its due time the task was accepted: a short lead takes the api's direct path. */
  readonly leadMs: number;
  readonly latenessMs: number;
  /** The attempt that arrived first, and why the attempts before it failed (from the task's history). */
  readonly attempt: number;
  readonly earlierErrors?: readonly string[];
}

/** Late deliveries a scenario lists. */
const LATEST_LISTED = 5;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * When the `index`-th task is ready, at a rate rising linearly from nothing to `ratePerSecond`
 * over `rampSeconds` and steady after: how a day's traffic rises, rather than a step onto a
 * deployment whose every function is cold.
 */
export function rampedAtMs(index: number, ratePerSecond: number, rampSeconds: number): number {
  const rampTasks = (ratePerSecond * rampSeconds) / 2;
  const seconds =
    index < rampTasks ? Math.sqrt((2 * rampSeconds * index) / ratePerSecond) : index / ratePerSecond + rampSeconds / 2;
  return seconds * 1000;
}

/** Groups tasks planned for the same tenant and moment into requests: one each, or batches of 100. */
function toRequests(spec: ScenarioSpec): PlannedTask[][] {
  if (spec.submit === 'single') return spec.tasks.map((task) => [task]);
  const groups = new Map<string, PlannedTask[]>();
  for (const task of spec.tasks) {
    const key = `${task.tenant}@${task.submitAtMs}`;
    groups.set(key, [...(groups.get(key) ?? []), task]);
  }
  return [...groups.values()].flatMap((group) =>
    Array.from({ length: Math.ceil(group.length / 100) }, (_, index) => group.slice(index * 100, index * 100 + 100)),
  );
}

export async function runScaleScenario(spec: ScenarioSpec, options: RunOptions): Promise<ScenarioResult> {
  const timer = await startLocalTimer({
    port: 0,
    logLevel: 'SILENT',
    ...(options.settings && { settings: options.settings }),
    scaleModel: {
      k: options.k,
      ...(options.quotas && { quotas: options.quotas }),
      ...(options.partitions !== undefined && { partitions: options.partitions }),
      ...(options.shardKeysLimited !== undefined && { shardKeysLimited: options.shardKeysLimited }),
    },
  });
  const scaleModel = timer.scaleModel;
  if (!scaleModel) throw new Error('local mode started without its scale model');
  const apiKeys = new Map<string, string>();
  const secrets = new Map<string, string>();
  const [devTenant, ...others] = Object.keys(spec.tenants);
  if (devTenant !== undefined) {
    apiKeys.set(devTenant, timer.apiKey);
    secrets.set(devTenant, timer.signingSecret);
  }
  // Side by side: a hundred tenants one after another took seconds of a run's budget. The setup
  // goes to dynalite directly, so none of it is the model's load.
  await Promise.all(
    others.map(async (id) => {
      const tenant = newTenant(id, Date.now());
      await timer.tenantStore.createTenant(tenant);
      const issued = await issueApiKey(timer.tenantStore, id, Date.now());
      apiKeys.set(id, issued.apiKey);
      secrets.set(id, tenant.signingSecrets[0]?.secret ?? '');
    }),
  );
  const receiver = await startReceiver(spec.tenants, secrets, spec.receiver);
  const targets = await startTargetReaders(timer, spec, receiver.record);
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const counts = new Map<
    string,
    { submitted: number; rejected: number; api429: number; api5xx: number; unsent: number }
  >(Object.keys(spec.tenants).map((id) => [id, { submitted: 0, rejected: 0, api429: 0, api5xx: 0, unsent: 0 }]));
  const sent = new Map<string, Sent>();
  const startMs = Math.ceil((Date.now() + 1000) / 1000) * 1000;
  const measuredUntilMs = startMs + spec.runMs;
  const endMs = measuredUntilMs + spec.drainMs;
  const isMeasured = (task: Sent) => task.dueAtMs <= measuredUntilMs;

  const planIndex = new Map(spec.tasks.map((task, index) => [task, index]));
  /** How long each submit request took to be answered for good, its retries included. */
  const submitMs: number[] = [];
  const submit = async (tasks: readonly PlannedTask[]) => {
    const tenant = tasks[0]?.tenant ?? '';
    const tally = counts.get(tenant) ?? { submitted: 0, rejected: 0, api429: 0, api5xx: 0, unsent: 0 };
    const body = tasks.map((task) => ({
      // A retried request must not create its tasks twice, as after a gateway timeout whose invocation went on.
      idempotencyKey: `${spec.name}-${planIndex.get(task)}`,
      dueAt: new Date(startMs + Math.round(task.dueAtMs / 1000) * 1000).toISOString(),
      target: targets.target(task.target ?? 'http') ?? { type: 'http', url: receiver.url(tenant) },
      payload: { scenario: spec.name },
      ...(task.bizType !== undefined && { bizType: task.bizType }),
      ...(task.bizId !== undefined && { bizId: task.bizId }),
    }));
    const batch = spec.submit === 'batch';
    const sentAtMs = Date.now();
    for (let attempt = 0; ; attempt += 1) {
      const response = await fetch(`${timer.apiUrl}${batch ? '/v1/tasks/batch' : '/v1/tasks'}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKeys.get(tenant)}` },
        body: JSON.stringify(batch ? { tasks: body } : body[0]),
      });
      const answer = (await response.json()) as Record<string, unknown>;
      if ((response.status === 429 || response.status >= 500) && attempt < MAX_RETRIES) {
        if (response.status === 429) tally.api429 += 1;
        else tally.api5xx += 1;
        await sleep(100 * 2 ** attempt * (0.5 + Math.random()));
        continue;
      }
      tally.submitted += tasks.length;
      const acceptedAtMs = Date.now();
      submitMs.push(acceptedAtMs - sentAtMs);
      const created = batch
        ? ((answer.results ?? []) as Array<{ index?: number; status: number; task?: { id: string; dueAt: string } }>)
        : [{ index: 0, status: response.status, task: answer as { id: string; dueAt: string } }];
      for (const result of created) {
        if ((result.status === 201 || result.status === 200) && result.task) {
          const planned = tasks[result.index ?? 0];
          sent.set(result.task.id, {
            tenant,
            target: planned?.target ?? 'http',
            ...(planned?.group !== undefined && { group: planned.group }),
            dueAtMs: Date.parse(result.task.dueAt),
            acceptedAtMs,
          });
        } else tally.rejected += 1;
      }
      tally.rejected += tasks.length - created.length;
      return;
    }
  };

  const requests = toRequests(spec).sort((a, b) => (a[0]?.submitAtMs ?? 0) - (b[0]?.submitAtMs ?? 0));
  const schedules = scheduleCreator(spec, {
    startMs,
    apiUrl: timer.apiUrl,
    apiKeys,
    url: (tenant) => receiver.url(tenant),
  });
  let inFlight = 0;
  const submits: Array<Promise<void>> = [];
  const outstanding = () =>
    [...sent.entries()].filter(
      ([id, task]) => spec.tenants[task.tenant] === 'ok' && isMeasured(task) && !receiver.arrivals.has(id),
    ).length;
  const measuredCount = () =>
    [...sent.values()].filter((task) => spec.tenants[task.tenant] === 'ok' && isMeasured(task)).length;
  const endProgress = options.showProgress?.(() => {
    const measured = measuredCount();
    const phase = submits.length < requests.length ? `submitting ${submits.length}/${requests.length}` : 'delivering';
    return {
      done: measured - outstanding(),
      total: measured,
      detail: `${phase}; ${measured - outstanding()}/${measured} due within the run delivered`,
    };
  });
  try {
    for (const request of requests) {
      const wait = startMs + (request[0]?.submitAtMs ?? 0) - Date.now();
      if (wait > 0) await sleep(wait);
      while (inFlight >= MAX_SUBMITS_IN_FLIGHT) await sleep(5);
      if (Date.now() - (startMs + (request[0]?.submitAtMs ?? 0)) > MAX_SUBMIT_LAG_MS) {
        const tally = counts.get(request[0]?.tenant ?? '');
        if (tally) tally.unsent += request.length;
        submits.push(Promise.resolve());
        continue;
      }
      inFlight += 1;
      submits.push(
        submit(request)
          .catch(() => {
            const tally = counts.get(request[0]?.tenant ?? '');
            if (tally) tally.rejected += request.length;
          })
          .finally(() => {
            inFlight -= 1;
          }),
      );
    }
    await Promise.all([...submits, schedules.created]);
    // Waits until every healthy tenant's measured task and occurrence has arrived, or the drain ends.
    while (
      Date.now() < endMs &&
      (Date.now() < measuredUntilMs ||
        outstanding() > 0 ||
        schedules.due(measuredUntilMs).some((key) => !receiver.occurrences.has(key)))
    )
      await sleep(500);
  } finally {
    endProgress?.();
    await targets.stop();
  }
  const finishedMs = Date.now();
  loopDelay.disable();
  const eventLoopDelayMs = { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 };
  const model = await scaleModel.report();
  const lambda = timer.lambdaStats().functions;
  const receiverUsage = await receiver.close();
  const dueAfterRun = [...sent.entries()].filter(([, task]) => !isMeasured(task));
  const checked = sampled(dueAfterRun, spec.lookupsAfterRun ?? dueAfterRun.length);
  const missing = await missingAfterRun(checked, timer.apiUrl, apiKeys);
  const wasChecked = new Set(checked.map(([taskId]) => taskId));

  const tenants: Record<string, TenantResult> = {};
  const deliveries: LateDelivery[] = [];
  for (const [id, webhook] of Object.entries(spec.tenants)) {
    const mine = [...sent.entries()].filter(([, task]) => task.tenant === id);
    const due = mine.filter(([, task]) => isMeasured(task));
    const later = mine.filter(([taskId, task]) => !isMeasured(task) && wasChecked.has(taskId));
    const lateness: number[] = [];
    let lost = 0;
    let early = 0;
    let duplicates = 0;
    let badSignatures = 0;
    let attempts = 0;
    for (const [taskId, task] of mine) {
      const arrivals = receiver.arrivals.get(taskId) ?? [];
      attempts += arrivals.length;
      badSignatures += arrivals.filter((arrival) => !arrival.signatureValid).length;
      early += arrivedEarly(arrivals, task) ? 1 : 0;
      const firstAnswered = arrivals.findIndex((arrival) => arrival.answered >= 200 && arrival.answered < 300);
      if (firstAnswered !== -1 && arrivals.length > firstAnswered + 1) duplicates += 1;
    }
    lost += later.filter(([taskId]) => missing.has(taskId)).length;
    for (const [taskId, task] of due) {
      const first = receiver.arrivals.get(taskId)?.[0];
      if (!first) lost += 1;
      else if (webhook === 'ok') {
        const latenessMs = first.receivedAtMs - task.dueAtMs;
        lateness.push(latenessMs);
        deliveries.push({
          tenant: id,
          taskId,
          leadMs: task.dueAtMs - task.acceptedAtMs,
          latenessMs,
          attempt: first.attempt,
        });
      }
    }
    const tally = counts.get(id) ?? { submitted: 0, rejected: 0, api429: 0, api5xx: 0, unsent: 0 };
    tenants[id] = {
      webhook,
      ...tally,
      dueWithinRun: due.length,
      delivered: lateness.length,
      lost,
      checkedAfterRun: later.length,
      early,
      duplicates,
      badSignatures,
      attempts,
      latenessMs: latenessOf(lateness),
    };
  }
  const measured = [...sent.entries()].filter(([, task]) => isMeasured(task) && spec.tenants[task.tenant] === 'ok');
  const byTarget = resultsBy(measured, receiver.arrivals, (task) => task.target);
  const byGroup = resultsBy(measured, receiver.arrivals, (task) => task.group);
  const steady = spec.steadyWindowMs && steadyResult(spec, startMs, measured, receiver.arrivals);
  const scheduleResult = spec.schedules && schedules.result(measuredUntilMs, receiver.occurrences);
  const latest = await Promise.all(
    deliveries
      .sort((a, b) => b.latenessMs - a.latenessMs)
      .slice(0, LATEST_LISTED)
      .map(async (delivery) =>
        delivery.attempt === 1
          ? delivery
          : { ...delivery, earlierErrors: await earlierErrors(delivery, timer.apiUrl, apiKeys.get(delivery.tenant)) },
      ),
  );
  await timer.stop();
  return {
    name: spec.name,
    k: options.k,
    seconds: (finishedMs - startMs) / 1000,
    peakAcceptedPerSecond: peakPerSecond([...sent.values()].map((task) => task.acceptedAtMs)),
    submitMs: latenessOf(submitMs),
    tenants,
    model,
    lambda,
    latest,
    eventLoopDelayMs,
    byTarget,
    byGroup,
    ...(scheduleResult && { schedules: scheduleResult }),
    ...(receiverUsage && { receiver: receiverUsage }),
    ...(steady && { steady }),
  };
}

const latenessOf = (values: readonly number[]) => {
  const { p50, p99, max } = summarize(values);
  return { p50, p99, max };
};

/** How long after its due time a task's first arrival came; undefined when none came. */
function firstLatenessMs(
  arrivals: ReadonlyMap<string, readonly Arrival[]>,
  id: string,
  task: Sent,
): number | undefined {
  const first = arrivals.get(id)?.[0];
  return first === undefined ? undefined : first.receivedAtMs - task.dueAtMs;
}

/** Whether any arrival of a task came before its due time. */
const arrivedEarly = (arrivals: readonly Arrival[], task: Sent) =>
  arrivals.some((arrival) => arrival.receivedAtMs < task.dueAtMs);

/** The measured tasks of the answering tenants by `keyOf` (where they were delivered, their group); those without a key are left out. */
function resultsBy(
  measured: ReadonlyArray<readonly [string, Sent]>,
  arrivals: ReadonlyMap<string, readonly Arrival[]>,
  keyOf: (task: Sent) => string | undefined,
): Record<string, TargetResult> {
  const kinds = [...new Set(measured.flatMap(([, task]) => keyOf(task) ?? []))];
  return Object.fromEntries<TargetResult>(
    kinds.map((kind) => {
      const mine = measured.filter(([, task]) => keyOf(task) === kind);
      const lateness = mine.flatMap(([id, task]) => firstLatenessMs(arrivals, id, task) ?? []);
      const early = mine.filter(([id, task]) => arrivedEarly(arrivals.get(id) ?? [], task)).length;
      return [
        kind,
        {
          dueWithinRun: mine.length,
          delivered: lateness.length,
          lost: mine.length - lateness.length,
          early,
          latenessMs: latenessOf(lateness),
        },
      ];
    }),
  );
}

/** Planned due times and first arrivals per second over the scenario's steady window. */
function steadyResult(
  spec: ScenarioSpec,
  startMs: number,
  measured: ReadonlyArray<readonly [string, Sent]>,
  arrivals: ReadonlyMap<string, readonly Arrival[]>,
): SteadyResult | undefined {
  const window = spec.steadyWindowMs;
  if (!window) return undefined;
  const fromS = Math.ceil(window.fromMs / 1000);
  const toS = Math.floor(window.toMs / 1000);
  const perSecond = (secondsFromStart: readonly number[]) => {
    const counts = new Array<number>(Math.max(0, toS - fromS)).fill(0);
    for (const second of secondsFromStart) {
      if (second >= fromS && second < toS) counts[second - fromS] = (counts[second - fromS] ?? 0) + 1;
    }
    return {
      mean: counts.reduce((sum, count) => sum + count, 0) / Math.max(1, counts.length),
      min: Math.min(...counts),
      max: Math.max(...counts),
    };
  };
  const spans = new Map<number, number[]>();
  for (const [id, task] of measured) {
    const lateness = firstLatenessMs(arrivals, id, task);
    if (lateness === undefined) continue;
    const span = Math.floor((task.dueAtMs - startMs) / 10_000) * 10;
    const list = spans.get(span) ?? [];
    list.push(lateness);
    spans.set(span, list);
  }
  return {
    fromS,
    toS,
    latenessByDueSpan: [...spans.entries()]
      .sort(([a], [b]) => a - b)
      .map(([spanFromS, lateness]) => {
        const { p50, max } = latenessOf(lateness);
        return { fromS: spanFromS, p50, max };
      }),
    plannedDuePerSecond: perSecond(spec.tasks.map((task) => Math.round(task.dueAtMs / 1000))),
    deliveredPerSecond: perSecond(
      measured.flatMap(([id]) => {
        const first = arrivals.get(id)?.[0];
        return first ? [Math.floor((first.receivedAtMs - startMs) / 1000)] : [];
      }),
    ),
  };
}

/** The scenario's SQS target queue and EventBridge bus, and readers that record what reaches them. */
async function startTargetReaders(
  timer: LocalTimer,
  spec: ScenarioSpec,
  record: (notification: WebhookNotification, arrival: Arrival) => void,
) {
  const kinds = new Set(spec.tasks.map((task) => task.target ?? 'http'));
  let stopped = false;
  const readers: Array<Promise<void>> = [];
  let queueUrl: string | undefined;
  if (kinds.has('sqs')) {
    // A tenant's own queue: the harness reads it straight from fauxqs, past the model, as the tenant's consumer would.
    const created = await timer.sqs.send(new CreateQueueCommand({ QueueName: `scale-${spec.name}-target` }));
    queueUrl = created.QueueUrl ?? '';
    const url = queueUrl;
    const read = async () => {
      while (!stopped) {
        const received = await timer.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['SentTimestamp'],
          }),
        );
        const messages = received.Messages ?? [];
        for (const message of messages) {
          const notification = JSON.parse(message.Body ?? '{}') as WebhookNotification;
          const sentAt = Number(message.Attributes?.SentTimestamp);
          // SentTimestamp is when the callback's SendMessage landed: the delivery, whenever the reader got to it.
          const receivedAtMs = Number.isFinite(sentAt) && sentAt > 0 ? sentAt : Date.now();
          record(notification, { receivedAtMs, attempt: notification.attempt, signatureValid: true, answered: 200 });
        }
        if (messages.length > 0) {
          await timer.sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: url,
              Entries: messages.map((message, index) => ({
                Id: String(index),
                ReceiptHandle: message.ReceiptHandle ?? '',
              })),
            }),
          );
        }
      }
    };
    readers.push(read(), read());
  }
  if (kinds.has('eventbridge')) {
    let seen = 0;
    const collect = () => {
      for (const event of timer.eventBridgeEvents.slice(seen)) {
        const notification = event.detail as WebhookNotification;
        record(notification, {
          receivedAtMs: Date.parse(event.receivedAt),
          attempt: notification.attempt,
          signatureValid: true,
          answered: 200,
        });
      }
      seen = timer.eventBridgeEvents.length;
    };
    readers.push(
      (async () => {
        while (!stopped) {
          collect();
          await sleep(250);
        }
        collect();
      })(),
    );
  }
  return {
    /** The target of a task of this kind; undefined for a webhook, which is the tenant's own. */
    target: (kind: TargetKind): Target | undefined => {
      if (kind === 'sqs') return { type: 'sqs', queueUrl: queueUrl ?? '' };
      if (kind === 'eventbridge') return { type: 'eventbridge', eventBusName: EVENT_BUS, detailType: 'Timer Fired' };
      return undefined;
    },
    stop: async () => {
      stopped = true;
      await Promise.all(readers);
    },
  };
}

/** Schedule creates in flight at once: tenants set up their schedules one after another, not all at once. */
const MAX_CREATES_IN_FLIGHT = 4;

/** The bus EventBridge targets name; local mode's sink takes every bus. */
const EVENT_BUS = 'scale-events';

/**
 * Creates the scenario's schedules at their planned times (POST /v1/schedules, retried as
 * submits are), and judges their occurrences once the run is over.
 */
function scheduleCreator(
  spec: ScenarioSpec,
  context: {
    readonly startMs: number;
    readonly apiUrl: string;
    readonly apiKeys: ReadonlyMap<string, string>;
    readonly url: (tenant: string) => string;
  },
) {
  const planned = [...(spec.schedules ?? [])].sort((a, b) => a.createAtMs - b.createAtMs);
  const made: Array<{
    readonly id: string;
    readonly plan: PlannedSchedule;
    readonly createdAtMs: number;
    readonly firstAtMs: number;
  }> = [];
  const tally = { refused: 0, api429: 0, api5xx: 0 };
  const refusedBecause: Record<string, number> = {};
  const create = async (plan: PlannedSchedule, index: number) => {
    const body = {
      rate: plan.rate,
      startAt: new Date(context.startMs + plan.startAtMs).toISOString(),
      endAt: new Date(context.startMs + plan.endAtMs).toISOString(),
      target: { type: 'http', url: context.url(plan.tenant) },
      payload: { scenario: spec.name, schedule: index },
      idempotencyKey: `${spec.name}-schedule-${index}`,
      ...(plan.bizType !== undefined && { bizType: plan.bizType }),
      ...(plan.bizId !== undefined && { bizId: plan.bizId }),
    };
    for (let attempt = 0; ; attempt += 1) {
      const response = await fetch(`${context.apiUrl}/v1/schedules`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${context.apiKeys.get(plan.tenant)}` },
        body: JSON.stringify(body),
      }).catch(() => undefined);
      const status = response?.status ?? 503;
      const answer = response
        ? ((await response.json().catch(() => ({}))) as Partial<ScheduleView> & { title?: string; detail?: string })
        : {};
      if ((status === 429 || status >= 500) && attempt < MAX_RETRIES) {
        if (status === 429) tally.api429 += 1;
        else tally.api5xx += 1;
        await sleep(100 * 2 ** attempt * (0.5 + Math.random()));
        continue;
      }
      if ((status === 201 || status === 200) && answer.id)
        made.push({
          id: answer.id,
          plan,
          createdAtMs: Date.now(),
          firstAtMs: Date.parse(answer.nextOccurrences?.[0] ?? '') || Number.NaN,
        });
      else {
        tally.refused += 1;
        const reason = `${status} ${answer.detail ?? answer.title ?? ''}`.trim();
        refusedBecause[reason] = (refusedBecause[reason] ?? 0) + 1;
      }
      return;
    }
  };
  const created = (async () => {
    const creates: Array<Promise<void>> = [];
    let inFlight = 0;
    for (const [index, plan] of planned.entries()) {
      const wait = context.startMs + plan.createAtMs - Date.now();
      if (wait > 0) await sleep(wait);
      // A slow API backs the creates up rather than piling retries onto the submits' share of it.
      while (inFlight >= MAX_CREATES_IN_FLIGHT) await sleep(5);
      inFlight += 1;
      creates.push(
        create(plan, index).finally(() => {
          inFlight -= 1;
        }),
      );
    }
    await Promise.all(creates);
  })();
  /** Every occurrence of the created schedules from their plans' startAt to `untilMs` (absolute), with their times. */
  const occurrencesPlanned = (untilMs: number) =>
    made.flatMap(({ id, plan, createdAtMs, firstAtMs }) => {
      const last = Math.min(untilMs, context.startMs + plan.endAtMs);
      const times: Array<{ key: string; atMs: number; rate: string; createdAtMs: number; beforeCreated: boolean }> = [];
      for (let atMs = context.startMs + plan.startAtMs; atMs <= last; atMs += plan.everyMs)
        times.push({
          key: occurrenceKey(id, atMs),
          atMs,
          rate: plan.rate,
          createdAtMs,
          // Before the first occurrence the service named, and before its answer came: one after
          // the answer is due whatever the service named, so a first named too late is caught as lost.
          beforeCreated: atMs < Math.min(firstAtMs, createdAtMs),
        });
      return times;
    });
  const dueAmong = (planned: ReturnType<typeof occurrencesPlanned>) =>
    planned.filter((occurrence) => !occurrence.beforeCreated);
  return {
    created,
    due: (untilMs: number) => dueAmong(occurrencesPlanned(Math.min(untilMs, Date.now() - 1000))).map(({ key }) => key),
    result(measuredUntilMs: number, arrivals: ReadonlyMap<string, readonly Arrival[]>): ScheduleResult {
      const fromStartAt = occurrencesPlanned(measuredUntilMs);
      const due = dueAmong(fromStartAt);
      const expected = new Set(due.map(({ key }) => key));
      const lateness: number[] = [];
      const byRate = new Map<string, { due: number; lateness: number[] }>();
      let early = 0;
      let duplicates = 0;
      const lostSample: ScheduleResult['lostSample'][number][] = [];
      const sinceStartS = (ms: number) => Math.round(ms - context.startMs) / 1000;
      for (const { key, atMs, rate, createdAtMs } of due) {
        const list = arrivals.get(key) ?? [];
        const first = list[0];
        if (!first && lostSample.length < 10)
          lostSample.push({
            rate,
            dueS: sinceStartS(atMs),
            createdS: sinceStartS(createdAtMs),
          });
        const ofRate = byRate.get(rate) ?? { due: 0, lateness: [] };
        byRate.set(rate, ofRate);
        ofRate.due += 1;
        if (first) {
          lateness.push(first.receivedAtMs - atMs);
          ofRate.lateness.push(first.receivedAtMs - atMs);
        }
        if (list.some((arrival) => arrival.receivedAtMs < atMs)) early += 1;
        const firstAnswered = list.findIndex((arrival) => arrival.answered >= 200 && arrival.answered < 300);
        if (firstAnswered !== -1 && list.length > firstAnswered + 1) duplicates += 1;
      }
      const all = [...arrivals.entries()];
      return {
        planned: planned.length,
        created: made.length,
        ...tally,
        refusedBecause,
        occurrencesDue: due.length,
        beforeCreated: fromStartAt.length - due.length,
        delivered: lateness.length,
        lost: due.length - lateness.length,
        early,
        duplicates,
        unexpected: all.filter(([key]) => !expected.has(key)).reduce((sum, [, list]) => sum + list.length, 0),
        badSignatures: all.reduce((sum, [, list]) => sum + list.filter((arrival) => !arrival.signatureValid).length, 0),
        latenessMs: latenessOf(lateness),
        lostSample,
        byRate: Object.fromEntries(
          [...byRate].map(([rate, { due: count, lateness: late }]) => [
            rate,
            { occurrencesDue: count, delivered: late.length, latenessMs: latenessOf(late) },
          ]),
        ),
      };
    },
  };
}

/** The most of `timesMs` that fall in one second. */
function peakPerSecond(timesMs: readonly number[]): number {
  const bySecond = new Map<number, number>();
  for (const ms of timesMs) bySecond.set(Math.floor(ms / 1000), (bySecond.get(Math.floor(ms / 1000)) ?? 0) + 1);
  return Math.max(0, ...bySecond.values());
}

/** `count` of `items`, spread evenly over them (all of them when there are no more). */
function sampled<T>(items: readonly T[], count: number): T[] {
  if (count >= items.length) return [...items];
  return Array.from({ length: count }, (_, index) => items[Math.floor((index * items.length) / count)] as T);
}

/** GETs the run's accepted tasks at once, at most this many. */
const LOOKUPS_IN_FLIGHT = 16;

/**
 * The tasks due after the run that GET does not find: accepted (201) and since vanished. They
 * are looked up after the model's report was taken, so the lookups do not count as its load.
 */
async function missingAfterRun(
  tasks: ReadonlyArray<readonly [string, Sent]>,
  apiUrl: string,
  apiKeys: ReadonlyMap<string, string>,
): Promise<Set<string>> {
  const missing = new Set<string>();
  let next = 0;
  const lookUp = async () => {
    while (next < tasks.length) {
      const [taskId, task] = tasks[next++] ?? ['', undefined];
      for (let attempt = 0; ; attempt += 1) {
        const status = await fetch(`${apiUrl}/v1/tasks/${taskId}`, {
          headers: { authorization: `Bearer ${apiKeys.get(task?.tenant ?? '')}` },
        }).then(
          async (response) => {
            await response.arrayBuffer();
            return response.status;
          },
          // A connection the overloaded local gateway dropped: asked again like a 5xx.
          () => 503,
        );
        if ((status === 429 || status >= 500) && attempt < MAX_RETRIES) {
          await sleep(100 * 2 ** attempt);
          continue;
        }
        // Not found, or never answered after every retry: the model cannot show the task is kept.
        if (status !== 200) missing.add(taskId);
        break;
      }
    }
  };
  await Promise.all(Array.from({ length: LOOKUPS_IN_FLIGHT }, lookUp));
  return missing;
}

/** Why a task's attempts before the one that arrived first failed, as its history (GET /v1/tasks/{id}) says. */
async function earlierErrors(delivery: LateDelivery, apiUrl: string, apiKey = ''): Promise<string[]> {
  const response = await fetch(`${apiUrl}/v1/tasks/${delivery.taskId}`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  const task = (await response.json()) as { history?: Array<{ attempt: number; error?: string }> };
  return (task.history ?? [])
    .filter((attempt) => attempt.attempt < delivery.attempt)
    .map((attempt) => attempt.error ?? 'no error recorded');
}

/**
 * Requests the model refused: DynamoDB's (every key class and the table), API Gateway's 429s,
 * Lambda's throttled invocations (concurrency and new environments), SQS's OverLimit receives
 * and visibility refusals, EventBridge's PutEvents throttles, and submits and schedule creates
 * the API answered 5xx or refused for good.
 */
export function throttledRequests({
  model,
  lambda,
  tenants,
  schedules,
}: Pick<ScenarioResult, 'model' | 'lambda' | 'tenants' | 'schedules'>): number {
  const dynamo = Object.values(model.dynamodb.byKeyClass).reduce((sum, usage) => sum + usage.throttles, 0);
  const { read, write } = model.dynamodb.tableThrottles;
  const invocations = Object.values(lambda).reduce((sum, stats) => sum + stats.throttles, 0);
  const sqs = Object.values(model.sqs.queues).reduce(
    (sum, queue) => sum + queue.receivesAtCap + queue.visibilityRefusals,
    0,
  );
  const submits = Object.values(tenants).reduce((sum, tenant) => sum + tenant.api5xx + tenant.rejected, 0);
  const scheduleCreates = schedules ? schedules.api5xx + schedules.refused : 0;
  return (
    dynamo +
    read +
    write +
    model.api.throttled +
    invocations +
    sqs +
    model.eventBridge.throttled +
    submits +
    scheduleCreates
  );
}

/**
 * The hottest key's or partition's busiest second as a fraction of its limit. Without
 * `shardKeys`, keys of SHARD_KEY_CLASSES are left out, keys and partitions alike: what one of them
 * takes in a second is set by the design's shard count, which the model does not divide by k.
 */
export function hottestFraction({ model }: Pick<ScenarioResult, 'model'>, shardKeys = true): number {
  const { hottestKey, hottestKeyByClass, collisions, limits } = model.dynamodb;
  if (shardKeys) return Math.max(hottestKey?.fractionOfLimit ?? 0, collisions?.hottestFractionOfLimit ?? 0);
  const byClass = Object.entries(hottestKeyByClass)
    .filter(([keyClass]) => !SHARD_KEY_CLASSES.has(keyClass))
    .map(([, peak]) => Math.max(peak.read / limits.partitionRead, peak.write / limits.partitionWrite));
  return Math.max(0, ...byClass, collisions?.hottestUnshardedFractionOfLimit ?? 0);
}
