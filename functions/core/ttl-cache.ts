import type { Clock } from './task.js';

/** Entries a cache holds before it starts over; the bound keeps a flood of made-up keys from exhausting memory. */
const MAX_CACHED_ENTRIES = 10_000;

/**
 * A kept entry lives between (1 − this) × ttlMs and ttlMs, at random: instances that started
 * together (a scale-up) would otherwise all read the same item again in the same second, each time
 * their entries lapse; spread, they never exceed the promised ttlMs.
 */
const TTL_JITTER = 0.25;

/**
 * Remembers what `load` answered for a key for up to `ttlMs`. The promise itself is kept, so
 * concurrent lookups of one key (a batch of tasks naming one bizType) share one read; a
 * failed read is forgotten at once, so the next lookup tries again.
 */
export function ttlCache(clock: Clock, ttlMs: number): <T>(key: string, load: () => Promise<T>) => Promise<T> {
  const cache = new Map<string, { value: Promise<unknown>; expiresAtMs: number }>();
  return function remembered<T>(key: string, load: () => Promise<T>): Promise<T> {
    const nowMs = clock.now();
    const hit = cache.get(key);
    if (hit && hit.expiresAtMs > nowMs) return hit.value as Promise<T>;
    if (cache.size >= MAX_CACHED_ENTRIES) cache.clear();
    const value = load();
    cache.set(key, { value, expiresAtMs: nowMs + ttlMs * (1 - TTL_JITTER * Math.random()) });
    value.catch(() => cache.delete(key));
    return value;
  };
}
