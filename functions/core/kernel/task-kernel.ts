/**
 * How a task is born, and the message that brings it to the callback. Every way a task comes
 * into being (a submit, a batch, a reschedule's successor, a schedule's occurrence) builds it
 * with `newPendingTask` and stores it with `storeNewTasks`, so a new kind of task cannot index
 * one second and live in another, or skip the late-arrival hand-off (invariants 5 and 15). A DLQ
 * redrive makes no new task: it revives the FAILED one in place, under the id (and so the fire
 * second) it was born with, and delivers it from the redriven message itself.
 *
 * The delivery message is built here too, and written and read as a message body here only, so
 * the api, the scanner, the sweeper, the callback and local mode cannot drift apart on it.
 */
import { createHash } from 'node:crypto';

import { AWS_LIMITS } from '../../contract/aws-limits.js';
import { FUNCTIONS, QUEUES } from '../../contract/topology.js';
import { claimableThrough, ensureClockStarted, MARKER_RETENTION_SECONDS, secondOf } from './clock.js';
import { derivedTaskId, newTaskId, parseTaskId, shardDealer, type TaskAddress, taskAddress } from './ids.js';
import type {
  Clock,
  ClockStore,
  DeliveryMessage,
  DeliveryPolicy,
  DeliveryQueue,
  DueTask,
  OccupancyIndex,
  OccurrenceRef,
  Target,
  Task,
  TaskStore,
  TaskWindow,
} from './task.js';
import { tickFor, type TickQueue } from './tick.js';
import { dueAtForFireTime, planFireAt, windowPositionDealer } from './window.js';

/** What storing a new task takes. */
export interface TaskBirthPorts {
  readonly taskStore: TaskStore;
  readonly clockStore: ClockStore;
  readonly occupancy: OccupancyIndex;
  readonly deliveryQueue: DeliveryQueue;
  readonly tickQueue: TickQueue;
  readonly clock: Clock;
  readonly bucketCount: number;
  readonly shardCount: number;
  readonly lookaheadSeconds: number;
  /** How a name is written out to be hashed: a stored format, so table-schema gives it (`taskNameTexts`). */
  readonly nameTexts: NameTexts;
}

/** A task and where it is stored. */
export type Entry = { task: Task; address: TaskAddress };

/** What a new task is made of, whichever way it is born; its id (with its fire time) is given apart. */
export interface TaskContent {
  readonly tenantId: string;
  /** The due time asked for; the fire time may be later within `window`, never earlier. */
  readonly dueAtMs: number;
  readonly window?: TaskWindow;
  readonly target: Target;
  readonly payloadJson: string;
  readonly bizType?: string;
  readonly bizId?: string;
  readonly idempotencyKey?: string;
  /** The request's digest, kept on a task whose id its idempotency key derived (see submitTasks). */
  readonly fingerprint?: string;
  readonly policy?: DeliveryPolicy;
  readonly rescheduledFrom?: string;
  readonly occurrence?: OccurrenceRef;
}

/**
 * Where one execution environment places the tasks it makes fresh ids for: its own shard dealer
 * and window sequence (ids.ts, window.ts). Made once per environment, at cold start, and handed
 * to the core as a port, so no two environments share a dealer, locally as in Lambda.
 */
export interface Placement {
  readonly dealShard: (shardCount: number) => number;
  readonly dealWindowPosition: () => number;
}

/** A placement of its own, each dealer starting at a random place. */
export function newPlacement(): Placement {
  return { dealShard: shardDealer(), dealWindowPosition: windowPositionDealer() };
}

/** A fresh id for a task due at `dueAtMs`: its fire time planned within its window (once, here), on the next shard dealt. */
export function freshTaskId(
  ports: { readonly shardCount: number; readonly placement: Placement },
  dueAtMs: number,
  window?: TaskWindow,
): string {
  const { placement } = ports;
  return newTaskId({
    fireAtMs: planFireAt(dueAtMs, window, placement.dealWindowPosition()),
    shard: placement.dealShard(ports.shardCount),
  });
}

/**
 * What a derived task id stands for: a keyed submit (the tenant's idempotency key, with a dueAt
 * of its own), or a schedule's occurrence (its schedule, revision and time).
 */
export type TaskName =
  | { readonly kind: 'keyed-submit'; readonly tenantId: string; readonly idempotencyKey: string }
  | { readonly kind: 'occurrence'; readonly scheduleId: string; readonly revision: string; readonly atMs: number };

/**
 * The texts a name is hashed from: `id` for the id derived from it, `windowPosition` for its place
 * in a window. Derived ids are stored and handed out (a schedule names its pending occurrence's, a
 * client holds its keyed task's), and a retry must derive the same id again after a deployment, so
 * these texts are a stored format like the table's keys, and the table's layout owns them.
 */
export interface TaskNameTexts {
  readonly id: string;
  readonly windowPosition: string;
}
export type NameTexts = (name: TaskName) => TaskNameTexts;

/**
 * The id `name` stands for, for a task due at `dueAtMs`: the same every time it is asked. With a
 * window, the fire time is planned at a place in it that a hash of the name picks, which spreads
 * many names over the window as evenly as dealing would.
 */
export function namedTaskId(
  ports: Pick<TaskBirthPorts, 'shardCount' | 'nameTexts'>,
  name: TaskName,
  dueAtMs: number,
  window?: TaskWindow,
): string {
  const texts = ports.nameTexts(name);
  const position = createHash('sha256').update(texts.windowPosition).digest().readUInt32BE(0) / 2 ** 32;
  return derivedTaskId(planFireAt(dueAtMs, window, position), texts.id, ports.shardCount);
}

/**
 * The one constructor of a new PENDING task. The id says where it lives and when it fires: a
 * fresh id (`freshTaskId`), or one an earlier attempt of the same request recorded, or one
 * derived from a name (`namedTaskId`: an occurrence's, or a keyed submit's). dueAt is kept within [fire time - window, fire time]: a
 * retry given as delaySeconds resolves later than the request that chose the id. Whether it is a
 * late arrival is decided here, before the write, so the item says so from the start.
 */
export function newPendingTask(
  ports: Pick<TaskBirthPorts, 'bucketCount' | 'shardCount' | 'lookaheadSeconds'>,
  id: string,
  content: TaskContent,
  createdAtMs: number,
): Entry {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) throw new Error(`task id ${id} does not fit this deployment's shard count`);
  const task: Task = {
    id,
    tenantId: content.tenantId,
    status: 'PENDING',
    dueAtMs: dueAtForFireTime(location.fireAtMs, content.dueAtMs, content.window),
    fireAtMs: location.fireAtMs,
    ...(content.window !== undefined && { window: content.window }),
    createdAtMs,
    target: content.target,
    payloadJson: content.payloadJson,
    ...(content.bizType !== undefined && { bizType: content.bizType }),
    ...(content.bizId !== undefined && { bizId: content.bizId }),
    ...(content.idempotencyKey !== undefined && { idempotencyKey: content.idempotencyKey }),
    ...(content.fingerprint !== undefined && { fingerprint: content.fingerprint }),
    ...(content.policy !== undefined && { policy: content.policy }),
    attempts: 0,
    ...(isLateArrival(location.fireAtMs, createdAtMs, ports.lookaheadSeconds) && { lateArrival: true }),
    ...(content.rescheduledFrom !== undefined && { rescheduledFrom: content.rescheduledFrom }),
    ...(content.occurrence !== undefined && { occurrence: content.occurrence }),
  };
  return { task, address: taskAddress(id, location, ports.bucketCount) };
}

/**
 * Whether a task written by an api call that started at `createdAtMs` may be handed to the
 * delivery queue by that call (see handOffLateArrivals): due up to claimableThrough of any
 * moment the call can still be running at, which its function's timeout bounds.
 */
export function isLateArrival(fireAtMs: number, createdAtMs: number, lookaheadSeconds: number): boolean {
  return secondOf(fireAtMs) <= claimableThrough(createdAtMs + FUNCTIONS.api.timeoutSeconds * 1000, lookaheadSeconds);
}

/** Stores the task, or, if a request that chose the same id stored it first, takes that one. */
export async function createOrAdopt(ports: Pick<TaskBirthPorts, 'taskStore'>, entry: Entry): Promise<Task> {
  const written = await ports.taskStore.createUnlessStored(entry.task, entry.address);
  return written.created ? entry.task : written.stored;
}

/** Records tasks' fire seconds in the occupancy index; a write step calls it for a task it stores other than those it was given. */
export type IndexTasks = (tasks: readonly Task[]) => Promise<void>;

/** How the tasks are written: returns those stored (or found stored under their ids), to hand off. */
export type WriteTasks = (entries: readonly Entry[], index: IndexTasks) => Promise<readonly Task[]>;

export interface LateHandOff {
  /** Late arrivals enqueued here. */
  readonly enqueuedDirect: number;
  /** Late arrivals that could not be enqueued and were left, flagged, to the sweeper. */
  readonly deferred: number;
  /** Seconds whose tick could not be sent: their tasks wait for the sweeper's catch-up, late but not lost. */
  readonly untickedSeconds: number;
}

export type StoredTasks = LateHandOff & { readonly stored: readonly Task[] };

/**
 * The one store path of new tasks. Records the seconds the tasks FIRE in in the occupancy index
 * and makes sure the clock runs, then writes the tasks, then hands any whose second a scanner may
 * already have claimed straight to the delivery queue. The order matters (invariant 5): the index
 * entry and the task are durable before the hand-off decides, so either the scanner's claim comes
 * later, and its index read and query see the task, or the second lies within claimableThrough of
 * now and this call enqueues it. The decision needs no read of the cursor: a claim never reaches
 * past its claimant's now and lookahead, so the bound is known from the clock alone. A task can be
 * enqueued twice by that, never zero times. Only when neither the enqueue nor the sweeper's flag
 * can be written does the call fail. A second the index had not seen, in a minute the ticker
 * already planned, gets its tick from here.
 *
 * `write` stores the entries; by default each under its id, or the one already there is taken as it
 * is, so a repeat is a no-op. It may store a task other than those given (an idempotent submit's
 * recorded one) once it has indexed it.
 */
export async function storeNewTasks(
  ports: TaskBirthPorts,
  entries: readonly Entry[],
  write?: WriteTasks,
): Promise<StoredTasks> {
  const unticked = new Set<number>();
  const index: IndexTasks = async (tasks) => {
    for (const second of await ports.occupancy.occupy(tasks.map((task) => secondOf(task.fireAtMs)))) {
      unticked.add(second);
    }
  };
  // Before any task is written, so that no stored task is ever missing from the index, nor due
  // after a cursor that is yet to start.
  await Promise.all([index(entries.map(({ task }) => task)), ensureClockStarted(ports.clockStore, ports.clock)]);
  const stored = write
    ? await write(entries, index)
    : await Promise.all(entries.map((entry) => createOrAdopt(ports, entry)));
  return { stored, ...(await handOffLateArrivals(ports, stored, unticked)) };
}

/** `storeNewTasks` for one task: the task stored, or the one already stored under its id. */
export async function storeNewTask(ports: TaskBirthPorts, entry: Entry): Promise<Task> {
  const { stored } = await storeNewTasks(ports, [entry]);
  return stored[0] ?? entry.task;
}

/**
 * Enqueues the stored tasks whose second a scanner may already have claimed (invariant 5: called
 * after the index and task writes): those due up to claimableThrough, which also covers the
 * lookahead, which a tick could not bring a scanner to in time. A task due later is certainly in
 * a second no one has claimed, and the scan that claims it will find it in the index. Some of
 * those enqueued here are sent again by their second's scan; the callback's lease absorbs the
 * duplicate (late arrivals take it on their first attempt too). Only tasks marked `lateArrival`
 * when written are handed off: a replay that finds an unmarked task written long before leaves it
 * to the scan that found it. Should the enqueue fail, the tasks are flagged for the sweeper's
 * overdue pass, which enqueues them once they are overdueGraceSeconds past due. Ticks the seconds
 * in `unticked` (new to a minute the ticker already planned) that a scanner must still claim.
 */
async function handOffLateArrivals(
  ports: TaskBirthPorts,
  stored: readonly Task[],
  unticked: ReadonlySet<number>,
): Promise<LateHandOff> {
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
  // Every second new to its planned minute is ticked, even one whose tasks this call enqueues
  // itself: another call that found the second occupied already may have stored a task there that
  // its own, earlier, hand-off left to the scan.
  const ticks = [...unticked].map((second) => tickFor(second, nowMs, ports.lookaheadSeconds));
  const [enqueued, ticked] = await Promise.allSettled([
    late.length > 0 ? deliveryQueue.send(late.map((task) => deliveryMessageFor(task, nowMs))) : Promise.resolve(),
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

/** Seconds the SQS DelaySeconds attribute can hold. */
export const MAX_DELAY_SECONDS = AWS_LIMITS.sqs.maxDelaySeconds;

/**
 * The delivery mapping may gather a surfaced message for up to its batching window before it
 * invokes the callback, so messages surface that much earlier still.
 */
const DELIVERY_GATHER_SECONDS = QUEUES.delivery.consumer.maxBatchingWindowSeconds;

/**
 * Whole seconds a delivery message should stay invisible so it reaches the callback before its
 * time, even after the mapping's batching window; the callback waits out the rest, so this
 * rounds down, never up.
 */
export function delaySecondsUntil(goesAtMs: number, nowMs: number): number {
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.floor((goesAtMs - nowMs) / 1000) - DELIVERY_GATHER_SECONDS));
}

/**
 * How long a message sent now may take to reach a callback invocation through the delivery
 * queue: its mapping's batching window, and the receive and dispatch after it.
 */
const DELIVERY_QUEUE_REACH_MS = DELIVERY_GATHER_SECONDS * 1000 + 200;

/**
 * Whether a message for a task that goes at `goesAtMs` must take the express queue: sent now to
 * the delivery queue it could reach the callback only after that time. A schedule's next
 * occurrence a second away is the common case; the scan's messages, sent a lookahead ahead, are not.
 */
export function goesExpress(goesAtMs: number, nowMs: number): boolean {
  return goesAtMs - nowMs < DELIVERY_QUEUE_REACH_MS;
}

/**
 * A task's delivery message, as the scan, the late-arrival hand-off and local mode's requeue send
 * it: it surfaces just before the task goes, at its fire time or at `notBeforeMs` when that is
 * later (a retry's backoff, a lease still running), which it then carries.
 */
export function deliveryMessageFor(task: DueTask, nowMs: number, notBeforeMs = task.fireAtMs): DeliveryMessage {
  const goesAtMs = Math.max(task.fireAtMs, notBeforeMs);
  return {
    id: task.id,
    delaySeconds: delaySecondsUntil(goesAtMs, nowMs),
    ...(goesAtMs > task.fireAtMs && { notBeforeMs: goesAtMs }),
    ...(goesExpress(goesAtMs, nowMs) && { express: true }),
  };
}

/**
 * The message the callback sends a task that must come back at `atMs` (a retry, a wait for its
 * predecessor or its callback rate, or a wait longer than SQS's 900 s delay, which it makes a
 * chain of). Rounded up, unlike a due task's: it surfaces at `atMs` or after, for a message that
 * surfaced early would hold the callback while it waited out the rest.
 */
export function reminderMessage(id: string, atMs: number, nowMs: number): DeliveryMessage {
  const delaySeconds = Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.ceil((atMs - nowMs) / 1000)));
  return { id, notBeforeMs: atMs, delaySeconds, ...(goesExpress(atMs, nowMs) && { express: true }) };
}

/**
 * A delivery message's body. A dead letter has the same shape plus why it failed, so a DLQ
 * redrive puts it straight back on the delivery queue, where `error` tells the callback to revive
 * the FAILED task before delivering it.
 */
export interface DeliveryMessageBody {
  readonly id: string;
  readonly notBeforeMs?: number;
  readonly attempt?: number;
  readonly error?: string;
}

/** The one encoder of a delivery message's (or a dead letter's) body. */
export function encodeDeliveryBody(body: DeliveryMessageBody): string {
  return JSON.stringify({
    id: body.id,
    ...(body.notBeforeMs !== undefined && { notBeforeMs: body.notBeforeMs }),
    ...(body.attempt !== undefined && { attempt: body.attempt }),
    ...(body.error !== undefined && { error: body.error }),
  } satisfies DeliveryMessageBody);
}

/** A delivery message as received: its body, and whether it is a redriven dead letter (one that carries its last error). */
export type ReceivedMessage = DeliveryMessageBody & { readonly redriven: boolean };

/** The one decoder of a delivery message's body; undefined for a body that names no task. */
export function decodeDeliveryBody(body: string): ReceivedMessage | undefined {
  try {
    const parsed = JSON.parse(body) as { [K in keyof DeliveryMessageBody]?: unknown } | null;
    if (typeof parsed?.id !== 'string') return undefined;
    return {
      id: parsed.id,
      redriven: parsed.error !== undefined,
      ...(typeof parsed.notBeforeMs === 'number' && { notBeforeMs: parsed.notBeforeMs }),
      ...(typeof parsed.attempt === 'number' && { attempt: parsed.attempt }),
      ...(typeof parsed.error === 'string' && { error: parsed.error }),
    };
  } catch {
    return undefined;
  }
}
