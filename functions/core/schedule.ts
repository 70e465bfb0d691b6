import { FUNCTIONS } from '../contract/topology.js';
import { claimableThrough, ensureClockStarted, secondOf } from './clock.js';
import type { TaskKey } from './ids.js';
import { dealShard, newTaskId, parseTaskId, taskKey } from './ids.js';
import { MARKER_RETENTION_SECONDS, toDeliveryMessages } from './scan.js';
import type { NewTask } from './schemas.js';
import type {
  CancelOutcome,
  Clock,
  ClockStore,
  DeliveryQueue,
  IdempotencyStore,
  OccupancyIndex,
  Task,
  TaskStore,
} from './task.js';
import { CLOCK_SKEW_MS, DAY_SECONDS, expiryAfter, UNLEASED_CANCEL_MARGIN_MS } from './task.js';
import { tickFor, type TickQueue } from './tick.js';
import { dueAtForFireTime, planFireAt } from './window.js';

export interface SchedulePorts {
  readonly taskStore: TaskStore;
  readonly clockStore: ClockStore;
  readonly idempotencyStore: IdempotencyStore;
  readonly occupancy: OccupancyIndex;
  readonly deliveryQueue: DeliveryQueue;
  readonly tickQueue: TickQueue;
  readonly clock: Clock;
  readonly bucketCount: number;
  readonly shardCount: number;
  readonly retentionDays: number;
  readonly lookaheadSeconds: number;
}

export type ScheduleOutcome =
  | { readonly kind: 'created'; readonly task: Task }
  /** A retry of a submit that already made this task (same idempotency key, same request). */
  | { readonly kind: 'replayed'; readonly task: Task }
  /** The idempotency key was first used with a different request, which made this task. */
  | { readonly kind: 'conflict'; readonly taskId: string }
  /** The key's task finished and has expired; the key cannot be used again. */
  | { readonly kind: 'expired'; readonly taskId: string };

export interface ScheduleResult {
  /** One per request, in order. */
  readonly outcomes: ScheduleOutcome[];
  /** Late arrivals the api enqueued itself. */
  readonly enqueuedDirect: number;
  /** Late arrivals it could not enqueue and left, flagged, to the sweeper. */
  readonly deferred: number;
  /** Seconds whose tick could not be sent: their tasks wait for the sweeper's catch-up, late but not lost. */
  readonly untickedSeconds: number;
}

export type Entry = { task: Task; key: TaskKey };

/**
 * A new task's item and key. Its fire time is planned here, once (window.ts): the id encodes it,
 * so it is the second the task is indexed, stored, scanned and judged a late arrival by. Given
 * `id`, the id an earlier attempt of the same request recorded, the task takes that id's place
 * and fire time instead.
 */
function newEntry(ports: SchedulePorts, tenantId: string, request: NewTask, createdAtMs: number, id?: string): Entry {
  const location = id
    ? parseTaskId(id, ports.shardCount)
    : { fireAtMs: planFireAt(request.dueAtMs, request.window), shard: dealShard(ports.shardCount) };
  if (!location) throw new Error(`task id ${id} does not fit this deployment's shard count`);
  const taskId = id ?? newTaskId(location);
  const task: Task = {
    ...request,
    id: taskId,
    tenantId,
    dueAtMs: dueAtForFireTime(location.fireAtMs, request.dueAtMs, request.window),
    fireAtMs: location.fireAtMs,
    status: 'PENDING',
    createdAtMs,
    attempts: 0,
    ...(isLateArrival(location.fireAtMs, createdAtMs, ports.lookaheadSeconds) && { lateArrival: true }),
  };
  return { task, key: taskKey(taskId, location, ports.bucketCount) };
}

/** Stores the task, or, if a concurrent request that chose the same id stored it first, takes that one. */
export async function createOrAdopt(ports: Pick<SchedulePorts, 'taskStore'>, entry: Entry): Promise<Task> {
  try {
    await ports.taskStore.create(entry.task, entry.key);
    return entry.task;
  } catch (error) {
    const stored = await ports.taskStore.get(entry.key);
    if (!stored) throw error;
    return stored;
  }
}

/**
 * A submit with an idempotency key claims the key first (a conditional put recording the
 * new task's id, the request's fingerprint and when), then stores the task. A retry finds
 * the key taken: the same request gets the task back; a different one is a conflict. If
 * the first submit died between its two writes, the retry stores the task under the
 * recorded id. That repair is only safe while the task, had it been written, could not yet
 * have expired: a finished task lives `retentionDays` after it ends, so within that many
 * days of the claim a missing task was never written. After it, the key is spent.
 */
async function scheduleWithKey(
  ports: SchedulePorts,
  tenantId: string,
  request: NewTask & { idempotencyKey: string },
  entry: Entry,
  occupy: (seconds: readonly number[]) => Promise<void>,
): Promise<ScheduleOutcome> {
  const { createdAtMs } = entry.task;
  const expiresAtSeconds = expiryAfter(Math.max(entry.task.fireAtMs, createdAtMs), ports.retentionDays);
  const { claimed, holder } = await ports.idempotencyStore.claim(
    {
      // Keys are the tenant's own: two tenants using the same key never meet.
      key: `${tenantId}#${request.idempotencyKey}`,
      fingerprint: request.fingerprint,
      taskId: entry.task.id,
      claimedAtMs: createdAtMs,
    },
    expiresAtSeconds,
  );
  if (claimed) return { kind: 'created', task: await createOrAdopt(ports, entry) };
  if (holder.fingerprint !== request.fingerprint) return { kind: 'conflict', taskId: holder.taskId };
  const recorded = newEntry(ports, tenantId, request, createdAtMs, holder.taskId);
  const existing = await ports.taskStore.get(recorded.key);
  if (existing) return { kind: 'replayed', task: existing };
  if (createdAtMs - holder.claimedAtMs >= ports.retentionDays * DAY_SECONDS * 1000) {
    return { kind: 'expired', taskId: holder.taskId };
  }
  // The recorded id may fire at another second than this request's entry (delaySeconds resolves
  // anew, and a window is planned anew).
  await occupy([secondOf(recorded.task.fireAtMs)]);
  return { kind: 'replayed', task: await createOrAdopt(ports, recorded) };
}

/**
 * Records the tasks' seconds in the occupancy index, stores the tasks, then hands any whose
 * second a scanner may already have claimed straight to the delivery queue. The order matters
 * (invariant 5): the index entry and the task are durable before the hand-off decides, so
 * either the scanner's claim comes later, and its index read and query see the task, or the
 * second lies within claimableThrough of now and this call enqueues it. The decision needs no
 * read of the cursor: a claim never reaches past its claimant's now and lookahead, so the
 * bound is known from the clock alone. A task can be enqueued twice by that, never zero
 * times. Only when neither the enqueue nor the sweeper's flag can be written does the call
 * fail. A second the index had not seen, in a minute the ticker already planned, gets its
 * tick from here.
 */
export async function scheduleTasks(
  ports: SchedulePorts,
  tenantId: string,
  requests: readonly NewTask[],
): Promise<ScheduleResult> {
  const { taskStore, clock } = ports;
  const createdAtMs = clock.now();
  const outcomes: ScheduleOutcome[] = new Array(requests.length);
  const unticked = new Set<number>();
  const occupy = async (seconds: readonly number[]) => {
    for (const second of await ports.occupancy.occupy(seconds)) unticked.add(second);
  };
  // Entries are built (and fire times planned) before any write starts, so nothing can throw
  // with writes left unawaited, and the index is written for the seconds the tasks fire in.
  const entries = requests.map((request) => newEntry(ports, tenantId, request, createdAtMs));
  const plain = entries.flatMap((entry, index) =>
    requests[index]?.idempotencyKey === undefined ? [{ index, entry }] : [],
  );
  // Before any task is written, so that no stored task is ever missing from the index, nor due
  // after a cursor that is yet to start.
  await Promise.all([
    occupy(entries.map(({ task }) => secondOf(task.fireAtMs))),
    ensureClockStarted(ports.clockStore, clock),
  ]);
  const keyed = requests.flatMap((request, index) => {
    const { idempotencyKey } = request;
    const entry = entries[index];
    if (idempotencyKey === undefined || !entry) return [];
    return [
      scheduleWithKey(ports, tenantId, { ...request, idempotencyKey }, entry, occupy).then((outcome) => {
        outcomes[index] = outcome;
      }),
    ];
  });
  const writePlain = async () => {
    const [single] = plain;
    if (plain.length === 1 && single) await taskStore.create(single.entry.task, single.entry.key);
    else if (plain.length > 1) await taskStore.createMany(plain.map(({ entry }) => entry));
    for (const { index, entry } of plain) outcomes[index] = { kind: 'created', task: entry.task };
  };
  // Awaited together: a failure on one side must not leave the other's rejection unhandled.
  await Promise.all([writePlain(), ...keyed]);

  const stored = outcomes.flatMap((outcome) =>
    outcome.kind === 'created' || outcome.kind === 'replayed' ? [outcome.task] : [],
  );
  return { outcomes, ...(await handOffLateArrivals(ports, stored, unticked)) };
}

/**
 * Stores one task under an id its caller derived (a schedule's occurrence), exactly as a submit
 * stores one: its second in the occupancy index and the clock started before the write, then the
 * hand-off of a late arrival. A task already stored under the id is taken as it is (and handed off
 * again if it is a late arrival still waiting: the lease absorbs the duplicate), so a repeat is a no-op.
 */
export async function storeTaskWithId(
  ports: Pick<
    SchedulePorts,
    'taskStore' | 'clockStore' | 'occupancy' | 'deliveryQueue' | 'tickQueue' | 'clock' | 'lookaheadSeconds'
  >,
  task: Task,
  key: TaskKey,
): Promise<Task> {
  const [unticked] = await Promise.all([
    ports.occupancy.occupy([secondOf(task.fireAtMs)]),
    ensureClockStarted(ports.clockStore, ports.clock),
  ]);
  const stored = await createOrAdopt(ports, { task, key });
  await handOffLateArrivals(ports, [stored], new Set(unticked));
  return stored;
}

/**
 * Whether a task written by an api call that started at `createdAtMs` may be handed to the
 * delivery queue by that call (see handOffLateArrivals): due up to claimableThrough of any
 * moment the call can still be running at, which its function's timeout bounds. Decided before
 * the write, so the task item says so from the start.
 */
export function isLateArrival(fireAtMs: number, createdAtMs: number, lookaheadSeconds: number): boolean {
  return secondOf(fireAtMs) <= claimableThrough(createdAtMs + FUNCTIONS.api.timeoutSeconds * 1000, lookaheadSeconds);
}

/**
 * Enqueues the stored tasks whose second a scanner may already have claimed (invariant 5: call
 * it after the index and task writes): those due up to claimableThrough, which also covers the
 * lookahead, which a tick could not bring a scanner to in time. A task due later is certainly in
 * a second no one has claimed, and the scan that claims it will find it in the index. Some of
 * those enqueued here are sent again by their second's scan; the callback's lease absorbs the
 * duplicate (late arrivals take it on their first attempt too). Only tasks marked `lateArrival`
 * when written are handed off: a replay that finds an unmarked task written long before leaves it
 * to the scan that found it. Should the enqueue fail, the tasks are flagged for the sweeper's overdue pass,
 * which enqueues them once they are overdueGraceSeconds past due. Ticks the seconds in
 * `unticked` (new to a minute the ticker already planned) that a scanner must still claim.
 * Returns how many it enqueued, or, if the enqueue failed, how many it left flagged; throws
 * only when neither could be written.
 */
export async function handOffLateArrivals(
  ports: Pick<SchedulePorts, 'clockStore' | 'deliveryQueue' | 'tickQueue' | 'clock' | 'lookaheadSeconds'>,
  stored: readonly Task[],
  unticked: ReadonlySet<number>,
): Promise<Omit<ScheduleResult, 'outcomes'>> {
  const { clockStore, deliveryQueue, clock } = ports;
  const nowMs = clock.now();
  const enqueueThrough = claimableThrough(nowMs, ports.lookaheadSeconds);
  const late = stored.filter(
    (task) =>
      task.lateArrival === true &&
      task.status === 'PENDING' &&
      task.attempts === 0 &&
      secondOf(task.fireAtMs) <= enqueueThrough,
  );
  // Those seconds need no tick: their tasks are enqueued here.
  const ticks = [...unticked]
    .filter((second) => second > enqueueThrough)
    .map((second) => tickFor(second, nowMs, ports.lookaheadSeconds));
  const [enqueued, ticked] = await Promise.allSettled([
    late.length > 0 ? deliveryQueue.send(toDeliveryMessages(late, nowMs)) : Promise.resolve(),
    ticks.length > 0 ? ports.tickQueue.send(ticks) : Promise.resolve(),
  ]);
  const untickedSeconds = ticked.status === 'fulfilled' ? 0 : ticks.length;
  if (enqueued.status === 'fulfilled') return { enqueuedDirect: late.length, deferred: 0, untickedSeconds };
  // Flagged only when the enqueue failed: a flag per submit would be one more item written by
  // every submit due within the same seconds (invariant 8).
  try {
    await clockStore.markForRecheck(
      late.map((task) => secondOf(task.fireAtMs)),
      secondOf(nowMs),
      secondOf(nowMs) + MARKER_RETENTION_SECONDS,
    );
  } catch {
    throw enqueued.reason;
  }
  return { enqueuedDirect: 0, deferred: late.length, untickedSeconds };
}

export interface TaskLookupPorts {
  readonly taskStore: TaskStore;
  readonly clock: Clock;
  readonly bucketCount: number;
  readonly shardCount: number;
  readonly retentionDays: number;
}

/**
 * The tenant's task with this id, or undefined for unknown ids, malformed ids and other
 * tenants' tasks alike, so an id is no oracle for whether someone else's task exists.
 */
export async function getTask(ports: TaskLookupPorts, tenantId: string, id: string): Promise<Task | undefined> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return undefined;
  const task = await ports.taskStore.get(taskKey(id, location, ports.bucketCount));
  return task?.tenantId === tenantId ? task : undefined;
}

/**
 * Cancels a task that has not been delivered. Once this returns `cancelled: true` the task can
 * never be delivered. A retry takes a lease before calling the target and only a PENDING task
 * can be cancelled, so no attempt is in flight or was cut short with an unknown outcome. A first
 * attempt takes no lease (one write per delivery instead of two): it reads the task at its fire
 * time (the id's; with a window, later than dueAt), so a cancel of a task never attempted counts
 * only once the api has seen it stored CLOCK_SKEW_MS before the fire time, and is refused from
 * UNLEASED_CANCEL_MARGIN_MS before it. One
 * stored later is undone and refused as `too-late`. Cancelling an already cancelled task
 * succeeds again, so retries are safe.
 */
export async function cancelTask(ports: TaskLookupPorts, tenantId: string, id: string): Promise<CancelOutcome> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return { cancelled: false, reason: 'not-found' };
  const key = taskKey(id, location, ports.bucketCount);
  const nowMs = ports.clock.now();
  const outcome = await ports.taskStore.cancel(key, {
    tenantId,
    nowMs,
    expiresAtSeconds: expiryAfter(nowMs, ports.retentionDays),
    unleasedDueAfterMs: nowMs + UNLEASED_CANCEL_MARGIN_MS,
  });
  if (outcome.cancelled && outcome.unleased && !storedBeforeFirstAttempt(ports.clock, location.fireAtMs)) {
    // Stored too late to be sure no first attempt read the task before it. Undone, the task is
    // delivered as if the cancel never came (unless that attempt recorded its delivery already).
    await ports.taskStore.revertCancel(key, nowMs);
    return { cancelled: false, reason: 'too-late', status: 'PENDING' };
  }
  if (!outcome.cancelled && outcome.status === 'CANCELLED') return { cancelled: true };
  return outcome;
}

/**
 * Whether a write the api has just seen stored came before any unleased first attempt of a task
 * firing at `fireAtMs` could read it: that attempt reads at the fire time by its own clock.
 */
export function storedBeforeFirstAttempt(clock: Clock, fireAtMs: number): boolean {
  return clock.now() + CLOCK_SKEW_MS < fireAtMs;
}
