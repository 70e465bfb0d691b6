/** `timer schedules create|get|list|pause|resume|delete`: recurring schedules through the HTTP API. */
import { LIST_LIMITS } from '../../functions/core/submit/task-listing.js';
import type { ScheduleList, ScheduleRequest, ScheduleView } from '../client/client.js';
import { type Command, command, CommandFailed, UsageError } from './command.js';
import { fields, table } from './io.js';
import { callApi, CLIENT_OPTIONS, pagingOf, payloadOf, targetOf, targetText, windowOf } from './tasks.js';

const ID_ARGUMENT = { name: 'id', description: 'The schedule id, as `timer schedules create` printed it' } as const;

function scheduleText(schedule: ScheduleView): string {
  return fields([
    ['Id', schedule.id],
    ['Cron', schedule.cron],
    ['Rate', schedule.rate],
    ['Time zone', schedule.timezone],
    ['Start', schedule.startAt],
    ['End', schedule.endAt],
    ['Target', targetText(schedule.target)],
    ['Payload', JSON.stringify(schedule.payload)],
    ['Biz type', schedule.bizType],
    ['Biz id', schedule.bizId],
    ['Catch up', schedule.catchUp],
    ['Window', schedule.window === undefined ? undefined : `${schedule.window.seconds} s`],
    ['Paused', schedule.paused ? 'yes' : 'no'],
    ['Next task', schedule.nextTaskId],
    ['Next', schedule.nextOccurrences.length > 0 ? schedule.nextOccurrences.join('\n') : '(none)'],
  ]);
}

const create = command({
  name: 'schedules create',
  summary: 'Create a recurring schedule: a cron expression or a rate',
  usage:
    '(--cron EXPR | --rate "5 minutes") [--timezone ZONE] [--start-at TIME] [--end-at TIME] (--url URL | --sqs QUEUE_URL | --event-bus NAME) [--payload JSON] [--biz-type T] [--biz-id I] [--catch-up fire-once|skip] [--window 60s|15m] [--idempotency-key K]',
  details:
    'Each occurrence is a task, delivered like any; its notification carries scheduleId and occurrence. Cron has 5 fields, or 6 with seconds first, read in --timezone (default UTC).',
  arguments: [],
  options: {
    cron: { type: 'string', placeholder: 'EXPR', description: 'A cron expression, such as "0 9 * * 1-5"' },
    rate: { type: 'string', placeholder: 'RATE', description: 'A fixed interval, such as "30 seconds" or "1 hour"' },
    timezone: { type: 'string', placeholder: 'ZONE', description: 'IANA time zone for cron, such as Europe/Berlin' },
    'start-at': { type: 'string', placeholder: 'TIME', description: 'No occurrence before this ISO-8601 time' },
    'end-at': { type: 'string', placeholder: 'TIME', description: 'No occurrence after this ISO-8601 time' },
    url: { type: 'string', placeholder: 'URL', description: 'POST a signed webhook to this URL' },
    sqs: { type: 'string', placeholder: 'QUEUE_URL', description: 'Send an SQS message to this queue' },
    'event-bus': { type: 'string', placeholder: 'NAME', description: 'Put an EventBridge event on this bus' },
    payload: { type: 'string', placeholder: 'JSON', description: 'The JSON every occurrence delivers' },
    'biz-type': { type: 'string', placeholder: 'T', description: 'Your kind of schedule, sent back each time' },
    'biz-id': { type: 'string', placeholder: 'I', description: 'Your id for it' },
    'catch-up': {
      type: 'string',
      placeholder: 'POLICY',
      description: 'After an outage: fire-once (default) fires one late occurrence, skip fires none',
    },
    window: {
      type: 'string',
      placeholder: 'DURATION',
      description: 'Fire each occurrence at a time planned up to this long after it (shorter than the interval)',
    },
    'idempotency-key': { type: 'string', placeholder: 'K', description: 'The same key returns the same schedule' },
    ...CLIENT_OPTIONS,
  },
  async run(call) {
    const { options } = call;
    if ((options.cron === undefined) === (options.rate === undefined)) {
      throw new UsageError('say when: give --cron or --rate, exactly one of them');
    }
    const catchUp = options['catch-up'];
    if (catchUp !== undefined && catchUp !== 'fire-once' && catchUp !== 'skip') {
      throw new UsageError(`--catch-up must be fire-once or skip (got "${catchUp}")`);
    }
    const request: ScheduleRequest = {
      ...(options.cron !== undefined && { cron: options.cron }),
      ...(options.rate !== undefined && { rate: options.rate }),
      ...(options.timezone !== undefined && { timezone: options.timezone }),
      ...(options['start-at'] !== undefined && { startAt: options['start-at'] }),
      ...(options['end-at'] !== undefined && { endAt: options['end-at'] }),
      target: targetOf(options),
      ...payloadOf(options.payload),
      ...(options['biz-type'] !== undefined && { bizType: options['biz-type'] }),
      ...(options['biz-id'] !== undefined && { bizId: options['biz-id'] }),
      ...(catchUp !== undefined && { catchUp }),
      ...windowOf(options.window),
      ...(options['idempotency-key'] !== undefined && { idempotencyKey: options['idempotency-key'] }),
    };
    const schedule = await callApi(options, call.io, (client) => client.createSchedule(request));
    call.output(schedule, [`Created schedule ${schedule.id}.`, scheduleText(schedule)].join('\n'));
  },
});

const get = command({
  name: 'schedules get',
  summary: 'Show a schedule and its next occurrences',
  usage: '<id>',
  arguments: [ID_ARGUMENT],
  options: CLIENT_OPTIONS,
  async run(call) {
    const { id } = call.args;
    const schedule = await callApi(call.options, call.io, async (client, connection) => {
      const found = await client.getSchedule(id);
      if (!found) throw new CommandFailed(`tenant "${connection.tenantId}" has no schedule with the id "${id}"`);
      return found;
    });
    call.output(schedule, scheduleText(schedule));
  },
});

const list = command({
  name: 'schedules list',
  summary: "List the tenant's schedules: all of them, or those of a business id, id prefix, type or state",
  usage: '[--biz-id I | --biz-id-prefix P] [--biz-type T] [--paused | --active] [--limit N] [--cursor C | --all]',
  details: `With no filter, every schedule of the tenant, in id order. A page holds at most --limit schedules (default ${LIST_LIMITS.defaultLimit}), fewer when the filters leave some out.`,
  arguments: [],
  options: {
    'biz-id': { type: 'string', placeholder: 'I', description: 'Schedules with this bizId' },
    'biz-id-prefix': { type: 'string', placeholder: 'P', description: 'Schedules whose bizId starts with this' },
    'biz-type': { type: 'string', placeholder: 'T', description: 'Schedules with this bizType' },
    paused: { type: 'boolean', description: 'Only paused schedules' },
    active: { type: 'boolean', description: 'Only schedules that are not paused' },
    limit: { type: 'string', placeholder: 'N', description: `Schedules a page, 1 to ${LIST_LIMITS.maxLimit}` },
    cursor: {
      type: 'string',
      placeholder: 'C',
      description: 'Continue where the previous page ended (it prints the cursor)',
    },
    all: { type: 'boolean', description: 'Every page, not only the first' },
    ...CLIENT_OPTIONS,
  },
  async run(call) {
    const { 'biz-id': bizId, 'biz-id-prefix': bizIdPrefix, 'biz-type': bizType, paused, active, all } = call.options;
    if (paused && active) throw new UsageError('give --paused or --active, not both');
    const paging = pagingOf(call.options);
    if (all && paging.cursor !== undefined) throw new UsageError('give --cursor or --all, not both');
    const query = {
      ...(bizId !== undefined && { bizId }),
      ...(bizIdPrefix !== undefined && { bizIdPrefix }),
      ...(bizType !== undefined && { bizType }),
      ...((paused || active) && { paused: paused === true }),
      ...paging,
    };
    const page: ScheduleList = await callApi(call.options, call.io, async (client) =>
      all ? { schedules: await client.listSchedules(query) } : client.schedulesPage(query),
    );
    const rows = page.schedules.map((schedule) => [
      schedule.id,
      schedule.cron ?? `rate ${schedule.rate}`,
      schedule.timezone,
      schedule.paused ? 'paused' : 'active',
      schedule.bizId ?? '-',
      schedule.nextOccurrences[0] ?? '-',
    ]);
    const more =
      page.nextCursor === undefined
        ? []
        : ['', `More schedules: run the same command with --cursor ${page.nextCursor}, or with --all.`];
    const found =
      rows.length > 0
        ? table(['ID', 'WHEN', 'ZONE', 'STATE', 'BIZ ID', 'NEXT'], rows)
        : more.length > 0
          ? 'No schedules on this page: the filters left them out.'
          : 'No schedules match.';
    call.output(page, [found, ...more].join('\n'));
  },
});

/** pause and resume: one PATCH each, the same shape. */
function pausing(name: 'pause' | 'resume', paused: boolean): Command {
  return command({
    name: `schedules ${name}`,
    summary: paused
      ? 'Pause a schedule: no occurrence fires until it is resumed'
      : 'Resume a paused schedule from its next occurrence after now',
    usage: '<id>',
    arguments: [ID_ARGUMENT],
    options: CLIENT_OPTIONS,
    async run(call) {
      const schedule = await callApi(call.options, call.io, (client) =>
        client.changeSchedule(call.args.id, { paused }),
      );
      call.output(
        schedule,
        [`${paused ? 'Paused' : 'Resumed'} schedule ${schedule.id}.`, scheduleText(schedule)].join('\n'),
      );
    },
  });
}

const remove = command({
  name: 'schedules delete',
  summary: 'Delete a schedule; its pending occurrence never fires',
  usage: '<id>',
  arguments: [ID_ARGUMENT],
  options: CLIENT_OPTIONS,
  async run(call) {
    const { id } = call.args;
    await callApi(call.options, call.io, async (client, connection) => {
      if (!(await client.deleteSchedule(id))) {
        throw new CommandFailed(`tenant "${connection.tenantId}" has no schedule with the id "${id}"`);
      }
    });
    call.output({ id, deleted: true }, `Deleted schedule ${id}.`);
  },
});

export const SCHEDULE_COMMANDS: readonly Command[] = [
  create,
  get,
  list,
  pausing('pause', true),
  pausing('resume', false),
  remove,
];
