/** Pure arithmetic for the bench: percentiles, histograms, series and DynamoDB's item-size rules. */

/** The q-quantile (0..1) of `values` by the nearest-rank method; NaN for no values. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

export interface LatenessSummary {
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly max: number;
}

export function summarize(latenessMs: readonly number[]): LatenessSummary {
  return {
    p50: quantile(latenessMs, 0.5),
    p95: quantile(latenessMs, 0.95),
    p99: quantile(latenessMs, 0.99),
    max: latenessMs.length === 0 ? Number.NaN : Math.max(...latenessMs),
  };
}

export interface Bin {
  /** Lower edge, inclusive. */
  readonly from: number;
  /** Upper edge, exclusive; Infinity for the overflow bin. */
  readonly to: number;
  readonly count: number;
}

/** Counts values into bins with the given upper edges (ascending), plus one overflow bin. */
export function histogram(values: readonly number[], edges: readonly number[]): Bin[] {
  const bounds = [Number.NEGATIVE_INFINITY, ...edges, Number.POSITIVE_INFINITY];
  const counts = new Array<number>(bounds.length - 1).fill(0);
  for (const value of values) {
    const index = bounds.findIndex((bound, position) => position > 0 && value < bound) - 1;
    counts[index] = (counts[index] ?? 0) + 1;
  }
  return counts.map((count, index) => ({
    from: index === 0 ? Math.min(0, ...values) : (bounds[index] as number),
    to: bounds[index + 1] as number,
    count,
  }));
}

/** How many of `timesMs` fall in each whole second from `startMs`, through the last one. */
export function perSecond(timesMs: readonly number[], startMs: number): number[] {
  if (timesMs.length === 0) return [];
  const seconds = timesMs.map((time) => Math.floor((time - startMs) / 1000)).filter((second) => second >= 0);
  const series = new Array<number>(Math.max(0, ...seconds) + 1).fill(0);
  for (const second of seconds) series[second] = (series[second] ?? 0) + 1;
  return series;
}

/** Requests on one partition key, by the wall-clock second they were made in. */
export type KeyActivity = Map<string, Map<number, { writes: number; reads: number }>>;

export interface KeyPeak {
  readonly key: string;
  readonly perSecond: number;
  /** All units on that key over the whole run. */
  readonly total: number;
}

/** The key with the most write (or read) units in any one second, and the most units on any key in all. */
export function peakPerKey(
  activity: KeyActivity,
  kind: 'writes' | 'reads',
  keyPrefix = '',
): { busiestSecond: KeyPeak; busiestKey: KeyPeak } {
  let busiestSecond: KeyPeak = { key: '', perSecond: 0, total: 0 };
  let busiestKey: KeyPeak = { key: '', perSecond: 0, total: 0 };
  for (const [key, seconds] of activity) {
    if (!key.startsWith(keyPrefix)) continue;
    const counts = [...seconds.values()].map((units) => units[kind]);
    const total = counts.reduce((sum, count) => sum + count, 0);
    const peak = Math.max(0, ...counts);
    if (peak > busiestSecond.perSecond) busiestSecond = { key, perSecond: peak, total };
    if (total > busiestKey.total) busiestKey = { key, perSecond: peak, total };
  }
  return { busiestSecond, busiestKey };
}

/** Size of a number as DynamoDB stores it: about one byte per two significant digits, plus one. */
function numberBytes(value: number): number {
  const digits = String(Math.abs(value)).replace('.', '').replace(/^0+/, '').replace(/e.*$/, '').length;
  return Math.ceil(Math.max(1, digits) / 2) + 1;
}

/** Size of an attribute value by DynamoDB's published rules (strings UTF-8, 3 bytes per map or list, 1 per element). */
export function attributeBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number') return numberBytes(value);
  if (typeof value === 'boolean' || value === null || value === undefined) return 1;
  if (value instanceof Set) return [...value].reduce((sum: number, element) => sum + attributeBytes(element), 0);
  if (Array.isArray(value)) return 3 + value.reduce((sum: number, element) => sum + 1 + attributeBytes(element), 0);
  if (typeof value === 'object') {
    return (
      3 +
      Object.entries(value).reduce(
        (sum, [name, element]) => sum + 1 + Buffer.byteLength(name) + attributeBytes(element),
        0,
      )
    );
  }
  return 0;
}

/** An item's size as DynamoDB counts it for capacity: names plus values. */
export function itemBytes(item: Record<string, unknown>): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + attributeBytes(value), 0);
}

/** DynamoDB adds this much per item to the storage it bills, for its indexes. */
export const STORAGE_OVERHEAD_BYTES = 100;
