import type { APIGatewayProxyEventV2 } from 'aws-lambda';

import type { BatchItemResult, BatchResult, CreatedTask, FieldError, TaskDetails, TaskPage } from '../contract/wire.js';
import { secondOf } from '../core/kernel/clock.js';
import { type Task, UNLEASED_CANCEL_MARGIN_MS } from '../core/kernel/task.js';
import { cancelTaskKeepingSchedule } from '../core/schedules/schedules.js';
import { applyBizType, type BizTypeDirectory } from '../core/submit/biz-types.js';
import { rescheduleTask } from '../core/submit/reschedule.js';
import {
  batchRequestSchema,
  formatPath,
  issuesToErrors,
  listQuerySchema,
  type NewTask,
  type Parsed,
  parseRescheduleRequest,
  parseTaskRequest,
} from '../core/submit/schemas.js';
import {
  getTask,
  type SubmitOutcome,
  type SubmitPorts,
  type SubmitResult,
  submitTasks,
  type TaskLookupPorts,
} from '../core/submit/submit.js';
import { decodeCursor, encodeCursor, LIST_LIMITS, type ListPorts, listTasks } from '../core/submit/task-listing.js';
import { resolvingEachHostOnce, targetProblem, type TargetRules } from '../core/targets/target-rules.js';
import { authenticate, type RateLimiter, type Tenant, type TenantDirectory } from '../core/tenants/tenants.js';
import { bizTypeRoute, type BizTypeRoutePorts } from './biz-type-routes.js';
import { type HttpResult, jsonResponse, problem, problemResponse, readJsonBody, validationProblem } from './http.js';
import { openApiDocument } from './openapi.js';
import { routeOf } from './route-match.js';
import { scheduleRoute, type ScheduleRoutePorts } from './schedule-routes.js';

export type ApiPorts = SubmitPorts &
  TaskLookupPorts &
  ListPorts &
  BizTypeRoutePorts &
  ScheduleRoutePorts & {
    readonly allowInsecureTargets: boolean;
    /** How many days ahead a task may be due in this deployment. */
    readonly horizonDays: number;
    readonly targetRules: TargetRules;
    readonly tenants: TenantDirectory;
    /** bizType settings for submits, cached: one read per distinct bizType per cache lifetime. */
    readonly bizTypes: BizTypeDirectory;
    readonly requestCounter: RateLimiter;
    /** Told what each schedule call did, for metrics and logs. */
    readonly onScheduled?: (result: SubmitResult) => void;
  };

const iso = (ms: number) => new Date(ms).toISOString();
const isoIfSet = (ms: number | undefined) => (ms === undefined ? undefined : iso(ms));

/** The 201 body of a created task, as the contract describes it (and openapi.ts checks its schema against). */
export function createdView(task: Task): CreatedTask {
  return {
    id: task.id,
    status: task.status,
    dueAt: iso(task.dueAtMs),
    firesAt: iso(task.fireAtMs),
    createdAt: iso(task.createdAtMs),
  };
}

/** The GET body: the task, its status and its delivery facts. */
export function taskView(task: Task): TaskDetails {
  return {
    ...createdView(task),
    target: task.target,
    payload: JSON.parse(task.payloadJson) as unknown,
    bizType: task.bizType,
    bizId: task.bizId,
    idempotencyKey: task.idempotencyKey,
    window: task.window,
    attempts: task.attempts,
    deliveredAt: isoIfSet(task.deliveredAtMs),
    latenessMs: task.latenessMs,
    lastError: task.lastError,
    cancelledAt: isoIfSet(task.cancelledAtMs),
    history: (task.history ?? []).map(({ atMs, ...attempt }) => ({ ...attempt, at: iso(atMs) })),
    rescheduledFrom: task.rescheduledFrom,
    rescheduledTo: task.rescheduledTo,
  };
}

// The same answer for an unknown id and another tenant's task: no oracle for what others have.
const notFound = (id: string) => problemResponse(problem(404, 'not-found', `No task has the id "${id}".`));

/** The status and body of one schedule outcome, as both the single and the batch route report it. */
function outcomeResult(outcome: SubmitOutcome, path: string) {
  switch (outcome.kind) {
    case 'created':
      return { status: 201 as const, task: createdView(outcome.task) };
    case 'replayed':
      // The answer the create gave, whatever became of the task since (delivered, cancelled).
      return { status: 200 as const, task: createdView({ ...outcome.task, status: 'PENDING' }) };
    case 'conflict':
      return {
        status: 409 as const,
        problem: problem(
          409,
          'idempotency-conflict',
          `This idempotency key was already used for a different request, which created task ${outcome.taskId}. Use a new key for a new task.`,
          [{ path, message: `was already used for a different request (task ${outcome.taskId})` }],
        ),
      };
    case 'expired':
      return {
        status: 409 as const,
        problem: problem(
          409,
          'idempotency-key-spent',
          `This idempotency key made task ${outcome.taskId}, which has finished and is no longer kept. Use a new key for a new task.`,
          [{ path, message: `belongs to task ${outcome.taskId}, which has finished and expired` }],
        ),
      };
  }
}

async function submit(ports: ApiPorts, tenant: Tenant, requests: readonly NewTask[]): Promise<SubmitOutcome[]> {
  const result = await submitTasks(ports, tenant.id, requests);
  ports.onScheduled?.(result);
  return result.outcomes;
}

/**
 * A task request checked against the contract and the clock, completed by its bizType's
 * settings, and its target (its own or the bizType's default) checked against the tenant's
 * and deployment's target rules.
 */
async function validTask(
  ports: ApiPorts,
  tenant: Tenant,
  body: unknown,
  nowMs: number,
  targetRules: TargetRules,
  pathPrefix: ReadonlyArray<PropertyKey> = [],
): Promise<Parsed<NewTask>> {
  const draft = parseTaskRequest(body, {
    allowInsecureTargets: ports.allowInsecureTargets,
    nowMs,
    horizonDays: ports.horizonDays,
    pathPrefix,
  });
  if (!draft.ok) return draft;
  const { bizType } = draft.value;
  const settings = bizType === undefined ? undefined : await ports.bizTypes.settings(tenant.id, bizType);
  const parsed = applyBizType(draft.value, settings, pathPrefix);
  if (!parsed.ok) return parsed;
  const refusal = await targetProblem(parsed.value.target, tenant, targetRules, formatPath([...pathPrefix, '']));
  if (refusal && draft.value.target === undefined) {
    // The caller sent no target: say it is the bizType's default that no longer passes, and where to fix it.
    const message = `(the default target of bizType "${bizType}") ${refusal.message}; change it with PUT /v1/biz-types/{bizType}`;
    return { ok: false, errors: [{ ...refusal, message }] };
  }
  return refusal ? { ok: false, errors: [refusal] } : parsed;
}

/** 201 with the new task; 200 with the original task for a retry with the same idempotency key; 409 for a reused key. */
async function createTask(ports: ApiPorts, tenant: Tenant, event: APIGatewayProxyEventV2): Promise<HttpResult> {
  const body = readJsonBody(event);
  if (!body.ok) return problemResponse(body.problem);
  const parsed = await validTask(ports, tenant, body.value, ports.clock.now(), ports.targetRules);
  if (!parsed.ok) return problemResponse(validationProblem(parsed.errors));
  const [outcome] = await submit(ports, tenant, [parsed.value]);
  if (!outcome) throw new Error('submitTasks returned no outcome for one request');
  const result = outcomeResult(outcome, 'idempotencyKey');
  if (result.status === 409) return problemResponse(result.problem);
  return jsonResponse(result.status, result.task);
}

/**
 * Each item gets its own result: created (201), replayed (200), reused key (409) or
 * invalid (400, nothing written). The response is 201 when every item was created or
 * replayed, 207 when any was rejected.
 */
async function createTaskBatch(ports: ApiPorts, tenant: Tenant, event: APIGatewayProxyEventV2): Promise<HttpResult> {
  const body = readJsonBody(event);
  if (!body.ok) return problemResponse(body.problem);
  const envelope = batchRequestSchema.safeParse(body.value);
  if (!envelope.success) return problemResponse(validationProblem(issuesToErrors(envelope.error.issues)));
  const nowMs = ports.clock.now();
  const valid: Array<{ index: number; request: NewTask }> = [];
  const invalid: Array<{ index: number; errors: FieldError[] }> = [];
  const targetRules = resolvingEachHostOnce(ports.targetRules);
  const checked = await Promise.all(
    envelope.data.tasks.map((item, index) => validTask(ports, tenant, item, nowMs, targetRules, ['tasks', index])),
  );
  checked.forEach((parsed, index) => {
    if (parsed.ok) valid.push({ index, request: parsed.value });
    else invalid.push({ index, errors: parsed.errors });
  });
  const outcomes =
    valid.length > 0
      ? await submit(
          ports,
          tenant,
          valid.map((item) => item.request),
        )
      : [];
  const results: BatchItemResult[] = [
    ...valid.map((item, position) => ({
      index: item.index,
      ...outcomeResult(outcomes[position] as SubmitOutcome, `tasks[${item.index}].idempotencyKey`),
    })),
    ...invalid.map((item) => ({ index: item.index, status: 400 as const, problem: validationProblem(item.errors) })),
  ].sort((a, b) => a.index - b.index);
  const rejected = results.filter((result) => result.status >= 400).length;
  return jsonResponse(rejected === 0 ? 201 : 207, {
    created: results.length - rejected,
    rejected,
    results,
  } satisfies BatchResult);
}

async function readTask(ports: ApiPorts, tenant: Tenant, id: string): Promise<HttpResult> {
  const task = await getTask(ports, tenant.id, id);
  return task ? jsonResponse(200, taskView(task)) : notFound(id);
}

/** GET /v1/tasks: one page of the tenant's tasks by bizId or bizType; a cursor from anywhere else is a 400. */
async function listRoute(ports: ApiPorts, tenant: Tenant, event: APIGatewayProxyEventV2): Promise<HttpResult> {
  const parsed = listQuerySchema.safeParse(event.queryStringParameters ?? {});
  if (!parsed.success) return problemResponse(validationProblem(issuesToErrors(parsed.error.issues)));
  const { cursor, limit = LIST_LIMITS.defaultLimit, ...filters } = parsed.data;
  const after = cursor === undefined ? undefined : decodeCursor(cursor, filters, ports.shardCount);
  if (cursor !== undefined && !after) {
    return problemResponse(
      validationProblem([
        {
          path: 'cursor',
          message:
            'is not a cursor this listing issued; pass nextCursor back unchanged with the same bizId or bizType, or start again without it',
        },
      ]),
    );
  }
  const page = await listTasks(ports, tenant.id, { ...filters, limit, ...(after && { after }) });
  return jsonResponse(200, {
    tasks: page.tasks.map(taskView),
    ...(page.next && { nextCursor: encodeCursor(page.next) }),
  } satisfies TaskPage);
}

const RESCHEDULE_REFUSALS = {
  'already-final': 'The task is no longer PENDING, so it cannot be rescheduled; submit a new task instead.',
  'in-delivery':
    'A delivery attempt is in progress, so the task may be delivered. Retry in a few minutes: the reschedule succeeds if the attempt failed.',
  'not-in-effect':
    'This task replaces another through a reschedule that has not taken effect yet; retry in a few seconds.',
  contended: 'The task kept changing while it was being rescheduled; retry the request.',
  'too-late': `The task is due in less than ${UNLEASED_CANCEL_MARGIN_MS / 1000} s (or is already due) and has not been attempted yet: its first attempt may be under way, so it can no longer be rescheduled. It will be delivered at its due time.`,
  occurrence:
    "The task is an occurrence of a schedule, which fires at the schedule's times: moving one occurrence would leave the schedule behind. Change the schedule instead, or cancel this occurrence with DELETE (the schedule goes on with its next one).",
} as const;

/** PATCH /v1/tasks/{id}: 200 with the task that replaces this one, the same for a repeat of the request. */
async function rescheduleRoute(
  ports: ApiPorts,
  tenant: Tenant,
  event: APIGatewayProxyEventV2,
  id: string,
): Promise<HttpResult> {
  const body = readJsonBody(event);
  if (!body.ok) return problemResponse(body.problem);
  const parsed = parseRescheduleRequest(body.value, { nowMs: ports.clock.now(), horizonDays: ports.horizonDays });
  if (!parsed.ok) return problemResponse(validationProblem(parsed.errors));
  const outcome = await rescheduleTask(ports, tenant.id, id, parsed.value);
  switch (outcome.kind) {
    case 'rescheduled':
      return jsonResponse(200, taskView(outcome.task));
    case 'not-found':
      return notFound(id);
    case 'refused': {
      const movedOn = outcome.rescheduledTo
        ? ` It was rescheduled to task ${outcome.rescheduledTo}; reschedule that one.`
        : outcome.scheduleId
          ? ` Its schedule: PATCH /v1/schedules/${outcome.scheduleId}.`
          : '';
      return problemResponse(
        problem(409, `reschedule-${outcome.reason}`, `${RESCHEDULE_REFUSALS[outcome.reason]}${movedOn}`),
      );
    }
  }
}

async function deleteTask(ports: ApiPorts, tenant: Tenant, id: string): Promise<HttpResult> {
  const outcome = await cancelTaskKeepingSchedule(ports, tenant.id, id);
  if (outcome.cancelled) {
    const task = await getTask(ports, tenant.id, id);
    return jsonResponse(200, task ? taskView(task) : { id, status: 'CANCELLED' });
  }
  switch (outcome.reason) {
    case 'not-found':
      return notFound(id);
    case 'already-final':
      return problemResponse(
        problem(409, 'already-final', `The task is already ${outcome.status}; there is nothing left to cancel.`),
      );
    case 'in-delivery':
      return problemResponse(
        problem(
          409,
          'in-delivery',
          'A delivery attempt is in progress, or one was cut short and its outcome is not known yet; the task may be delivered. Retry the cancel in a few minutes: it succeeds if the attempt failed.',
        ),
      );
    case 'too-late':
      return problemResponse(
        problem(
          409,
          'too-late',
          `The task is due in less than ${UNLEASED_CANCEL_MARGIN_MS / 1000} s (or is already due) and has not been attempted yet: its first attempt may be under way, so it is no longer cancelled. Cancel at least ${UNLEASED_CANCEL_MARGIN_MS / 1000} s before dueAt. Should the attempt fail, the task can be cancelled before its retry.`,
        ),
      );
  }
}

const UNAUTHENTICATED = {
  missing:
    'Send the header "Authorization: Bearer <api key>"; `timer tenants create` makes a tenant and its first key.',
  invalid:
    'The API key is not valid: it is malformed, unknown or revoked. Check it, or make a new one with `timer tenants create-key`.',
} as const;

/**
 * Serves one request, from API Gateway's HTTP API or from the api function's URL; the routes are
 * the same list the stack and the local gateway use. The route is resolved first, so a path that
 * is none costs no key lookup, as API Gateway answers it before invoking anything. Every route
 * needs a tenant's API key, and counts against the tenant's request rate.
 */
export async function route(ports: ApiPorts, received: APIGatewayProxyEventV2): Promise<HttpResult> {
  const routed = routeOf(received);
  if (!routed.ok) return routed.response;
  const { routeKey, event } = routed;
  const caller = await authenticate(ports.tenants, event.headers?.authorization);
  if (!caller.ok) {
    return problemResponse(problem(401, 'unauthenticated', UNAUTHENTICATED[caller.reason]), {
      'www-authenticate': 'Bearer',
    });
  }
  const { tenant } = caller;
  if (
    !(await ports.requestCounter.admit({ tenantId: tenant.id }, secondOf(ports.clock.now()), tenant.rateLimitPerSecond))
  ) {
    return problemResponse(
      problem(
        429,
        'rate-limited',
        `This tenant may make ${tenant.rateLimitPerSecond} requests a second. Retry after a second, and send up to 100 tasks per request with POST /v1/tasks/batch.`,
      ),
      { 'retry-after': '1' },
    );
  }
  const id = event.pathParameters?.id ?? '';
  switch (routeKey) {
    case 'POST /v1/tasks':
      return createTask(ports, tenant, event);
    case 'POST /v1/tasks/batch':
      return createTaskBatch(ports, tenant, event);
    case 'GET /v1/tasks':
      return listRoute(ports, tenant, event);
    case 'GET /v1/tasks/{id}':
      return readTask(ports, tenant, id);
    case 'PATCH /v1/tasks/{id}':
      return rescheduleRoute(ports, tenant, event, id);
    case 'DELETE /v1/tasks/{id}':
      return deleteTask(ports, tenant, id);
    case 'PUT /v1/biz-types/{bizType}':
    case 'GET /v1/biz-types/{bizType}':
    case 'GET /v1/biz-types':
    case 'DELETE /v1/biz-types/{bizType}':
      return bizTypeRoute(ports, tenant, routeKey, event);
    case 'POST /v1/schedules':
    case 'GET /v1/schedules':
    case 'GET /v1/schedules/{id}':
    case 'PATCH /v1/schedules/{id}':
    case 'DELETE /v1/schedules/{id}':
      return scheduleRoute(ports, tenant, routeKey, event);
    case 'GET /v1/openapi.json':
      return jsonResponse(200, openApiDocument);
  }
}
