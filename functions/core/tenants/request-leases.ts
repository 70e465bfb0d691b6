import { randomInt } from 'node:crypto';

import type { CounterSubject, RateLimiter, RequestCounter } from './tenants.js';

/**
 * Counter items each subject's second is spread over, each holding its share of the limit.
 * Every instance takes about one lease a second, from the shares in turn, so a share's item
 * takes about (instances / COUNTER_SHARES) writes a second: a billion single submits a day run
 * about 2,750 api instances at their peak, which one item (1,000 writes a second) could not carry.
 */
export const COUNTER_SHARES = 8;

/** The largest lease, as a share of one counter share's limit, so a share is not taken by a few instances. */
const MAX_LEASE_OF_SHARE = 1 / 4;

/** The part of `limit` share `share` holds: the remainder goes to the first shares, so the parts add up to the limit. */
export function shareOf(limit: number, share: number): number {
  return Math.floor(limit / COUNTER_SHARES) + (share < limit % COUNTER_SHARES ? 1 : 0);
}

interface Lease {
  readonly second: number;
  /** Counts this instance holds and has not used yet. */
  remaining: number;
  /** Counts used this second: the next second's first lease asks for as many. */
  used: number;
  /** How many counts the next lease asks for. */
  size: number;
  /** Shares that refused even a single count this second. */
  readonly fullShares: Set<number>;
  renewing?: Promise<void>;
}

/**
 * Admits requests against a shared counter by taking counts from it in leases and spending them
 * locally, so a subject's counter items take about one write a second from each instance, however
 * many requests it admits (invariant 8). The limit still holds across instances, since every count
 * admitted was first counted in the shared store.
 *
 * A lease asks for what this instance used in the previous second (at least one), doubling while
 * the second's demand outruns it, up to a quarter of a share: sized to the instance's own
 * traffic, a lease leaves the rest of the limit to the other instances. Each lease goes to the
 * next share (from one chosen at random when the instance starts), so however few instances run,
 * their leases spread evenly. A refused lease is asked again as a single count, and a share that
 * refuses one is skipped for the rest of the second, so a subject over its limit costs each
 * instance at most about two writes per share a second; once every share has refused, the
 * instance answers false for the rest of that second without writing again. What it costs is
 * fairness near the limit: counts an instance leased and did not use are lost to the others, so
 * a subject may be refused slightly before its limit.
 */
export class LeasedRequestCounter implements RateLimiter {
  private readonly leases = new Map<string, Lease>();

  /** The share the next lease asks first. */
  private nextShare: number;

  constructor(
    private readonly shared: RequestCounter,
    firstShare = randomInt(COUNTER_SHARES),
  ) {
    this.nextShare = firstShare;
  }

  async admit(subject: CounterSubject, second: number, limit: number): Promise<boolean> {
    const lease = this.leaseFor(subject, second, limit);
    for (;;) {
      if (lease.remaining > 0) {
        lease.remaining--;
        lease.used++;
        return true;
      }
      if (lease.fullShares.size === COUNTER_SHARES) return false;
      lease.renewing ??= this.renew(subject, lease, limit);
      await lease.renewing;
    }
  }

  private leaseFor(subject: CounterSubject, second: number, limit: number): Lease {
    // By the subject's parts as a tuple, so no two subjects share a lease whatever their text holds.
    const name = JSON.stringify([subject.tenantId, subject.bizType ?? null]);
    const last = this.leases.get(name);
    if (last?.second === second) return last;
    const demand = last?.second === second - 1 ? last.used : 1;
    const lease: Lease = {
      second,
      remaining: 0,
      used: 0,
      size: Math.min(Math.max(1, demand), maxLease(limit)),
      fullShares: new Set(),
    };
    this.leases.set(name, lease);
    return lease;
  }

  private async renew(subject: CounterSubject, lease: Lease, limit: number): Promise<void> {
    try {
      const share = this.shareToAsk(lease);
      const { size } = lease;
      if (await this.shared.admit({ ...subject, share }, lease.second, shareOf(limit, share), size)) {
        lease.remaining += size;
        lease.size = Math.min(size * 2, maxLease(limit));
      } else if (size > 1) lease.size = 1;
      else lease.fullShares.add(share);
    } finally {
      lease.renewing = undefined;
    }
  }

  /** The next share in turn that has not refused this second. */
  private shareToAsk(lease: Lease): number {
    for (let step = 0; step < COUNTER_SHARES; step++) {
      const share = (this.nextShare + step) % COUNTER_SHARES;
      if (!lease.fullShares.has(share)) {
        this.nextShare = (share + 1) % COUNTER_SHARES;
        return share;
      }
    }
    return this.nextShare;
  }
}

const maxLease = (limit: number) => Math.max(1, Math.floor((limit / COUNTER_SHARES) * MAX_LEASE_OF_SHARE));
