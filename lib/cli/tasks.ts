/** `timer schedule`, `get`, `cancel` and `list`: tasks through the HTTP API, as the calling tenant (and what `timer schedules` shares with them). */
import { parseIsoInstant, TASK_STATUSES } from '../../functions/core/submit/schemas.js';
import { LIST_LIMITS } from '../../functions/core/submit/task-listing.js';
import {
  type ApiProblem,
  type CreatedTask,
  type TaskDetails,
  type TaskListQuery,
  type TaskRequest,
  TimerApiError,
  type TimerClient,
} from '../client/client.js';
import { type Command, command, CommandFailed, COMMON_OPTIONS, UsageError } from './command.js';
import { API_OPTIONS, type ApiConnection, connectToApi } from './connect.js';
import { type CliIo, fields, table } from './io.js';

export const CLIENT_OPTIONS = { ...API_OPTIONS, ...COMMON_OPTIONS } as const;
const TASK_ID_ARGUMENT = { name: 'id', description: 'The task id, as `timer schedule` printed it' } as const;

/** The flag each field of a task request comes from, so the API's complaints point at what to retype. */
const FLAG_OF_FIELD: Readonly<Record<string, string>> = {
  delaySeconds: '--in',
  dueAt: '--at',
  window: '--window',
  'window.seconds': '--window',
  'target.url': '--url',
  'target.queueUrl': '--sqs',
  'target.eventBusName': '--event-bus',
  payload: '--payload',
  bizType: '--biz-type',
  bizId: '--biz-id',
  idempotencyKey: '--idempotency-key',
  status: '--status',
  limit: '--limit',
  cron: '--cron',
  rate: '--rate',
  timezone: '--timezone',
  startAt: '--start-at',
  endAt: '--end-at',
  catchUp: '--catch-up',
  cursor: '--cursor',
};

function problemText(problem: ApiProblem): string {
  const lines = [`${problem.title}: ${problem.detail}`];
  for (const error of problem.errors ?? []) {
    const flag = FLAG_OF_FIELD[error.path];
    lines.push(`  ${error.path}${flag ? ` (${flag})` : ''}: ${error.message}`);
  }
  return lines.join('\n');
}

/** Runs an API call, turning its refusals and an unreachable API into messages that say what to do. */
export async function callApi<T>(
  options: Parameters<typeof connectToApi>[0],
  io: CliIo,
  use: (client: TimerClient, connection: ApiConnection) => Promise<T>,
): Promise<T> {
  const connection = await connectToApi(options, io);
  try {
    return await use(connection.client, connection);
  } catch (error) {
    if (error instanceof TimerApiError) {
      throw new CommandFailed(
        error.problem ? problemText(error.problem) : `the API at ${connection.baseUrl} answered ${error.status}`,
      );
    }
    if (error instanceof TypeError && error.message === 'fetch failed') {
      const reason = error.cause instanceof Error ? error.cause.message : String(error.cause);
      throw new CommandFailed(
        `could not reach the timer API at ${connection.baseUrl} (${reason}). Start local mode with \`npm start\`, or point --api-url or TIMER_URL at a deployment's ApiUrl`,
      );
    }
    throw error;
  }
}

const DURATION = /^(\d+)(s|m|h|d)$/;
const SECONDS_PER_UNIT = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

function secondsOf(flag: '--in' | '--window', text: string): number {
  const match = DURATION.exec(text);
  if (!match)
    throw new UsageError(`${flag} must be a whole number with a unit, such as 30s, 5m, 2h or 1d (got "${text}")`);
  return Number(match[1]) * SECONDS_PER_UNIT[match[2] as keyof typeof SECONDS_PER_UNIT];
}

/** The window as the API takes it; its range (1 s to 15 min) is the API's to check, and its refusal names --window. */
export function windowOf(text: string | undefined): Pick<TaskRequest, 'window'> {
  return text === undefined ? {} : { window: { seconds: secondsOf('--window', text) } };
}

function whenOf(options: { readonly in?: string; readonly at?: string }): Pick<TaskRequest, 'delaySeconds' | 'dueAt'> {
  if ((options.in === undefined) === (options.at === undefined)) {
    throw new UsageError('say when: give --in (such as 30s, 5m, 2h) or --at (an ISO-8601 time), exactly one of them');
  }
  if (options.in !== undefined) return { delaySeconds: secondsOf('--in', options.in) };
  const at = options.at ?? '';
  if (parseIsoInstant(at) === undefined) {
    throw new UsageError(
      `--at must be an ISO-8601 date-time with a time zone, such as 2030-01-31T09:30:00Z (got "${at}")`,
    );
  }
  return { dueAt: at };
}

export function targetOf(options: {
  readonly url?: string;
  readonly sqs?: string;
  readonly 'event-bus'?: string;
}): NonNullable<TaskRequest['target']> {
  const given = [options.url, options.sqs, options['event-bus']].filter((value) => value !== undefined);
  if (given.length !== 1) {
    throw new UsageError(
      'say where to deliver: give --url (a webhook), --sqs (a queue URL) or --event-bus (a bus name), exactly one of them',
    );
  }
  if (options.url !== undefined) return { type: 'http', url: options.url };
  if (options.sqs !== undefined) return { type: 'sqs', queueUrl: options.sqs };
  return { type: 'eventbridge', eventBusName: options['event-bus'] ?? '' };
}

export function payloadOf(text: string | undefined): { payload?: unknown } {
  if (text === undefined) return {};
  try {
    return { payload: JSON.parse(text) as unknown };
  } catch (error) {
    throw new UsageError(
      `--payload must be JSON, such as '{"orderId":42}' (${error instanceof Error ? error.message : error})`,
    );
  }
}

export function targetText(target: TaskDetails['target']): string {
  switch (target.type) {
    case 'http':
      return `webhook ${target.url}`;
    case 'sqs':
      return `SQS ${target.queueUrl}`;
    case 'eventbridge':
      return `EventBridge bus ${target.eventBusName}`;
  }
}

/** When a task with a window fires, and its window; nothing for a task that fires at its due time. */
function firesFields(task: CreatedTask & Pick<TaskDetails, 'window'>): Array<readonly [string, string | undefined]> {
  return [
    ['Fires', task.firesAt === task.dueAt ? undefined : task.firesAt],
    ['Window', task.window === undefined ? undefined : `${task.window.seconds} s`],
  ];
}

function taskText(task: TaskDetails): string {
  return fields([
    ['Id', task.id],
    ['Status', task.status],
    ['Due', task.dueAt],
    ...firesFields(task),
    ['Created', task.createdAt],
    ['Target', targetText(task.target)],
    ['Payload', task.payload === undefined ? undefined : JSON.stringify(task.payload)],
    ['Biz type', task.bizType],
    ['Biz id', task.bizId],
    ['Idempotency key', task.idempotencyKey],
    ['Attempts', String(task.attempts)],
    ['Delivered', task.deliveredAt],
    ['Lateness', task.latenessMs === undefined ? undefined : `${task.latenessMs} ms`],
    ['Last error', task.lastError],
    ['Cancelled', task.cancelledAt],
  ]);
}

const schedule = command({
  name: 'schedule',
  summary: 'Schedule a webhook, SQS message or EventBridge event',
  usage:
    '(--in 30s|5m|2h | --at TIME) [--window 60s|15m] (--url URL | --sqs QUEUE_URL | --event-bus NAME) [--payload JSON] [--biz-type T] [--biz-id I] [--idempotency-key K]',
  details:
    'A retried schedule with the same --idempotency-key returns the first task instead of making a second. With --window the task fires at a time the service plans within that long after its due time, never before it, so that many tasks due at once are spread out.',
  arguments: [],
  options: {
    in: { type: 'string', placeholder: 'DURATION', description: 'Fire after this long: 30s, 5m, 2h or 1d' },
    at: {
      type: 'string',
      placeholder: 'TIME',
      description: 'Fire at this ISO-8601 time with a zone, such as 2030-01-31T09:30:00Z',
    },
    window: {
      type: 'string',
      placeholder: 'DURATION',
      description: 'Fire at a planned time up to this long after the due time (1s to 15m), to spread a busy second',
    },
    url: { type: 'string', placeholder: 'URL', description: 'POST a signed webhook to this URL' },
    sqs: { type: 'string', placeholder: 'QUEUE_URL', description: 'Send an SQS message to this queue' },
    'event-bus': {
      type: 'string',
      placeholder: 'NAME',
      description: 'Put an EventBridge event on this bus (name or ARN)',
    },
    payload: { type: 'string', placeholder: 'JSON', description: 'The JSON to deliver, at most 64 KiB' },
    'biz-type': { type: 'string', placeholder: 'T', description: 'Your kind of task, sent back in the notification' },
    'biz-id': { type: 'string', placeholder: 'I', description: 'Your id for it, such as an order id' },
    'idempotency-key': {
      type: 'string',
      placeholder: 'K',
      description: 'Makes retries safe: the same key returns the same task',
    },
    ...CLIENT_OPTIONS,
  },
  async run(call) {
    const { options } = call;
    const request: TaskRequest = {
      ...whenOf(options),
      ...windowOf(options.window),
      target: targetOf(options),
      ...payloadOf(options.payload),
      ...(options['biz-type'] !== undefined && { bizType: options['biz-type'] }),
      ...(options['biz-id'] !== undefined && { bizId: options['biz-id'] }),
      ...(options['idempotency-key'] !== undefined && { idempotencyKey: options['idempotency-key'] }),
    };
    const task = await callApi(options, call.io, (client) => client.schedule(request));
    call.output(
      task,
      [
        `Scheduled task ${task.id}.`,
        fields([
          ['Status', task.status],
          ['Due', task.dueAt],
          ...firesFields({ ...task, window: request.window }),
          ['Created', task.createdAt],
        ]),
      ].join('\n'),
    );
  },
});

const get = command({
  name: 'get',
  summary: 'Show a task: its status, target and delivery facts',
  usage: '<id>',
  arguments: [TASK_ID_ARGUMENT],
  options: CLIENT_OPTIONS,
  async run(call) {
    const { id } = call.args;
    const task = await callApi(call.options, call.io, async (client, connection) => {
      const found = await client.get(id);
      if (!found) throw new CommandFailed(`tenant "${connection.tenantId}" has no task with the id "${id}"`);
      return found;
    });
    call.output(task, taskText(task));
  },
});

const cancel = command({
  name: 'cancel',
  summary: 'Cancel a task that has not been delivered',
  usage: '<id>',
  arguments: [TASK_ID_ARGUMENT],
  options: CLIENT_OPTIONS,
  async run(call) {
    const { id } = call.args;
    const task = await callApi(call.options, call.io, (client) => client.cancel(id));
    call.output(task, [`Cancelled task ${task.id}.`, taskText(task)].join('\n'));
  },
});

const isTaskStatus = (text: string): text is (typeof TASK_STATUSES)[number] =>
  (TASK_STATUSES as readonly string[]).includes(text);

function listQueryOf(options: {
  readonly 'biz-id'?: string;
  readonly 'biz-type'?: string;
  readonly status?: string;
  readonly limit?: string;
  readonly cursor?: string;
}): TaskListQuery {
  const { 'biz-id': bizId, 'biz-type': bizType, status, limit, cursor } = options;
  if (bizId === undefined && bizType === undefined) {
    throw new UsageError(
      'give --biz-id or --biz-type: tasks are listed by business id or type (tasks submitted with neither are not indexed)',
    );
  }
  if (status !== undefined && !isTaskStatus(status)) {
    throw new UsageError(`--status must be one of ${TASK_STATUSES.join(', ')} (got "${status}")`);
  }
  return {
    ...(bizId !== undefined && { bizId }),
    ...(bizType !== undefined && { bizType }),
    ...(status !== undefined && { status }),
    ...pagingOf({ limit, cursor }),
  };
}

/** A listing's --limit and --cursor, as the API takes them. */
export function pagingOf(options: { readonly limit?: string; readonly cursor?: string }): {
  limit?: number;
  cursor?: string;
} {
  const { limit, cursor } = options;
  if (limit !== undefined && !(/^\d+$/.test(limit) && Number(limit) >= 1 && Number(limit) <= LIST_LIMITS.maxLimit)) {
    throw new UsageError(`--limit must be a whole number from 1 to ${LIST_LIMITS.maxLimit} (got "${limit}")`);
  }
  return { ...(limit !== undefined && { limit: Number(limit) }), ...(cursor !== undefined && { cursor }) };
}

function tasksTable(tasks: readonly TaskDetails[]): string {
  return table(
    ['ID', 'STATUS', 'DUE', 'BIZ TYPE', 'BIZ ID', 'ATTEMPTS', 'TARGET'],
    tasks.map((task) => [
      task.id,
      task.status,
      task.dueAt,
      task.bizType ?? '-',
      task.bizId ?? '-',
      String(task.attempts),
      targetText(task.target),
    ]),
  );
}

const list = command({
  name: 'list',
  summary: "List the tenant's tasks of one business id or type, optionally of one status",
  usage: '(--biz-id I | --biz-type T) [--status S] [--limit N] [--cursor C | --all]',
  details: `Only tasks submitted with a bizId or bizType are listed. A page holds at most --limit tasks (default ${LIST_LIMITS.defaultLimit}), fewer when --status leaves some out. A task submitted a moment ago may not be listed yet.`,
  arguments: [],
  options: {
    'biz-id': { type: 'string', placeholder: 'I', description: 'Tasks with this bizId' },
    'biz-type': { type: 'string', placeholder: 'T', description: 'Tasks with this bizType' },
    status: { type: 'string', placeholder: 'S', description: `Only tasks in this status: ${TASK_STATUSES.join(', ')}` },
    limit: { type: 'string', placeholder: 'N', description: `Tasks a page, 1 to ${LIST_LIMITS.maxLimit}` },
    cursor: {
      type: 'string',
      placeholder: 'C',
      description: 'Continue where the previous page ended (it prints the cursor)',
    },
    all: { type: 'boolean', description: 'Every page, not only the first' },
    ...CLIENT_OPTIONS,
  },
  async run(call) {
    const query = listQueryOf(call.options);
    if (call.options.all && query.cursor !== undefined) throw new UsageError('give --cursor or --all, not both');
    const page = await callApi(call.options, call.io, async (client) => {
      if (!call.options.all) return client.list(query);
      const tasks: TaskDetails[] = [];
      for await (const task of client.tasks(query)) tasks.push(task);
      return { tasks };
    });
    const more =
      page.nextCursor === undefined
        ? []
        : ['', `More tasks: run the same command with --cursor ${page.nextCursor}, or with --all.`];
    const found =
      page.tasks.length > 0
        ? tasksTable(page.tasks)
        : more.length > 0
          ? 'No tasks on this page: --status left them out.'
          : 'No tasks match.';
    call.output(page, [found, ...more].join('\n'));
  },
});

export const TASK_COMMANDS: readonly Command[] = [schedule, get, cancel, list];
