import type { RequestCounter } from './tenants.js';

/** A lease starts at this share of the limit, so a subject's key takes about this many writes a second per instance. */
const LEASES_PER_LIMIT = 10;

interface Lease {
  readonly second: number;
  /** Counts this instance holds and has not used yet. */
  remaining: number;
  /** How many counts the next lease asks for. */
  size: number;
  /** The shared counter refused even a single count: the second is full. */
  full: boolean;
  renewing?: Promise<void>;
}

/**
 * Admits requests against a shared counter by taking counts from it in leases, a tenth of
 * the limit at first, and spending them locally: a subject's counter key then takes about
 * ten writes a second from each instance, however many requests it admits (invariant 8),
 * where one write per request would make it the busiest item in the table. The limit still
 * holds across instances, since every count admitted was first counted in the shared store.
 * What it costs is fairness near the limit: counts one instance leased and did not use are
 * lost to the others, so a subject may be refused slightly before the limit. Each refused
 * lease halves the next one, and once a single count is refused the instance answers false
 * for the rest of that second without writing again.
 */
export class LeasedRequestCounter implements RequestCounter {
  private readonly leases = new Map<string, Lease>();

  constructor(private readonly shared: RequestCounter) {}

  async admit(subject: string, second: number, limit: number, count = 1): Promise<boolean> {
    if (count !== 1) return this.shared.admit(subject, second, limit, count);
    let lease = this.leases.get(subject);
    if (lease?.second !== second) {
      lease = { second, remaining: 0, size: Math.ceil(limit / LEASES_PER_LIMIT), full: false };
      this.leases.set(subject, lease);
    }
    for (;;) {
      if (lease.remaining > 0) {
        lease.remaining--;
        return true;
      }
      if (lease.full) return false;
      lease.renewing ??= this.renew(subject, lease, limit);
      await lease.renewing;
    }
  }

  private async renew(subject: string, lease: Lease, limit: number): Promise<void> {
    try {
      const { size } = lease;
      if (await this.shared.admit(subject, lease.second, limit, size)) lease.remaining += size;
      else if (size === 1) lease.full = true;
      else lease.size = Math.ceil(size / 2);
    } finally {
      lease.renewing = undefined;
    }
  }
}
