import { randomInt } from 'node:crypto';

import type { CounterSubject, RateLimiter, RequestCounter } from './tenants.js';

/**
 * Counts one counter share holds a second, where the limit allows shares enough: a share's item
 * takes at most this many lease writes a second, however many instances or requests there are.
 * Leases of one count are the rule at scale (a billion single submits a day run about 2,750 api
 * instances, so most submits are the first of their tenant on their instance that second), and
 * with 8 shares of a 200 limit a tenant's busiest item took a write per submit it carried.
 */
const COUNTS_PER_SHARE = 8;

/**
 * The most shares a subject's limit is spread over: beyond this a share holds more than
 * COUNTS_PER_SHARE, and its writes are bounded by the fleet instead (2,750 instances, each about
 * one lease a second, over 64 shares is about 43 writes a second on an item), while an instance
 * that finds the subject full has at most 64 shares to hear it from.
 */
export const MAX_COUNTER_SHARES = 64;

/**
 * How many shares one request may find full before it is refused: a request near the limit is
 * not held for a walk over every share, and the shares it found full stay skipped for the rest of
 * the second, so the instance's later requests go on to the others.
 */
const FULL_SHARES_PER_REQUEST = 3;

/** The largest lease, as a share of one counter share's limit, so a share is not taken by a few instances. */
const MAX_LEASE_OF_SHARE = 1 / 2;

/** How many counter shares a subject with `limit` a second spreads its counts over. */
export function sharesOf(limit: number): number {
  return Math.min(MAX_COUNTER_SHARES, Math.max(1, Math.ceil(limit / COUNTS_PER_SHARE)));
}

/** The part of `limit` share `share` holds: the remainder goes to the first shares, so the parts add up to the limit. */
export function shareOf(limit: number, share: number): number {
  const shares = sharesOf(limit);
  return Math.floor(limit / shares) + (share < limit % shares ? 1 : 0);
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
 * the second's demand outruns it, up to half a share: sized to the instance's own
 * traffic, a lease leaves the rest of the limit to the other instances. Each lease goes to the
 * next share (from one chosen at random when the instance starts), so however few instances run,
 * their leases spread evenly. A refused lease is asked again as a single count, and a share that
 * refuses one is skipped for the rest of the second, so a subject over its limit costs each
 * instance at most about two writes per share a second, and a request at most
 * FULL_SHARES_PER_REQUEST refusals; once every share has refused, the instance answers false for
 * the rest of that second without writing again. What it costs is
 * fairness near the limit: counts an instance leased and did not use are lost to the others, so
 * a subject may be refused slightly before its limit.
 */
export class LeasedRequestCounter implements RateLimiter {
  private readonly leases = new Map<string, Lease>();

  /** Where this instance's round of the shares stands: the next lease asks share `nextShare % shares` first. */
  private nextShare: number;

  constructor(
    private readonly shared: RequestCounter,
    firstShare = randomInt(MAX_COUNTER_SHARES),
  ) {
    this.nextShare = firstShare;
  }

  async admit(subject: CounterSubject, second: number, limit: number): Promise<boolean> {
    const lease = this.leaseFor(subject, second, limit);
    const fullBefore = lease.fullShares.size;
    for (;;) {
      if (lease.remaining > 0) {
        lease.remaining--;
        lease.used++;
        return true;
      }
      if (lease.fullShares.size === sharesOf(limit)) return false;
      if (lease.fullShares.size - fullBefore >= FULL_SHARES_PER_REQUEST) return false;
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
      const share = this.shareToAsk(lease, sharesOf(limit));
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
  private shareToAsk(lease: Lease, shares: number): number {
    for (let step = 0; step < shares; step++) {
      const share = (this.nextShare + step) % shares;
      if (!lease.fullShares.has(share)) {
        this.nextShare += step + 1;
        return share;
      }
    }
    return this.nextShare % shares;
  }
}

const maxLease = (limit: number) => Math.max(1, Math.floor((limit / sharesOf(limit)) * MAX_LEASE_OF_SHARE));
