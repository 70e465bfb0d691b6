/**
 * A typed client for the timer's HTTP API v1. It uses the platform's fetch and node:crypto
 * and nothing else at run time; its types are the contract's (functions/contract/wire.ts),
 * which the API's own schemas are checked against, so they cannot drift.
 *
 *   const timer = new TimerClient({ baseUrl: 'https://abc.execute-api.eu-west-1.amazonaws.com', apiKey: process.env.TIMER_API_KEY });
 *   const task = await timer.schedule({ delaySeconds: 1800, target: { type: 'http', url: 'https://…' }, payload });
 *
 * `schedule()` batches like Nagle's algorithm: a call made while no submit is in flight goes at
 * once, alone; calls made while one is in flight wait for it and go together, up to 100 to a
 * batch request (a full hundred goes at once). A caller at a low rate sees no added latency; a
 * busy one pays the batch price, a hundredth of a request per task.
 */
import { randomUUID } from 'node:crypto';

import type {
  ApiProblem,
  BatchItemResult,
  BatchResult,
  BizTypeList,
  BizTypeSettings,
  BizTypeSettingsRequest,
  CreatedTask,
  RescheduleRequest,
  ScheduleChange,
  ScheduleList,
  ScheduleListQuery,
  ScheduleRequest,
  ScheduleView,
  TaskDetails,
  TaskListQuery,
  TaskPage,
  TaskRequest,
} from '../../functions/contract/wire.js';

export { verifyWebhook } from '../../functions/contract/webhook-signature.js';
export type {
  ApiProblem,
  BatchItemResult,
  BatchResult,
  BizTypeSettings,
  BizTypeSettingsRequest,
  CreatedTask,
  RescheduleRequest,
  ScheduleChange,
  ScheduleList,
  ScheduleListQuery,
  ScheduleRequest,
  ScheduleView,
  TaskDetails,
  TaskListQuery,
  TaskPage,
  TaskRequest,
  WebhookNotification,
} from '../../functions/contract/wire.js';

/** An answer the API gave that is not a success; `problem` says which field and why. */
/** A listing's query string: API Gateway hands every parameter over as text, and an absent one is left out. */
function searchOf(query: object): URLSearchParams {
  return new URLSearchParams(
    Object.entries(query).flatMap(([name, value]): Array<[string, string]> =>
      value === undefined ? [] : [[name, String(value)]],
    ),
  );
}

export class TimerApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: ApiProblem | undefined,
  ) {
    super(problem ? `${problem.title}: ${problem.detail}` : `the timer API answered ${status}`);
    this.name = 'TimerApiError';
  }
}

/**
 * A batch item's refusal as the error its caller would have had from a single submit: its field
 * paths name the caller's own task (`target.url`), not its place in a batch it never saw
 * (`tasks[1].target.url`).
 */
function itemError(result: BatchItemResult | undefined): TimerApiError {
  if (!result || !('problem' in result)) return new TimerApiError(500, undefined);
  const { problem } = result;
  return new TimerApiError(result.status, {
    ...problem,
    ...(problem.errors && {
      errors: problem.errors.map((error) => ({ ...error, path: error.path.replace(/^tasks\[\d+\]\.?/, '') })),
    }),
  });
}

export interface TimerClientOptions {
  /**
   * The API's base URL: the stack output ApiUrl, or FunctionUrl (its trailing '/' is fine), or local
   * mode's http://127.0.0.1:3000.
   */
  readonly baseUrl: string;
  /** The tenant's API key (`tk_…`), from `timer tenants create` or local mode's start-up banner. */
  readonly apiKey: string;
  /**
   * Tries per request for network errors, 429 and 5xx answers. Submits are safe to repeat
   * because each carries an idempotency key (one is made up when the caller gives none).
   * @default 3
   */
  readonly attempts?: number;
  /** @default 200 ms, doubled each retry */
  readonly retryDelayMs?: number;
  /** Extra headers on every request. */
  readonly headers?: Readonly<Record<string, string>>;
  /** @default globalThis.fetch */
  readonly fetch?: typeof fetch;
}

/**
 * A submit's body, sent the same by every retry: with an idempotency key (made up when the caller
 * gives none), and a valid `delaySeconds` turned into the `dueAt` it means now. The api names a
 * keyed task by its due time and writes it with one conditional put; a `delaySeconds` it would
 * resolve anew on each retry, so for that it keeps an extra item per key.
 */
function submitBody(request: TaskRequest): TaskRequest {
  const { delaySeconds, ...rest } = request;
  const resolvable =
    request.dueAt === undefined &&
    typeof delaySeconds === 'number' &&
    Number.isInteger(delaySeconds) &&
    delaySeconds >= 0;
  return {
    ...(resolvable ? { ...rest, dueAt: Date.now() + delaySeconds * 1000 } : request),
    idempotencyKey: request.idempotencyKey ?? randomUUID(),
  };
}

const retryable = (status: number) => status === 429 || status >= 500;

/** The most tasks POST /v1/tasks/batch takes in one request. */
const MAX_BATCH = 100;

/** A `schedule()` call waiting to be sent, and how to answer it. */
interface QueuedSubmit {
  readonly task: TaskRequest;
  readonly resolve: (task: CreatedTask) => void;
  readonly reject: (error: unknown) => void;
}

const bizTypePath = (bizType: string) => `/v1/biz-types/${encodeURIComponent(bizType)}`;
const schedulePath = (id: string) => `/v1/schedules/${encodeURIComponent(id)}`;

export class TimerClient {
  private readonly fetch: typeof fetch;
  /** `schedule()` calls gathered while submits are in flight. */
  private queued: QueuedSubmit[] = [];
  private submitsInFlight = 0;

  constructor(private readonly options: TimerClientOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /**
   * Schedules one task, alone if nothing else is being submitted, else in a batch with the calls
   * made meanwhile; either way this call gets its own task or its own error (a TimerApiError
   * naming the field for an invalid request). A retried call returns the same task, never a
   * second one.
   */
  schedule(request: TaskRequest): Promise<CreatedTask> {
    const task = submitBody(request);
    return new Promise((resolve, reject) => {
      this.queued.push({ task, resolve, reject });
      if (this.submitsInFlight === 0 || this.queued.length >= MAX_BATCH) this.sendQueued();
    });
  }

  /** Sends what is queued, up to a batch, then whatever gathered meanwhile once nothing is in flight. */
  private sendQueued(): void {
    const group = this.queued.slice(0, MAX_BATCH);
    this.queued = this.queued.slice(MAX_BATCH);
    this.submitsInFlight += 1;
    void this.submit(group).finally(() => {
      this.submitsInFlight -= 1;
      if (this.submitsInFlight === 0 && this.queued.length > 0) this.sendQueued();
    });
  }

  /** One request for the group: a single POST for one, a batch POST for more, each caller answered. */
  private async submit(group: readonly QueuedSubmit[]): Promise<void> {
    try {
      if (group.length === 1) {
        const [only] = group as [QueuedSubmit];
        only.resolve((await this.request('POST', '/v1/tasks', only.task, [200, 201])) as CreatedTask);
        return;
      }
      const answer = await this.scheduleBatch(group.map(({ task }) => task));
      group.forEach(({ resolve, reject }, index) => {
        const result = answer.results.find((item) => item.index === index);
        if (result && 'task' in result) resolve(result.task);
        else reject(itemError(result));
      });
    } catch (error) {
      for (const { reject } of group) reject(error);
    }
  }

  /** Schedules up to 100 tasks; each result says whether its task was created or why not. */
  async scheduleBatch(requests: readonly TaskRequest[]): Promise<BatchResult> {
    const tasks = requests.map(submitBody);
    return (await this.request('POST', '/v1/tasks/batch', { tasks }, [201, 207])) as BatchResult;
  }

  /** The task with its status and delivery facts, or undefined if there is no such task. */
  async get(id: string): Promise<TaskDetails | undefined> {
    const result = await this.request('GET', `/v1/tasks/${encodeURIComponent(id)}`, undefined, [200, 404]);
    return (result as { status?: number }).status === 404 ? undefined : (result as TaskDetails);
  }

  /** Cancels a task that has not been delivered; a TimerApiError with status 409 says why it could not be. */
  async cancel(id: string): Promise<TaskDetails> {
    return (await this.request('DELETE', `/v1/tasks/${encodeURIComponent(id)}`, undefined, [200])) as TaskDetails;
  }

  /**
   * One page of the tenant's tasks with this bizId or bizType. A page may hold fewer than
   * `limit` tasks, even none, when a status filter leaves some out: keep going while
   * `nextCursor` is set (or use `tasks`, which does).
   */
  async list(query: TaskListQuery): Promise<TaskPage> {
    return (await this.request('GET', `/v1/tasks?${searchOf(query)}`, undefined, [200])) as TaskPage;
  }

  /** Every task matching the query, page after page. */
  async *tasks(query: Omit<TaskListQuery, 'cursor'>): AsyncGenerator<TaskDetails> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...query, ...(cursor !== undefined && { cursor }) });
      yield* page.tasks;
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }

  /**
   * Moves a PENDING task to a new dueAt (or delaySeconds), optionally with a new payload.
   * Returns the task that replaces it (a new id, `rescheduledFrom` the old one); exactly one
   * of the two is ever delivered. Safe to retry: the same request gets the same answer.
   */
  async reschedule(id: string, request: RescheduleRequest): Promise<TaskDetails> {
    return (await this.request('PATCH', `/v1/tasks/${encodeURIComponent(id)}`, request, [200])) as TaskDetails;
  }

  /**
   * Creates or replaces a bizType's settings. They apply to tasks submitted afterwards (within
   * 30 seconds, as the api caches them), never to tasks already stored.
   */
  async setBizType(bizType: string, settings: BizTypeSettingsRequest): Promise<BizTypeSettings> {
    return (await this.request('PUT', bizTypePath(bizType), settings, [200])) as BizTypeSettings;
  }

  /** A bizType's settings, or undefined if it has none. */
  async getBizType(bizType: string): Promise<BizTypeSettings | undefined> {
    const result = await this.request('GET', bizTypePath(bizType), undefined, [200, 404]);
    return (result as { status?: number }).status === 404 ? undefined : (result as BizTypeSettings);
  }

  /** Every bizType of the tenant that has settings. */
  async listBizTypes(): Promise<BizTypeSettings[]> {
    return ((await this.request('GET', '/v1/biz-types', undefined, [200])) as BizTypeList).bizTypes;
  }

  /** Deletes a bizType's settings; false if it had none. Tasks already submitted keep theirs. */
  async deleteBizType(bizType: string): Promise<boolean> {
    const result = await this.request('DELETE', bizTypePath(bizType), undefined, [200, 404]);
    return (result as { status?: number }).status !== 404;
  }

  /**
   * Creates a recurring schedule (exactly one of `cron` or `rate`). A retried call returns the
   * same schedule, never a second one: an idempotency key is made up when the caller gives none.
   */
  async createSchedule(request: ScheduleRequest): Promise<ScheduleView> {
    const body = { ...request, idempotencyKey: request.idempotencyKey ?? randomUUID() };
    return (await this.request('POST', '/v1/schedules', body, [200, 201])) as ScheduleView;
  }

  /** The schedule with its coming occurrences, or undefined if there is no such schedule. */
  async getSchedule(id: string): Promise<ScheduleView | undefined> {
    const result = await this.request('GET', schedulePath(id), undefined, [200, 404]);
    return (result as { status?: number }).status === 404 ? undefined : (result as ScheduleView);
  }

  /**
   * One page of the tenant's schedules in id order: all of them, or those the filters keep. A page
   * may hold fewer than `limit`, even none, when filters leave some out: keep going while
   * `nextCursor` is set (or use `listSchedules`, which does).
   */
  async schedulesPage(query: ScheduleListQuery = {}): Promise<ScheduleList> {
    return (await this.request('GET', `/v1/schedules?${searchOf(query)}`, undefined, [200])) as ScheduleList;
  }

  /** Every schedule of the tenant (at most 1,000), or every one the filters keep, page after page. */
  async listSchedules(query: Omit<ScheduleListQuery, 'cursor'> = {}): Promise<ScheduleView[]> {
    const schedules: ScheduleView[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.schedulesPage({ ...query, ...(cursor !== undefined && { cursor }) });
      schedules.push(...page.schedules);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return schedules;
  }

  /** Changes a schedule; every occurrence not yet due follows the change. `{ paused: true }` pauses it. */
  async changeSchedule(id: string, change: ScheduleChange): Promise<ScheduleView> {
    return (await this.request('PATCH', schedulePath(id), change, [200])) as ScheduleView;
  }

  /** Deletes a schedule; its pending occurrence never fires. False if there was none. */
  async deleteSchedule(id: string): Promise<boolean> {
    const result = await this.request('DELETE', schedulePath(id), undefined, [200, 404]);
    return (result as { status?: number }).status !== 404;
  }

  private async request(method: string, path: string, body: unknown, expected: readonly number[]): Promise<unknown> {
    const attempts = this.options.attempts ?? 3;
    let delayMs = this.options.retryDelayMs ?? 200;
    const backOff = async () => {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs *= 2;
    };
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await this.fetch(new URL(path, this.options.baseUrl), {
          method,
          headers: {
            ...this.options.headers,
            authorization: `Bearer ${this.options.apiKey}`,
            ...(body !== undefined && { 'content-type': 'application/json' }),
          },
          ...(body !== undefined && { body: JSON.stringify(body) }),
        });
      } catch (error) {
        if (attempt >= attempts) throw error;
        await backOff();
        continue;
      }
      const text = await response.text();
      const parsed: unknown = text ? JSON.parse(text) : undefined;
      if (expected.includes(response.status)) return parsed;
      if (retryable(response.status) && attempt < attempts) {
        await backOff();
        continue;
      }
      const problem = response.headers.get('content-type')?.includes('problem+json')
        ? (parsed as ApiProblem)
        : undefined;
      throw new TimerApiError(response.status, problem);
    }
  }
}
