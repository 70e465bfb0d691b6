/**
 * The request contract of HTTP API v1. These schemas are the single definition the api
 * validates with; time-relative checks (how far in the past or future) need the clock
 * and live in `parseTaskRequest`. Each is checked at compile time against the wire type
 * (functions/contract/wire.ts) the client sends, so the two cannot drift.
 */
import { createHash } from 'node:crypto';

import { z } from 'zod';

import type {
  BatchRequest,
  BizTypeSettingsRequest,
  FieldError,
  RescheduleRequest,
  ScheduleChange,
  ScheduleListQuery,
  ScheduleRequest,
  TaskListQuery,
  TaskRequest,
} from '../../contract/wire.js';
import { MAX_ENCODABLE_MS } from '../kernel/ids.js';
import type { DeliveryPolicy, Target, TaskStatus, TaskWindow } from '../kernel/task.js';
import { MAX_WINDOW_SECONDS } from '../kernel/window.js';
import { ABSOLUTE_URL_PROBLEM, addressPolicy, webhookUrlProblem } from '../targets/egress.js';
import { LIST_LIMITS } from './task-listing.js';

/** Drops readonly at every depth and flattens intersections, so only the shapes are compared. */
type Shape<T> = T extends object ? { -readonly [K in keyof T]: Shape<T[K]> } : T;

/**
 * True when A and B have the same shape: the same fields, each as optional and of the same
 * type, readonly aside. Mutual assignability alone would miss an optional field added on one side.
 */
export type SameShape<A, B> =
  (<T>() => T extends Shape<A> ? 1 : 2) extends <T>() => T extends Shape<B> ? 1 : 2 ? true : false;

/** Compiles only when given true: `type X = Holds<SameShape<…>>` fails `npm run typecheck` on drift. */
export type Holds<T extends true> = T;

export const LIMITS = {
  payloadBytes: 64 * 1024,
  batchItems: 100,
  /**
   * The largest request body the api reads. Lambda takes at most 6 MiB (6,291,456 bytes) of
   * event in a synchronous invocation, and API Gateway puts the body in the event as a JSON
   * string, in which every quote and backslash gains a backslash: a body can double. Two of
   * these leave 291,456 bytes for the headers (at most 10 KiB) and the request context, so any
   * body the api accepts reaches it. A batch of 100 tasks fits unless its payloads average over
   * about 29 KiB; a batch of 64 KiB payloads must be split into batches of 45 or fewer.
   */
  requestBodyBytes: 3_000_000,
  urlLength: 2048,
  headerCount: 20,
  headerValueLength: 1024,
  bizTypeLength: 64,
  bizIdLength: 256,
  idempotencyKeyLength: 128,
  /** A cron or rate expression: six cron fields with lists and ranges fit with room to spare. */
  expressionLength: 256,
  /** The longest IANA zone name is about 30 characters. */
  timezoneLength: 64,
  /**
   * The furthest a deployment's horizon (TimerSettings.maxHorizonDays) may reach: a dueAt
   * further ahead is almost certainly a unit mistake (seconds for milliseconds).
   */
  horizonDays: 366,
  /** A dueAt further back is almost certainly a mistake, not a late arrival. */
  pastDays: 1,
} as const;

const DAY_MS = 24 * 3600 * 1000;

const ISO_8601_WITH_ZONE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})$/;

/** Epoch milliseconds of an ISO-8601 date-time with an explicit zone; undefined if it is not one or names no real instant. */
export function parseIsoInstant(text: string): number | undefined {
  const match = ISO_8601_WITH_ZONE.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second = '00', fraction = '', zone] = match;
  const ms = Date.parse(
    `${year}-${month}-${day}T${hour}:${minute}:${second}.${fraction.padEnd(3, '0').slice(0, 3)}${zone}`,
  );
  if (Number.isNaN(ms)) return undefined;
  // Date.parse rolls 2026-02-30 over to March 2; a timer must not guess what was meant.
  const calendar = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  const real =
    calendar.getUTCFullYear() === Number(year) &&
    calendar.getUTCMonth() === Number(month) - 1 &&
    calendar.getUTCDate() === Number(day) &&
    Number(hour) < 24 &&
    Number(minute) < 60 &&
    Number(second) < 60;
  return real ? ms : undefined;
}

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/;
/** Names that are valid HTTP tokens but are also the keys JavaScript objects inherit through. */
const OBJECT_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Headers the service sets itself; a caller's copy would forge or break the signed request. */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'connection',
  'transfer-encoding',
  'user-agent',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);

const headersSchema = z
  .record(
    z
      .string()
      .regex(HEADER_NAME, "must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)")
      // Checked on the key itself: by the time the record is built, a __proto__ key is gone.
      .refine((name) => !OBJECT_KEYS.has(name.toLowerCase()), 'is not allowed as a header name'),
    z
      .string()
      .max(LIMITS.headerValueLength, `must be at most ${LIMITS.headerValueLength} characters`)
      .regex(HEADER_VALUE, 'must not contain control characters such as CR or LF'),
  )
  .superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > LIMITS.headerCount) {
      ctx.addIssue({ code: 'custom', message: `at most ${LIMITS.headerCount} headers are allowed` });
    }
    for (const name of names) {
      if (RESERVED_HEADERS.has(name.toLowerCase())) {
        ctx.addIssue({ code: 'custom', path: [name], message: 'is set by the timer service and cannot be overridden' });
      }
    }
  });

const EVENT_BUS = /^(arn:aws[\w-]*:events:[a-z0-9-]+:\d{12}:event-bus\/)?[/.\-_A-Za-z0-9]{1,256}$/;

function targetSchema(allowInsecureTargets: boolean) {
  const urlText = z.string().max(LIMITS.urlLength, `must be at most ${LIMITS.urlLength} characters`);
  const url = urlText.refine((value) => URL.canParse(value), ABSOLUTE_URL_PROBLEM);
  const policy = addressPolicy(allowInsecureTargets);
  return z.discriminatedUnion(
    'type',
    [
      z.strictObject({
        type: z.literal('http'),
        url: urlText.superRefine((value, ctx) => {
          const problem = webhookUrlProblem(value, policy);
          if (problem) ctx.addIssue({ code: 'custom', message: problem });
        }),
        headers: headersSchema.optional(),
      }),
      z.strictObject({
        type: z.literal('sqs'),
        queueUrl: url.refine(
          (text) =>
            allowInsecureTargets ||
            /^https:\/\/sqs\.[a-z0-9-]+\.amazonaws\.com(\.cn)?\/\d{12}\/[\w-]{1,80}(\.fifo)?$/.test(text),
          'must be an SQS queue URL such as https://sqs.us-east-1.amazonaws.com/123456789012/my-queue',
        ),
      }),
      z.strictObject({
        type: z.literal('eventbridge'),
        eventBusName: z.string().regex(EVENT_BUS, 'must be an event bus name or ARN'),
        source: z
          .string()
          .min(1)
          .max(256)
          .refine((text) => !text.startsWith('aws.'), 'must not start with "aws." (reserved by AWS)')
          .optional(),
        detailType: z.string().min(1).max(128).optional(),
      }),
    ],
    { error: 'must be one of "http", "sqs" or "eventbridge"' },
  );
}

/** Control characters would forge log lines and terminal output wherever these are shown. */
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;
/** With the u flag a surrogate pair is one code point, so this matches only unpaired halves, which no UTF-8 store can hold. */
const LONE_SURROGATE = /[\ud800-\udfff]/u;

const text = (max: number) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .refine((value) => !LONE_SURROGATE.test(value), 'must be well-formed Unicode (it holds a lone surrogate)')
    .refine((value) => !CONTROL_CHARACTERS.test(value), 'must not contain control characters');

const optionalText = (max: number) => text(max).optional();

/** When a task is due: exactly one of these two, checked against the clock by resolveDueAt. */
const dueTimeFields = {
  dueAt: z
    .union([z.string(), z.number()], { error: 'must be an ISO-8601 date-time string or epoch milliseconds' })
    .optional(),
  delaySeconds: z
    .number({ error: 'must be a number of seconds' })
    .int('must be a whole number of seconds')
    .min(0, 'must not be negative')
    .max(LIMITS.horizonDays * 24 * 3600, `must be at most ${LIMITS.horizonDays} days`)
    .optional(),
};

const WINDOW_SECONDS_PROBLEM = `must be a whole number of seconds from 1 to ${MAX_WINDOW_SECONDS} (15 minutes)`;

/** A flexible window (window.ts): the task fires at a planned time within [dueAt, dueAt + seconds]. */
const windowSchema = z.strictObject(
  {
    seconds: z
      .number({ error: WINDOW_SECONDS_PROBLEM })
      .int(WINDOW_SECONDS_PROBLEM)
      .min(1, `${WINDOW_SECONDS_PROBLEM}; leave window out to fire at dueAt`)
      .max(MAX_WINDOW_SECONDS, WINDOW_SECONDS_PROBLEM),
  },
  { error: 'must be an object such as { "seconds": 60 }' },
);

/** The body of POST /v1/tasks, and of each item of POST /v1/tasks/batch. */
/** Built once per variant: a zod schema is costly to build and cheap to reuse. */
const taskRequestSchemas = new Map<boolean, ReturnType<typeof buildTaskRequestSchema>>();

export function taskRequestSchema(options: { allowInsecureTargets: boolean }) {
  let schema = taskRequestSchemas.get(options.allowInsecureTargets);
  if (!schema) {
    schema = buildTaskRequestSchema(options.allowInsecureTargets);
    taskRequestSchemas.set(options.allowInsecureTargets, schema);
  }
  return schema;
}

function buildTaskRequestSchema(allowInsecureTargets: boolean) {
  return z.strictObject({
    ...dueTimeFields,
    window: windowSchema.optional(),
    // Optional when the bizType names a default target (PUT /v1/biz-types/{bizType}).
    target: targetSchema(allowInsecureTargets).optional(),
    payload: z.unknown().optional(),
    bizType: optionalText(LIMITS.bizTypeLength),
    bizId: optionalText(LIMITS.bizIdLength),
    idempotencyKey: optionalText(LIMITS.idempotencyKeyLength),
  });
}

type TaskRequestMatchesWire = Holds<SameShape<z.input<ReturnType<typeof taskRequestSchema>>, TaskRequest>>;

/** A validated request, with dueAt resolved against the clock. */
export interface NewTask {
  readonly dueAtMs: number;
  /**
   * Set when dueAtMs was resolved from delaySeconds against this request's clock: a retry of the
   * same request resolves it to a later time, so the due time does not name the task.
   */
  readonly dueFromDelay?: true;
  /** The task fires at a time planned within [dueAtMs, dueAtMs + window.seconds] (see window.ts). */
  readonly window?: TaskWindow;
  /**
   * A digest of the request as sent (dueAt or delaySeconds as given, not resolved, and the
   * window), so a retry with the same idempotency key is recognised and a different request is not.
   */
  readonly fingerprint: string;
  readonly target: Target;
  readonly payloadJson: string;
  readonly bizType?: string;
  readonly bizId?: string;
  readonly idempotencyKey?: string;
  /** The bizType's delivery settings, applied by applyBizType. */
  readonly policy?: DeliveryPolicy;
}

/** A validated request before its bizType's settings are applied: the target may still be missing. */
export type TaskDraft = Omit<NewTask, 'target' | 'policy'> & { readonly target?: Target };

export type Parsed<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: FieldError[] };

/** Formats a zod path (`['tasks', 3, 'target', 'url']`) as `tasks[3].target.url`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  return path
    .map((part, index) => {
      if (typeof part === 'number') return `[${part}]`;
      // An empty key would vanish from the path, leaving the caller nothing to look for.
      if (part === '') return '[""]';
      return index === 0 ? String(part) : `.${String(part)}`;
    })
    .join('');
}

export function issuesToErrors(
  issues: readonly z.core.$ZodIssue[],
  prefix: ReadonlyArray<PropertyKey> = [],
): FieldError[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: formatPath([...path, key]), message: 'is not a known field' }));
    }
    return [{ path: formatPath(path) || '(body)', message: issue.message }];
  });
}

/** JSON with object keys sorted at every level, so equal requests serialise equally. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, field]) => field !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, field]) => `${JSON.stringify(key)}:${canonicalJson(field)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function fingerprintOf(request: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(request)).digest('base64url');
}

/** What a due time is checked against: the clock, and how far ahead this deployment accepts. */
export interface DueTimeRules {
  readonly nowMs: number;
  /** @default LIMITS.horizonDays */
  readonly horizonDays?: number;
}

/** Resolves dueAt or delaySeconds to epoch milliseconds, or says which field is wrong and how. */
function resolveDueAt(
  request: Pick<TaskRequest, 'dueAt' | 'delaySeconds'>,
  { nowMs, horizonDays = LIMITS.horizonDays }: DueTimeRules,
): number | { field: 'dueAt' | 'delaySeconds'; message: string } {
  const dueAtProblem = (message: string) => ({ field: 'dueAt' as const, message });
  if (request.dueAt !== undefined && request.delaySeconds !== undefined) {
    return dueAtProblem('give either dueAt or delaySeconds, not both');
  }
  if (request.delaySeconds !== undefined) {
    if (request.delaySeconds > (horizonDays * DAY_MS) / 1000) {
      return { field: 'delaySeconds', message: `must be at most ${horizonDays} days (this deployment's horizon)` };
    }
    return nowMs + request.delaySeconds * 1000;
  }
  if (request.dueAt === undefined) return dueAtProblem('is required (or give delaySeconds)');
  if (typeof request.dueAt === 'number') {
    const valid = Number.isSafeInteger(request.dueAt) && request.dueAt >= 0 && request.dueAt <= MAX_ENCODABLE_MS;
    if (!valid) return dueAtProblem('must be a whole number of epoch milliseconds');
  }
  const dueAtMs = typeof request.dueAt === 'number' ? request.dueAt : parseIsoInstant(request.dueAt);
  if (dueAtMs === undefined) {
    return dueAtProblem('must be an ISO-8601 date-time with a time zone, such as 2030-01-31T09:30:00Z');
  }
  if (dueAtMs > nowMs + horizonDays * DAY_MS) {
    return dueAtProblem(`must be at most ${horizonDays} days ahead (was it seconds instead of milliseconds?)`);
  }
  if (dueAtMs < nowMs - LIMITS.pastDays * DAY_MS) {
    return dueAtProblem(`must not be more than ${LIMITS.pastDays} day in the past`);
  }
  return dueAtMs;
}

const PAYLOAD_TOO_LARGE = `must be at most ${LIMITS.payloadBytes} bytes of JSON`;

/** Validates one task request against the contract and the clock; the bizType's settings are applied after (see biz-types.ts). */
export function parseTaskRequest(
  body: unknown,
  options: DueTimeRules & { allowInsecureTargets: boolean; pathPrefix?: ReadonlyArray<PropertyKey> },
): Parsed<TaskDraft> {
  const prefix = options.pathPrefix ?? [];
  const fieldError = (field: string, message: string): Parsed<TaskDraft> => ({
    ok: false,
    errors: [{ path: formatPath([...prefix, field]), message }],
  });
  const parsed = taskRequestSchema(options).safeParse(body);
  if (!parsed.success) return { ok: false, errors: issuesToErrors(parsed.error.issues, prefix) };
  const request = parsed.data;
  const dueAtMs = resolveDueAt(request, options);
  if (typeof dueAtMs !== 'number') return fieldError(dueAtMs.field, dueAtMs.message);
  const payloadJson = JSON.stringify(request.payload ?? null);
  if (Buffer.byteLength(payloadJson) > LIMITS.payloadBytes) return fieldError('payload', PAYLOAD_TOO_LARGE);
  return {
    ok: true,
    value: {
      dueAtMs,
      ...(request.delaySeconds !== undefined && { dueFromDelay: true }),
      ...(request.window !== undefined && { window: request.window }),
      fingerprint: fingerprintOf(request),
      ...(request.target !== undefined && { target: request.target }),
      payloadJson,
      ...(request.bizType !== undefined && { bizType: request.bizType }),
      ...(request.bizId !== undefined && { bizId: request.bizId }),
      ...(request.idempotencyKey !== undefined && { idempotencyKey: request.idempotencyKey }),
    },
  };
}

/** The body of POST /v1/tasks/batch; items are validated one by one so each gets its own result. */
export const batchRequestSchema = z.strictObject({
  tasks: z
    .array(z.unknown(), { error: 'must be an array of task requests' })
    .min(1, 'must hold at least one task')
    .max(LIMITS.batchItems, `must hold at most ${LIMITS.batchItems} tasks`),
});

// The envelope takes any items so that each is checked against taskRequestSchema on its own.
type BatchRequestMatchesWire = Holds<
  SameShape<z.input<typeof batchRequestSchema>, Omit<BatchRequest, 'tasks'> & { tasks: unknown[] }>
>;

/** The body of PATCH /v1/tasks/{id}: a new due time, and optionally a new payload (the target stays). */
export const rescheduleRequestSchema = z.strictObject({ ...dueTimeFields, payload: z.unknown().optional() });
type RescheduleRequestMatchesWire = Holds<SameShape<z.input<typeof rescheduleRequestSchema>, RescheduleRequest>>;

/** A validated reschedule: the new due time, the new payload if one was sent, and the request's fingerprint. */
export interface Reschedule {
  readonly dueAtMs: number;
  readonly payloadJson?: string;
  readonly fingerprint: string;
}

/** Validates a reschedule request against the contract and the clock. */
export function parseRescheduleRequest(body: unknown, options: DueTimeRules): Parsed<Reschedule> {
  const parsed = rescheduleRequestSchema.safeParse(body);
  if (!parsed.success) return { ok: false, errors: issuesToErrors(parsed.error.issues) };
  const request = parsed.data;
  const dueAtMs = resolveDueAt(request, options);
  if (typeof dueAtMs !== 'number') return { ok: false, errors: [{ path: dueAtMs.field, message: dueAtMs.message }] };
  // Absent means "keep the payload"; JSON cannot send undefined, so a sent null is a new payload.
  const payloadJson = 'payload' in request ? JSON.stringify(request.payload ?? null) : undefined;
  if (payloadJson !== undefined && Buffer.byteLength(payloadJson) > LIMITS.payloadBytes) {
    return { ok: false, errors: [{ path: 'payload', message: PAYLOAD_TOO_LARGE }] };
  }
  return {
    ok: true,
    value: { dueAtMs, fingerprint: fingerprintOf(request), ...(payloadJson !== undefined && { payloadJson }) },
  };
}

export const TASK_STATUSES = [
  'PENDING',
  'DELIVERING',
  'DELIVERED',
  'FAILED',
  'CANCELLED',
] as const satisfies readonly TaskStatus[];
export const taskStatusSchema = z.enum(TASK_STATUSES, { error: `must be one of ${TASK_STATUSES.join(', ')}` });

/** How many items a listing's page holds, as a query string gives it (API Gateway hands every parameter over as a string). */
const pageLimitSchema = z
  .string()
  .regex(/^\d{1,3}$/, `must be a whole number from 1 to ${LIST_LIMITS.maxLimit}`)
  .transform(Number)
  .pipe(z.number().min(1, 'must be at least 1').max(LIST_LIMITS.maxLimit, `must be at most ${LIST_LIMITS.maxLimit}`))
  .optional();
const cursorSchema = z.string().max(512, 'is not a cursor this listing issued; start again without it').optional();

/** The query string of GET /v1/tasks. */
export const listQuerySchema = z
  .strictObject({
    bizId: optionalText(LIMITS.bizIdLength),
    bizType: optionalText(LIMITS.bizTypeLength),
    status: taskStatusSchema.optional(),
    limit: pageLimitSchema,
    cursor: cursorSchema,
  })
  .refine((query) => query.bizId !== undefined || query.bizType !== undefined, {
    path: ['bizType'],
    message:
      'give bizType or bizId: tasks are listed by business type or business id (tasks submitted with neither are not indexed)',
  });

export type ListQuery = z.output<typeof listQuerySchema>;
// The query string carries limit as text; what the schema makes of it is what the client sends.
type ListQueryMatchesWire = Holds<SameShape<ListQuery, TaskListQuery>>;

/** A bizType as it appears in a path: the same rules as a task's bizType field. */
export const bizTypeNameSchema = text(LIMITS.bizTypeLength);

/**
 * Bounds of a bizType's delivery settings. Attempts are kept to a number whose history and
 * bill a person can still reason about; a backoff waits as a chain of delayed messages and a
 * retry time in the task item, so any length would work, and 12 hours is a product bound, not
 * SQS's; a callback rate is counted on one item per second, which takes about 1,000 writes a second.
 */
export const BIZ_TYPE_LIMITS = { maxAttempts: 50, backoffSeconds: 43_200, callbackRatePerSecond: 1000 } as const;

const wholeNumber = (min: number, max: number, unit: string) =>
  z
    .number({ error: `must be a number of ${unit}` })
    .int(`must be a whole number of ${unit}`)
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`)
    .optional();

/** The body of PUT /v1/biz-types/{bizType}: every field optional; what is left out falls back to the deployment's default. */
export function bizTypeSettingsSchema(options: { allowInsecureTargets: boolean }) {
  return z
    .strictObject({
      defaultTarget: targetSchema(options.allowInsecureTargets).optional(),
      maxAttempts: wholeNumber(1, BIZ_TYPE_LIMITS.maxAttempts, 'attempts'),
      backoffBaseSeconds: wholeNumber(1, BIZ_TYPE_LIMITS.backoffSeconds, 'seconds'),
      backoffMaxSeconds: wholeNumber(1, BIZ_TYPE_LIMITS.backoffSeconds, 'seconds'),
      callbackRateLimitPerSecond: wholeNumber(1, BIZ_TYPE_LIMITS.callbackRatePerSecond, 'calls a second'),
    })
    .refine(
      (settings) =>
        settings.backoffBaseSeconds === undefined ||
        settings.backoffMaxSeconds === undefined ||
        settings.backoffMaxSeconds >= settings.backoffBaseSeconds,
      { path: ['backoffMaxSeconds'], message: 'must be at least backoffBaseSeconds' },
    );
}

type BizTypeSettingsRequestMatchesWire = Holds<
  SameShape<z.input<ReturnType<typeof bizTypeSettingsSchema>>, BizTypeSettingsRequest>
>;

// ---- Schedules --------------------------------------------------------------------------

/** A schedule's time bound: an ISO-8601 instant or epoch milliseconds, checked by `instantOf`. */
const instantField = z.union([z.string(), z.number()], {
  error: 'must be an ISO-8601 date-time string or epoch milliseconds',
});
/** The catch-up policies a schedule request may name: the request contract's list, as TASK_STATUSES is. */
const CATCH_UP_POLICIES = ['fire-once', 'skip'] as const satisfies readonly NonNullable<ScheduleRequest['catchUp']>[];
const catchUpField = z.enum(CATCH_UP_POLICIES, { error: `must be one of ${CATCH_UP_POLICIES.join(', ')}` }).optional();
const expressionText = (max: number) => text(max).optional();

/** The body of POST /v1/schedules. Which of cron and rate is given, and whether they make sense, is `parseRecurrence`'s. */
export function scheduleRequestSchema(options: { allowInsecureTargets: boolean }) {
  return z.strictObject({
    cron: expressionText(LIMITS.expressionLength),
    rate: expressionText(LIMITS.expressionLength),
    timezone: optionalText(LIMITS.timezoneLength),
    startAt: instantField.optional(),
    endAt: instantField.optional(),
    target: targetSchema(options.allowInsecureTargets),
    payload: z.unknown().optional(),
    bizType: optionalText(LIMITS.bizTypeLength),
    bizId: optionalText(LIMITS.bizIdLength),
    idempotencyKey: optionalText(LIMITS.idempotencyKeyLength),
    catchUp: catchUpField,
    window: windowSchema.optional(),
  });
}
type ScheduleRequestMatchesWire = Holds<SameShape<z.input<ReturnType<typeof scheduleRequestSchema>>, ScheduleRequest>>;

/** The body of PATCH /v1/schedules/{id}; `null` clears startAt or endAt. */
export function scheduleChangeSchema(options: { allowInsecureTargets: boolean }) {
  return z.strictObject({
    cron: expressionText(LIMITS.expressionLength),
    rate: expressionText(LIMITS.expressionLength),
    timezone: optionalText(LIMITS.timezoneLength),
    startAt: instantField.nullable().optional(),
    endAt: instantField.nullable().optional(),
    target: targetSchema(options.allowInsecureTargets).optional(),
    payload: z.unknown().optional(),
    catchUp: catchUpField,
    paused: z.boolean({ error: 'must be true or false' }).optional(),
    window: windowSchema.nullable().optional(),
  });
}
type ScheduleChangeMatchesWire = Holds<SameShape<z.input<ReturnType<typeof scheduleChangeSchema>>, ScheduleChange>>;

/** A startAt or endAt as epoch milliseconds, or what is wrong with it. */
export function instantOf(value: string | number): number | string {
  const ms = typeof value === 'number' ? value : parseIsoInstant(value);
  if (ms === undefined || !Number.isSafeInteger(ms) || ms < 0 || ms > MAX_ENCODABLE_MS) {
    return 'must be an ISO-8601 date-time with a time zone, such as 2030-01-31T09:30:00Z, or epoch milliseconds';
  }
  return ms;
}

/** The digest a schedule request's idempotency key is bound to, as a task request's is. */
export function scheduleFingerprint(request: ScheduleRequest): string {
  return fingerprintOf(request as unknown as Record<string, unknown>);
}

/** The payload as stored, or the reason it is refused. */
export function payloadJsonOf(payload: unknown): string | FieldError {
  const payloadJson = JSON.stringify(payload ?? null);
  return Buffer.byteLength(payloadJson) > LIMITS.payloadBytes
    ? { path: 'payload', message: PAYLOAD_TOO_LARGE }
    : payloadJson;
}

/** GET /v1/schedules: every schedule of the tenant, or those matching any of these filters, a page at a time. */
export const scheduleListQuerySchema = z.strictObject({
  bizId: optionalText(LIMITS.bizIdLength),
  bizIdPrefix: optionalText(LIMITS.bizIdLength),
  bizType: optionalText(LIMITS.bizTypeLength),
  paused: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .transform((text) => text === 'true')
    .optional(),
  limit: pageLimitSchema,
  cursor: cursorSchema,
});
// The query string carries paused and limit as text; what the schema makes of them is what the client sends.
type ScheduleListQueryMatchesWire = Holds<SameShape<z.output<typeof scheduleListQuerySchema>, ScheduleListQuery>>;
