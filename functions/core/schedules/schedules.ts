/**
 * Recurring schedules. A schedule never fires by itself: each occurrence is an ordinary task
 * (delivered, retried and dead-lettered like any), and exactly one of them, the schedule's
 * `next`, is pending at a time. The chain advances when an occurrence is delivered, before its
 * target is called, in this order (single-item conditional writes; dynalite has no transactions):
 *
 *   1. the occurrence takes the delivery lease (as every occurrence attempt does);
 *   2. it reads its schedule (one consistent GetItem) and fires only if the schedule still has
 *      the revision the occurrence was made under and is not paused;
 *   3. if the schedule's `next` is this occurrence, one conditional update moves `next` to the
 *      successor and records `advancedFrom` = this occurrence (the choice is made once, here);
 *   4. while `advancedFrom` is this occurrence, the successor named by `next` is stored: its id is
 *      derived from (schedule, revision, time), so storing it again is a no-op;
 *   5. the target is called.
 *
 * A crash after 1, 2 or 3 brings the message back and the steps run again, finding their own
 * writes: no gap. Only step 3 chooses a successor, conditionally on `next` still being this
 * occurrence, so at most one successor is ever chosen from it and its id is fixed: no double. The
 * successor can only be delivered (and move the chain on) once step 4 has stored it, so if the
 * chain has moved past `advancedFrom`, the successor exists. A PATCH or DELETE writes a new
 * revision (or removes the schedule), so every occurrence made before it fails step 2. A PATCH
 * writes only over the revision and the `next` it read, so it never undoes a step 3 made after its
 * read (which would fire that occurrence time twice, under both revisions); its new chain starts
 * after the occurrence that last moved the chain.
 */
import { randomBytes } from 'node:crypto';

import { FUNCTIONS } from '../../contract/topology.js';
import type { FieldError, ScheduleChange, ScheduleRequest } from '../../contract/wire.js';
import { CLOCK_SKEW_MS, DAY_SECONDS } from '../kernel/clock.js';
import { parseTaskId, taskAddress } from '../kernel/ids.js';
import type { CancelOutcome, Target, Task, TaskWindow } from '../kernel/task.js';
import { expiryAfter } from '../kernel/task.js';
import { namedTaskId, newPendingTask, storeNewTask, type TaskBirthPorts } from '../kernel/task-kernel.js';
import { instantOf, payloadJsonOf, scheduleFingerprint } from '../submit/schemas.js';
import { cancelTask, getTask, type SubmitPorts, type TaskLookupPorts } from '../submit/submit.js';
import {
  type CatchUp,
  isMissed,
  nextOccurrence,
  occurrencesAfter,
  parseRecurrence,
  type Recurrence,
  type RecurrenceSpec,
  successorOf,
} from './recurrence.js';

/** How many schedules one tenant may keep: their items share one partition, which stays small and cool. */
export const MAX_SCHEDULES_PER_TENANT = 1000;
/** How many coming occurrences the API shows. */
export const UPCOMING_SHOWN = 5;

/** The pending occurrence: its task and nominal time. */
export interface NextOccurrence {
  readonly taskId: string;
  readonly atMs: number;
}

/** A schedule as stored: its timing (cron or rate, zone, bounds, a rate's anchor) and what each occurrence delivers. */
export interface Schedule extends RecurrenceSpec {
  readonly id: string;
  readonly tenantId: string;
  readonly target: Target;
  readonly payloadJson: string;
  readonly bizType?: string;
  readonly bizId?: string;
  readonly idempotencyKey?: string;
  readonly catchUp: CatchUp;
  readonly paused: boolean;
  /** Each occurrence fires at a time planned within [its time, its time + window.seconds]. */
  readonly window?: TaskWindow;
  /** New with every change; occurrences carry it, and fire only while it is still the schedule's. */
  readonly revision: string;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  /** The pending occurrence; none while paused or once the schedule has ended. */
  readonly next?: NextOccurrence;
  /** The occurrence whose delivery chose `next`: while it is retried, it makes sure `next` is stored. */
  readonly advancedFrom?: string;
}

/** Where a schedule stood when it was read: its revision, and its pending occurrence's task (none when paused or ended). */
export interface ChainPosition {
  readonly revision: string;
  readonly nextTaskId?: string;
}

/** A stretch of a tenant's schedules: `more` may be true even when nothing follows, never false when something does. */
export interface SchedulePage {
  readonly schedules: Schedule[];
  readonly more: boolean;
}

export interface ScheduleStore {
  /** Writes a new schedule; false if one with its id exists. */
  create(schedule: Schedule): Promise<boolean>;
  get(tenantId: string, id: string): Promise<Schedule | undefined>;
  /** Up to `limit` of the tenant's schedules in id order, after `afterId` if given; `more` unless none follow. */
  page(tenantId: string, limit: number, afterId?: string): Promise<SchedulePage>;
  count(tenantId: string): Promise<number>;
  /**
   * Replaces the schedule if it still has the revision and its chain still stands where it was
   * read (`next` is the same occurrence, or there is none); false otherwise. An advance keeps the
   * revision but moves `next`, so a change read before an occurrence advanced the chain cannot
   * overwrite the chain that occurrence chose.
   */
  replace(schedule: Schedule, readAt: ChainPosition): Promise<boolean>;
  /**
   * Moves `next` on from the occurrence `fromTaskId` (to nothing when the schedule has ended) and
   * records `advancedFrom`, if the schedule still has `revision` and `next` is still that occurrence.
   */
  advance(tenantId: string, id: string, revision: string, fromTaskId: string, next?: NextOccurrence): Promise<boolean>;
  /** Removes the schedule and returns it as it was; undefined if there was none. */
  delete(tenantId: string, id: string): Promise<Schedule | undefined>;
}

/** What storing occurrences takes: what storing any new task takes (task-kernel.ts), and the schedules. */
export type OccurrencePorts = TaskBirthPorts & { readonly scheduleStore: ScheduleStore };

export type ScheduleAdminPorts = OccurrencePorts &
  Pick<SubmitPorts, 'idempotencyStore' | 'retentionDays'> & { readonly horizonDays: number };

function specOf(
  schedule: Pick<Schedule, 'cron' | 'rate' | 'timezone' | 'startAtMs' | 'endAtMs' | 'anchorMs'>,
): RecurrenceSpec {
  return {
    ...(schedule.cron !== undefined && { cron: schedule.cron }),
    ...(schedule.rate !== undefined && { rate: schedule.rate }),
    timezone: schedule.timezone,
    ...(schedule.startAtMs !== undefined && { startAtMs: schedule.startAtMs }),
    ...(schedule.endAtMs !== undefined && { endAtMs: schedule.endAtMs }),
    anchorMs: schedule.anchorMs,
  };
}

/** A stored schedule's timing; it was checked when written, so failing here is a corrupt item. */
export function recurrenceOf(schedule: Schedule): Recurrence {
  const parsed = parseRecurrence(specOf(schedule));
  if (!parsed.ok) throw new Error(`schedule ${schedule.id} has an invalid timing: ${parsed.errors[0]?.message}`);
  return parsed.value;
}

/**
 * The occurrence's task id: the same for the same schedule, revision and time, so a repeat is a
 * no-op. The id carries the fire time, so with a window that time is planned from the same name.
 */
export function occurrenceTaskId(
  schedule: Pick<Schedule, 'id' | 'revision' | 'window'>,
  atMs: number,
  ports: Pick<TaskBirthPorts, 'shardCount' | 'nameTexts'>,
): string {
  return namedTaskId(
    ports,
    { kind: 'occurrence', scheduleId: schedule.id, revision: schedule.revision, atMs },
    atMs,
    schedule.window,
  );
}

function nextAt(
  schedule: Pick<Schedule, 'id' | 'revision' | 'window'>,
  atMs: number | undefined,
  ports: Pick<TaskBirthPorts, 'shardCount' | 'nameTexts'>,
) {
  return atMs === undefined ? undefined : { taskId: occurrenceTaskId(schedule, atMs, ports), atMs };
}

/** Stores the occurrence `next` names (a no-op if it is stored already), as every new task is stored. */
async function storeOccurrence(ports: OccurrencePorts, schedule: Schedule, next: NextOccurrence): Promise<void> {
  const entry = newPendingTask(
    ports,
    next.taskId,
    {
      tenantId: schedule.tenantId,
      dueAtMs: next.atMs,
      ...(schedule.window !== undefined && { window: schedule.window }),
      target: schedule.target,
      payloadJson: schedule.payloadJson,
      ...(schedule.bizType !== undefined && { bizType: schedule.bizType }),
      ...(schedule.bizId !== undefined && { bizId: schedule.bizId }),
      occurrence: { scheduleId: schedule.id, revision: schedule.revision, atMs: next.atMs },
    },
    ports.clock.now(),
  );
  await storeNewTask(ports, entry);
}

/**
 * Whether an occurrence may fire: `fire`, or why not. `schedule-not-yet-stored`: no schedule, or
 * one of another revision, but the create or change that stored this occurrence (before it writes
 * the schedule naming it, step 1) may still be writing it, so the occurrence must wait, not be
 * cancelled as if its schedule were deleted or changed: the chain would stop at a cancelled task.
 */
export type OccurrenceVerdict = 'fire' | 'schedule-changed' | 'occurrence-missed' | 'schedule-not-yet-stored';

/**
 * Whether the create or change that stored `task` as its schedule's next occurrence can still be
 * running and about to write the schedule: an api call lasts at most its function's timeout, on a
 * clock at most CLOCK_SKEW_MS from ours.
 */
function scheduleWriteMayStillLand(task: Task, nowMs: number): boolean {
  return nowMs < task.createdAtMs + FUNCTIONS.api.timeoutSeconds * 1000 + CLOCK_SKEW_MS;
}

const ADVANCE_ROUNDS = 3;

/**
 * Steps 2 to 4 of the chain (see the top of this file) for an occurrence that holds its lease:
 * whether it may fire, having made sure its successor is stored first. An occurrence missed in an
 * outage (see `isMissed`) of a `skip` schedule does not fire on its first attempt, but still moves
 * the chain on; a retry of one that was attempted fires as any retry does.
 */
export async function advanceSchedule(ports: OccurrencePorts, task: Task): Promise<OccurrenceVerdict> {
  const occurrence = task.occurrence;
  if (!occurrence) return 'fire';
  for (let round = 0; round < ADVANCE_ROUNDS; round++) {
    let schedule = await ports.scheduleStore.get(task.tenantId, occurrence.scheduleId);
    if (schedule?.revision !== occurrence.revision) {
      // A schedule of another revision written after this occurrence was stored superseded it; one
      // written before (or none) may be about to be replaced by the call that stored it.
      const supersededSince = schedule !== undefined && schedule.updatedAtMs > task.createdAtMs + CLOCK_SKEW_MS;
      return !supersededSince && scheduleWriteMayStillLand(task, ports.clock.now())
        ? 'schedule-not-yet-stored'
        : 'schedule-changed';
    }
    if (schedule.paused) return 'schedule-changed';
    const nowMs = ports.clock.now();
    if (schedule.next?.taskId === task.id) {
      const next = nextAt(schedule, successorOf(recurrenceOf(schedule), occurrence.atMs, nowMs), ports);
      // Lost only to a change of the schedule or another copy of this message: read again and decide anew.
      if (!(await ports.scheduleStore.advance(task.tenantId, schedule.id, schedule.revision, task.id, next))) continue;
      schedule = { ...schedule, ...(next ? { next } : { next: undefined }), advancedFrom: task.id };
    }
    if (schedule.advancedFrom === task.id && schedule.next) await storeOccurrence(ports, schedule, schedule.next);
    // Claimed means attempts counts this one: 1 is the first.
    const firstAttempt = task.attempts <= 1;
    return schedule.catchUp === 'skip' && firstAttempt && isMissed(occurrence.atMs, nowMs)
      ? 'occurrence-missed'
      : 'fire';
  }
  throw new Error(`schedule ${occurrence.scheduleId} kept changing while occurrence ${task.id} advanced it`);
}

/**
 * Cancels a task for its tenant (DELETE /v1/tasks/{id}). A schedule's chain moves on only when its
 * pending occurrence is delivered, so cancelling that occurrence outright would stop the schedule
 * for good. Its successor is chosen and stored first, as the occurrence's own delivery would
 * (steps 2 to 4, which find their own writes when repeated), and only then is the occurrence
 * cancelled: acting on one occurrence never stops the schedule (invariant 13). A crash in between
 * leaves the occurrence pending with its successor stored: it fires, or a retried DELETE cancels
 * it, and the schedule goes on either way. If the cancel is refused (the occurrence is in an
 * attempt), that attempt finds the chain already past it and fires.
 */
export async function cancelTaskKeepingSchedule(
  ports: OccurrencePorts & TaskLookupPorts,
  tenantId: string,
  id: string,
): Promise<CancelOutcome> {
  const task = await getTask(ports, tenantId, id);
  // Not there when asked for: the id may name the successor a chain already points at, which a
  // crashed advance's retry is about to store; cancelling it then, unread, would stop the schedule.
  if (!task) return { cancelled: false, reason: 'not-found' };
  if (task.occurrence !== undefined && task.status === 'PENDING') await advanceSchedule(ports, task);
  return cancelTask(ports, tenantId, id);
}

// ---- The API's operations ---------------------------------------------------------------

export type CreateScheduleOutcome =
  | { readonly kind: 'created' | 'replayed'; readonly schedule: Schedule }
  | { readonly kind: 'invalid'; readonly errors: FieldError[] }
  | { readonly kind: 'conflict'; readonly scheduleId: string }
  | { readonly kind: 'limit' };

/** The timing fields of a request or change, checked, as stored: or the field at fault. */
function timingOf(
  fields: Pick<ScheduleRequest, 'cron' | 'rate' | 'timezone'> & {
    startAt?: string | number | null;
    endAt?: string | number | null;
  },
  anchorMs: number,
): { ok: true; value: Omit<RecurrenceSpec, 'anchorMs'> } | { ok: false; errors: FieldError[] } {
  const bounds: { startAtMs?: number; endAtMs?: number } = {};
  for (const [field, key] of [
    ['startAt', 'startAtMs'],
    ['endAt', 'endAtMs'],
  ] as const) {
    const value = fields[field];
    if (value === undefined || value === null) continue;
    const ms = instantOf(value);
    if (typeof ms === 'string') return { ok: false, errors: [{ path: field, message: ms }] };
    bounds[key] = ms;
  }
  const spec: RecurrenceSpec = {
    ...(fields.cron !== undefined && { cron: fields.cron }),
    ...(fields.rate !== undefined && { rate: fields.rate }),
    timezone: fields.timezone ?? 'UTC',
    ...bounds,
    anchorMs,
  };
  const parsed = parseRecurrence(spec);
  if (!parsed.ok) return parsed;
  const { anchorMs: _anchor, ...timing } = spec;
  return { ok: true, value: timing };
}

const newRevision = () => randomBytes(8).toString('base64url');

/**
 * Makes a schedule and its first occurrence. The occurrence is stored first, then the schedule:
 * a crash in between leaves an occurrence whose schedule does not exist, which its delivery
 * cancels, never a schedule without its occurrence. With an idempotencyKey the key is claimed
 * first, recording the schedule id and the time; a retry rebuilds the same schedule (same id,
 * revision and first occurrence, hence the same task id) and finishes what the first left undone.
 */
export async function createSchedule(
  ports: ScheduleAdminPorts,
  tenantId: string,
  request: ScheduleRequest,
): Promise<CreateScheduleOutcome> {
  const nowMs = ports.clock.now();
  // Checked before anything is written (an idempotency claim included): bad input writes nothing.
  const checked = newSchedule(ports, tenantId, request, newScheduleId(), nowMs);
  if (!checked.ok) return { kind: 'invalid', errors: checked.errors };
  let schedule = checked.value;
  if (request.idempotencyKey !== undefined) {
    const fingerprint = scheduleFingerprint(request);
    const { claimed, holder } = await ports.idempotencyStore.claim(
      {
        scope: 'schedule',
        tenantId,
        key: request.idempotencyKey,
        fingerprint,
        taskId: schedule.id,
        claimedAtMs: nowMs,
      },
      // As long as a task's key: retries come within minutes, and a key that has expired only means a
      // much later retry makes a second schedule.
      expiryAfter(nowMs, ports.retentionDays),
    );
    if (!claimed) {
      if (holder.fingerprint !== fingerprint) return { kind: 'conflict', scheduleId: holder.taskId };
      const existing = await ports.scheduleStore.get(tenantId, holder.taskId);
      if (existing) return { kind: 'replayed', schedule: existing };
      // The first request died before its schedule was written: rebuild it exactly, from its id and time.
      const rebuilt = newSchedule(ports, tenantId, request, holder.taskId, holder.claimedAtMs);
      if (!rebuilt.ok) return { kind: 'invalid', errors: rebuilt.errors };
      schedule = rebuilt.value;
    }
  }
  if ((await ports.scheduleStore.count(tenantId)) >= MAX_SCHEDULES_PER_TENANT) return { kind: 'limit' };
  if (schedule.next) await storeOccurrence(ports, schedule, schedule.next);
  if (await ports.scheduleStore.create(schedule)) return { kind: 'created', schedule };
  const stored = await ports.scheduleStore.get(tenantId, schedule.id);
  if (!stored) throw new Error(`schedule ${schedule.id} could not be created, nor read`);
  return { kind: 'replayed', schedule: stored };
}

/** The schedule a request makes with this id at this time, its first occurrence named; or the field at fault. */
function newSchedule(
  ports: Pick<ScheduleAdminPorts, 'shardCount' | 'nameTexts' | 'horizonDays'>,
  tenantId: string,
  request: ScheduleRequest,
  id: string,
  createdAtMs: number,
): { ok: true; value: Schedule } | { ok: false; errors: FieldError[] } {
  const timing = timingOf(request, createdAtMs);
  if (!timing.ok) return timing;
  const payloadJson = payloadJsonOf(request.payload);
  if (typeof payloadJson !== 'string') return { ok: false, errors: [payloadJson] };
  const base = {
    id,
    tenantId,
    ...timing.value,
    anchorMs: createdAtMs,
    target: request.target,
    payloadJson,
    ...(request.bizType !== undefined && { bizType: request.bizType }),
    ...(request.bizId !== undefined && { bizId: request.bizId }),
    ...(request.idempotencyKey !== undefined && { idempotencyKey: request.idempotencyKey }),
    catchUp: request.catchUp ?? 'fire-once',
    paused: false,
    ...(request.window !== undefined && { window: request.window }),
    // Ids are never reused, so the first revision can be fixed: a keyed retry rebuilds the same first occurrence.
    revision: 'r0',
    createdAtMs,
    updatedAtMs: createdAtMs,
  } satisfies Schedule;
  const first = nextAt(base, nextOccurrence(recurrenceOf(base), createdAtMs), ports);
  if (!first) {
    return {
      ok: false,
      errors: [{ path: 'endAt', message: 'the schedule would never fire: every occurrence is before now' }],
    };
  }
  const refused = beyondHorizon(base, createdAtMs, ports.horizonDays) ?? windowTooWide(base, createdAtMs);
  return refused ? { ok: false, errors: [refused] } : { ok: true, value: { ...base, next: first } };
}

/**
 * A window must be shorter than the time between occurrences: an occurrence planned past the next
 * one would fire out of order, and the next is stored only when it fires. The first occurrences
 * are checked, as for the horizon; a cron's gaps can vary, so it is checked over a few of them.
 */
function windowTooWide(schedule: Schedule, fromMs: number): FieldError | undefined {
  if (schedule.window === undefined) return undefined;
  const times = occurrencesAfter(recurrenceOf(schedule), fromMs, WINDOW_CHECKED_GAPS + 1);
  const gaps = times.slice(1).map((atMs, index) => atMs - (times[index] ?? atMs));
  const shortest = Math.min(...gaps);
  if (gaps.length === 0 || schedule.window.seconds * 1000 < shortest) return undefined;
  return {
    path: 'window.seconds',
    message: `must be shorter than the time between occurrences (${shortest / 1000} s here); use a smaller window or a sparser schedule`,
  };
}

/** Gaps between coming occurrences a window is checked against. */
const WINDOW_CHECKED_GAPS = 5;

/**
 * An occurrence may be no further from the one before it (or from now, for the first) than a task
 * may be due ahead in this deployment. The first two are checked, which catches a cron that fires
 * only on 29 February; rates are bounded by their own parse.
 */
function beyondHorizon(schedule: Schedule, fromMs: number, horizonDays: number): FieldError | undefined {
  const [first = fromMs, second = first] = occurrencesAfter(recurrenceOf(schedule), fromMs, 2);
  if (Math.max(first - fromMs, second - first) <= horizonDays * DAY_SECONDS * 1000) return undefined;
  return {
    path: schedule.cron === undefined ? 'rate' : 'cron',
    message: `fires more than ${horizonDays} days apart, further ahead than this deployment keeps a task`,
  };
}

const ID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
/** `sch_` and 20 random characters (100 bits). */
function newScheduleId(): string {
  return `sch_${[...randomBytes(20)].map((byte) => ID_ALPHABET[byte % 32]).join('')}`;
}

/** Whether text could be a schedule id: anything else is a 404 without a read. */
export function isScheduleId(text: string): boolean {
  return /^sch_[0-9a-hjkmnp-tv-z]{20}$/.test(text);
}

export type ChangeScheduleOutcome =
  | { readonly kind: 'changed'; readonly schedule: Schedule }
  | { readonly kind: 'not-found' }
  | { readonly kind: 'invalid'; readonly errors: FieldError[] }
  | { readonly kind: 'contended' };

/**
 * Cancels an occurrence that must not fire: the one a changed or deleted schedule had pending (its
 * delivery would skip it anyway, this tidies it away), or one a change stored for a revision that
 * never became the schedule's.
 */
async function cancelOccurrence(
  ports: OccurrencePorts & Pick<SubmitPorts, 'retentionDays'>,
  tenantId: string,
  next: NextOccurrence | undefined,
): Promise<void> {
  if (!next) return;
  const location = parseTaskId(next.taskId, ports.shardCount);
  if (!location) return;
  const nowMs = ports.clock.now();
  await ports.taskStore.cancel(taskAddress(next.taskId, location, ports.bucketCount), {
    tenantId,
    nowMs,
    expiresAtSeconds: expiryAfter(nowMs, ports.retentionDays),
    // Occurrences always take the lease, so a cancel is safe at any moment.
    unleasedDueAfterMs: nowMs,
  });
}

/** How often a change is tried again when only the chain moved on underneath it. */
const CHANGE_ROUNDS = 3;

/**
 * Changes a schedule: timing, target, payload, catch-up or paused. Every change writes a new
 * revision, so no occurrence made before it fires. The new first occurrence (none while paused) is
 * stored before the schedule names it, as at creation; the write is conditional on the revision
 * and the chain position read (see ScheduleStore.replace), so two changes at once cannot both
 * apply, and an occurrence that advanced the chain meanwhile keeps the successor it chose and
 * fires under the revision that reached it. Then the change is made again over the chain as it
 * now stands, under a fresh revision: the first try's occurrence, under a revision that never
 * became the schedule's, is cancelled. A try whose write failed but whose revision the schedule
 * shows landed (its answer was lost). Once the change is in, the old pending occurrence is
 * cancelled.
 */
export async function changeSchedule(
  ports: ScheduleAdminPorts,
  tenantId: string,
  id: string,
  change: ScheduleChange,
): Promise<ChangeScheduleOutcome> {
  let current = isScheduleId(id) ? await ports.scheduleStore.get(tenantId, id) : undefined;
  if (!current) return { kind: 'not-found' };
  for (let round = 0; round < CHANGE_ROUNDS; round++) {
    const planned = changed(ports, current, change);
    if (!planned.ok) return { kind: 'invalid', errors: planned.errors };
    const { next } = planned.schedule;
    if (next) await storeOccurrence(ports, planned.schedule, next);
    const readAt = { revision: current.revision, ...(current.next && { nextTaskId: current.next.taskId }) };
    const replaced = await ports.scheduleStore.replace(planned.schedule, readAt);
    // A failed replace may be the SDK's resend of one that landed with its answer lost: the new
    // revision, unique to this try, says so. Taken for lost, its occurrence would be cancelled
    // under the schedule that names it, and the chain would stop.
    const now = replaced ? planned.schedule : await ports.scheduleStore.get(tenantId, id);
    if (now?.revision === planned.schedule.revision) {
      await cancelOccurrence(ports, tenantId, current.next);
      return { kind: 'changed', schedule: planned.schedule };
    }
    await cancelOccurrence(ports, tenantId, next);
    if (!now) return { kind: 'not-found' };
    // Another change won: this one was made over what that one replaced.
    if (now.revision !== current.revision) return { kind: 'contended' };
    current = now;
  }
  return { kind: 'contended' };
}

/** The schedule `change` makes of `current` now, under a new revision, its first occurrence named; or the field at fault. */
function changed(
  ports: ScheduleAdminPorts,
  current: Schedule,
  change: ScheduleChange,
): { ok: true; schedule: Schedule } | { ok: false; errors: FieldError[] } {
  const nowMs = ports.clock.now();
  const switchesKind = change.cron !== undefined || change.rate !== undefined;
  const timing = timingOf(
    {
      ...(switchesKind ? { cron: change.cron, rate: change.rate } : { cron: current.cron, rate: current.rate }),
      timezone: change.timezone ?? current.timezone,
      startAt: change.startAt === undefined ? current.startAtMs : change.startAt,
      endAt: change.endAt === undefined ? current.endAtMs : change.endAt,
    },
    nowMs,
  );
  if (!timing.ok) return timing;
  const payloadJson = change.payload === undefined ? current.payloadJson : payloadJsonOf(change.payload);
  if (typeof payloadJson !== 'string') return { ok: false, errors: [payloadJson] };
  const {
    cron: _cron,
    rate: _rate,
    startAtMs: _start,
    endAtMs: _end,
    next: _next,
    window: _window,
    // advancedFrom is kept: the occurrence that last fired, under this revision or one it replaced,
    // so that no later change, even from a clock behind the callback's, fires its time again.
    ...kept
  } = current;
  const window = change.window === null ? undefined : (change.window ?? current.window);
  const base: Schedule = {
    ...kept,
    ...timing.value,
    // A rate without startAt counts from the change, as it counted from creation.
    anchorMs: nowMs,
    target: change.target ?? current.target,
    payloadJson,
    catchUp: change.catchUp ?? current.catchUp,
    paused: change.paused ?? current.paused,
    ...(window !== undefined && { window }),
    revision: newRevision(),
    updatedAtMs: nowMs,
  };
  const refused = beyondHorizon(base, nowMs, ports.horizonDays) ?? windowTooWide(base, nowMs);
  if (refused) return { ok: false, errors: [refused] };
  // After the occurrence that last advanced the chain, even by a clock behind the callback's that
  // fired it: an occurrence time the old revision fired is not fired again under the new one.
  const lastFiredAtMs =
    current.advancedFrom === undefined ? undefined : parseTaskId(current.advancedFrom, ports.shardCount)?.fireAtMs;
  const firedThroughMs = Math.max(nowMs, lastFiredAtMs ?? nowMs);
  const next = base.paused ? undefined : nextAt(base, nextOccurrence(recurrenceOf(base), firedThroughMs), ports);
  return { ok: true, schedule: { ...base, ...(next && { next }) } };
}

/** Deletes a schedule; its pending occurrence never fires (its delivery finds no schedule) and is cancelled. */
export async function deleteSchedule(
  ports: OccurrencePorts & Pick<SubmitPorts, 'retentionDays'>,
  tenantId: string,
  id: string,
): Promise<Schedule | undefined> {
  const deleted = isScheduleId(id) ? await ports.scheduleStore.delete(tenantId, id) : undefined;
  if (deleted) await cancelOccurrence(ports, tenantId, deleted.next);
  return deleted;
}

/** The schedule's coming occurrences, the pending one first; none while paused or once ended. */
export function upcomingOccurrences(schedule: Schedule, count = UPCOMING_SHOWN): number[] {
  if (!schedule.next || schedule.paused) return [];
  return [schedule.next.atMs, ...occurrencesAfter(recurrenceOf(schedule), schedule.next.atMs, count - 1)];
}
