/**
 * Local mode's restart recovery. fauxqs keeps its queues in memory, so a restart loses every
 * message; the table (dynalite, on disk) keeps every fact a task is owed. Recovery reads the
 * table through the same stores the handlers use (the clock, the task scan, the occupancy index)
 * and sends again what the queues held: deliveries, dead letters and ticks.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

import { DynamoClockStore } from '../../functions/adapters/dynamo/clock-store.js';
import { scanReceipts, scanTasksEndingLeases } from '../../functions/adapters/dynamo/task-store.js';
import { SqsDeadLetterQueue, sqsDeliveryQueue, sqsTickQueue } from '../../functions/adapters/sqs-queues.js';
import { occupancyIndex } from '../../functions/commons/stores.js';
import type { TimerSettings } from '../../functions/contract/topology.js';
import { minuteOf, secondOf } from '../../functions/core/kernel/clock.js';
import { asReceiptsShow } from '../../functions/core/kernel/receipts.js';
import type { DeliveryMessage, Task } from '../../functions/core/kernel/task.js';
import { deliveryMessageFor } from '../../functions/core/kernel/task-kernel.js';
import { type Tick, tickFor } from '../../functions/core/kernel/tick.js';
import { LOCAL_TABLE_NAME } from './dynamodb.js';

/** What a restart put back into the queues that fauxqs lost. */
export interface RestoredMessages {
  /** Tasks re-enqueued: PENDING, or leased by a delivery that died with the process. */
  readonly tasks: number;
  /** Dead letters rebuilt: one per FAILED task still in the table. */
  readonly deadLetters: number;
}

/**
 * fauxqs keeps messages in memory, so a restart loses what was queued; the table holds every
 * fact a task is owed, and the queues are rebuilt from it. Every task whose message may have been
 * queued is sent again (see hadQueuedMessage), never earlier than its retry time. The leases the
 * last run held are ended first (see scanTasksEndingLeases): no callback of that run is left to finish them,
 * so a task it was delivering goes again at once, its cut-short attempt counted, instead of a
 * lease's minute later. Every FAILED task goes back to the DLQ: a
 * redrive revives FAILED tasks only, so a letter whose task was already revived or has expired
 * would be skipped anyway, and one per FAILED task is exactly what the DLQ listed before the
 * restart, less the letters redriven since.
 */
export async function restoreLostMessages(
  dynamo: DynamoDBDocumentClient,
  sqs: SQSClient,
  queueUrls: { delivery: string; express: string; deliveryDlq: string },
): Promise<RestoredMessages> {
  const table = { client: dynamo, tableName: LOCAL_TABLE_NAME };
  const clock = await new DynamoClockStore(table).read();
  if (!clock) return { tasks: 0, deadLetters: 0 };
  const nowMs = Date.now();
  // No callback of the last run survives it: a lease it held would keep its task waiting for nobody.
  const [items, receipted] = await Promise.all([
    scanTasksEndingLeases(table, nowMs - 1000, Number.POSITIVE_INFINITY),
    scanReceipts(table, Number.POSITIVE_INFINITY),
  ]);
  // A task a receipt names was delivered, whatever its item says (see receipts.ts).
  const tasks = items.map((task) => asReceiptsShow(task, receipted, Number.POSITIVE_INFINITY));
  const failed = tasks.filter((task) => task.status === 'FAILED');
  const lost = tasks.filter((task) => hadQueuedMessage(task, clock.cursor)).map((task) => lostTaskMessage(task, nowMs));
  if (lost.length > 0) await sqsDeliveryQueue(sqs, queueUrls.delivery, queueUrls.express).send(lost);
  if (failed.length > 0) {
    await new SqsDeadLetterQueue(sqs, queueUrls.deliveryDlq).sendMany(
      failed.map((task) => ({ id: task.id, attempt: task.attempts, error: task.lastError ?? '' })),
    );
  }
  return { tasks: lost.length, deadLetters: failed.length };
}

/**
 * Whether a task not yet finished had a message in the queue, or would have had one by now: it
 * is leased by a delivery that died with the process; or it is PENDING in a second a scanner has
 * claimed, or enqueued directly as a late arrival (whose second the scanner, lagging behind, may
 * not have claimed yet), or waiting for a retry. The scanner, which reads PENDING tasks alone,
 * would find only some of these, and only once it caught up; a lapsed lease nothing would find
 * before the sweeper's overdue pass. A task is asked as its receipt shows it: one delivered by a
 * receipt is DELIVERED, though its item stays PENDING. A PENDING task never attempted in a second not yet claimed
 * is left to the scan that claims it: its first attempt may take no lease, so a second message
 * could call its target twice.
 */
function hadQueuedMessage(task: Task, cursor: number): boolean {
  if (task.status === 'DELIVERING') return true;
  if (task.status !== 'PENDING') return false;
  return secondOf(task.fireAtMs) < cursor || task.lateArrival === true || task.attempts > 0;
}

/** A lost task's message: due at the latest of its fire time, its retry time and its lease's end. */
function lostTaskMessage(task: Task, nowMs: number): DeliveryMessage {
  const notBeforeMs = Math.max(task.retryAtMs ?? 0, (task.leaseUntilMs ?? 0) + 1000);
  return deliveryMessageFor(task, nowMs, notBeforeMs);
}

/**
 * Ticks were in fauxqs's memory too, and the ticker plans each minute only once, so it will
 * not send them again. Ticks go out anew for the seconds with tasks that no scanner has
 * claimed, through the end of the next minute (the last one a ticker can have planned);
 * seconds more than an hour overdue are left to the sweeper's catch-up. Of the seconds already
 * due, one a minute is ticked: a claim takes in up to a minute, so that many scanners share the
 * backlog, and in dense mode, where every second counts as occupied, an hour's downtime is 60
 * ticks, not 3,600.
 */
export async function requeueLostTicks(
  dynamo: DynamoDBDocumentClient,
  tickQueueUrl: string,
  sqs: SQSClient,
  settings: TimerSettings,
): Promise<void> {
  const clock = await new DynamoClockStore({ client: dynamo, tableName: LOCAL_TABLE_NAME }).read();
  if (!clock) return;
  const nowMs = Date.now();
  const from = Math.max(clock.cursor, secondOf(nowMs) - 3600);
  const through = (Math.floor(secondOf(nowMs) / 60) + 2) * 60 - 1;
  const occupancy = occupancyIndex(
    { table: { tableName: LOCAL_TABLE_NAME }, tickEverySecond: settings.tickEverySecond },
    dynamo,
  );
  const dueByMinute = new Map<number, Tick>();
  const later: Tick[] = [];
  for (const second of [...(await occupancy.occupied(from, through))].sort((a, b) => a - b)) {
    const tick = tickFor(second, nowMs, settings.lookaheadSeconds);
    if (tick.delaySeconds > 0) later.push(tick);
    else if (!dueByMinute.has(minuteOf(second))) dueByMinute.set(minuteOf(second), tick);
  }
  const ticks = [...dueByMinute.values(), ...later];
  if (ticks.length === 0) return;
  await sqsTickQueue(sqs, tickQueueUrl).send(ticks);
}
