/**
 * Lambda's invoke path, on one machine: every local invocation (the HTTP gateway's, the event
 * source mappings', the schedules') goes through here, so the handlers meet the limits they meet
 * in the cloud: concurrency, function timeouts and the synchronous payload limit.
 *
 * Each invocation runs in an execution environment of its own, as in Lambda: a warm one that is
 * idle, or a new one (a cold start) when all are busy. What a handler keeps between invocations
 * (caches, its circuit breakers, the occupancy slot it writes) is so kept per environment, and
 * a burst meets as many cold caches as it would in the cloud. An environment whose invocation
 * timed out is thrown away, as Lambda does.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

import { AWS_LIMITS } from '../../functions/contract/aws-limits.js';
import {
  ACCOUNT_CONCURRENCY,
  type FunctionName,
  FUNCTIONS,
  type FunctionSpec,
} from '../../functions/contract/topology.js';
import { lambdaContext, type LambdaHandler } from './lambda-context.js';

/** Lambda refuses a synchronous invocation whose request or response is over 6 MB. */
export const SYNC_PAYLOAD_LIMIT_BYTES = AWS_LIMITS.lambda.syncPayloadBytes;

/** The limits Lambda holds one function to; the topology gives the defaults. */
export type FunctionLimits = Pick<FunctionSpec, 'timeoutSeconds' | 'reservedConcurrency'>;

/** How an invocation ended, as the caller (API Gateway, an event source mapping) learns it. */
export type InvokeResult<R> =
  | { readonly outcome: 'ok'; readonly response: R }
  /** The handler threw, or its response was over the payload limit. */
  | { readonly outcome: 'error'; readonly error: unknown }
  /** Still running at the function's timeout: abandoned, whatever it does later is discarded. */
  | { readonly outcome: 'timeout' }
  /** Refused for want of concurrency (Lambda's TooManyRequestsException); the handler never ran. */
  | { readonly outcome: 'throttled' }
  /** Refused for its size (Lambda's RequestTooLargeException); the handler never ran. */
  | { readonly outcome: 'request-too-large'; readonly bytes: number };

/** What Lambda's CloudWatch metrics would show for one function. */
export interface FunctionStats {
  /** Invocations that ran (throttled ones did not). */
  readonly invocations: number;
  /** Invocations that threw, timed out, or answered over the payload limit. */
  readonly errors: number;
  readonly timeouts: number;
  readonly throttles: number;
  /** Of the throttles, those refused because the function had added its environments for the last 10 s. */
  readonly scalingThrottles: number;
  /**
   * Invocations running now, and the most there have been at once: for a function given a cloud
   * duration, its starts in the current second times that duration, whatever this machine took.
   */
  readonly concurrency: number;
  readonly peakConcurrency: number;
  /** The most invocations this machine ran at once; the peak above when no cloud duration is given. */
  readonly machinePeakConcurrency: number;
  /** Milliseconds the finished invocations ran, in all: the duration Lambda bills and concurrency is made of. */
  readonly durationMs: number;
  /** Execution environments started: the cold starts. */
  readonly environments: number;
}

type AnyHandler = LambdaHandler<unknown, unknown>;

/**
 * The execution environment a piece of work runs in: `<function>#<n>`, its n-th environment,
 * and whether it is still starting (its init and first invocation). Requests made while it
 * starts are paid once per environment, so their rate is bounded by how fast Lambda adds
 * environments, not by the load; a scale model tells them apart by this.
 */
export interface EnvironmentInContext {
  readonly id: string;
  starting: boolean;
}

const environmentContext = new AsyncLocalStorage<EnvironmentInContext>();

/** The environment whose invocation (or init) the caller runs in, if any. */
export const currentEnvironment = (): EnvironmentInContext | undefined => environmentContext.getStore();

/** The HTTP header a function's AWS request names its environment in, for the scale model's proxies: `api:3`, `api:3 starting`. */
export const ENVIRONMENT_HEADER = 'x-local-environment';

export const environmentHeader = (environment: EnvironmentInContext): string =>
  environment.starting ? `${environment.id} starting` : environment.id;

export function parseEnvironmentHeader(value: string | undefined): EnvironmentInContext | undefined {
  if (!value) return undefined;
  const [id = '', phase] = value.split(' ');
  return { id, starting: phase === 'starting' };
}

interface Environment {
  readonly id: string;
  readonly handler: AnyHandler;
}

/** Starts one execution environment of a function: its handler, built as the function's entry builds it at cold start. */
export type EnvironmentFactory = () => Promise<AnyHandler>;

/** Handlers that are each one execution environment, shared by every invocation of their function. */
export function sharedEnvironments(
  handlers: Partial<Record<FunctionName, AnyHandler>>,
): Partial<Record<FunctionName, EnvironmentFactory>> {
  return Object.fromEntries(Object.entries(handlers).map(([fn, handler]) => [fn, () => Promise.resolve(handler)]));
}

export interface LambdaServiceOptions {
  readonly handlers: Partial<Record<FunctionName, EnvironmentFactory>>;
  /** Overrides of the topology's limits, per function (a test's short timeout, a scaled-down model). */
  readonly limits?: Partial<Record<FunctionName, Partial<FunctionLimits>>>;
  /** The account's pool, which functions without a reservation share. */
  readonly accountConcurrency?: number;
  /**
   * How many execution environments each function may add per 10 s (Lambda's 1,000; a scale
   * model's 1,000/k, a fraction it accumulates). An invocation that finds no idle environment
   * and no room to add one is throttled. @default AWS_LIMITS.lambda.newEnvironmentsPer10Seconds
   */
  readonly newEnvironmentsPer10Seconds?: number;
  /**
   * How long an invocation of these functions lasts in the cloud (a scale model's, from the plan).
   * Concurrency is invocations a second times their duration, and this machine's durations are
   * its own: every function runs on one event loop, beside the emulators, so a pause of that loop
   * holds every invocation at once and the requests that queued meanwhile start together, a burst
   * no fleet of separate environments sees. For these functions concurrency is a rate: the
   * invocations started in the current second times this duration, held to the reservation (or
   * the unreserved pool), a stall moving starts within their second but not adding to them; a new
   * environment is asked for when that outgrows the environments the cloud would have started. The
   * machine's own concurrency is reported apart (`machinePeakConcurrency`).
   */
  readonly cloudDurationMs?: Partial<Record<FunctionName, number>>;
  /** Told of each invocation that threw or timed out, as Lambda writes it to the function's log. */
  readonly onError: (fn: FunctionName, error: unknown) => void;
}

export interface LambdaService {
  invoke<E, R>(fn: FunctionName, event: E): Promise<InvokeResult<R>>;
  stats(): Record<FunctionName, FunctionStats>;
}

/** Lambda counts the environments a function adds over windows of this length. */
const ENVIRONMENT_WINDOW_MS = 10_000;

/**
 * A bucket refilling `perWindow` tokens per `windowMs`, fractions accumulating, and holding a
 * window's worth (at least one, so a scale model's fraction still adds an environment now and then).
 */
class TokenBucket {
  private readonly capacity: number;
  private tokens: number;
  private refilledAtMs: number | undefined;

  constructor(
    private readonly perWindow: number,
    private readonly windowMs: number,
  ) {
    this.capacity = Math.max(1, perWindow);
    this.tokens = this.capacity;
  }

  take(nowMs: number): boolean {
    const elapsed = nowMs - (this.refilledAtMs ?? nowMs);
    this.tokens = Math.min(this.capacity, this.tokens + (elapsed / this.windowMs) * this.perWindow);
    this.refilledAtMs = nowMs;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

const payloadBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '');

/**
 * Lambda's concurrency model: a function with reserved concurrency runs at most that many
 * invocations and no other function may use them; the others share what the reservations leave
 * of the account's pool. An invocation over its limit is throttled, not queued.
 */
export function createLambdaService(options: LambdaServiceOptions): LambdaService {
  const names = Object.keys(FUNCTIONS) as FunctionName[];
  const limits = Object.fromEntries(
    names.map((fn) => [
      fn,
      {
        timeoutSeconds: FUNCTIONS[fn].timeoutSeconds,
        reservedConcurrency: FUNCTIONS[fn].reservedConcurrency,
        ...options.limits?.[fn],
      },
    ]),
  ) as Record<FunctionName, FunctionLimits>;
  const accountConcurrency = options.accountConcurrency ?? ACCOUNT_CONCURRENCY;
  const reserved = names.reduce((sum, fn) => sum + (limits[fn].reservedConcurrency ?? 0), 0);
  if (reserved > accountConcurrency) {
    throw new Error(
      `reserved concurrency (${reserved}) exceeds the account's concurrency (${accountConcurrency}); Lambda would refuse it`,
    );
  }
  const unreservedPool = accountConcurrency - reserved;
  let unreservedRunning = 0;
  const counters = Object.fromEntries(
    names.map((fn) => [
      fn,
      {
        invocations: 0,
        errors: 0,
        timeouts: 0,
        throttles: 0,
        scalingThrottles: 0,
        concurrency: 0,
        peakConcurrency: 0,
        machinePeakConcurrency: 0,
        durationMs: 0,
        environments: 0,
      },
    ]),
  ) as Record<FunctionName, { -readonly [K in keyof FunctionStats]: FunctionStats[K] }>;
  const idle = new Map<FunctionName, Environment[]>(names.map((fn) => [fn, []]));
  const environmentRate = new Map(
    names.map((fn) => [
      fn,
      new TokenBucket(
        options.newEnvironmentsPer10Seconds ?? AWS_LIMITS.lambda.newEnvironmentsPer10Seconds,
        ENVIRONMENT_WINDOW_MS,
      ),
    ]),
  );

  /** For a function with a cloud duration: its starts in the current second, and the environments the cloud would have started. */
  const cloudLoads = new Map<FunctionName, { second: number; starts: number; environments: number }>();
  const cloudConcurrency = (fn: FunctionName, starts: number) =>
    Math.ceil((starts * (options.cloudDurationMs?.[fn] ?? 0)) / 1000);
  const cloudLoad = (fn: FunctionName) => {
    const second = Math.floor(performance.now() / 1000);
    const load = cloudLoads.get(fn) ?? { second, starts: 0, environments: 0 };
    if (load.second !== second) Object.assign(load, { second, starts: 0 });
    cloudLoads.set(fn, load);
    return load;
  };
  const admit = (fn: FunctionName): boolean => {
    const limit = limits[fn].reservedConcurrency;
    const counter = counters[fn];
    if (options.cloudDurationMs?.[fn] !== undefined) {
      const load = cloudLoad(fn);
      const concurrency = cloudConcurrency(fn, load.starts + 1);
      if (concurrency > (limit ?? unreservedPool)) return false;
      load.starts += 1;
      counter.concurrency = concurrency;
      counter.peakConcurrency = Math.max(counter.peakConcurrency, concurrency);
      return true;
    }
    if (limit !== undefined ? counter.concurrency >= limit : unreservedRunning >= unreservedPool) return false;
    if (limit === undefined) unreservedRunning += 1;
    counter.concurrency += 1;
    counter.peakConcurrency = Math.max(counter.peakConcurrency, counter.concurrency);
    return true;
  };
  const release = (fn: FunctionName) => {
    if (options.cloudDurationMs?.[fn] !== undefined) return;
    counters[fn].concurrency -= 1;
    if (limits[fn].reservedConcurrency === undefined) unreservedRunning -= 1;
  };
  /** Invocations running on this machine now, per function. */
  const running = new Map<FunctionName, number>(names.map((fn) => [fn, 0]));

  const run = async <R>(fn: FunctionName, handler: AnyHandler, event: unknown): Promise<InvokeResult<R>> => {
    const timeoutMs = limits[fn].timeoutSeconds * 1000;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<{ readonly timedOut: true }>((resolve) => {
      timer = setTimeout(() => resolve({ timedOut: true }), timeoutMs);
    });
    // Both branches are handled here, so an abandoned handler that fails later rejects nothing.
    const settled = handler(event, lambdaContext(fn, timeoutMs)).then(
      (response) => ({ response: response as R }),
      (error: unknown) => ({ error }),
    );
    const ended = await Promise.race([settled, timedOut]);
    clearTimeout(timer);
    if ('timedOut' in ended) {
      options.onError(fn, new Error(`Task timed out after ${limits[fn].timeoutSeconds} seconds`));
      return { outcome: 'timeout' };
    }
    if ('error' in ended) {
      options.onError(fn, ended.error);
      return { outcome: 'error', error: ended.error };
    }
    const bytes = payloadBytes(ended.response);
    if (bytes > SYNC_PAYLOAD_LIMIT_BYTES) {
      const error = new Error(
        `Response payload size (${bytes} bytes) exceeded maximum allowed payload size (${SYNC_PAYLOAD_LIMIT_BYTES} bytes).`,
      );
      options.onError(fn, error);
      return { outcome: 'error', error };
    }
    return { outcome: 'ok', response: ended.response };
  };

  return {
    async invoke<E, R>(fn: FunctionName, event: E): Promise<InvokeResult<R>> {
      const startEnvironment = options.handlers[fn];
      if (!startEnvironment) throw new Error(`no local handler for function ${fn}`);
      const bytes = payloadBytes(event);
      if (bytes > SYNC_PAYLOAD_LIMIT_BYTES) return { outcome: 'request-too-large', bytes };
      const counter = counters[fn];
      if (!admit(fn)) {
        counter.throttles += 1;
        return { outcome: 'throttled' };
      }
      const cloud = options.cloudDurationMs?.[fn] === undefined ? undefined : cloudLoad(fn);
      const warm = idle.get(fn)?.pop();
      // A new environment is asked for when none is warm: here, or, for a function with a cloud
      // duration, when its concurrency outgrows the environments the cloud would have started.
      const newEnvironment = cloud ? counter.concurrency > cloud.environments : !warm;
      if (newEnvironment && !environmentRate.get(fn)?.take(performance.now())) {
        if (warm) idle.get(fn)?.push(warm);
        if (cloud) {
          cloud.starts -= 1;
          counter.concurrency = cloudConcurrency(fn, cloud.starts);
        }
        release(fn);
        counter.throttles += 1;
        counter.scalingThrottles += 1;
        return { outcome: 'throttled' };
      }
      if (cloud) cloud.environments = Math.max(cloud.environments, counter.concurrency);
      running.set(fn, (running.get(fn) ?? 0) + 1);
      counter.machinePeakConcurrency = Math.max(counter.machinePeakConcurrency, running.get(fn) ?? 0);
      counter.invocations += 1;
      const startedMs = performance.now();
      if (!warm) counter.environments += 1;
      const context = { id: warm?.id ?? `${fn}:${counter.environments}`, starting: !warm };
      try {
        return await environmentContext.run(context, async (): Promise<InvokeResult<R>> => {
          let handler: AnyHandler;
          try {
            // A cold start is part of the invocation, as Lambda bills and times its init.
            handler = warm?.handler ?? (await startEnvironment());
          } catch (error) {
            // An init that fails is the invocation's error, and leaves no environment behind.
            options.onError(fn, error);
            counter.errors += 1;
            return { outcome: 'error', error };
          }
          const result = await run<R>(fn, handler, event);
          if (result.outcome === 'timeout') counter.timeouts += 1;
          else idle.get(fn)?.push({ id: context.id, handler });
          if (result.outcome !== 'ok') counter.errors += 1;
          return result;
        });
      } finally {
        // Work the first invocation left running belongs to the environment, no longer to its start.
        context.starting = false;
        // A timed-out invocation gives its concurrency back now, as Lambda ends its environment.
        release(fn);
        running.set(fn, (running.get(fn) ?? 0) - 1);
        counter.durationMs += performance.now() - startedMs;
      }
    },
    stats: () =>
      Object.fromEntries(names.map((fn) => [fn, { ...counters[fn] }])) as Record<FunctionName, FunctionStats>,
  };
}
