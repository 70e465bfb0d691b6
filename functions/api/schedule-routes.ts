/**
 * POST, GET, PATCH and DELETE /v1/schedules: a tenant's recurring schedules. Parsing and
 * answering live here; what a schedule does is core/schedules/schedules.ts. Another tenant's schedule is
 * simply not there: every read is keyed by the caller.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

import type { ApiRouteKey } from '../contract/topology.js';
import type { ScheduleList, ScheduleView } from '../contract/wire.js';
import { decodeScheduleCursor, encodeScheduleCursor, listSchedules } from '../core/schedules/schedule-listing.js';
import {
  changeSchedule,
  createSchedule,
  deleteSchedule,
  isScheduleId,
  MAX_SCHEDULES_PER_TENANT,
  type Schedule,
  type ScheduleAdminPorts,
  upcomingOccurrences,
} from '../core/schedules/schedules.js';
import {
  issuesToErrors,
  scheduleChangeSchema,
  scheduleListQuerySchema,
  scheduleRequestSchema,
} from '../core/submit/schemas.js';
import { LIST_LIMITS } from '../core/submit/task-listing.js';
import { targetProblem, type TargetRules } from '../core/targets/target-rules.js';
import type { Tenant } from '../core/tenants/tenants.js';
import { type HttpResult, jsonResponse, problem, problemResponse, readJsonBody, validationProblem } from './http.js';

export type ScheduleRouteKey = Extract<ApiRouteKey, `${string} /v1/schedules${string}`>;

export type ScheduleRoutePorts = ScheduleAdminPorts & {
  readonly allowInsecureTargets: boolean;
  readonly targetRules: TargetRules;
};

const iso = (ms: number) => new Date(ms).toISOString();

/** The schedule as the API shows it, with its coming occurrences. */
export function scheduleView(schedule: Schedule): ScheduleView {
  return {
    id: schedule.id,
    ...(schedule.cron !== undefined && { cron: schedule.cron }),
    ...(schedule.rate !== undefined && { rate: schedule.rate }),
    timezone: schedule.timezone,
    ...(schedule.startAtMs !== undefined && { startAt: iso(schedule.startAtMs) }),
    ...(schedule.endAtMs !== undefined && { endAt: iso(schedule.endAtMs) }),
    target: schedule.target,
    payload: JSON.parse(schedule.payloadJson) as unknown,
    ...(schedule.bizType !== undefined && { bizType: schedule.bizType }),
    ...(schedule.bizId !== undefined && { bizId: schedule.bizId }),
    ...(schedule.idempotencyKey !== undefined && { idempotencyKey: schedule.idempotencyKey }),
    catchUp: schedule.catchUp,
    paused: schedule.paused,
    ...(schedule.window !== undefined && { window: schedule.window }),
    revision: schedule.revision,
    createdAt: iso(schedule.createdAtMs),
    updatedAt: iso(schedule.updatedAtMs),
    ...(schedule.next && { nextTaskId: schedule.next.taskId }),
    nextOccurrences: upcomingOccurrences(schedule).map(iso),
  };
}

const notFound = (id: string) => problemResponse(problem(404, 'not-found', `No schedule has the id "${id}".`));

/** The target passes the same rules a task's target does (tenant allow-list, egress, deployment allow-lists). */
async function refusedTarget(ports: ScheduleRoutePorts, tenant: Tenant, target: Parameters<typeof targetProblem>[0]) {
  const refusal = await targetProblem(target, tenant, ports.targetRules, '');
  return refusal && problemResponse(validationProblem([refusal]));
}

async function create(ports: ScheduleRoutePorts, tenant: Tenant, event: APIGatewayProxyEventV2): Promise<HttpResult> {
  const body = readJsonBody(event);
  if (!body.ok) return problemResponse(body.problem);
  const parsed = scheduleRequestSchema(ports).safeParse(body.value);
  if (!parsed.success) return problemResponse(validationProblem(issuesToErrors(parsed.error.issues)));
  const refused = await refusedTarget(ports, tenant, parsed.data.target);
  if (refused) return refused;
  const outcome = await createSchedule(ports, tenant.id, parsed.data);
  switch (outcome.kind) {
    case 'created':
      return jsonResponse(201, scheduleView(outcome.schedule));
    case 'replayed':
      return jsonResponse(200, scheduleView(outcome.schedule));
    case 'invalid':
      return problemResponse(validationProblem(outcome.errors));
    case 'conflict':
      return problemResponse(
        problem(
          409,
          'idempotency-conflict',
          `This idempotency key was already used for a different request, which created schedule ${outcome.scheduleId}. Use a new key for a new schedule.`,
          [
            {
              path: 'idempotencyKey',
              message: `was already used for a different request (schedule ${outcome.scheduleId})`,
            },
          ],
        ),
      );
    case 'limit':
      return problemResponse(
        problem(
          409,
          'schedule-limit',
          `This tenant has ${MAX_SCHEDULES_PER_TENANT} schedules, the most it may keep. Delete one first.`,
        ),
      );
  }
}

async function change(
  ports: ScheduleRoutePorts,
  tenant: Tenant,
  event: APIGatewayProxyEventV2,
  id: string,
): Promise<HttpResult> {
  const body = readJsonBody(event);
  if (!body.ok) return problemResponse(body.problem);
  const parsed = scheduleChangeSchema(ports).safeParse(body.value);
  if (!parsed.success) return problemResponse(validationProblem(issuesToErrors(parsed.error.issues)));
  if (parsed.data.target) {
    const refused = await refusedTarget(ports, tenant, parsed.data.target);
    if (refused) return refused;
  }
  const outcome = await changeSchedule(ports, tenant.id, id, parsed.data);
  switch (outcome.kind) {
    case 'changed':
      return jsonResponse(200, scheduleView(outcome.schedule));
    case 'not-found':
      return notFound(id);
    case 'invalid':
      return problemResponse(validationProblem(outcome.errors));
    case 'contended':
      return problemResponse(
        problem(409, 'schedule-contended', 'The schedule changed while this change was made; read it and retry.'),
      );
  }
}

/** GET /v1/schedules: one page of the tenant's schedules, all of them or those the filters keep; a cursor from anywhere else is a 400. */
async function list(ports: ScheduleRoutePorts, tenant: Tenant, event: APIGatewayProxyEventV2): Promise<HttpResult> {
  const parsed = scheduleListQuerySchema.safeParse(event.queryStringParameters ?? {});
  if (!parsed.success) return problemResponse(validationProblem(issuesToErrors(parsed.error.issues)));
  const { cursor, limit = LIST_LIMITS.defaultLimit, ...filter } = parsed.data;
  const afterId = cursor === undefined ? undefined : decodeScheduleCursor(cursor);
  if (cursor !== undefined && afterId === undefined) {
    return problemResponse(
      validationProblem([
        {
          path: 'cursor',
          message: 'is not a cursor this listing issued; pass nextCursor back unchanged, or start again without it',
        },
      ]),
    );
  }
  const page = await listSchedules(ports.scheduleStore, tenant.id, { ...filter, limit, ...(afterId && { afterId }) });
  return jsonResponse(200, {
    schedules: page.schedules.map(scheduleView),
    ...(page.nextAfterId !== undefined && { nextCursor: encodeScheduleCursor(page.nextAfterId) }),
  } satisfies ScheduleList);
}

/** Serves the schedule routes for an authenticated tenant. */
export async function scheduleRoute(
  ports: ScheduleRoutePorts,
  tenant: Tenant,
  routeKey: ScheduleRouteKey,
  event: APIGatewayProxyEventV2,
): Promise<HttpResult> {
  const id = event.pathParameters?.id ?? '';
  switch (routeKey) {
    case 'POST /v1/schedules':
      return create(ports, tenant, event);
    case 'GET /v1/schedules':
      return list(ports, tenant, event);
    case 'GET /v1/schedules/{id}': {
      const schedule = isScheduleId(id) ? await ports.scheduleStore.get(tenant.id, id) : undefined;
      return schedule ? jsonResponse(200, scheduleView(schedule)) : notFound(id);
    }
    case 'PATCH /v1/schedules/{id}':
      return change(ports, tenant, event, id);
    case 'DELETE /v1/schedules/{id}': {
      const deleted = await deleteSchedule(ports, tenant.id, id);
      return deleted ? jsonResponse(200, { id, deleted: true }) : notFound(id);
    }
  }
}
