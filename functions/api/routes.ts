import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { ApiRouteKey } from '../../lib/topology';
import type { SchedulePorts, TaskLookupPorts } from '../core/schedule';
import { cancelTask, getTask, scheduleTasks } from '../core/schedule';
import { batchRequestSchema, type FieldError, issuesToErrors, type NewTask, parseTaskRequest } from '../core/schemas';
import type { Task } from '../core/task';
import { type HttpResult, jsonResponse, problem, problemResponse, readJsonBody, validationProblem } from './http';

export type ApiPorts = SchedulePorts & TaskLookupPorts & { readonly allowInsecureTargets: boolean };

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** The 201 body of a created task. */
export function createdView(task: Task) {
  return { id: task.id, status: task.status, dueAt: iso(task.dueAtMs), createdAt: iso(task.createdAtMs) };
}

/** The GET body: the task, its status and its delivery facts. */
export function taskView(task: Task) {
  return {
    ...createdView(task),
    target: task.target,
    payload: JSON.parse(task.payloadJson) as unknown,
    bizType: task.bizType,
    bizId: task.bizId,
    idempotencyKey: task.idempotencyKey,
    attempts: task.attempts,
    deliveredAt: iso(task.deliveredAtMs),
    latenessMs: task.latenessMs,
    lastError: task.lastError,
    cancelledAt: iso(task.cancelledAtMs),
  };
}

const notFound = (id: string) => problemResponse(problem(404, 'not-found', `No task has the id "${id}".`));

async function createTask(ports: ApiPorts, event: APIGatewayProxyEventV2): Promise<HttpResult> {
  const body = readJsonBody(event);
  if (!body.ok) return problemResponse(body.problem);
  const parsed = parseTaskRequest(body.value, {
    allowInsecureTargets: ports.allowInsecureTargets,
    nowMs: ports.clock.now(),
  });
  if (!parsed.ok) return problemResponse(validationProblem(parsed.errors));
  const [task] = await scheduleTasks(ports, [parsed.value]);
  return jsonResponse(201, task && createdView(task));
}

type BatchItemResult =
  | { index: number; status: 201; task: ReturnType<typeof createdView> }
  | { index: number; status: 400; problem: ReturnType<typeof validationProblem> };

/**
 * Valid items are created and invalid ones rejected, each with its own result: 201
 * when every item was created, 207 when any was rejected (nothing is written for those).
 */
async function createTaskBatch(ports: ApiPorts, event: APIGatewayProxyEventV2): Promise<HttpResult> {
  const body = readJsonBody(event);
  if (!body.ok) return problemResponse(body.problem);
  const envelope = batchRequestSchema.safeParse(body.value);
  if (!envelope.success) return problemResponse(validationProblem(issuesToErrors(envelope.error.issues)));
  const nowMs = ports.clock.now();
  const valid: Array<{ index: number; request: NewTask }> = [];
  const rejected: Array<{ index: number; errors: FieldError[] }> = [];
  envelope.data.tasks.forEach((item, index) => {
    const parsed = parseTaskRequest(item, {
      allowInsecureTargets: ports.allowInsecureTargets,
      nowMs,
      pathPrefix: ['tasks', index],
    });
    if (parsed.ok) valid.push({ index, request: parsed.value });
    else rejected.push({ index, errors: parsed.errors });
  });
  const created =
    valid.length > 0
      ? await scheduleTasks(
          ports,
          valid.map((item) => item.request),
        )
      : [];
  const results: BatchItemResult[] = [
    ...valid.map((item, position) => ({
      index: item.index,
      status: 201 as const,
      task: createdView(created[position] as Task),
    })),
    ...rejected.map((item) => ({ index: item.index, status: 400 as const, problem: validationProblem(item.errors) })),
  ].sort((a, b) => a.index - b.index);
  return jsonResponse(rejected.length === 0 ? 201 : 207, { created: valid.length, rejected: rejected.length, results });
}

async function readTask(ports: ApiPorts, id: string): Promise<HttpResult> {
  const task = await getTask(ports, id);
  return task ? jsonResponse(200, taskView(task)) : notFound(id);
}

async function deleteTask(ports: ApiPorts, id: string): Promise<HttpResult> {
  const outcome = await cancelTask(ports, id);
  if (outcome.cancelled) {
    const task = await getTask(ports, id);
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
  }
}

/** Serves one API Gateway HTTP API request; the route key is the same list the stack and the local gateway use. */
export function route(ports: ApiPorts, event: APIGatewayProxyEventV2): Promise<HttpResult> {
  const id = event.pathParameters?.id ?? '';
  switch (event.routeKey as ApiRouteKey) {
    case 'POST /v1/tasks':
      return createTask(ports, event);
    case 'POST /v1/tasks/batch':
      return createTaskBatch(ports, event);
    case 'GET /v1/tasks/{id}':
      return readTask(ports, id);
    case 'DELETE /v1/tasks/{id}':
      return deleteTask(ports, id);
    default:
      return Promise.resolve(problemResponse(problem(404, 'no-route', `There is no route ${event.routeKey}.`)));
  }
}
