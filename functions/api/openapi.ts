/**
 * The OpenAPI 3.1 description of HTTP API v1, generated from the very zod schemas the api
 * validates requests with and types its responses by, so the document cannot drift from
 * the code; each response schema is checked at compile time against its wire type
 * (functions/contract/wire.ts), so the client's types cannot drift either. Served at GET /v1/openapi.json and kept as docs/openapi.json (a test checks
 * both that it is valid and that the committed copy is current).
 */
import { z } from 'zod';

import { API_ROUTES } from '../contract/topology.js';
import type {
  ApiProblem,
  BatchResult,
  BizTypeList,
  BizTypeSettings,
  CreatedTask,
  ScheduleList,
  ScheduleView,
  TaskDetails,
  TaskPage,
} from '../contract/wire.js';
import { HISTORY_LIMIT } from '../core/kernel/task.js';
import {
  batchRequestSchema,
  bizTypeNameSchema,
  bizTypeSettingsSchema,
  type Holds,
  LIMITS,
  listQuerySchema,
  rescheduleRequestSchema,
  type SameShape,
  scheduleChangeSchema,
  scheduleListQuerySchema,
  scheduleRequestSchema,
  taskRequestSchema,
  taskStatusSchema as taskStatus,
} from '../core/submit/schemas.js';
import { LIST_LIMITS } from '../core/submit/task-listing.js';

const instant = z.string().meta({ format: 'date-time' });
const requestSchema = taskRequestSchema({ allowInsecureTargets: false });
const settingsRequestSchema = bizTypeSettingsSchema({ allowInsecureTargets: false });

export const createdTaskSchema = z
  .object({
    id: z.string().meta({ description: 'Stable task id (26 characters); also the webhook-id of every delivery' }),
    status: taskStatus,
    dueAt: instant.meta({ description: 'The due time asked for; the notification carries it' }),
    firesAt: instant.meta({
      description: 'When the task fires (is planned to): dueAt, or the time planned within its window',
    }),
    createdAt: instant,
  })
  .meta({ description: 'A task as created' });

export const taskDetailsSchema = createdTaskSchema
  .extend({
    // Stored tasks always have a target: a request without one got its bizType's default.
    target: requestSchema.shape.target.unwrap(),
    payload: z.unknown(),
    bizType: z.string().optional(),
    bizId: z.string().optional(),
    idempotencyKey: z.string().optional(),
    window: requestSchema.shape.window,
    attempts: z.number().int().meta({ description: 'Delivery attempts made so far' }),
    deliveredAt: instant.optional(),
    latenessMs: z
      .number()
      .int()
      .optional()
      .meta({ description: 'Delivery time minus firesAt (which is dueAt for a task without a window)' }),
    lastError: z.string().optional(),
    cancelledAt: instant.optional(),
    history: z
      .array(
        z.object({
          attempt: z.number().int(),
          at: instant,
          latencyMs: z.number().int().meta({ description: 'How long the target took to answer' }),
          statusCode: z.number().int().optional().meta({ description: "The webhook's HTTP status, when it answered" }),
          error: z.string().optional(),
        }),
      )
      .meta({ description: `The latest ${HISTORY_LIMIT} delivery attempts, oldest first` }),
    rescheduledFrom: z.string().optional().meta({ description: 'The task this one replaced through PATCH' }),
    rescheduledTo: z
      .string()
      .optional()
      .meta({ description: 'The task that replaced this one (which is CANCELLED) through PATCH' }),
  })
  .meta({ description: 'A task with its status and delivery facts' });

export const taskListSchema = z
  .object({
    tasks: z.array(taskDetailsSchema),
    nextCursor: z
      .string()
      .optional()
      .meta({ description: 'Pass as `cursor` for the next page; absent on the last page' }),
  })
  .meta({
    description:
      'One page: at most `limit` tasks, fewer (even none) when a status filter leaves some out; keep paging while nextCursor is present',
  });

export const bizTypeSettingsViewSchema = settingsRequestSchema
  .extend({
    bizType: z.string(),
    updatedAt: instant,
  })
  .meta({ description: "A bizType's settings; what is left out falls back to the deployment's default" });

export const bizTypeListSchema = z
  .object({ bizTypes: z.array(bizTypeSettingsViewSchema) })
  .meta({ description: "All of the caller's bizTypes that have settings" });

const scheduleCreateSchema = scheduleRequestSchema({ allowInsecureTargets: false });

export const scheduleViewSchema = z
  .object({
    id: z.string().meta({ description: 'Stable schedule id (sch_ and 20 characters)' }),
    cron: z.string().optional(),
    rate: z.string().optional(),
    timezone: z.string().meta({ description: 'IANA time zone the cron fields are read in' }),
    startAt: instant.optional(),
    endAt: instant.optional(),
    target: scheduleCreateSchema.shape.target,
    payload: z.unknown(),
    bizType: z.string().optional(),
    bizId: z.string().optional(),
    idempotencyKey: z.string().optional(),
    catchUp: z.enum(['fire-once', 'skip']),
    paused: z.boolean(),
    window: scheduleCreateSchema.shape.window.meta({
      description: 'Each occurrence fires at a time planned within [occurrence, occurrence + window.seconds]',
    }),
    revision: z.string().meta({ description: 'Changes with every change; occurrences of older revisions never fire' }),
    createdAt: instant,
    updatedAt: instant,
    nextTaskId: z.string().optional().meta({ description: 'The task of the pending occurrence' }),
    nextOccurrences: z.array(instant).meta({ description: 'The coming occurrences, the pending one first' }),
  })
  .meta({ description: 'A recurring schedule; each occurrence is a task carrying scheduleId and occurrence' });

export const scheduleListSchema = z
  .object({
    schedules: z.array(scheduleViewSchema),
    nextCursor: z
      .string()
      .optional()
      .meta({ description: 'Pass as `cursor` for the next page; absent on the last page' }),
  })
  .meta({
    description:
      'One page in id order: at most `limit` schedules, fewer (even none) when the filters leave some out; keep paging while nextCursor is present',
  });

export const problemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .meta({ description: 'RFC 9457 problem details' });

export const batchResultSchema = z
  .object({
    created: z.number().int(),
    rejected: z.number().int(),
    results: z.array(
      z.union([
        z.object({
          index: z.number().int(),
          status: z.union([z.literal(200), z.literal(201)]),
          task: createdTaskSchema,
        }),
        z.object({
          index: z.number().int(),
          status: z.union([z.literal(400), z.literal(409)]),
          problem: problemSchema,
        }),
      ]),
    ),
  })
  .meta({ description: 'One result per submitted item, in order' });

// Each response schema describes exactly its wire type: `npm run typecheck` fails on drift.
type CreatedTaskMatchesWire = Holds<SameShape<z.infer<typeof createdTaskSchema>, CreatedTask>>;
type TaskDetailsMatchWire = Holds<SameShape<z.infer<typeof taskDetailsSchema>, TaskDetails>>;
type TaskPageMatchesWire = Holds<SameShape<z.infer<typeof taskListSchema>, TaskPage>>;
type BizTypeSettingsMatchWire = Holds<SameShape<z.infer<typeof bizTypeSettingsViewSchema>, BizTypeSettings>>;
type BizTypeListMatchesWire = Holds<SameShape<z.infer<typeof bizTypeListSchema>, BizTypeList>>;
type ScheduleViewMatchesWire = Holds<SameShape<z.infer<typeof scheduleViewSchema>, ScheduleView>>;
type ScheduleListMatchesWire = Holds<SameShape<z.infer<typeof scheduleListSchema>, ScheduleList>>;
type ProblemMatchesWire = Holds<SameShape<z.infer<typeof problemSchema>, ApiProblem>>;
type BatchResultMatchesWire = Holds<SameShape<z.infer<typeof batchResultSchema>, BatchResult>>;

const json = (schema: z.core.$ZodType) => ({
  'application/json': { schema: z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) },
});
const problems = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((status) => [
      String(status),
      {
        description:
          {
            400: 'Invalid request; errors name each field',
            401: 'Missing, malformed, unknown or revoked API key',
            404: "No such task, bizType or schedule (or another tenant's)",
            409: 'Not possible in the current state',
            413: `The body is over ${LIMITS.requestBodyBytes} bytes (LIMITS.requestBodyBytes); split a batch into smaller ones`,
            429: "Over the tenant's requests per second; retry after the Retry-After header's seconds",
            503: "The task table is over its throughput; retry after the Retry-After header's seconds, with the same idempotencyKey",
          }[status] ?? 'Error',
        content: { 'application/problem+json': { schema: z.toJSONSchema(problemSchema) } },
      },
    ]),
  );
const idParameter = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const bizTypeParameter = { name: 'bizType', in: 'path', required: true, schema: z.toJSONSchema(bizTypeNameSchema) };
const queryParameters = Object.entries(z.toJSONSchema(listQuerySchema, { io: 'input' }).properties ?? {}).map(
  ([name, schema]) => ({
    name,
    in: 'query',
    required: false,
    schema,
  }),
);

/** The operations, by the same route keys the stack and the local gateway use. */
const operations: Record<(typeof API_ROUTES)[number], object> = {
  'POST /v1/tasks': {
    operationId: 'scheduleTask',
    summary: 'Schedule a task: call me back at dueAt (or after delaySeconds) with this payload',
    description:
      'With `window: { seconds: N }` (1 to 900) the task fires at a time the service plans within [dueAt, dueAt + N s], never before dueAt, so that tasks due in one second go out spread evenly over the window. The answer says when, as `firesAt`; the notification still carries the dueAt asked for.',
    requestBody: {
      required: true,
      content: { 'application/json': { schema: z.toJSONSchema(requestSchema, { io: 'input' }) } },
    },
    responses: {
      201: { description: 'Created', content: json(createdTaskSchema) },
      200: {
        description: 'A retry with the same idempotencyKey and request: the original task',
        content: json(createdTaskSchema),
      },
      ...problems(400, 409),
    },
  },
  'POST /v1/tasks/batch': {
    operationId: 'scheduleTasks',
    summary: 'Schedule up to 100 tasks, with a result per item',
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            ...z.toJSONSchema(batchRequestSchema, { io: 'input' }),
            properties: {
              tasks: {
                type: 'array',
                minItems: 1,
                maxItems: 100,
                items: z.toJSONSchema(requestSchema, { io: 'input' }),
              },
            },
          },
        },
      },
    },
    responses: {
      201: { description: 'Every item created or replayed', content: json(batchResultSchema) },
      207: { description: 'Some items rejected; see each result', content: json(batchResultSchema) },
      ...problems(400),
    },
  },
  'GET /v1/tasks': {
    operationId: 'listTasks',
    summary:
      "The caller's tasks with a bizId, or with a bizType, optionally of one status, in due order (per write shard for a bizType); give bizId or bizType",
    parameters: queryParameters,
    responses: { 200: { description: 'One page', content: json(taskListSchema) }, ...problems(400) },
  },
  'PATCH /v1/tasks/{id}': {
    operationId: 'rescheduleTask',
    summary: 'Reschedule a PENDING task: a new dueAt (or delaySeconds), optionally a new payload',
    description:
      "The id encodes the fire time, so the task is replaced: the answer is a new task (new id, `rescheduledFrom` the old one) and the old one becomes CANCELLED with `rescheduledTo`. The new task keeps the window, if the task had one, planned anew within the new dueAt. Exactly one of the two is ever delivered. Repeating the same request answers with the same new task; a failed request (5xx) may have taken effect, so repeat it to find out. A schedule's occurrence is not moved (409 reschedule-occurrence): change its schedule instead.",
    parameters: [idParameter],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: z.toJSONSchema(rescheduleRequestSchema, { io: 'input' }) } },
    },
    responses: {
      200: { description: 'The new task that replaces this one', content: json(taskDetailsSchema) },
      ...problems(400, 404, 409),
    },
  },
  'GET /v1/tasks/{id}': {
    operationId: 'getTask',
    summary: 'A task with its status and delivery facts',
    parameters: [idParameter],
    responses: { 200: { description: 'The task', content: json(taskDetailsSchema) }, ...problems(404) },
  },
  'DELETE /v1/tasks/{id}': {
    operationId: 'cancelTask',
    summary: 'Cancel a task that has not been delivered',
    description:
      "A task never attempted can be cancelled until 2 s before its due time (its first attempt takes no lease, so a later cancel could race it: 409 too-late). A task waiting for a retry can be cancelled at any time between attempts (409 in-delivery while an attempt is in flight, and for a minute after a failed first attempt, while a copy of it may still be). Cancelling a schedule's occurrence cancels that occurrence only: the schedule goes on with its next one.",
    parameters: [idParameter],
    responses: {
      200: { description: 'Cancelled (also when a cancel already answered 200)', content: json(taskDetailsSchema) },
      ...problems(404, 409),
    },
  },
  'PUT /v1/biz-types/{bizType}': {
    operationId: 'setBizType',
    summary: "Create or replace a bizType's settings: default target, retry policy, callback rate",
    description:
      "Applied when a task is submitted, and copied onto it: a change applies to tasks submitted after it (within 30 seconds, as api instances cache settings), never to tasks already stored. A task with this bizType and no target gets defaultTarget; maxAttempts and backoff replace the deployment's; callbackRateLimitPerSecond caps how many of the tenant's tasks of this bizType call their target in one second (the rest wait, without using an attempt).",
    parameters: [bizTypeParameter],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: z.toJSONSchema(settingsRequestSchema, { io: 'input' }) } },
    },
    responses: {
      200: { description: 'The settings as stored', content: json(bizTypeSettingsViewSchema) },
      ...problems(400),
    },
  },
  'GET /v1/biz-types/{bizType}': {
    operationId: 'getBizType',
    summary: "A bizType's settings",
    parameters: [bizTypeParameter],
    responses: {
      200: { description: 'The settings', content: json(bizTypeSettingsViewSchema) },
      ...problems(400, 404),
    },
  },
  'GET /v1/biz-types': {
    operationId: 'listBizTypes',
    summary: "The caller's bizTypes that have settings",
    responses: { 200: { description: 'Every bizType with settings', content: json(bizTypeListSchema) } },
  },
  'DELETE /v1/biz-types/{bizType}': {
    operationId: 'deleteBizType',
    summary: "Delete a bizType's settings; tasks already submitted keep the settings they were given",
    parameters: [bizTypeParameter],
    responses: {
      200: {
        description: 'Deleted',
        content: {
          'application/json': {
            schema: { type: 'object', properties: { bizType: { type: 'string' }, deleted: { const: true } } },
          },
        },
      },
      ...problems(400, 404),
    },
  },
  'POST /v1/schedules': {
    operationId: 'createSchedule',
    summary: 'Create a recurring schedule: exactly one of cron or rate, in an IANA timezone',
    description:
      'Each occurrence is a task (delivered, retried and dead-lettered like any) whose notification carries scheduleId and occurrence. DST: a local time a spring-forward skips fires at the first valid instant after it; a repeated local time fires once. At most one occurrence a second; at most 1,000 schedules per tenant.',
    requestBody: {
      required: true,
      content: { 'application/json': { schema: z.toJSONSchema(scheduleCreateSchema, { io: 'input' }) } },
    },
    responses: {
      201: { description: 'Created, with its coming occurrences', content: json(scheduleViewSchema) },
      200: {
        description: 'A retry with the same idempotencyKey and request: the original schedule',
        content: json(scheduleViewSchema),
      },
      ...problems(400, 409),
    },
  },
  'GET /v1/schedules': {
    operationId: 'listSchedules',
    summary:
      "The caller's schedules, a page at a time: all of them, or those with a bizId, a bizId prefix, a bizType or a paused state",
    description: `With no filter, every schedule of the caller. \`limit\` is ${LIST_LIMITS.defaultLimit} unless given; a page's \`nextCursor\` passed back as \`cursor\` continues the listing.`,
    parameters: Object.entries(z.toJSONSchema(scheduleListQuerySchema, { io: 'input' }).properties ?? {}).map(
      ([name, schema]) => ({ name, in: 'query', required: false, schema }),
    ),
    responses: {
      200: { description: 'One page of the matching schedules', content: json(scheduleListSchema) },
      ...problems(400),
    },
  },
  'GET /v1/schedules/{id}': {
    operationId: 'getSchedule',
    summary: 'A schedule with its coming occurrences',
    parameters: [idParameter],
    responses: { 200: { description: 'The schedule', content: json(scheduleViewSchema) }, ...problems(404) },
  },
  'PATCH /v1/schedules/{id}': {
    operationId: 'changeSchedule',
    summary: 'Change a schedule (timing, target, payload, catchUp) or pause and resume it with paused',
    description:
      'Every change takes effect for every occurrence not yet due: the pending occurrence is cancelled and one of the new revision takes its place (none while paused).',
    parameters: [idParameter],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: z.toJSONSchema(scheduleChangeSchema({ allowInsecureTargets: false }), { io: 'input' }),
        },
      },
    },
    responses: {
      200: { description: 'The schedule as changed', content: json(scheduleViewSchema) },
      ...problems(400, 404, 409),
    },
  },
  'DELETE /v1/schedules/{id}': {
    operationId: 'deleteSchedule',
    summary: 'Delete a schedule; its pending occurrence never fires',
    parameters: [idParameter],
    responses: {
      200: {
        description: 'Deleted',
        content: {
          'application/json': {
            schema: { type: 'object', properties: { id: { type: 'string' }, deleted: { const: true } } },
          },
        },
      },
      ...problems(404),
    },
  },
  'GET /v1/openapi.json': {
    operationId: 'getOpenApi',
    summary: 'This document',
    responses: { 200: { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } } },
  },
};

/** The document, built once per cold start. */
export const openApiDocument = (() => {
  const paths: Record<string, Record<string, object>> = {};
  for (const [routeKey, operation] of Object.entries(operations)) {
    const [method = '', path = ''] = routeKey.split(' ');
    // Every route authenticates, counts against the tenant's rate and reads the table, so every one
    // can answer these; every route that reads a body can refuse one that is too large.
    const withAuth = {
      ...operation,
      responses: {
        ...(operation as { responses: object }).responses,
        ...problems(401, 429, 503, ...('requestBody' in operation ? [413] : [])),
      },
    };
    paths[path] = { ...paths[path], [method.toLowerCase()]: withAuth };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Distributed timer API',
      version: '1.0.0',
      description:
        'Schedule a webhook, EventBridge event or SQS message for a second-precise time. Errors are RFC 9457 problem+json.',
    },
    security: [{ apiKey: [] }],
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'A tenant API key (tk_<tenant>_<key id>_<secret>_<tag>), sent as "Authorization: Bearer <key>".',
        },
      },
    },
    paths,
  };
})();
