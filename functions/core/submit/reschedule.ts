/**
 * Rescheduling a PENDING task. The id says where a task lives, so a new due time means a
 * new item and a new id: the old task hands over to a successor. DynamoDB (and dynalite)
 * writes one item atomically, so the handover is made of single-item conditional writes in
 * an order where the one write that decides is on the old task:
 *
 *   1. intent   old: PENDING, record { successor id, request fingerprint }   (old still deliverable)
 *   2. create   successor: PENDING, rescheduledFrom = old                     (not yet deliverable)
 *   3. commit   old: PENDING with that intent → CANCELLED, rescheduledTo = successor
 *
 * The successor may be delivered only once the old task says `rescheduledTo` it, and the
 * old one only while it is PENDING, which the commit ends; so the two are never both
 * delivered. If the request dies after 1 or 2, whichever fires first settles it: the old
 * task's delivery orphans the successor, and the successor's delivery makes the commit
 * itself (the caller asked for it); so they are never neither. A retry with the same
 * request finds its intent and finishes under the same successor id.
 */

import { parseTaskId, type TaskAddress, taskAddress } from '../kernel/ids.js';
import { withReceipt } from '../kernel/receipts.js';
import type { Task, TaskStatus } from '../kernel/task.js';
import {
  awaitsUnleasedFirstAttempt,
  copiesMayCall,
  endedTaskExpiry,
  expiryAfter,
  UNLEASED_CANCEL_MARGIN_MS,
} from '../kernel/task.js';
import { freshTaskId, newPendingTask, storeNewTask } from '../kernel/task-kernel.js';
import type { Reschedule } from './schemas.js';
import { getTask, storedBeforeFirstAttempt, type SubmitPorts, type TaskLookupPorts } from './submit.js';

export type RescheduleOutcome =
  | { readonly kind: 'rescheduled'; readonly task: Task }
  | { readonly kind: 'not-found' }
  | {
      readonly kind: 'refused';
      /**
       * `already-final`: delivered, failed, cancelled or rescheduled before; `in-delivery`: an
       * attempt is in flight; `not-in-effect`: the task is itself a reschedule that has not
       * taken effect; `contended`: the task kept changing underneath; `too-late`: never attempted
       * and due too soon, so its first attempt (which takes no lease) may be under way;
       * `occurrence`: the task is a schedule's occurrence (`scheduleId`), which only a change of
       * its schedule moves: a moved occurrence would leave its schedule's chain behind.
       */
      readonly reason: 'already-final' | 'in-delivery' | 'not-in-effect' | 'contended' | 'too-late' | 'occurrence';
      readonly status?: TaskStatus;
      readonly rescheduledTo?: string;
      readonly scheduleId?: string;
    };

/** Whether a rescheduled task may be delivered now, must wait, or must never be. */
export type Handover = 'in-effect' | 'waiting' | 'abandoned';

const RESCHEDULE_ROUNDS = 3;

function addressOf(ports: TaskLookupPorts, id: string): TaskAddress | undefined {
  const location = parseTaskId(id, ports.shardCount);
  return location && taskAddress(id, location, ports.bucketCount);
}

/**
 * Decides for a task made by a reschedule. In effect once its predecessor says
 * `rescheduledTo` it; while the predecessor is PENDING with the intent, the reschedule
 * was begun and not finished, so this commits it (the write the PATCH would make; if both
 * make it, one wins and both see the same result); while the predecessor is in a delivery
 * attempt, it waits; anything else (the predecessor was delivered, failed, cancelled, is
 * gone, or its intent moved on) abandons it, for good: no later write can hand over to it.
 */
export async function handoverTo(ports: TaskLookupPorts, task: Task): Promise<Handover> {
  const address = task.rescheduledFrom === undefined ? undefined : addressOf(ports, task.rescheduledFrom);
  if (!address) return 'abandoned';
  for (let round = 0; round < 2; round++) {
    // A predecessor a receipt names was delivered: its successor is abandoned.
    const predecessor = await withReceipt(ports.taskStore, await ports.taskStore.get(address), ports.clock.now());
    if (predecessor?.tenantId !== task.tenantId) return 'abandoned';
    if (predecessor.rescheduledTo === task.id) return 'in-effect';
    if (predecessor.rescheduleIntent?.taskId !== task.id) return 'abandoned';
    if (predecessor.status === 'DELIVERING') return 'waiting';
    if (predecessor.status !== 'PENDING') return 'abandoned';
    const nowMs = ports.clock.now();
    const expiresAtSeconds = endedTaskExpiry(predecessor.fireAtMs, nowMs, ports.retentionDays);
    if (await ports.taskStore.commitReschedule(address, task.id, nowMs, expiresAtSeconds)) {
      return 'in-effect';
    }
  }
  return 'waiting';
}

/**
 * The successor's id: a retry of the same request reuses the one its intent recorded while
 * that successor can still take over (not yet written, or still PENDING); otherwise a new id.
 */
async function successorId(ports: SubmitPorts, current: Task, request: Reschedule): Promise<string> {
  const prior = current.rescheduleIntent;
  if (prior?.fingerprint === request.fingerprint) {
    const written = await getTask(ports, current.tenantId, prior.taskId);
    if (!written || written.status === 'PENDING') return prior.taskId;
  }
  // The successor keeps the task's window: a reschedule moves the due time, not how the
  // caller wanted the load spread, so it fires at a time planned within the new window.
  return freshTaskId(ports, request.dueAtMs, current.window);
}

/** Steps 1 to 3 on a PENDING task; undefined when the task changed underneath and must be looked at again. */
async function handOver(
  ports: SubmitPorts,
  current: Task,
  address: TaskAddress,
  request: Reschedule,
): Promise<RescheduleOutcome | undefined> {
  const { taskStore, clock } = ports;
  const id = await successorId(ports, current, request);
  const successorEntry = newPendingTask(
    ports,
    id,
    {
      tenantId: current.tenantId,
      dueAtMs: request.dueAtMs,
      ...(current.window !== undefined && { window: current.window }),
      target: current.target,
      payloadJson: request.payloadJson ?? current.payloadJson,
      ...(current.bizType !== undefined && { bizType: current.bizType }),
      ...(current.bizId !== undefined && { bizId: current.bizId }),
      // The successor is the same business task, delivered under the settings it was submitted with.
      ...(current.policy !== undefined && { policy: current.policy }),
      rescheduledFrom: current.id,
    },
    clock.now(),
  );
  if (current.rescheduleIntent?.taskId !== id) {
    const intent = { taskId: id, fingerprint: request.fingerprint };
    if (!(await taskStore.recordRescheduleIntent(address, current.tenantId, intent, current.rescheduleIntent?.taskId)))
      return undefined;
    // An intent sends the task's attempt through the lease, which the commit then excludes; but an
    // unleased first attempt that read the task before the intent was stored would not see it
    // (the rule: UNLEASED_CANCEL_MARGIN_MS).
    if (awaitsUnleasedFirstAttempt(current) && !storedBeforeFirstAttempt(clock, current.fireAtMs)) {
      await taskStore.withdrawRescheduleIntent(address, id);
      return { kind: 'refused', reason: 'too-late', status: current.status };
    }
  }

  // Stored as every new task is (indexed under its fire second, and enqueued at once if that second
  // may be claimed already); its delivery waits for the commit.
  const successor = await storeNewTask(ports, successorEntry);

  const nowMs = clock.now();
  if (
    await taskStore.commitReschedule(address, id, nowMs, endedTaskExpiry(current.fireAtMs, nowMs, ports.retentionDays))
  ) {
    return { kind: 'rescheduled', task: successor };
  }
  // Not committed by this call: the successor's own delivery may have committed it, else it must be given up.
  if (!(await taskStore.withdrawRescheduleIntent(address, id))) {
    const now = await taskStore.get(address);
    if (now?.rescheduledTo === id) return { kind: 'rescheduled', task: successor };
  }
  // Withdrawn (or moved on to another request's successor): nothing can hand over to this one any more.
  // A successor's attempts always hold a lease, so no due-time margin applies to this cancel.
  await taskStore.cancel(successorEntry.address, {
    tenantId: current.tenantId,
    nowMs,
    expiresAtSeconds: expiryAfter(nowMs, ports.retentionDays),
    unleasedDueAfterMs: nowMs,
  });
  return undefined;
}

/**
 * Moves a PENDING task to a new due time (and payload), as a successor task with a new id.
 * Idempotent: repeating a request that took effect answers with the same successor.
 */
export async function rescheduleTask(
  ports: SubmitPorts,
  tenantId: string,
  id: string,
  request: Reschedule,
): Promise<RescheduleOutcome> {
  const address = addressOf(ports, id);
  if (!address) return { kind: 'not-found' };
  for (let round = 0; round < RESCHEDULE_ROUNDS; round++) {
    // As its receipt shows it: a task delivered by a receipt is `already-final`, never moved.
    const current = await withReceipt(ports.taskStore, await ports.taskStore.get(address), ports.clock.now());
    if (current?.tenantId !== tenantId) return { kind: 'not-found' };
    if (current.rescheduledTo !== undefined) {
      const successor =
        current.rescheduleIntent?.fingerprint === request.fingerprint
          ? await getTask(ports, tenantId, current.rescheduledTo)
          : undefined;
      if (successor) return { kind: 'rescheduled', task: successor };
      return { kind: 'refused', reason: 'already-final', status: current.status, rescheduledTo: current.rescheduledTo };
    }
    // A copy of a failed first attempt may still be calling, as for a cancel (see copiesMayCall):
    // handed over now, the task could be delivered by that copy and by its successor.
    if (
      current.status === 'DELIVERING' ||
      (current.status === 'PENDING' && copiesMayCall(current, ports.clock.now()))
    ) {
      return { kind: 'refused', reason: 'in-delivery', status: current.status };
    }
    if (current.status !== 'PENDING') return { kind: 'refused', reason: 'already-final', status: current.status };
    if (current.occurrence !== undefined) {
      return {
        kind: 'refused',
        reason: 'occurrence',
        status: current.status,
        scheduleId: current.occurrence.scheduleId,
      };
    }
    // Refused before any write, like a cancel (the rule: UNLEASED_CANCEL_MARGIN_MS).
    if (awaitsUnleasedFirstAttempt(current) && current.fireAtMs <= ports.clock.now() + UNLEASED_CANCEL_MARGIN_MS) {
      return { kind: 'refused', reason: 'too-late', status: current.status };
    }
    // A successor whose own reschedule is not in effect could be delivered beside its predecessor if moved on.
    if (current.rescheduledFrom !== undefined && (await handoverTo(ports, current)) !== 'in-effect') {
      return { kind: 'refused', reason: 'not-in-effect', status: current.status };
    }
    const outcome = await handOver(ports, current, address, request);
    if (outcome) return outcome;
  }
  return { kind: 'refused', reason: 'contended' };
}
