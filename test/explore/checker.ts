/**
 * Reads a finished run's history and final state and says which promises broke
 * (docs/architecture.md; ../shared/DESIGN.md invariants 1, 2 and 11-13). A run ends quiescent:
 * queues drained and the sweeper's passes run past their grace, so "by the end" means for good.
 */
import { DEFAULT_HOST_BREAKER } from '../../functions/core/deliver/host-breaker.js';
import { parseTaskId } from '../../functions/core/kernel/ids.js';
import type { Task } from '../../functions/core/kernel/task.js';
import { clockTime } from '../support/clock.js';
import { type CallRecord, type DispatchRecord, type HistoryEvent, SKEW_BOUND_MS } from './world.js';

export interface FinalState {
  readonly tasks: ReadonlyMap<string, Task>;
  readonly schedules: ReadonlyMap<string, { readonly id: string; readonly paused: boolean; readonly next?: unknown }>;
  /** Whether a delivery message for the task is still on its way when the run ends. */
  readonly messageOnItsWay: (taskId: string) => boolean;
}

/**
 * How late a task's first call may come when nothing crashed or lost an answer: the first attempt goes at
 * the fire time, so this only leaves room for the tick, the scan, the callback's wait and slow calls.
 */
export const ON_TIME_BOUND_MS = 15_000;

/**
 * How long after a schedule change an occurrence of the old revision may still be on its way
 * (a crashed callback's message comes back after the visibility timeout): one due earlier than
 * this before the change was certainly reached, and must fire.
 */
const CHANGE_ALLOWANCE_MS = 200_000;

/** The task that stands for `taskId` at the end: itself, or the successor its reschedules handed it to. */
const successorOf = (final: FinalState, taskId: string): string => {
  const to = final.tasks.get(taskId)?.rescheduledTo;
  return to === undefined ? taskId : successorOf(final, to);
};

const isSuccess = (call: CallRecord) =>
  call.answer !== undefined && call.answer.status >= 200 && call.answer.status < 300;

export function check(history: readonly HistoryEvent[], final: FinalState): string[] {
  const violations: string[] = [];
  const calls = history.filter((event): event is CallRecord => event.type === 'call');
  const callsOf = (taskId: string) => calls.filter((call) => call.taskId === taskId);
  const fireAtOf = (taskId: string) => parseTaskId(taskId, 1)?.fireAtMs ?? Number.NaN;
  // A crash or a lost response may make a task late (a message back after its visibility timeout,
  // a tick lost with the answer that said its second was new: docs/architecture.md, invariant 3),
  // never lose it. Those of the ticker, scanner and sweeper count for every task; those of the api
  // for tasks in a second it occupied (a retry finds the second taken and sends no tick); those of
  // the callback for the tasks of its batch.
  const disturbed = new Set(
    history.flatMap((event) => (event.type === 'crash' || event.type === 'lost-response' ? [event.actor] : [])),
  );
  const occupiedBy = new Map<number, string[]>();
  for (const event of history) {
    if (event.type !== 'occupied') continue;
    for (const second of event.seconds) occupiedBy.set(second, [...(occupiedBy.get(second) ?? []), event.actor]);
  }
  // A callback's label names the tasks of its batch: `callback#3(id1,id2)`.
  const batchOf = (actor: string) => /\(([^)]*)\)$/.exec(actor)?.[1]?.split(',') ?? [];
  const callbackDisturbed = (taskId: string) =>
    [...disturbed].some((actor) => actor.startsWith('callback') && batchOf(actor).includes(taskId));
  const dispatches = history.filter((event): event is DispatchRecord => event.type === 'dispatch');
  const notCalled = dispatches.filter((dispatch) => !dispatch.called);
  // A task whose host was rested waits for the circuit to half-open; that rest is judged below.
  const rested = new Set(notCalled.map((dispatch) => dispatch.taskId));
  // A host that does not answer gets one probe per open period, so tasks to it may still be
  // waiting at the end: held back, not lost, while PENDING with a message on its way.
  const heldBack = (taskId: string) =>
    rested.has(taskId) && final.tasks.get(taskId)?.status === 'PENDING' && final.messageOnItsWay(taskId);
  const lateForCause = (taskId: string) =>
    [...disturbed].some((actor) => !(actor.startsWith('api') || actor.startsWith('callback'))) ||
    callbackDisturbed(taskId) ||
    rested.has(taskId) ||
    (occupiedBy.get(Math.floor(fireAtOf(taskId) / 1000)) ?? []).some((actor) => disturbed.has(actor));

  // A host is rested only for what shows it down, a call it left unanswered (invariant 9 and
  // docs/architecture.md): a call the breaker did not make follows a call to that host that had
  // no answer `slowCallMs` after it went out. A host that answers, even 503 to every call of one
  // task, is up for its other tasks, and for that task's next attempt.
  const { slowCallMs } = DEFAULT_HOST_BREAKER;
  for (const refused of notCalled) {
    const refusedAtMs = refused.refusedAtMs ?? refused.atMs;
    const unansweredBefore = dispatches.some(
      (dispatch) =>
        dispatch.called &&
        dispatch.host === refused.host &&
        dispatch.atMs + slowCallMs <= refusedAtMs &&
        (dispatch.answeredAtMs === undefined || dispatch.answeredAtMs - dispatch.atMs >= slowCallMs),
    );
    if (!unansweredBefore) {
      violations.push(
        `task ${refused.taskId} was not called at ${iso(refusedAtMs)}: its host ${refused.host} was rested though no call to it had gone ${slowCallMs} ms unanswered`,
      );
    }
  }

  // Never early (invariant 2), by a receiver's clock that keeps the true time: the callback's own
  // may run ahead of it by up to half the skew bound.
  for (const call of calls) {
    if (call.atMs < fireAtOf(call.taskId) - SKEW_BOUND_MS / 2) {
      violations.push(
        `task ${call.taskId} was called at ${iso(call.atMs)}, before its fire time ${iso(fireAtOf(call.taskId))}`,
      );
    }
  }

  const cancels = history.filter((event) => event.type === 'cancel');
  const cancelledWith200 = new Set(cancels.filter((cancel) => cancel.status === 200).map((cancel) => cancel.taskId));
  // A cancel that got no answer (its invocation crashed, perhaps between its write and its
  // confirm) or a 5xx was never answered 200 and may have landed: the task may end CANCELLED.
  const maybeCancelled = new Set(
    cancels.filter((cancel) => cancel.status === undefined || cancel.status >= 500).map((cancel) => cancel.taskId),
  );
  const deadLettered = new Set(history.flatMap((event) => (event.type === 'dead-letter' ? [event.taskId] : [])));

  // A cancel that answered 200 means the target is never called for that task (invariant 11): no
  // call starts once the cancel landed, and no call was answered 2xx (the task was delivered). A
  // call that started before it landed and failed is an attempt whose retries the cancel stops.
  // A reschedule that answered 200 cancels the task it moved by the same rule, from its commit
  // (before it, the task's attempts take the lease, which the commit excludes: one that failed
  // came before the reschedule, as a failed attempt may come before a cancel).
  for (const [index, answer] of history.entries()) {
    if ((answer.type !== 'cancel' && answer.type !== 'reschedule') || answer.status !== 200) continue;
    // A DELETE of a task a reschedule already handed over finds it CANCELLED: that landed with the commit.
    const landed = history
      .slice(0, index)
      .findLast(
        (event) =>
          (event.type === 'reschedule-landed' || (answer.type === 'cancel' && event.type === 'cancel-landed')) &&
          event.taskId === answer.taskId,
      );
    const landedAtMs = landed?.atMs ?? answer.startedAtMs;
    for (const call of callsOf(answer.taskId)) {
      if (call.atMs >= landedAtMs || isSuccess(call)) {
        violations.push(
          `task ${answer.taskId} was ${answer.type === 'cancel' ? 'cancelled' : 'rescheduled'} with a 200 (landed at ${iso(landedAtMs)}) yet called at ${iso(call.atMs)} (attempt ${call.attempt}${isSuccess(call) ? ', answered 2xx' : ''})`,
        );
      }
    }
  }

  // A reschedule hands the task over to its successor: exactly one of the two is ever delivered,
  // and the successor is called only once the handover took effect, after which the task's own
  // attempts start no more.
  for (const successor of final.tasks.values()) {
    const fromId = successor.rescheduledFrom;
    if (fromId === undefined) continue;
    const successorCalls = callsOf(successor.id);
    const [firstCall] = successorCalls;
    if (!firstCall) continue;
    const from = final.tasks.get(fromId);
    if (from?.rescheduledTo !== successor.id) {
      violations.push(`successor ${successor.id} was called though its reschedule from ${fromId} never took effect`);
    }
    if (callsOf(fromId).some(isSuccess) && successorCalls.some(isSuccess)) {
      violations.push(`task ${fromId} and its successor ${successor.id} were both delivered`);
    }
    const handedAtMs = history.findLast(
      (event) => event.type === 'reschedule-landed' && event.taskId === fromId && event.atMs <= firstCall.atMs,
    )?.atMs;
    const late = callsOf(fromId).find((call) => handedAtMs !== undefined && call.atMs >= handedAtMs);
    if (late) {
      violations.push(
        `task ${fromId} was called at ${iso(late.atMs)}, after the reschedule that handed it to ${successor.id} took effect at ${iso(handedAtMs ?? 0)}`,
      );
    }
  }

  // A submit with an idempotency key makes one task however often it is retried, whichever attempt
  // crashed or lost its answer: every answer names that task, and no other task has the key.
  const taskOfKey = new Map<string, string>();
  for (const task of final.tasks.values()) {
    if (task.idempotencyKey === undefined) continue;
    const other = taskOfKey.get(task.idempotencyKey);
    if (other !== undefined)
      violations.push(`idempotency key ${task.idempotencyKey} made tasks ${other} and ${task.id}`);
    taskOfKey.set(task.idempotencyKey, task.id);
  }
  for (const accepted of history) {
    if (accepted.type !== 'accepted' || accepted.idempotencyKey === undefined) continue;
    const made = taskOfKey.get(accepted.idempotencyKey);
    if (made !== accepted.taskId) {
      violations.push(
        `idempotency key ${accepted.idempotencyKey} was answered with task ${accepted.taskId}, not ${made}`,
      );
    }
  }

  // Every accepted task not cancelled with a 200 ends DELIVERED or FAILED in the DLQ (invariant 1).
  for (const accepted of history.filter((event) => event.type === 'accepted')) {
    if (cancelledWith200.has(accepted.taskId)) continue;
    // A task handed over by a reschedule is judged by the successor that stands for it.
    const taskId = successorOf(final, accepted.taskId);
    const task = final.tasks.get(taskId);
    const status = task?.status;
    if (status === 'CANCELLED' && maybeCancelled.has(taskId)) continue;
    if (heldBack(taskId)) continue;
    if (status !== 'DELIVERED' && !(status === 'FAILED' && deadLettered.has(taskId))) {
      violations.push(
        `accepted task ${taskId} ended ${status ?? 'missing'}${status === 'FAILED' ? ' but not in the DLQ' : ''}`,
      );
    }
    // On time (invariant 3) in an undisturbed run: a 409 to a cancel says the task is delivered on time.
    const first = callsOf(taskId)[0];
    const handedOverAtMs = final.tasks.get(accepted.taskId)?.cancelledAtMs ?? 0;
    const dueBy =
      Math.max(fireAtOf(taskId), accepted.atMs, taskId === accepted.taskId ? 0 : handedOverAtMs) + ON_TIME_BOUND_MS;
    if (!lateForCause(taskId) && status !== 'CANCELLED' && (first === undefined || first.atMs > dueBy)) {
      violations.push(
        `accepted task ${taskId} was first called ${first ? `at ${iso(first.atMs)}` : 'never'}, later than ${iso(dueBy)}`,
      );
    }
  }

  // GET tells the truth (invariant 12).
  for (const task of final.tasks.values()) {
    const succeeded = callsOf(task.id).some(isSuccess);
    if (task.status === 'DELIVERED' && !succeeded) {
      violations.push(`task ${task.id} is DELIVERED but no call of it was answered 2xx`);
    }
    if (task.status === 'FAILED') {
      // A 2xx whose callback crashed before recording it never reached the table: the task's next
      // attempt is all the service can go by (at least once), so only that excuses the FAILED.
      const successAtMs = callsOf(task.id).find(isSuccess)?.atMs;
      const unrecorded =
        successAtMs !== undefined &&
        history.some(
          (event) =>
            event.type === 'crash' &&
            event.actor.startsWith('callback') &&
            batchOf(event.actor).includes(task.id) &&
            event.atMs >= successAtMs,
        );
      if (succeeded && !unrecorded) {
        violations.push(`task ${task.id} is FAILED although its receiver answered 2xx`);
      }
      const maxAttempts = task.policy?.maxAttempts;
      // More is possible: a callback that crashed between the dead letter and the FAILED write is
      // redelivered (DLQ first, so a crash repeats an attempt rather than losing the task).
      if (maxAttempts !== undefined && task.attempts < maxAttempts) {
        violations.push(
          `task ${task.id} is FAILED after ${task.attempts} attempts, fewer than its maxAttempts ${maxAttempts}`,
        );
      }
      // A call not made is not an attempt: each attempt spent is a call its receiver got. Only a
      // callback that died after taking an attempt's lease and before its call spends one without.
      const attemptsCalled = new Set(callsOf(task.id).map((call) => call.attempt)).size;
      if (maxAttempts !== undefined && attemptsCalled < maxAttempts && !callbackDisturbed(task.id)) {
        violations.push(
          `task ${task.id} is FAILED after its receiver got calls of ${attemptsCalled} attempts, fewer than its maxAttempts ${maxAttempts}`,
        );
      }
    }
  }

  violations.push(
    ...checkSchedules(history, final, calls, new Set([...cancelledWith200, ...maybeCancelled]), heldBack),
  );
  return violations;
}

/** Invariant 13: each occurrence the chain reaches fires exactly one task id; nothing fires while paused or after delete. */
function checkSchedules(
  history: readonly HistoryEvent[],
  final: FinalState,
  calls: readonly CallRecord[],
  /** Occurrences a DELETE answered 200, or may have cancelled without an answer. */
  cancelled: ReadonlySet<string>,
  /** Whether an occurrence is still waiting for its rested host at the end. */
  heldBack: (taskId: string) => boolean,
): string[] {
  const violations: string[] = [];
  const occurrenceCalls = calls.filter((call) => call.scheduleId !== undefined);

  // No doubles: one task id per occurrence time.
  const idsByOccurrence = new Map<string, Set<string>>();
  for (const call of occurrenceCalls) {
    const key = `${call.scheduleId} at ${iso(call.occurrenceAtMs ?? 0)}`;
    idsByOccurrence.set(key, (idsByOccurrence.get(key) ?? new Set()).add(call.taskId));
  }
  for (const [occurrence, ids] of idsByOccurrence) {
    if (ids.size > 1) {
      const payloads = [...ids].map((id) => occurrenceCalls.find((call) => call.taskId === id)?.payloadJson);
      violations.push(
        `schedule ${occurrence} fired ${ids.size} task ids (${[...ids].join(', ')}) with payloads ${payloads.join(' and ')}`,
      );
    }
  }

  // Every occurrence the chain reached fires, unless the schedule changed soon after, or a DELETE of its task answered 200 (or no answer).
  for (const [index, reached] of history.entries()) {
    if (reached.type !== 'chain') continue;
    const next = reached.next;
    if (!next || reached.paused || cancelled.has(next.taskId) || heldBack(next.taskId)) continue;
    const change = history
      .slice(index + 1)
      .find(
        (event) =>
          (event.type === 'schedule-deleted' || (event.type === 'chain' && event.op === 'replace')) &&
          event.scheduleId === reached.scheduleId,
      );
    const changedAt = change?.atMs;
    const fireAtMs = parseTaskId(next.taskId, 1)?.fireAtMs ?? next.atMs;
    if (changedAt !== undefined && changedAt < fireAtMs + CHANGE_ALLOWANCE_MS) continue;
    const fired = calls.some((call) => call.taskId === next.taskId);
    if (!fired) {
      violations.push(
        `schedule ${reached.scheduleId} reached its occurrence at ${iso(next.atMs)} (task ${next.taskId}, revision ${reached.revision}) on ${reached.op}, and it never fired`,
      );
    }
    const payloads = new Set(calls.filter((call) => call.taskId === next.taskId).map((call) => call.payloadJson));
    for (const payload of payloads) {
      if (payload !== reached.payloadJson) {
        violations.push(
          `occurrence task ${next.taskId} fired with ${payload}, not its revision's payload ${reached.payloadJson}`,
        );
      }
    }
  }

  // No gaps: a schedule left running has run its chain to its end.
  for (const schedule of final.schedules.values()) {
    if (!schedule.paused && schedule.next !== undefined) {
      violations.push(`schedule ${schedule.id} is stuck: its chain never moved past ${JSON.stringify(schedule.next)}`);
    }
  }

  // Nothing fires after a delete or while paused: no occurrence that became due after the api
  // answered, until a later change (a resume, or a PATCH that landed after the pause) took effect.
  // An occurrence whose attempt had moved the chain on before the delete or pause landed is in
  // its attempt already, and may complete (docs/architecture.md).
  const advancedAt = new Map<string, number>();
  for (const [index, event] of history.entries()) {
    // Advances only: a change keeps the advancedFrom of the chain it replaced.
    if (event.type === 'chain' && event.op === 'advance' && event.advancedFrom !== undefined) {
      advancedAt.set(event.advancedFrom, index);
    }
  }
  for (const [index, answer] of history.entries()) {
    if (answer.type !== 'schedule-answer' || !answer.ok || (answer.op !== 'delete' && answer.op !== 'pause')) continue;
    const landed = history
      .slice(0, index)
      .findLastIndex(
        (event) =>
          ((event.type === 'chain' && event.op === 'replace' && event.paused) || event.type === 'schedule-deleted') &&
          event.scheduleId === answer.scheduleId,
      );
    const undone = history
      .slice(landed + 1)
      .find((event) => event.type === 'chain' && event.op === 'replace' && event.scheduleId === answer.scheduleId);
    const until = undone?.atMs ?? Number.POSITIVE_INFINITY;
    for (const call of occurrenceCalls) {
      const fireAtMs = parseTaskId(call.taskId, 1)?.fireAtMs ?? 0;
      if (
        call.scheduleId === answer.scheduleId &&
        !((advancedAt.get(call.taskId) ?? Number.POSITIVE_INFINITY) < landed) &&
        fireAtMs >= answer.atMs &&
        call.atMs >= answer.atMs &&
        call.atMs < until
      ) {
        violations.push(
          `schedule ${answer.scheduleId} fired task ${call.taskId} at ${iso(call.atMs)}, after its ${answer.op} answered at ${iso(answer.atMs)}`,
        );
      }
    }
  }
  return violations;
}

const iso = (ms: number) => (Number.isFinite(ms) ? clockTime(ms) : String(ms));
