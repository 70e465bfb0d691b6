import { randomInt } from 'node:crypto';

import type { Clock, Target } from '../kernel/task.js';
import { type StartTimer, systemTimer } from '../kernel/timers.js';
import type { Notification, Sender, TargetDispatcher, TargetResult } from './deliver.js';

/** When a tenant's webhook host is taken for down, and for how long no call is made to it. */
export interface HostBreakerSettings {
  /**
   * Consecutive calls without an answer (refused, unreachable, timed out) that open a host's
   * circuit. Any HTTP status is an answer: a host that says 503 to one task is up for the others.
   */
  readonly failureThreshold: number;
  /** How long a circuit that opens refuses calls before one probe call is let through. */
  readonly openMs: number;
  /**
   * The longest open period: each probe left unanswered opens the circuit for twice as long as
   * the last time, up to this, and an answer starts it over at `openMs`.
   */
  readonly maxOpenMs: number;
  /**
   * A call still unanswered this long counts as an unanswered call there and then, unless its
   * host has answered this instance within the last `openMs` (it is up, merely slow). So a
   * hanging host opens its circuit about `slowCallMs` after the first calls meet it, instead of
   * at the webhook timeout, and the calls after those are not made. The slow call itself is never
   * given up: it may still be processed by its receiver, so it waits for its answer or the
   * webhook timeout, and its answer, however late, counts.
   */
  readonly slowCallMs: number;
}

/**
 * Five unanswered calls in a row is a host that is down, not a flaky request. Two seconds
 * unanswered is slow for a webhook (most answer in tens of milliseconds), so a hanging host is
 * rested after its first few calls hang two seconds, not ten. A probe to a hanging host holds
 * its invocation, and the batch's concurrency with it, for the whole webhook timeout: at thirty
 * seconds open, each callback instance would lose a third of its time (10 s of every 30 to 45)
 * to each hanging host its tasks reach. Doubling up to four minutes brings that to a twenty-fourth
 * after three probes, and a host back up loses at most its remaining open time: 30 s for a
 * short outage, four minutes (and the refusal spread) for one that lasted several.
 */
export const DEFAULT_HOST_BREAKER: HostBreakerSettings = {
  failureThreshold: 5,
  openMs: 30_000,
  maxOpenMs: 240_000,
  slowCallMs: 2_000,
};

/**
 * A host's circuit: closed (calls go through), open until a time, or half-open with one probe in
 * flight; the open and half-open states keep how long the circuit was last open for.
 */
type Circuit =
  | { readonly state: 'closed'; readonly failures: number }
  | { readonly state: 'open'; readonly untilMs: number; readonly forMs: number }
  | { readonly state: 'half-open'; readonly lastOpenMs: number };

export type CircuitState = Circuit['state'];

/** Whether a call may go to a host now; a refused one says when to ask again. */
export type Admission = { readonly admitted: true } | { readonly admitted: false; readonly retryAfterSeconds: number };

/**
 * The circuit a webhook call goes through: one per tenant and host. Tenants share hosts (a
 * webhook relay, one company's gateway for several services): a circuit per host alone would let
 * one tenant's failing endpoint refuse every other tenant's calls to that host for `openMs`.
 */
export const circuitOf = (tenantId: string, host: string) => `${tenantId} ${host}`;

/** How many `slowCallMs` a call with no answer anywhere meanwhile may be out before it counts anyway: 20 s, twice the webhook timeout. */
const LOST_CALL_PERIODS = 10;

/** Hosts whose last answer an instance remembers; past it the longest-silent are forgotten (and their calls hurried). */
const MAX_REMEMBERED_HOSTS = 10_000;

/**
 * Circuit breakers per tenant and webhook host (`circuitOf`), kept in the callback instance. A
 * dead or hanging host then costs each instance the few calls that meet it before its circuit
 * opens and one probe per open period, instead of a call (and, hanging, a full webhook timeout
 * of concurrency) per task: one tenant's broken receiver cannot soak up the callback's
 * concurrency. Records of a batch are delivered concurrently, so a call waiting on a hanging
 * host holds up no other record. Nothing is shared between instances, so the check costs no
 * request; each instance learns on its own.
 */
export class HostBreaker {
  private readonly circuits = new Map<string, Circuit>();
  /** When each circuit's host last answered a call, oldest first; a slow call to a host that answered lately is not counted against it. */
  private readonly answeredAtMs = new Map<string, number>();
  /** Calls in flight to each circuit's host, and the calls waiting for one of them to end (see nextCallEnd). */
  private readonly inFlight = new Map<string, { count: number; readonly waiting: Array<() => void> }>();
  /** Answers from any host so far: a slow call counts against its host only if others were answered meanwhile. */
  private answers = 0;

  constructor(
    private readonly clock: Clock,
    readonly settings: HostBreakerSettings = DEFAULT_HOST_BREAKER,
    private readonly startTimer: StartTimer = systemTimer,
  ) {}

  /**
   * Whether a call to this target still unanswered is news: a webhook whose host has not answered
   * this instance within `openMs` (a host that has is up, and its slow call is a slow receiver or
   * a busy machine). Calls to AWS targets have no breaker and always are.
   */
  unansweredIsNews(target: Target, sender: Sender): boolean {
    const host = webhookHost(target);
    return host === undefined || !this.answeredRecently(circuitOf(sender.tenantId, host));
  }

  /** Whether the circuit's host answered a call within the last `openMs`. */
  answeredRecently(key: string): boolean {
    const answeredAtMs = this.answeredAtMs.get(key);
    return answeredAtMs !== undefined && this.clock.now() - answeredAtMs <= this.settings.openMs;
  }

  /**
   * Whether a call must wait before it goes: while the circuit is closed, its host has not
   * answered this instance within `openMs`, and `failureThreshold` calls to it are already in
   * flight, it waits until one of them ends (the promise returned; undefined: it may go now, and
   * must be counted with callStarted before anything else runs). A host not yet shown to be up so
   * gets no more calls at once than it takes to open its circuit, and a batch (up to 100 records,
   * many of them one tenant's) meets a hanging host with five calls instead of all of its tasks;
   * once those time out, the circuit is open and the rest are refused, with no call made and no
   * attempt spent. A host that is up answers the first of them and the rest go at once. They wait
   * for a call's end, not its slowness, so a slow host's late answer still lets them through.
   */
  nextCallEnd(key: string): Promise<void> | undefined {
    const calls = this.inFlight.get(key);
    if (
      !calls ||
      calls.count < this.settings.failureThreshold ||
      this.state(key) !== 'closed' ||
      this.answeredRecently(key)
    )
      return undefined;
    return new Promise<void>((resolve) => calls.waiting.push(resolve));
  }

  /** Counts an admitted call as in flight; returns what ends it, to call once its outcome is recorded (a second call does nothing). */
  callStarted(key: string): () => void {
    const calls = this.inFlight.get(key) ?? { count: 0, waiting: [] };
    calls.count += 1;
    this.inFlight.set(key, calls);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      calls.count -= 1;
      if (calls.count === 0) this.inFlight.delete(key);
      for (const wake of calls.waiting.splice(0)) wake();
    };
  }

  state(key: string): CircuitState {
    return this.circuits.get(key)?.state ?? 'closed';
  }

  /** Lets a call through when the circuit (`circuitOf`) is closed, or as the one probe once an open circuit's time is up. */
  admit(key: string): Admission {
    const circuit = this.circuits.get(key);
    if (circuit === undefined || circuit.state === 'closed') return { admitted: true };
    if (circuit.state === 'open') {
      const restMs = circuit.untilMs - this.clock.now();
      if (restMs > 0) return { admitted: false, retryAfterSeconds: Math.ceil(restMs / 1000) };
      this.circuits.set(key, { state: 'half-open', lastOpenMs: circuit.forMs });
      return { admitted: true };
    }
    // A probe is in flight; its answer decides, and until then the host is still taken for down.
    return { admitted: false, retryAfterSeconds: Math.ceil(circuit.lastOpenMs / 1000) };
  }

  /** Records how an admitted call ended: an answer (any status) closes the circuit, none counts towards opening it. */
  record(key: string, unanswered: boolean): void {
    const circuit = this.circuits.get(key) ?? { state: 'closed', failures: 0 };
    if (!unanswered) {
      // Closed with no failures is the default, so the map only holds hosts that are failing.
      this.circuits.delete(key);
      this.answered(key);
      return;
    }
    if (circuit.state === 'open') return; // a call admitted before the circuit opened, ending late
    if (circuit.state === 'half-open') {
      this.open(key, Math.min(circuit.lastOpenMs * 2, this.settings.maxOpenMs));
      return;
    }
    const failures = circuit.failures + 1;
    if (failures >= this.settings.failureThreshold) this.open(key, this.settings.openMs);
    else this.circuits.set(key, { state: 'closed', failures });
  }

  private answered(key: string): void {
    this.answers += 1;
    this.answeredAtMs.delete(key);
    if (this.answeredAtMs.size >= MAX_REMEMBERED_HOSTS)
      this.answeredAtMs.delete(this.answeredAtMs.keys().next().value ?? '');
    this.answeredAtMs.set(key, this.clock.now());
  }

  /**
   * Watches an admitted call: if it is still unanswered after `slowCallMs`, its host has not
   * answered lately, and some other call has been answered meanwhile, it is recorded as unanswered
   * then. The call goes on. An instance that got no answer from anyone while it waited learns
   * nothing about this host yet: its machine may be too busy to read the answers (a starved local
   * run opened a healthy host's circuit this way). It looks again every `slowCallMs`, and counts
   * the call once others are answered or once it has been out `LOST_CALL_PERIODS` times as long.
   * Out that long (past any webhook timeout), the call is one no one will ever report on (its
   * invocation died), so it is ended (`callEnded`) whatever its host did: it must not hold the calls
   * waiting for it (see nextCallEnd), not even once a host that answered then has gone quiet.
   * Returns what ends the watch, to call once the call has ended; it says whether the call was
   * already recorded (so its own lack of an answer is not counted again).
   */
  watchSlowCall(key: string, callEnded: () => void): () => boolean {
    let countedSlow = false;
    let judged = false;
    const answersBefore = this.answers;
    let periods = 0;
    const check = () => {
      periods += 1;
      if (!judged && this.answeredRecently(key)) judged = true;
      if (!judged && (this.answers !== answersBefore || periods >= LOST_CALL_PERIODS)) {
        judged = true;
        countedSlow = true;
        this.record(key, true);
      }
      if (periods >= LOST_CALL_PERIODS) callEnded();
      else stop = this.startTimer(this.settings.slowCallMs, check);
    };
    let stop = this.startTimer(this.settings.slowCallMs, check);
    return () => {
      stop();
      return countedSlow;
    };
  }

  private open(key: string, forMs: number): void {
    this.circuits.set(key, { state: 'open', untilMs: this.clock.now() + forMs, forMs });
  }
}

/**
 * Whether a call got no HTTP answer at all: refused, unreachable, timed out. That is what shows a
 * host is down; any status, 5xx and 429 included, shows it is up and judging this one request
 * (a Retry-After it sends already puts off the task that got it).
 */
function unanswered(result: TargetResult): boolean {
  return !result.ok && result.statusCode === undefined;
}

/**
 * A refused task comes back at a time spread over `[seconds, 1.5 × seconds]`, not all when the
 * circuit half-opens: a dead tenant's parked tasks (at a billion a day a quarter of the traffic is
 * some 87,000 in 30 s) would otherwise all come back in one second, with a write or two each, and
 * throttle the table every tenant shares. The scale model's (d) saw 32 table write throttles from it.
 */
function spread(seconds: number): number {
  return seconds + randomInt(Math.ceil(seconds / 2) + 1);
}

/** The host a webhook target calls; SQS and EventBridge targets are AWS's and need no breaker. */
function webhookHost(target: Target): string | undefined {
  if (target.type !== 'http') return undefined;
  try {
    return new URL(target.url).host.toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * A dispatcher that consults the breaker before every webhook call. A refused call is not made:
 * it comes back as `notCalled`, with the time the circuit stays open as its Retry-After, so the
 * callback puts the task off without spending an attempt and without holding the batch. An
 * admitted call is never abandoned: a receiver may process a call whose answer we stopped
 * waiting for, and calling it again for the same attempt would be a duplicate.
 */
export function guardedByHostBreaker(dispatcher: TargetDispatcher, breaker: HostBreaker): TargetDispatcher {
  return {
    async dispatch(target: Target, notification: Notification, sender: Sender): Promise<TargetResult> {
      const host = webhookHost(target);
      if (host === undefined) return dispatcher.dispatch(target, notification, sender);
      const circuit = circuitOf(sender.tenantId, host);
      for (let callEnd = breaker.nextCallEnd(circuit); callEnd; callEnd = breaker.nextCallEnd(circuit)) await callEnd;
      const admission = breaker.admit(circuit);
      if (!admission.admitted) {
        return {
          ok: false,
          notCalled: true,
          error: `not called: ${host} left calls unanswered repeatedly and is rested until its circuit half-opens`,
          retryAfterSeconds: spread(admission.retryAfterSeconds),
        };
      }
      const callEnded = breaker.callStarted(circuit);
      const endWatch = breaker.watchSlowCall(circuit, callEnded);
      try {
        const result = await dispatcher.dispatch(target, notification, sender);
        // A slow call already counted its silence; an answer, however late, still closes the circuit.
        if (!(endWatch() && unanswered(result))) breaker.record(circuit, unanswered(result));
        return result;
      } catch (error) {
        // Dispatchers report failures rather than throw, but a probe that never reports would
        // leave the circuit half-open, refusing the host for good.
        if (!endWatch()) breaker.record(circuit, true);
        throw error;
      } finally {
        callEnded();
      }
    },
  };
}
