/**
 * When a schedule fires: `cron` (5 fields, or 6 with seconds first) in an IANA time zone, or a
 * `rate` (a fixed interval in absolute time, which DST does not move), within optional
 * `startAt` / `endAt`. Pure: every function takes the times it reasons about, never the clock.
 *
 * Cron times are computed by croner from the platform's Intl time zone data. The DST rules are
 * this service's, enforced here and tested in two zones:
 * - a local time that a spring-forward skips fires once, at the first valid instant after it
 *   (02:30 on a day that jumps from 02:00 to 03:00 fires at 03:00), which is what croner does;
 * - a local time that a fall-back repeats fires once, at its first pass. croner fires a daily
 *   time once but an expression that matches every minute of the repeated hour twice, so the
 *   second pass is dropped here (`inSecondPass`).
 */
import { Cron } from 'croner';

import type { FieldError, ScheduleRequest } from '../../contract/wire.js';

/** No schedule fires more often than this: a rate below it, or of zero, is refused. */
export const MIN_INTERVAL_MS = 1000;
/** The longest rate: a year, as far ahead as a task may be due. */
const MAX_RATE_MS = 366 * 24 * 3600 * 1000;

/**
 * An occurrence whose delivery starts more than this after its time was missed (an outage), not
 * merely late. Longer than any recovery of the pipeline itself (a lapsed delivery lease, a local
 * restart, the sweeper's ten-minute overdue pass), so only a real outage skips occurrences.
 */
export const MISSED_AFTER_MS = 15 * 60 * 1000;

/** What a caller does with occurrences missed during an outage: fire the first one late, or none. */
export type CatchUp = NonNullable<ScheduleRequest['catchUp']>;

/** A schedule's timing, as stored. */
export interface RecurrenceSpec {
  readonly cron?: string;
  readonly rate?: string;
  readonly timezone: string;
  readonly startAtMs?: number;
  readonly endAtMs?: number;
  /** A rate's first occurrence when there is no startAt: one interval after the schedule was made or changed. */
  readonly anchorMs: number;
}

/** A parsed timing, ready to compute occurrences. */
export type Recurrence =
  | { readonly kind: 'cron'; readonly cron: Cron; readonly spec: RecurrenceSpec }
  | { readonly kind: 'rate'; readonly everyMs: number; readonly firstMs: number; readonly spec: RecurrenceSpec };

const RATE = /^(?:rate\()?\s*(\d{1,9})\s+(second|minute|hour|day)(s?)\s*\)?$/;
const UNIT_MS = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
const CRON_WRAPPER = /^cron\((.*)\)$/;

/**
 * Whether Intl knows the zone: the platform's data decides, as it does for every computation.
 * The formatter it builds is kept, as every occurrence of a schedule asks again and building one
 * cost more than the rest of the occurrence's computation.
 */
export function isKnownTimeZone(zone: string): boolean {
  try {
    formatterFor(zone);
    return true;
  } catch {
    return false;
  }
}

/** `"5 minutes"` (or `"rate(5 minutes)"`) in milliseconds, or why not. */
function parseRate(text: string): number | string {
  const match = RATE.exec(text.trim());
  if (!match) return 'must be "<n> <unit>" with unit second, minute, hour or day, e.g. "30 seconds" or "1 hour"';
  const [, count, unit, plural] = match as unknown as [string, string, keyof typeof UNIT_MS, string];
  const value = Number(count);
  if (value === 0) return `must be at least ${MIN_INTERVAL_MS / 1000} second: a rate of 0 never moves on`;
  if ((value === 1) === (plural === 's')) return `must say "1 ${unit}" or "${value} ${unit}s"`;
  const everyMs = value * UNIT_MS[unit];
  if (everyMs < MIN_INTERVAL_MS) return `must be at least ${MIN_INTERVAL_MS / 1000} second`;
  if (everyMs > MAX_RATE_MS) return 'must be at most 366 days';
  return everyMs;
}

/** The cron expression's fields, without the optional `cron(...)` wrapper. */
function cronFields(text: string): string {
  return (CRON_WRAPPER.exec(text.trim())?.[1] ?? text).trim();
}

/**
 * Parses a schedule's timing, naming the field at fault: exactly one of `cron` or `rate`, a
 * zone Intl knows, an `endAt` after `startAt`, and at least one occurrence.
 */
export function parseRecurrence(
  spec: RecurrenceSpec,
): { ok: true; value: Recurrence } | { ok: false; errors: FieldError[] } {
  const fail = (path: string, message: string) => ({ ok: false as const, errors: [{ path, message }] });
  if ((spec.cron === undefined) === (spec.rate === undefined)) {
    return fail('cron', 'give exactly one of cron or rate');
  }
  if (!isKnownTimeZone(spec.timezone)) {
    return fail('timezone', `"${spec.timezone}" is not an IANA time zone this platform knows (e.g. "Europe/Berlin")`);
  }
  if (spec.startAtMs !== undefined && spec.endAtMs !== undefined && spec.endAtMs <= spec.startAtMs) {
    return fail('endAt', 'must be after startAt');
  }
  let recurrence: Recurrence;
  if (spec.rate !== undefined) {
    const everyMs = parseRate(spec.rate);
    if (typeof everyMs === 'string') return fail('rate', everyMs);
    recurrence = { kind: 'rate', everyMs, firstMs: spec.startAtMs ?? spec.anchorMs + everyMs, spec };
  } else {
    const fields = cronFields(spec.cron ?? '');
    const count = fields.split(/\s+/).length;
    if (count !== 5 && count !== 6) {
      return fail('cron', 'must have 5 fields (minute hour day month weekday) or 6 (seconds first)');
    }
    try {
      recurrence = { kind: 'cron', cron: new Cron(fields, { timezone: spec.timezone, paused: true }), spec };
    } catch (error) {
      return fail('cron', `is not a valid cron expression: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const first = nextOccurrence(recurrence, (spec.startAtMs ?? spec.anchorMs) - 1);
  if (first === undefined) {
    return fail(
      spec.endAtMs === undefined ? (spec.cron === undefined ? 'rate' : 'cron') : 'endAt',
      'the schedule would never fire',
    );
  }
  return { ok: true, value: recurrence };
}

/** The zone's offset from UTC at `atMs`, in milliseconds, from Intl. */
function offsetMs(zone: string, atMs: number): number {
  const parts = Object.fromEntries(
    formatterFor(zone)
      .formatToParts(new Date(atMs))
      .map((part) => [part.type, Number(part.value)]),
  );
  const local = Date.UTC(parts.year ?? 0, (parts.month ?? 1) - 1, parts.day, parts.hour, parts.minute, parts.second);
  return local - Math.floor(atMs / 1000) * 1000;
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

/** The longest look back for a fall-back transition: every zone's DST shift is at most 2 hours. */
const TRANSITION_WINDOW_MS = 3 * 3600 * 1000;

/**
 * Whether the local time at `atMs` is the second pass of a time a fall-back repeats: an earlier
 * instant, before the clocks went back, showed the same local time.
 */
export function inSecondPass(zone: string, atMs: number): boolean {
  const before = offsetMs(zone, atMs - TRANSITION_WINDOW_MS);
  const now = offsetMs(zone, atMs);
  if (before <= now) return false;
  return offsetMs(zone, atMs - (before - now)) === before;
}

/** The first occurrence strictly after `afterMs`, or undefined when there is none (past endAt, or never). */
export function nextOccurrence(recurrence: Recurrence, afterMs: number): number | undefined {
  const { startAtMs, endAtMs } = recurrence.spec;
  const from = startAtMs === undefined ? afterMs : Math.max(afterMs, startAtMs - 1);
  let next: number | undefined;
  if (recurrence.kind === 'rate') {
    const steps = from < recurrence.firstMs ? 0 : Math.floor((from - recurrence.firstMs) / recurrence.everyMs) + 1;
    next = recurrence.firstMs + steps * recurrence.everyMs;
  } else {
    let cursor = from;
    // A repeated hour holds at most 3,600 second-pass occurrences; each is skipped in turn.
    for (let guard = 0; guard <= 3600; guard++) {
      const run = recurrence.cron.nextRun(new Date(cursor));
      if (!run) return undefined;
      if (!inSecondPass(recurrence.spec.timezone, run.getTime())) {
        next = run.getTime();
        break;
      }
      cursor = run.getTime();
    }
  }
  return next === undefined || (endAtMs !== undefined && next > endAtMs) ? undefined : next;
}

/** Up to `count` occurrences after `afterMs`, in order. */
export function occurrencesAfter(recurrence: Recurrence, afterMs: number, count: number): number[] {
  const out: number[] = [];
  for (let at = nextOccurrence(recurrence, afterMs); at !== undefined && out.length < count;) {
    out.push(at);
    at = nextOccurrence(recurrence, at);
  }
  return out;
}

/** Whether an occurrence due at `occurrenceMs` whose delivery starts at `nowMs` was missed, not merely late. */
export function isMissed(occurrenceMs: number, nowMs: number): boolean {
  return nowMs - occurrenceMs > MISSED_AFTER_MS;
}

/**
 * The occurrence that follows the one at `occurrenceMs`, chosen when that one is delivered at
 * `nowMs`: the next in line, unless it too was missed (an outage), in which case every missed one
 * is passed over and the schedule resumes with the first occurrence after now. So after an outage
 * at most one late occurrence fires (the one already waiting), and a late pipeline that catches up
 * within MISSED_AFTER_MS skips none.
 */
export function successorOf(recurrence: Recurrence, occurrenceMs: number, nowMs: number): number | undefined {
  const next = nextOccurrence(recurrence, occurrenceMs);
  if (next === undefined || !isMissed(next, nowMs)) return next;
  return nextOccurrence(recurrence, nowMs);
}
