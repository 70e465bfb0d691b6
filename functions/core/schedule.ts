import { randomInt } from 'node:crypto';
import { readClock, secondOf } from './clock';
import { newTaskId, parseTaskId, taskKey } from './ids';
import { toDeliveryMessages } from './scan';
import type { NewTask } from './schemas';
import type { CancelOutcome, Clock, ClockStore, DeliveryQueue, Task, TaskStore } from './task';
import { expiryAfter } from './task';

export interface SchedulePorts {
  readonly taskStore: TaskStore;
  readonly clockStore: ClockStore;
  readonly deliveryQueue: DeliveryQueue;
  readonly clock: Clock;
  readonly bucketCount: number;
  readonly shardCount: number;
}

/**
 * Stores new tasks, then hands any whose second is already claimed straight to the
 * delivery queue. The order matters (invariant 5): the cursor is read after the write,
 * so either the scanner's claim came later and its query sees the task, or the cursor
 * read here already shows the claim and this call enqueues it. A task can be enqueued
 * twice by that race, never zero times.
 */
export async function scheduleTasks(ports: SchedulePorts, requests: readonly NewTask[]): Promise<Task[]> {
  const { taskStore, clockStore, deliveryQueue, clock, bucketCount, shardCount } = ports;
  const createdAtMs = clock.now();
  const entries = requests.map((request) => {
    const location = { dueAtMs: request.dueAtMs, shard: randomInt(shardCount) };
    const id = newTaskId(location);
    const task: Task = { ...request, id, status: 'PENDING', createdAtMs, attempts: 0 };
    return { task, key: taskKey(id, location, bucketCount) };
  });
  const [single] = entries;
  if (entries.length === 1 && single) await taskStore.create(single.task, single.key);
  else await taskStore.createMany(entries);

  const { cursor } = await readClock(clockStore, clock);
  const late = entries.map(({ task }) => task).filter((task) => secondOf(task.dueAtMs) < cursor);
  if (late.length > 0) await deliveryQueue.send(toDeliveryMessages(late, clock.now()));
  return entries.map(({ task }) => task);
}

export interface TaskLookupPorts {
  readonly taskStore: TaskStore;
  readonly clock: Clock;
  readonly bucketCount: number;
  readonly shardCount: number;
  readonly retentionDays: number;
}

/** The task with this id, or undefined for unknown and malformed ids alike. */
export async function getTask(ports: TaskLookupPorts, id: string): Promise<Task | undefined> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return undefined;
  return ports.taskStore.get(taskKey(id, location, ports.bucketCount));
}

/**
 * Cancels a task that has not been delivered. Once this returns `cancelled: true` the
 * task can never be delivered: the callback must take a lease on a PENDING task before
 * calling the target, and only a PENDING task can be cancelled, so no attempt is in flight
 * or was cut short with an unknown outcome. Cancelling an already cancelled task succeeds
 * again, so retries are safe.
 */
export async function cancelTask(ports: TaskLookupPorts, id: string): Promise<CancelOutcome> {
  const location = parseTaskId(id, ports.shardCount);
  if (!location) return { cancelled: false, reason: 'not-found' };
  const nowMs = ports.clock.now();
  const outcome = await ports.taskStore.cancel(
    taskKey(id, location, ports.bucketCount),
    nowMs,
    expiryAfter(nowMs, ports.retentionDays),
  );
  if (!outcome.cancelled && outcome.status === 'CANCELLED') return { cancelled: true };
  return outcome;
}
