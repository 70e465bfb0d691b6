/**
 * In-memory stand-ins for the core's ports. They keep only the state the core's
 * contracts talk about (cursor, markers, task status, attempts, lease), so a test can
 * set up a situation in one line and read the outcome back without any AWS client.
 */
export { ManualClock } from '../support/clock.js';
import { idempotencyKey, taskNameTexts } from '../../functions/adapters/dynamo/table-schema.js';
import { minuteOf } from '../../functions/core/kernel/clock.js';
import { MAX_SHARDS, newTaskId, parseTaskId, type TaskAddress } from '../../functions/core/kernel/ids.js';
import { asReceiptsShow } from '../../functions/core/kernel/receipts.js';
import type {
  CancelOutcome,
  CancelRequest,
  ClockState,
  ClockStore,
  DeliveryMessage,
  DeliveryQueue,
  DeliveryReceipt,
  DeliveryRecord,
  DueTask,
  FirstAttemptRecord,
  IdempotencyRecord,
  IdempotencyStore,
  OccupancyIndex,
  RescheduleIntent,
  SecondRange,
  Task,
  TaskStore,
  Watermark,
} from '../../functions/core/kernel/task.js';
import {
  awaitsUnleasedFirstAttempt,
  copiesMayCall,
  showsRecord,
  unconfirmedCancelOf,
} from '../../functions/core/kernel/task.js';
import type { Tick, TickQueue } from '../../functions/core/kernel/tick.js';
import type {
  ChainPosition,
  NextOccurrence,
  OccurrencePorts,
  Schedule,
  SchedulePage,
  ScheduleStore,
} from '../../functions/core/schedules/schedules.js';
import type { BizTypeSettings, BizTypeStore } from '../../functions/core/submit/biz-types.js';
import {
  type CounterShare,
  newKeyring,
  newTenant,
  type RequestCounter,
  type Tenant,
  type TenantDirectory,
} from '../../functions/core/tenants/tenants.js';
import type { ManualClock } from '../support/clock.js';

export class FakeClockStore implements ClockStore {
  /** Second → how many tasks its scan enqueued. */
  readonly markers = new Map<number, number>();
  private rivalClaims = 0;

  constructor(public state?: ClockState) {}

  /** The next `count` advance() calls lose to a rival scanner that moves the cursor just before them. */
  loseNextAdvances(count: number): void {
    this.rivalClaims = count;
  }

  async read(): Promise<ClockState | undefined> {
    return this.state;
  }

  async start(second: number): Promise<boolean> {
    if (this.state) return false;
    this.state = { cursor: second, startedAt: second };
    return true;
  }

  async advance(from: number, through: number): Promise<boolean> {
    if (!this.state) return false;
    if (this.rivalClaims > 0) {
      this.rivalClaims--;
      this.state = { ...this.state, cursor: this.state.cursor + 1 };
    }
    if (this.state.cursor !== from) return false;
    this.state = { ...this.state, cursor: through + 1 };
    return true;
  }

  async markScanned(range: SecondRange, enqueuedBySecond: ReadonlyMap<number, number>): Promise<void> {
    for (let second = range.from; second <= range.through; second++) {
      this.markers.set(second, enqueuedBySecond.get(second) ?? 0);
    }
  }

  async scannedSeconds(from: number, to: number): Promise<Map<number, number>> {
    return new Map([...this.markers].filter(([second]) => second >= from && second <= to));
  }

  /** Due seconds the api flagged for the sweeper, by the second it flagged them. */
  readonly rechecks = new Map<number, number[]>();

  async markForRecheck(dueSeconds: readonly number[], flaggedAt: number): Promise<void> {
    // The real store keeps one item per flag time and due second, so a second flagged twice is there once.
    this.rechecks.set(flaggedAt, [...new Set([...(this.rechecks.get(flaggedAt) ?? []), ...dueSeconds])]);
  }

  async rechecksFlagged(from: number, to: number): Promise<Map<number, number[]>> {
    return new Map([...this.rechecks].filter(([flaggedAt]) => flaggedAt >= from && flaggedAt <= to));
  }

  /** The sweeper's watermarks, as the real store keeps them in their own item. */
  readonly watermarks: Partial<Record<Watermark, number>> = {};

  async watermark(name: Watermark): Promise<number | undefined> {
    return this.watermarks[name];
  }

  async raiseWatermark(name: Watermark, second: number): Promise<void> {
    this.watermarks[name] = Math.max(this.watermarks[name] ?? Number.NEGATIVE_INFINITY, second);
  }
}

/** The occupancy index as sets, with the real one's rule: a second new to a planned minute is the caller's to tick. */
export class FakeOccupancyIndex implements OccupancyIndex {
  readonly seconds = new Set<number>();
  readonly planned = new Set<number>();

  constructor(seconds: Iterable<number> = []) {
    for (const second of seconds) this.seconds.add(second);
  }

  async occupy(seconds: readonly number[]): Promise<number[]> {
    const fresh = [...new Set(seconds)].filter((second) => !this.seconds.has(second));
    for (const second of fresh) this.seconds.add(second);
    return fresh.filter((second) => this.planned.has(minuteOf(second)));
  }

  async plan(minute: number): Promise<number[] | undefined> {
    if (this.planned.has(minute)) return undefined;
    this.planned.add(minute);
    return [...this.seconds].filter((second) => minuteOf(second) === minute).sort((a, b) => a - b);
  }

  async occupied(from: number, to: number): Promise<Set<number>> {
    return new Set([...this.seconds].filter((second) => second >= from && second <= to));
  }
}

export class FakeTickQueue implements TickQueue {
  readonly sent: Tick[] = [];
  failure: Error | undefined;

  async send(ticks: readonly Tick[]): Promise<void> {
    if (this.failure) throw this.failure;
    this.sent.push(...ticks);
  }
}

/** Idempotency keys in a map, with the real store's first-claim-wins rule. */
export class FakeIdempotencyStore implements IdempotencyStore {
  readonly records = new Map<string, IdempotencyRecord>();

  async claim(record: IdempotencyRecord): Promise<{ claimed: boolean; holder: IdempotencyRecord }> {
    const key = idempotencyKey(record.scope, record.tenantId, record.key).pk;
    const holder = this.records.get(key);
    if (holder) return { claimed: false, holder };
    this.records.set(key, record);
    return { claimed: true, holder: record };
  }
}

function withoutExpiry<T extends object>(outcome: T): Omit<T, 'expiresAtSeconds'> {
  const { expiresAtSeconds: _expiry, ...rest } = outcome as T & { expiresAtSeconds?: number };
  return rest;
}

/** Tasks by id, with the lease and attempt rules of the real store's conditional writes. */
export class FakeTaskStore implements TaskStore {
  readonly tasks = new Map<string, Task>();
  /** Receipts by their id, as stored (a receipt written again lands on itself). */
  readonly receipts = new Map<string, DeliveryReceipt>();

  constructor(tasks: readonly Task[] = []) {
    for (const task of tasks) this.tasks.set(task.id, task);
  }

  async create(task: Task): Promise<void> {
    // The real store's put is conditional on the key being free.
    if (this.tasks.has(task.id)) throw new Error(`task ${task.id} already exists`);
    this.tasks.set(task.id, task);
  }

  async createUnlessStored(task: Task): Promise<{ created: true } | { created: false; stored: Task }> {
    const stored = this.tasks.get(task.id);
    if (stored) return { created: false, stored };
    this.tasks.set(task.id, task);
    return { created: true };
  }

  async createMany(entries: ReadonlyArray<{ task: Task }>): Promise<void> {
    for (const { task } of entries) this.tasks.set(task.id, task);
  }

  async get(address: TaskAddress): Promise<Task | undefined> {
    return this.tasks.get(address.id);
  }

  async getMany(addresses: readonly TaskAddress[]): Promise<Array<Task | undefined>> {
    return addresses.map((address) => this.tasks.get(address.id));
  }

  async cancel(address: TaskAddress, request: CancelRequest): Promise<CancelOutcome> {
    const task = this.tasks.get(address.id);
    if (task?.tenantId !== request.tenantId) return { cancelled: false, reason: 'not-found' };
    if (task.status !== 'PENDING') {
      const reason = task.status === 'DELIVERING' ? 'in-delivery' : 'already-final';
      const unconfirmed = unconfirmedCancelOf(task);
      return { cancelled: false, reason, status: task.status, ...(unconfirmed && { unconfirmed }) };
    }
    const unleased = awaitsUnleasedFirstAttempt(task);
    if (unleased && task.fireAtMs <= request.unleasedDueAfterMs)
      return { cancelled: false, reason: 'too-late', status: task.status };
    if (copiesMayCall(task, request.nowMs)) return { cancelled: false, reason: 'in-delivery', status: task.status };
    this.tasks.set(task.id, {
      ...task,
      status: 'CANCELLED',
      cancelledAtMs: request.nowMs,
      ...(request.cancelId !== undefined && { unconfirmedCancel: request.cancelId }),
    });
    return { cancelled: true, unleased };
  }

  async confirmCancel(address: TaskAddress, cancelId: string): Promise<boolean> {
    const task = this.tasks.get(address.id);
    if (task?.status !== 'CANCELLED' || task.unconfirmedCancel !== cancelId) return false;
    const { unconfirmedCancel: _unconfirmed, ...confirmed } = task;
    this.tasks.set(task.id, confirmed);
    return true;
  }

  async revertCancel(address: TaskAddress, cancelId: string): Promise<boolean> {
    const task = this.tasks.get(address.id);
    if (task?.status !== 'CANCELLED' || task.unconfirmedCancel !== cancelId) return false;
    const { cancelledAtMs: _cancelledAt, unconfirmedCancel: _unconfirmed, ...uncancelled } = task;
    this.tasks.set(task.id, { ...uncancelled, status: 'PENDING' });
    return true;
  }

  async listDue(second: number, shard: number, options: { strandedBeforeMs?: number } = {}): Promise<DueTask[]> {
    const stale = options.strandedBeforeMs;
    const before = (atMs: number | undefined) => stale !== undefined && atMs !== undefined && atMs < stale;
    return [...this.tasks.values()]
      .filter((task) => Math.floor(task.fireAtMs / 1000) === second)
      .filter((task) =>
        stale === undefined
          ? task.status === 'PENDING'
          : (task.status === 'PENDING' && (task.attempts === 0 || before(task.retryAtMs))) ||
            (task.status === 'DELIVERING' && before(task.leaseUntilMs)),
      )
      .filter((task) => parseTaskId(task.id, MAX_SHARDS)?.shard === shard)
      .map(({ id, fireAtMs }) => ({ id, fireAtMs }));
  }

  async claimDelivery(
    address: TaskAddress,
    nowMs: number,
    leaseUntilMs: number,
    attemptId: string,
  ): Promise<Task | undefined> {
    const task = this.tasks.get(address.id);
    if (!task) return undefined;
    if (!this.leasable(task, nowMs))
      return task.status === 'DELIVERING' && task.attemptId === attemptId ? task : undefined;
    const claimed: Task = { ...task, status: 'DELIVERING', leaseUntilMs, attemptId, attempts: task.attempts + 1 };
    this.tasks.set(task.id, claimed);
    return claimed;
  }

  async finishDelivery(address: TaskAddress, attempt: number, outcome: DeliveryRecord): Promise<boolean> {
    const task = this.tasks.get(address.id);
    if (!task) return false;
    if (task.status !== 'DELIVERING' || task.attempts !== attempt) return showsRecord(task, attempt, outcome);
    // The TTL (expiresAtSeconds) is stored beside the task, never part of it.
    const { leaseUntilMs: _lease, attemptId: _attemptId, ...unleased } = task;
    const finished: Task =
      outcome.status === 'RELEASED'
        ? { ...unleased, status: 'PENDING', attempts: attempt - 1 }
        : { ...unleased, ...withoutExpiry(outcome) };
    this.tasks.set(task.id, finished);
    return true;
  }

  async finishFirstAttempt(
    address: TaskAddress,
    outcome: FirstAttemptRecord,
    copiesCallUntilMs: number,
    attemptId: string,
  ): Promise<boolean> {
    const task = this.tasks.get(address.id);
    if (!task) return false;
    return (
      this.recordFirstAttempt(task, outcome, copiesCallUntilMs, attemptId) ||
      (task.attemptId === attemptId && task.status === outcome.status)
    );
  }

  private recordFirstAttempt(
    task: Task,
    outcome: FirstAttemptRecord,
    copiesCallUntilMs: number,
    attemptId: string,
  ): boolean {
    if (!awaitsUnleasedFirstAttempt({ ...task, attempts: 0 })) return false;
    const delivered = outcome.status === 'DELIVERED';
    if (task.attempts > 0) {
      // A copy's 2xx after another copy recorded first: kept, with the attempts counted so far.
      if (!delivered || task.status === 'DELIVERED' || task.rescheduledTo !== undefined) return false;
      const { leaseUntilMs: _lease, ...unleased } = task;
      const history = [...(task.history ?? []), ...outcome.history.slice(-1)];
      this.tasks.set(task.id, { ...unleased, ...withoutExpiry(outcome), history, attempts: task.attempts, attemptId });
      return true;
    }
    const overCancel = delivered && task.status === 'CANCELLED' && task.rescheduledTo === undefined;
    if (task.status !== 'PENDING' && !overCancel) return false;
    this.tasks.set(task.id, {
      ...task,
      ...withoutExpiry(outcome),
      attempts: 1,
      attemptId,
      ...(!delivered && { copiesCallUntilMs }),
    });
    return true;
  }

  async recordRescheduleIntent(
    address: TaskAddress,
    tenantId: string,
    intent: RescheduleIntent,
    priorIntentTaskId?: string,
  ): Promise<boolean> {
    const task = this.tasks.get(address.id);
    if (task?.status !== 'PENDING' || task.tenantId !== tenantId || task.rescheduleIntent?.taskId !== priorIntentTaskId)
      return false;
    this.tasks.set(task.id, { ...task, rescheduleIntent: intent });
    return true;
  }

  async commitReschedule(address: TaskAddress, toTaskId: string, nowMs: number): Promise<boolean> {
    const task = this.tasks.get(address.id);
    if (task?.status !== 'PENDING' || task.rescheduleIntent?.taskId !== toTaskId) return false;
    this.tasks.set(task.id, { ...task, status: 'CANCELLED', cancelledAtMs: nowMs, rescheduledTo: toTaskId });
    return true;
  }

  async withdrawRescheduleIntent(address: TaskAddress, toTaskId: string): Promise<boolean> {
    const task = this.tasks.get(address.id);
    if (task?.rescheduleIntent?.taskId !== toTaskId || task.rescheduledTo !== undefined) return false;
    this.tasks.set(task.id, { ...task, rescheduleIntent: undefined });
    return true;
  }

  async reviveFailed(address: TaskAddress): Promise<boolean> {
    const task = this.tasks.get(address.id);
    if (task?.status !== 'FAILED') return false;
    const { retryAtMs: _retryAt, ...revived } = task;
    this.tasks.set(task.id, { ...revived, status: 'PENDING', attempts: 0 });
    return true;
  }

  async recordReceipt(receipt: DeliveryReceipt): Promise<void> {
    this.receipts.set(receipt.id, receipt);
  }

  async receiptsOf(second: number): Promise<Map<string, number>> {
    return this.deliveredIn(second);
  }

  /** A task as GET shows it, at any time after it fired: its item, with its receipt read in (receipts.ts). */
  shown(id: string): Task | undefined {
    const task = this.tasks.get(id);
    return task && asReceiptsShow(task, this.deliveredIn(Math.floor(task.fireAtMs / 1000)), Number.POSITIVE_INFINITY);
  }

  private deliveredIn(second: number): Map<string, number> {
    const delivered = new Map<string, number>();
    for (const receipt of this.receipts.values()) {
      if (receipt.second !== second) continue;
      for (const [id, atMs] of receipt.delivered) delivered.set(id, Math.min(atMs, delivered.get(id) ?? atMs));
    }
    return delivered;
  }

  private leasable(task: Task, nowMs: number): boolean {
    return task.status === 'PENDING' || (task.status === 'DELIVERING' && (task.leaseUntilMs ?? 0) < nowMs);
  }
}

export class FakeDeliveryQueue implements DeliveryQueue {
  readonly sent: DeliveryMessage[] = [];
  /** When set, every send throws it, as SQS would after its retries ran out. */
  failure: Error | undefined;

  async send(messages: readonly DeliveryMessage[]): Promise<void> {
    if (this.failure) throw this.failure;
    this.sent.push(...messages);
  }
}

const counterName = (subject: CounterShare, second: number) =>
  JSON.stringify([subject.tenantId, subject.bizType ?? null, subject.share ?? null, second]);

/** Counts per subject, share and second in a map, with the real counter's refuse-at-the-limit rule. */
export class FakeRequestCounter implements RequestCounter {
  private readonly counts = new Map<string, number>();

  /** Calls made, as the shared store would see them. */
  calls = 0;

  /** What `subject` has counted in `second`. */
  countOf(subject: CounterShare, second: number): number {
    return this.counts.get(counterName(subject, second)) ?? 0;
  }

  async admit(subject: CounterShare, second: number, limit: number, count = 1): Promise<boolean> {
    this.calls++;
    const key = counterName(subject, second);
    const counted = this.counts.get(key) ?? 0;
    if (counted + count > limit) return false;
    this.counts.set(key, counted + count);
    return true;
  }
}

/** bizType settings by tenant and bizType; `reads` counts gets, to prove caching. */
export class FakeBizTypeStore implements BizTypeStore {
  readonly settings = new Map<string, BizTypeSettings>();
  reads = 0;

  async put(settings: BizTypeSettings): Promise<void> {
    this.settings.set(JSON.stringify([settings.tenantId, settings.bizType]), settings);
  }

  async get(tenantId: string, bizType: string): Promise<BizTypeSettings | undefined> {
    this.reads++;
    return this.settings.get(JSON.stringify([tenantId, bizType]));
  }

  async list(tenantId: string): Promise<BizTypeSettings[]> {
    return [...this.settings.values()].filter((settings) => settings.tenantId === tenantId);
  }

  async delete(tenantId: string, bizType: string): Promise<boolean> {
    return this.settings.delete(JSON.stringify([tenantId, bizType]));
  }
}

/** Schedules by tenant and id, with the real store's conditional rules (revision, and `next`, for a replace and an advance). */
export class FakeScheduleStore implements ScheduleStore {
  readonly schedules = new Map<string, Schedule>();
  /** Conditional advances made, to count the chain's writes. */
  advances = 0;

  async create(schedule: Schedule): Promise<boolean> {
    if (this.schedules.has(`${schedule.tenantId}#${schedule.id}`)) return false;
    this.schedules.set(`${schedule.tenantId}#${schedule.id}`, schedule);
    return true;
  }

  async get(tenantId: string, id: string): Promise<Schedule | undefined> {
    return this.schedules.get(`${tenantId}#${id}`);
  }

  async page(tenantId: string, limit: number, afterId?: string): Promise<SchedulePage> {
    const following = [...this.schedules.values()]
      .filter((schedule) => schedule.tenantId === tenantId && (afterId === undefined || schedule.id > afterId))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    return { schedules: following.slice(0, limit), more: following.length > limit };
  }

  async count(tenantId: string): Promise<number> {
    return [...this.schedules.values()].filter((schedule) => schedule.tenantId === tenantId).length;
  }

  async replace(schedule: Schedule, readAt: ChainPosition): Promise<boolean> {
    const current = await this.get(schedule.tenantId, schedule.id);
    if (current?.revision !== readAt.revision || current.next?.taskId !== readAt.nextTaskId) return false;
    this.schedules.set(`${schedule.tenantId}#${schedule.id}`, schedule);
    return true;
  }

  async advance(tenantId: string, id: string, revision: string, fromTaskId: string, next?: NextOccurrence) {
    const current = await this.get(tenantId, id);
    if (current?.revision !== revision || current.next?.taskId !== fromTaskId) return false;
    this.advances++;
    const { next: _next, ...rest } = current;
    this.schedules.set(`${tenantId}#${id}`, { ...rest, ...(next && { next }), advancedFrom: fromTaskId });
    return true;
  }

  async delete(tenantId: string, id: string): Promise<Schedule | undefined> {
    const current = await this.get(tenantId, id);
    this.schedules.delete(`${tenantId}#${id}`);
    return current;
  }
}

/** Where occurrences are stored, over fakes: the task store and clock given, the rest fresh. */
export function fakeOccurrencePorts(
  taskStore: TaskStore,
  clock: ManualClock,
  scheduleStore: ScheduleStore = new FakeScheduleStore(),
) {
  return {
    taskStore,
    clock,
    scheduleStore,
    clockStore: new FakeClockStore({ cursor: Math.floor(clock.now() / 1000), startedAt: 0 }),
    occupancy: new FakeOccupancyIndex(),
    deliveryQueue: new FakeDeliveryQueue(),
    tickQueue: new FakeTickQueue(),
    bucketCount: DELIVERY_SETTINGS.bucketCount,
    shardCount: DELIVERY_SETTINGS.shardCount,
    nameTexts: taskNameTexts,
    lookaheadSeconds: 2,
  } satisfies OccurrencePorts;
}

/** The deployment settings delivery tests run under, beside their own fakes. */
export const DELIVERY_SETTINGS = {
  bucketCount: 1000,
  shardCount: 4,
  maxAttempts: 5,
  backoffBaseSeconds: 5,
  backoffMaxSeconds: 900,
  retentionDays: 30,
  leaseMs: 60_000,
  maxEarlyWaitMs: 5000,
} as const;

export const TENANT_ID = 'acme';

/** The tenant the fakes' tasks belong to, with one signing secret. */
export function aTenant(overrides: Partial<Tenant> = {}): Tenant {
  return { ...newTenant(TENANT_ID, Date.UTC(2026, 0, 1)), ...overrides };
}

/** Tenants by id, and no API keys (tests of authentication use the real store on dynalite). */
export function fakeTenantDirectory(tenants: readonly Tenant[] = [aTenant()]): TenantDirectory {
  const keyring = newKeyring(Date.UTC(2026, 0, 1));
  return {
    tenant: async (id) => tenants.find((tenant) => tenant.id === id),
    apiKey: async () => undefined,
    keyring: async () => keyring,
  };
}

/** A PENDING webhook task with a real id for `dueAtMs` and `shard`. */
export function aTask(dueAtMs: number, shard = 0, overrides: Partial<Task> = {}): Task {
  return {
    id: newTaskId({ fireAtMs: dueAtMs, shard }),
    tenantId: TENANT_ID,
    status: 'PENDING',
    dueAtMs,
    fireAtMs: dueAtMs,
    createdAtMs: dueAtMs - 60_000,
    target: { type: 'http', url: 'https://hooks.example.com/timer' },
    payloadJson: '{"orderId":"o-1"}',
    attempts: 0,
    ...overrides,
  };
}

/**
 * A cancel as the api asks for it. `unleasedDueAfterMs` defaults to 0 (no margin), for tests
 * about everything but the due-time rule of tasks whose first attempt takes no lease.
 */
export function cancelRequest(
  tenantId: string,
  nowMs: number,
  expiresAtSeconds = 0,
  unleasedDueAfterMs = 0,
): CancelRequest {
  return { tenantId, nowMs, expiresAtSeconds, unleasedDueAfterMs };
}
