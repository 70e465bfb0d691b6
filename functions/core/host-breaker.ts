import type { Notification, Sender, TargetDispatcher, TargetResult } from './deliver.js';
import type { Clock, Target } from './task.js';

/** When a tenant's webhook host is taken for dead, and for how long no call is made to it. */
export interface HostBreakerSettings {
  /** Consecutive host failures (no answer, a timeout, a 5xx or a 429) that open a host's circuit. */
  readonly failureThreshold: number;
  /** How long an open circuit refuses calls before one probe call is let through. */
  readonly openMs: number;
}

/**
 * Five failures in a row is a host that is down, not a flaky request; thirty seconds is
 * long enough that a hanging host costs each callback instance at most one 10 s call per
 * half-minute, and short enough that a host back up loses little more than its first
 * retry's backoff.
 */
export const DEFAULT_HOST_BREAKER: HostBreakerSettings = { failureThreshold: 5, openMs: 30_000 };

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

/**
 * Circuit breakers per tenant and webhook host (`circuitOf`), kept in the callback instance. A
 * dead or hanging host then costs each instance `failureThreshold` calls and one probe per
 * `openMs`, instead of a call (and, hanging, a full webhook timeout of concurrency) per task: one
 * tenant's broken receiver can neither soak up the callback's concurrency nor hold up other
 * tenants' records. Nothing is shared between instances, so the check costs no request; each
 * instance learns on its own.
 */
export class HostBreaker {
  private readonly circuits = new Map<string, Circuit>();

  constructor(
    private readonly clock: Clock,
    private readonly settings: HostBreakerSettings = DEFAULT_HOST_BREAKER,
  ) {}

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
      return;
    }
    const failures = circuit.state === 'closed' ? circuit.failures + 1 : this.settings.failureThreshold;
    this.circuits.set(
      key,
      failures >= this.settings.failureThreshold
        ? { state: 'open', untilMs: this.clock.now() + this.settings.openMs }
        : { state: 'closed', failures },
    );
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
    async dispatch(target: Target, notification: Notification, sender: Sender): Promise<TargetResult> {
      const host = webhookHost(target);
      if (host === undefined) return dispatcher.dispatch(target, notification, sender);
      const circuit = circuitOf(sender.tenantId, host);
      const admission = breaker.admit(circuit);
      if (!admission.admitted) {
        return {
          ok: false,
          error: `not called: ${host} failed repeatedly and is rested until its circuit half-opens`,
          retryAfterSeconds: admission.retryAfterSeconds,
        };
      }
      let result: TargetResult;
      try {
        result = await dispatcher.dispatch(target, notification, sender);
      } catch (error) {
        // Dispatchers report failures rather than throw, but a probe that never reports would
        // leave the circuit half-open, refusing the host for good.
        breaker.record(circuit, true);
        throw error;
      }
      breaker.record(circuit, isHostFailure(result));
      return result;
    },
  };
}
