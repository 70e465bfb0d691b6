/**
 * EventBridge's PutEvents quota per account and region, divided by k: entries counted in
 * one-second windows aligned to the clock's seconds. The local EventBridge sink asks `admit`
 * per request and answers a refused one with ThrottlingException, as EventBridge does, which
 * the SDK retries with backoff.
 */
import { AWS_LIMITS } from '../../../functions/contract/aws-limits.js';
import type { Clock } from '../../../functions/core/kernel/task.js';
import { scaledRate } from './scaled-rate.js';

export interface PutEventsThrottleReport {
  readonly entriesPerSecond: number;
  readonly requests: number;
  readonly entries: number;
  /** Requests refused with ThrottlingException (each may be retried by the SDK and count again). */
  readonly throttled: number;
  /** The most entries admitted in one second. */
  readonly peakEntriesPerSecond: number;
}

export class PutEventsThrottle {
  readonly entriesPerSecond: number;
  private windowSecond = -1;
  private windowEntries = 0;
  private requests = 0;
  private entries = 0;
  private throttled = 0;
  private peakEntriesPerSecond = 0;

  constructor(
    private readonly options: {
      readonly k: number;
      readonly clock: Pick<Clock, 'now'>;
      /** @default AWS_LIMITS.eventBridge.putEventsPerSecond (10,000), divided by k */
      readonly entriesPerSecond?: number;
    },
  ) {
    this.entriesPerSecond =
      options.entriesPerSecond ?? scaledRate(AWS_LIMITS.eventBridge.putEventsPerSecond, options.k);
  }

  /** Whether a request of `entries` entries fits this second's window; an admitted one is charged. */
  admit(entries: number): boolean {
    const second = Math.floor(this.options.clock.now() / 1000);
    if (second !== this.windowSecond) {
      this.windowSecond = second;
      this.windowEntries = 0;
    }
    this.requests += 1;
    if (this.windowEntries + entries > this.entriesPerSecond) {
      this.throttled += 1;
      return false;
    }
    this.windowEntries += entries;
    this.entries += entries;
    this.peakEntriesPerSecond = Math.max(this.peakEntriesPerSecond, this.windowEntries);
    return true;
  }

  report(): PutEventsThrottleReport {
    const { entriesPerSecond, requests, entries, throttled, peakEntriesPerSecond } = this;
    return { entriesPerSecond, requests, entries, throttled, peakEntriesPerSecond };
  }
}
