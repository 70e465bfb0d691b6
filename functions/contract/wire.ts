/**
 * What crosses HTTP in API v1, as plain TypeScript: the bodies the api accepts and answers
 * with, and the body each notification carries. The client takes its types from here and
 * nothing else; the api's zod schemas (functions/core/submit/schemas.ts, functions/api/openapi.ts)
 * are checked at compile time to accept and produce exactly these shapes, so neither side
 * can drift. Types only: importing this module costs the client nothing at run time.
 * Lists in answers are plain arrays, so a caller may sort or extend what it received.
 */

/** A task's lifecycle: PENDING until due, DELIVERING while an attempt runs, then one of the final three. */
export type TaskStatus = 'PENDING' | 'DELIVERING' | 'DELIVERED' | 'FAILED' | 'CANCELLED';

/** Where a due task is delivered: a signed webhook, an SQS queue or an EventBridge bus. */
export type Target =
  | { readonly type: 'http'; readonly url: string; readonly headers?: Readonly<Record<string, string>> }
  | { readonly type: 'sqs'; readonly queueUrl: string }
  | {
      readonly type: 'eventbridge';
      readonly eventBusName: string;
      readonly source?: string;
      readonly detailType?: string;
    };

/**
 * A flexible window: the task fires at a time the service plans within [dueAt, dueAt + seconds]
 * (1 to 900), never before dueAt, so that many tasks due in one second go out spread over it.
 */
export interface TaskWindow {
  readonly seconds: number;
}

/** The body of POST /v1/tasks, and each item of POST /v1/tasks/batch: give dueAt or delaySeconds. */
export interface TaskRequest {
  /** An ISO-8601 date-time with a time zone, or epoch milliseconds. */
  readonly dueAt?: string | number;
  readonly delaySeconds?: number;
  /** Fire at a planned time within [dueAt, dueAt + window.seconds] rather than at dueAt. */
  readonly window?: TaskWindow;
  /** Optional when the bizType names a default target (PUT /v1/biz-types/{bizType}). */
  readonly target?: Target;
  readonly payload?: unknown;
  readonly bizType?: string;
  readonly bizId?: string;
  /** A retry with the same key and request gets the original task back, never a second one. */
  readonly idempotencyKey?: string;
}

/** The body of POST /v1/tasks/batch: 1 to 100 task requests, each validated on its own. */
export interface BatchRequest {
  readonly tasks: readonly TaskRequest[];
}

/** The body of PATCH /v1/tasks/{id}: a new due time, and optionally a new payload (the target stays). */
export interface RescheduleRequest {
  readonly dueAt?: string | number;
  readonly delaySeconds?: number;
  readonly payload?: unknown;
}

/** A task as created (201), or as first created when a retry is answered (200). */
export interface CreatedTask {
  /** Stable task id (26 characters); also the webhook-id of every delivery. */
  readonly id: string;
  readonly status: TaskStatus;
  /** The due time asked for; the notification carries it. */
  readonly dueAt: string;
  /** When the task fires (is planned to): dueAt, or the time planned within its window. */
  readonly firesAt: string;
  readonly createdAt: string;
}

/** One delivery attempt, as a task's history shows it. */
export interface DeliveryAttemptView {
  readonly attempt: number;
  readonly at: string;
  /** How long the target took to answer. */
  readonly latencyMs: number;
  /** The webhook's HTTP status, when it answered. */
  readonly statusCode?: number;
  readonly error?: string;
}

/** A task with its status and delivery facts (GET, PATCH and DELETE /v1/tasks/{id}). */
export interface TaskDetails extends CreatedTask {
  /** Always set: a request without a target got its bizType's default. */
  readonly target: Target;
  /** The payload as submitted (null when none was). */
  readonly payload: unknown;
  readonly bizType?: string;
  readonly bizId?: string;
  readonly idempotencyKey?: string;
  /** The flexible window it was submitted with (a reschedule keeps it). */
  readonly window?: TaskWindow;
  /** Delivery attempts made so far. */
  readonly attempts: number;
  readonly deliveredAt?: string;
  /** Delivery time minus firesAt (which is dueAt for a task without a window). */
  readonly latenessMs?: number;
  readonly lastError?: string;
  readonly cancelledAt?: string;
  /** The latest delivery attempts, oldest first. */
  readonly history: DeliveryAttemptView[];
  /** The task this one replaced through PATCH. */
  readonly rescheduledFrom?: string;
  /** The task that replaced this one (which is CANCELLED) through PATCH. */
  readonly rescheduledTo?: string;
}

/** GET /v1/tasks's query: bizId or bizType, optionally status; `limit` 1 to 100 (default 50). */
export interface TaskListQuery {
  readonly bizId?: string;
  readonly bizType?: string;
  readonly status?: TaskStatus;
  readonly limit?: number;
  /** A page's nextCursor, passed back unchanged with the same bizId or bizType. */
  readonly cursor?: string;
}

/** One page of GET /v1/tasks: fewer than `limit` tasks (even none) when a status filter leaves some out. */
export interface TaskPage {
  readonly tasks: TaskDetails[];
  /** Absent on the last page. */
  readonly nextCursor?: string;
}

/** PUT /v1/biz-types/{bizType}'s body: every field optional; what is left out falls back to the deployment's default. */
export interface BizTypeSettingsRequest {
  readonly defaultTarget?: Target;
  readonly maxAttempts?: number;
  readonly backoffBaseSeconds?: number;
  readonly backoffMaxSeconds?: number;
  readonly callbackRateLimitPerSecond?: number;
}

/** A bizType's settings, as stored. */
export interface BizTypeSettings extends BizTypeSettingsRequest {
  readonly bizType: string;
  readonly updatedAt: string;
}

/** The body of GET /v1/biz-types. */
export interface BizTypeList {
  readonly bizTypes: BizTypeSettings[];
}

/** A field that failed validation, as reported in problem+json `errors`. */
export interface FieldError {
  /** Where the field is, such as `tasks[3].target.url`. */
  readonly path: string;
  readonly message: string;
}

/** RFC 9457 problem details, as the API returns them; `type` names the kind of problem so clients can branch on it. */
export interface ApiProblem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly errors?: readonly FieldError[];
}

/** One item's outcome in a batch: created (201), replayed (200), invalid (400) or a reused idempotency key (409). */
export type BatchItemResult =
  | { readonly index: number; readonly status: 200 | 201; readonly task: CreatedTask }
  | { readonly index: number; readonly status: 400 | 409; readonly problem: ApiProblem };

/** The body of POST /v1/tasks/batch's answer: one result per submitted item, in order. */
export interface BatchResult {
  readonly created: number;
  readonly rejected: number;
  readonly results: readonly BatchItemResult[];
}

/**
 * The JSON body every delivery carries: the webhook's POST body (signed, see
 * webhook-signature.ts), the SQS message body, the EventBridge event's detail.
 */
export interface WebhookNotification {
  /** The task id: stable across attempts, so receivers can drop duplicates. */
  readonly id: string;
  readonly dueAt: string;
  readonly firedAt: string;
  readonly attempt: number;
  readonly bizType: string | null;
  readonly bizId: string | null;
  readonly payload: unknown;
  /** Set when the task is an occurrence of a schedule: the schedule's id. */
  readonly scheduleId?: string;
  /**
   * The occurrence's nominal time (ISO-8601 UTC). With `scheduleId` it names the occurrence:
   * a receiver that has seen the pair drops the notification.
   */
  readonly occurrence?: string;
}

/** The body of POST /v1/schedules: exactly one of `cron` or `rate`. */
export interface ScheduleRequest {
  /** 5 fields (minute hour day month weekday), or 6 with seconds first; `cron(...)` may wrap them. */
  readonly cron?: string;
  /** `"<n> <unit>"` with unit second, minute, hour or day (plural when n > 1); `rate(...)` may wrap it. */
  readonly rate?: string;
  /** IANA time zone the cron fields are read in. @default "UTC" */
  readonly timezone?: string;
  readonly startAt?: string | number;
  readonly endAt?: string | number;
  readonly target: Target;
  readonly payload?: unknown;
  readonly bizType?: string;
  readonly bizId?: string;
  readonly idempotencyKey?: string;
  /** Occurrences missed during an outage: fire the first one late, or none. @default "fire-once" */
  readonly catchUp?: 'fire-once' | 'skip';
  /** Each occurrence fires at a planned time within [occurrence, occurrence + window.seconds]. */
  readonly window?: TaskWindow;
}

/** The body of PATCH /v1/schedules/{id}: what changes; the rest stays. */
export interface ScheduleChange {
  readonly cron?: string;
  readonly rate?: string;
  readonly timezone?: string;
  readonly startAt?: string | number | null;
  readonly endAt?: string | number | null;
  readonly target?: Target;
  readonly payload?: unknown;
  readonly catchUp?: 'fire-once' | 'skip';
  readonly paused?: boolean;
  /** A new window for the occurrences not yet due; `null` takes it away. */
  readonly window?: TaskWindow | null;
}

/** A schedule as the API shows it. */
export interface ScheduleView {
  readonly id: string;
  readonly cron?: string;
  readonly rate?: string;
  readonly timezone: string;
  readonly startAt?: string;
  readonly endAt?: string;
  readonly target: Target;
  readonly payload: unknown;
  readonly bizType?: string;
  readonly bizId?: string;
  readonly idempotencyKey?: string;
  readonly catchUp: 'fire-once' | 'skip';
  readonly paused: boolean;
  readonly window?: TaskWindow;
  /** Changes with every change of the schedule; occurrences of an older revision never fire. */
  readonly revision: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** The pending occurrence's task, unless the schedule is paused or has ended. */
  readonly nextTaskId?: string;
  /** The next occurrences (ISO-8601 UTC), the first of them the pending one; empty when paused or ended. */
  readonly nextOccurrences: string[];
}

/** GET /v1/schedules' query: every filter optional; with none, every schedule of the tenant. */
export interface ScheduleListQuery {
  readonly bizId?: string;
  /** Schedules whose bizId starts with this. */
  readonly bizIdPrefix?: string;
  readonly bizType?: string;
  readonly paused?: boolean;
  readonly limit?: number;
  /** A page's nextCursor, passed back unchanged. */
  readonly cursor?: string;
}

/** The body of GET /v1/schedules: one page, in id order. */
export interface ScheduleList {
  readonly schedules: ScheduleView[];
  /** Absent on the last page. */
  readonly nextCursor?: string;
}
