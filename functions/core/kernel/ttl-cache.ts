import type { Clock } from './task.js';

/**
 * Keys a cache remembers as found. Only items that exist land here, so callers cannot fill it
 * with made-up keys; the bound only caps memory, and when it is reached the oldest entry goes.
 */
const MAX_FOUND_ENTRIES = 10_000;

/**
 * Keys a cache remembers as missing (their load answered undefined). Anyone can make up missing
 * keys, so they have a bound of their own: a flood of them pushes out only older missing keys,
 * never an entry that was found.
 */
export const MAX_MISSING_ENTRIES = 1_000;

/**
 * A kept entry lives between (1 − this) × ttlMs and ttlMs, at random: instances that started
 * together (a scale-up) would otherwise all read the same item again in the same second, each time
 * their entries lapse; spread, they never exceed the promised ttlMs.
 */
const TTL_JITTER = 0.25;

interface Entry {
  readonly value: unknown;
  readonly expiresAtMs: number;
}

/** Remembers `key` last in `entries`, dropping the oldest entries beyond `bound`. */
function keep(entries: Map<string, Entry>, bound: number, key: string, entry: Entry): void {
  entries.delete(key);
  entries.set(key, entry);
  for (const oldest of entries.keys()) {
    if (entries.size <= bound) break;
    entries.delete(oldest);
  }
}

/**
 * Remembers what `load` answered for a key for up to `ttlMs`: a value among the found entries, an
 * undefined among the missing ones, each with its own bound. Concurrent lookups of one key (a
 * batch of tasks naming one bizType) share one read; a failed read is forgotten at once, so the
 * next lookup tries again.
 */
export function ttlCache(clock: Clock, ttlMs: number): <T>(key: string, load: () => Promise<T>) => Promise<T> {
  const found = new Map<string, Entry>();
  const missing = new Map<string, Entry>();
  const loading = new Map<string, Promise<unknown>>();
  return function remembered<T>(key: string, load: () => Promise<T>): Promise<T> {
    const nowMs = clock.now();
    const hit = found.get(key) ?? missing.get(key);
    if (hit && hit.expiresAtMs > nowMs) return Promise.resolve(hit.value as T);
    const pending = loading.get(key);
    if (pending) return pending as Promise<T>;
    const value = load().then(
      (loaded) => {
        loading.delete(key);
        const entry = { value: loaded, expiresAtMs: nowMs + ttlMs * (1 - TTL_JITTER * Math.random()) };
        if (loaded === undefined) {
          found.delete(key);
          keep(missing, MAX_MISSING_ENTRIES, key, entry);
        } else {
          missing.delete(key);
          keep(found, MAX_FOUND_ENTRIES, key, entry);
        }
        return loaded;
      },
      (error: unknown) => {
        loading.delete(key);
        throw error;
      },
    );
    loading.set(key, value);
    return value;
  };
}
