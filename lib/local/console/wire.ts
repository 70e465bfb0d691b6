/**
 * The JSON the local console's endpoints send and its page reads. Only types and no
 * imports, so the server's type check and the page's (page/tsconfig.json, with the DOM
 * and without Node) both read this one definition.
 */

/** A task as the console shows it. Its strings may come from any caller, so the page shows them as text only. */
export interface ConsoleTask {
  readonly id: string;
  readonly tenantId: string;
  readonly status: string;
  readonly dueAtMs: number;
  /** Where it goes: the webhook's URL, or the queue URL or event bus after the target type. */
  readonly target: string;
  readonly bizType?: string;
  readonly bizId?: string;
  /** The start of the payload's JSON text. */
  readonly payloadPreview: string;
  readonly attempts: number;
  readonly deliveredAtMs?: number;
  readonly latenessMs?: number;
  readonly lastError?: string;
}

/** A delivered task, with when it was delivered and how late. */
export interface ConsoleDelivery extends ConsoleTask {
  readonly deliveredAtMs: number;
  readonly latenessMs: number;
}

/** Counts of something due in each of a run of consecutive periods (seconds or minutes). */
export interface DueCounts {
  /** Epoch milliseconds at which the first period starts; each later one starts `periodMs` after. */
  readonly firstStartMs: number;
  readonly periodMs: number;
  readonly counts: readonly number[];
}

/** GET /local/console/tasks */
export interface ConsoleTasksView {
  /** The server's clock when it read the table, so relative times do not depend on the browser's. */
  readonly nowMs: number;
  /** How many table items the console read, and whether that was all of them: if not, every figure covers a part. */
  readonly itemsRead: number;
  readonly complete: boolean;
  readonly statusCounts: ReadonlyArray<{ readonly status: string; readonly count: number }>;
  /** The tasks due nearest to now, the latest due first. */
  readonly tasks: readonly ConsoleTask[];
  /** PENDING tasks due in each coming second, the current one first, and in each coming minute. */
  readonly upcomingSeconds: DueCounts;
  readonly upcomingMinutes: DueCounts;
  /** The latest deliveries, newest first. */
  readonly deliveries: readonly ConsoleDelivery[];
  /** Every delivery of the last `windowMs`, oldest first, for the lateness chart. */
  readonly lateness: {
    readonly windowMs: number;
    readonly points: ReadonlyArray<{ readonly deliveredAtMs: number; readonly latenessMs: number }>;
    readonly p50Ms?: number;
    readonly p99Ms?: number;
  };
}

/** A schedule as the console shows it, with its coming occurrences. */
export interface ConsoleSchedule {
  readonly id: string;
  readonly tenantId: string;
  /** The cron expression, or "rate <interval>". */
  readonly when: string;
  readonly timezone: string;
  readonly paused: boolean;
  readonly bizId?: string;
  readonly target: string;
  /** The pending occurrence first; none while paused or once ended. */
  readonly nextOccurrencesMs: readonly number[];
}

/** GET /local/console/schedules */
export interface ConsoleSchedulesView {
  readonly nowMs: number;
  readonly schedules: readonly ConsoleSchedule[];
}

/** A dead letter with what the task table says about its task. */
export interface ConsoleDeadLetter {
  readonly taskId: string;
  readonly attempt?: number;
  readonly error?: string;
  readonly tenantId?: string;
  readonly bizType?: string;
  readonly bizId?: string;
}

/** GET /local/console/dlq */
export interface ConsoleDlqView {
  /** Every message in the delivery DLQ. */
  readonly messages: number;
  /** Up to ten of them. */
  readonly letters: readonly ConsoleDeadLetter[];
}

/** What POST /local/dlq/redrive answers. */
export interface RedriveResult {
  readonly moved: number;
  readonly taskIds: readonly string[];
}
