/**
 * The local console's routes: its page, and the JSON the page polls, read straight from
 * dynalite and fauxqs. They live beside the API's routes in local mode only, with no API
 * key, and show every tenant's tasks.
 */
import { readFile } from 'node:fs/promises';

import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { transform } from 'esbuild';

import { scanPartitions } from '../../../functions/adapters/dynamo/dynamo-helpers.js';
import {
  scheduleFromItem,
  type ScheduleItem,
  SCHEDULES_PARTITION_PREFIX,
} from '../../../functions/adapters/dynamo/table-schema.js';
import { DynamoTaskStore, scanReceipts, scanTasks } from '../../../functions/adapters/dynamo/task-store.js';
import { peekMessages, queueDepth } from '../../../functions/adapters/sqs-queues.js';
import type { TimerSettings } from '../../../functions/contract/topology.js';
import { parseTaskId, taskAddress } from '../../../functions/core/kernel/ids.js';
import { asReceiptsShow } from '../../../functions/core/kernel/receipts.js';
import { decodeDeliveryBody } from '../../../functions/core/kernel/task-kernel.js';
import type { LocalResponse, LocalRoute } from '../http-gateway.js';
import {
  LOCAL_CONSOLE_DLQ_PATH,
  LOCAL_CONSOLE_PATH,
  LOCAL_CONSOLE_SCHEDULES_PATH,
  LOCAL_CONSOLE_SCRIPT_PATH,
  LOCAL_CONSOLE_STYLE_PATH,
  LOCAL_CONSOLE_TASKS_PATH,
  LOCAL_REDRIVE_PATH,
} from '../paths.js';
import { schedulesView, tasksView } from './views.js';
import type { ConsoleDeadLetter, ConsoleDlqView, ConsoleSchedulesView, ConsoleTasksView } from './wire.js';

/**
 * Table items one read of the console looks at (about half a second of dynalite's time at
 * this many). A larger table is shown in part rather than slowing the timer it runs beside.
 */
export const MAX_ITEMS_READ = 5000;

/** The most of the process's time the console's table reads may take, however many pages poll how often. */
const MAX_SHARE_OF_TIME = 0.2;

/** The page runs only its own script and style and talks only to this server, whatever a task's strings hold. */
const PAGE_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface ConsoleSources {
  readonly dynamo: DynamoDBDocumentClient;
  readonly sqs: SQSClient;
  readonly tableName: string;
  readonly deliveryDlqUrl: string;
  readonly settings: TimerSettings;
}

/**
 * `read`, answered from its last result until the read's own duration is at most `maxShare`
 * of the time since it started; callers that come while a read runs share it.
 */
export function sparingly<T>(read: () => Promise<T>, maxShare: number, now: () => number = Date.now): () => Promise<T> {
  let last: { result: T; freshUntilMs: number } | undefined;
  let running: Promise<T> | undefined;
  return () => {
    if (last && now() < last.freshUntilMs) return Promise.resolve(last.result);
    running ??= (async () => {
      const startedAtMs = now();
      try {
        const result = await read();
        last = { result, freshUntilMs: startedAtMs + (now() - startedAtMs) / maxShare };
        return result;
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
}

const pageFile = (name: string) => readFile(new URL(`./page/${name}`, import.meta.url), 'utf8');

/** The page with the paths it needs filled in, so they are named once, in paths.ts. */
async function consolePage(): Promise<string> {
  const paths: Record<string, string> = {
    scriptPath: LOCAL_CONSOLE_SCRIPT_PATH,
    stylePath: LOCAL_CONSOLE_STYLE_PATH,
    tasksPath: LOCAL_CONSOLE_TASKS_PATH,
    schedulesPath: LOCAL_CONSOLE_SCHEDULES_PATH,
    dlqPath: LOCAL_CONSOLE_DLQ_PATH,
    redrivePath: LOCAL_REDRIVE_PATH,
  };
  return (await pageFile('console.html')).replaceAll(/\{\{(\w+)\}\}/g, (placeholder, name: string) => {
    const path = paths[name];
    if (path === undefined) throw new Error(`console.html names ${placeholder}, which no local path fills`);
    return path;
  });
}

/** The page's script is TypeScript, type-checked with the DOM's types; the browser gets it with the types stripped. */
async function consoleScript(): Promise<string> {
  const { code } = await transform(await pageFile('console.ts'), { loader: 'ts', format: 'esm', target: 'es2022' });
  return code;
}

const readOnly =
  (read: () => Promise<LocalResponse>): LocalRoute =>
  async (method) =>
    method === 'GET' ? read() : { status: 405, body: { message: 'only GET' } };

const text = (contentType: string, content: string, headers: Record<string, string> = {}): LocalRoute =>
  readOnly(async () => ({ status: 200, headers: { 'content-type': contentType, ...headers }, text: content }));

/** The console's page, its assets and the JSON it reads, by path. */
export async function consoleRoutes(sources: ConsoleSources): Promise<Record<string, LocalRoute>> {
  const [page, script, style] = await Promise.all([consolePage(), consoleScript(), pageFile('console.css')]);
  const taskStore = new DynamoTaskStore({
    client: sources.dynamo,
    tableName: sources.tableName,
    bucketCount: sources.settings.bucketCount,
  });

  // dynalite answers in this process, so every item the console reads is time the timer's handlers wait.
  const readTasks = sparingly(async (): Promise<ConsoleTasksView> => {
    const table = { client: sources.dynamo, tableName: sources.tableName };
    const [{ tasks, itemsRead, complete }, receipted] = await Promise.all([
      scanTasks(table, MAX_ITEMS_READ),
      scanReceipts(table, MAX_ITEMS_READ),
    ]);
    const nowMs = Date.now();
    // As GET shows them: a task delivered by a receipt is DELIVERED, though its item stays PENDING.
    const shown = tasks.map((task) => asReceiptsShow(task, receipted, nowMs));
    return tasksView(shown, nowMs, { itemsRead, complete });
  }, MAX_SHARE_OF_TIME);

  const readSchedules = sparingly(async (): Promise<ConsoleSchedulesView> => {
    const table = { client: sources.dynamo, tableName: sources.tableName };
    const { items } = await scanPartitions<ScheduleItem>(table, SCHEDULES_PARTITION_PREFIX, MAX_ITEMS_READ);
    return schedulesView(items.map(scheduleFromItem), Date.now());
  }, MAX_SHARE_OF_TIME);

  const describeLetter = async (body: string): Promise<ConsoleDeadLetter> => {
    // The callback's dead letters carry the attempt and the error; a message SQS moved
    // there after too many receives is a plain delivery message, with only the id.
    const letter = decodeDeliveryBody(body) ?? { id: '', redriven: false };
    const location = parseTaskId(letter.id, sources.settings.shardCount);
    const task = location && (await taskStore.get(taskAddress(letter.id, location, sources.settings.bucketCount)));
    return {
      taskId: letter.id,
      ...(letter.attempt !== undefined && { attempt: letter.attempt }),
      ...(letter.error !== undefined && { error: letter.error }),
      ...(task && { tenantId: task.tenantId }),
      ...(task?.bizType !== undefined && { bizType: task.bizType }),
      ...(task?.bizId !== undefined && { bizId: task.bizId }),
    };
  };

  const readDlq = async (): Promise<ConsoleDlqView> => {
    const [messages, bodies] = await Promise.all([
      queueDepth(sources.sqs, sources.deliveryDlqUrl),
      peekMessages(sources.sqs, sources.deliveryDlqUrl),
    ]);
    return { messages, letters: await Promise.all(bodies.map(describeLetter)) };
  };

  return {
    [LOCAL_CONSOLE_PATH]: text('text/html; charset=utf-8', page, { 'content-security-policy': PAGE_SECURITY_POLICY }),
    [LOCAL_CONSOLE_SCRIPT_PATH]: text('text/javascript; charset=utf-8', script),
    [LOCAL_CONSOLE_STYLE_PATH]: text('text/css; charset=utf-8', style),
    [LOCAL_CONSOLE_TASKS_PATH]: readOnly(async () => ({ status: 200, body: await readTasks() })),
    [LOCAL_CONSOLE_DLQ_PATH]: readOnly(async () => ({ status: 200, body: await readDlq() })),
    [LOCAL_CONSOLE_SCHEDULES_PATH]: readOnly(async () => ({ status: 200, body: await readSchedules() })),
  };
}
