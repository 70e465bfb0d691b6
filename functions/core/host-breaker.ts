import { randomInt } from 'node:crypto';

import type { DispatchOptions, Notification, Sender, TargetDispatcher, TargetResult } from './deliver.js';
import type { Clock, Target } from './task.js';

/** When a tenant's webhook host is taken for dead, and for how long no call is made to it. */
export interface HostBreakerSettings {
  /** Consecutive host failures (no answer, a timeout, a 5xx or a 429) that open a host's circuit. */
  readonly failureThreshold: number;
  /** How long an open circuit refuses calls before one probe call is let through. */
  readonly openMs: number;
  /**
   * A call still unanswered this long counts as a host failure there and then, and is given up
   * (retried after `openMs`) unless its host has answered this instance within the last `openMs`
   * or the call was asked to be patient. Otherwise a hanging host is known to fail only at the
   * webhook timeout, and every call made to it until then holds its batch for the whole timeout:
   * the five failures that open a circuit often come one or two a batch. Once the circuit opens,
   * the calls still waiting on it, patient ones and the probe included, are given up too; a late
   * answer from any of them still closes it, and makes the host's next calls patient.
   */
  readonly slowCallMs: number;
}

/**
 * Five failures in a row is a host that is down, not a flaky request. Two seconds unanswered is
 * slow for a webhook (most answer in tens of milliseconds), so a call to a hanging host holds its
 * batch about two seconds, not the ten of the webhook timeout. A receiver that is merely slow
 * still gets its calls: its first call in an instance may be given up (it may well arrive, and
 * its task is delivered again later: at least once), but its late answer makes its next calls
 * there patient, and the given-up task's next attempt is patient wherever it runs. Thirty
 * seconds open costs each callback instance 2 s of one batch per half-minute (a hanging probe is
 * given up too), and a host back up loses at most its remaining open time.
 */
export const DEFAULT_HOST_BREAKER: HostBreakerSettings = {
  failureThreshold: 5,
  openMs: 30_000,
  slowCallMs: 2_000,
};

/** A host's circuit: closed (calls go through), open until a time, or half-open with one probe in flight. */
type Circuit =
  | { readonly state: 'closed'; readonly failures: number }
  | { readonly state: 'open'; readonly untilMs: number }
  | { readonly state: 'half-open' };

export type CircuitState = Circuit['state'];

/** Whether a call may go to a host now; a refused one says when to ask again. */
export type Admission = { readonly admitted: true } | { readonly admitted: false; readonly retryAfterSeconds: number };

/**
 * The circuit a webhook call goes through: one per tenant and host. Tenants share hosts (a
 * webhook relay, one company's gateway for several services): a circuit per host alone would let
 * one tenant's failing endpoint refuse every other tenant's calls to that host for `openMs`.
 */
export const circuitOf = (tenantId: string, host: string) => `${tenantId} ${host}`;

/** Hosts whose last answer an instance remembers; past it the longest-silent are forgotten (and their calls hurried). */
const MAX_REMEMBERED_HOSTS = 10_000;

/**
 * Circuit breakers per tenant and webhook host (`circuitOf`), kept in the callback instance. A
 * dead or hanging host then costs each instance about `slowCallMs` of the batch that meets it
 * first and of one probe per open period, instead of a call (and, hanging, a full webhook
 * timeout of concurrency) per task: one tenant's broken receiver can neither soak up the
 * callback's concurrency nor hold up other tenants' records. Nothing is shared between
 * instances, so the check costs no request; each instance learns on its own.
 */
export class HostBreaker {
  private readonly circuits = new Map<string, Circuit>();
  /** Calls waiting on each circuit that are to be given up if it opens. */
  private readonly givingUp = new Map<string, Set<() => void>>();
  /** When each circuit's host last answered a call, oldest first; a slow call to a host that answered lately is waited on. */
  private readonly answeredAtMs = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    readonly settings: HostBreakerSettings = DEFAULT_HOST_BREAKER,
  ) {}

  /** Whether the circuit's host answered a call within the last `openMs`. */
  answeredRecently(key: string): boolean {
    const answeredAtMs = this.answeredAtMs.get(key);
    return answeredAtMs !== undefined && this.clock.now() - answeredAtMs <= this.settings.openMs;
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
      this.circuits.set(key, { state: 'half-open' });
      return { admitted: true };
    }
    // A probe is in flight; its answer decides, and until then the host is still taken for dead.
    return { admitted: false, retryAfterSeconds: Math.ceil(this.settings.openMs / 1000) };
  }

  /** Records an admitted call's answer: a success closes the circuit, a host failure counts towards opening it. */
  record(key: string, hostFailed: boolean): void {
    const circuit = this.circuits.get(key) ?? { state: 'closed', failures: 0 };
    if (!hostFailed) {
      // Closed with no failures is the default, so the map only holds hosts that are failing.
      this.circuits.delete(key);
      this.answered(key);
      return;
    }
    if (circuit.state === 'open') return; // a call admitted before the circuit opened, failing late
    const failures = circuit.state === 'closed' ? circuit.failures + 1 : this.settings.failureThreshold;
    if (failures >= this.settings.failureThreshold) this.open(key);
    else this.circuits.set(key, { state: 'closed', failures });
  }

  private answered(key: string): void {
    this.answeredAtMs.delete(key);
    if (this.answeredAtMs.size >= MAX_REMEMBERED_HOSTS)
      this.answeredAtMs.delete(this.answeredAtMs.keys().next().value ?? '');
    this.answeredAtMs.set(key, this.clock.now());
  }

  /**
   * Watches an admitted call: if it is still unanswered after `slowCallMs` it is recorded as a
   * host failure then, and `onSlow` is told. Returns what ends the watch, to call once the call
   * has answered; it says whether the call was already recorded as slow (so its own failure is
   * not counted again).
   */
  watchSlowCall(key: string, onSlow: () => void = () => undefined): () => boolean {
    let countedSlow = false;
    const timer = setTimeout(() => {
      countedSlow = true;
      this.record(key, true);
      onSlow();
    }, this.settings.slowCallMs);
    return () => {
      clearTimeout(timer);
      return countedSlow;
    };
  }

  /**
   * Calls `giveUp` if the circuit opens before the returned function is called: how a call in
   * flight is abandoned once its host is taken for dead, instead of holding its batch to the
   * webhook timeout.
   */
  onOpen(key: string, giveUp: () => void): () => void {
    const waiting = this.givingUp.get(key) ?? new Set();
    this.givingUp.set(key, waiting.add(giveUp));
    return () => {
      waiting.delete(giveUp);
      if (waiting.size === 0 && this.givingUp.get(key) === waiting) this.givingUp.delete(key);
    };
  }

  private open(key: string): void {
    this.circuits.set(key, { state: 'open', untilMs: this.clock.now() + this.settings.openMs });
    const waiting = this.givingUp.get(key);
    this.givingUp.delete(key);
    for (const giveUp of waiting ?? []) giveUp();
  }
}

/**
 * Whether a failed call says the host is unwell rather than that this one request was refused:
 * no HTTP answer at all (refused, unreachable, timed out) or an answer that the server is
 * failing or overloaded. A 4xx other than 429 is the receiver's verdict on the request.
 */
function isHostFailure(result: TargetResult): boolean {
  if (result.ok) return false;
  const status = result.statusCode;
  return status === undefined || status >= 500 || status === 429;
}

/**
 * A refused or given-up task comes back at a time spread over `[seconds, 1.5 × seconds]`, not all
 * when the circuit half-opens: a dead tenant's parked tasks (at a billion a day a quarter of the
 * traffic is some 87,000 in 30 s) would otherwise all come back in one second, with a write or
 * two each, and throttle the table every tenant shares. The scale model's (d) saw 32 table
 * write throttles from it.
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
 * A dispatcher that consults the breaker before every webhook call. A refused call fails the
 * attempt at once with the time the circuit stays open as its Retry-After, so the callback's
 * usual retry path puts the task off without a call and without holding the batch.
 */
export function guardedByHostBreaker(dispatcher: TargetDispatcher, breaker: HostBreaker): TargetDispatcher {
  return {
    async dispatch(
      target: Target,
      notification: Notification,
      sender: Sender,
      options: DispatchOptions = {},
    ): Promise<TargetResult> {
      const host = webhookHost(target);
      if (host === undefined) return dispatcher.dispatch(target, notification, sender, options);
      const circuit = circuitOf(sender.tenantId, host);
      const admission = breaker.admit(circuit);
      if (!admission.admitted) {
        return {
          ok: false,
          error: `not called: ${host} failed repeatedly and is rested until its circuit half-opens`,
          retryAfterSeconds: spread(admission.retryAfterSeconds),
        };
      }
      const { openMs, slowCallMs } = breaker.settings;
      let giveUp: (why: string) => void = () => undefined;
      const givenUp = new Promise<TargetResult>((resolve) => {
        giveUp = (why) =>
          resolve({
            ok: false,
            error: `given up: ${host} ${why}`,
            retryAfterSeconds: spread(Math.ceil(openMs / 1000)),
          });
      });
      const stopWaiting = breaker.onOpen(circuit, () =>
        giveUp('stopped answering and its circuit opened while this call waited'),
      );
      const patient = options.patient === true || breaker.answeredRecently(circuit);
      const giveUpSlow = () =>
        giveUp(
          `did not answer within ${slowCallMs} ms and has not answered lately; the next attempt waits for the webhook timeout`,
        );
      const endWatch = breaker.watchSlowCall(circuit, patient ? undefined : giveUpSlow);
      // The call's own end comes first: it stops waiting before its answer can open the circuit.
      const call = dispatcher.dispatch(target, notification, sender, options).then(
        (result) => {
          stopWaiting();
          const countedSlow = endWatch();
          // A slow call already counted its failure; an answer, however late, still closes the circuit.
          if (!(countedSlow && isHostFailure(result))) breaker.record(circuit, isHostFailure(result));
          return result;
        },
        (error: unknown) => {
          stopWaiting();
          // Dispatchers report failures rather than throw, but a probe that never reports would
          // leave the circuit half-open, refusing the host for good.
          if (!endWatch()) breaker.record(circuit, true);
          throw error;
        },
      );
      // An abandoned call runs on to its own end (its answer still counts), unless the instance is frozen first.
      call.catch(() => undefined);
      try {
        return await Promise.race([call, givenUp]);
      } finally {
        stopWaiting();
      }
    },
  };
}
