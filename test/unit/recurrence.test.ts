import { describe, expect, it } from 'vitest';

import {
  isMissed,
  MISSED_AFTER_MS,
  nextOccurrence,
  occurrencesAfter,
  parseRecurrence,
  type Recurrence,
  type RecurrenceSpec,
  successorOf,
} from '../../functions/core/schedules/recurrence.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

function recurrence(spec: Partial<RecurrenceSpec>): Recurrence {
  const parsed = parseRecurrence({ timezone: 'UTC', anchorMs: at('2026-01-01T00:00:00Z'), ...spec });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

const errorsOf = (spec: Partial<RecurrenceSpec>) => {
  const parsed = parseRecurrence({ timezone: 'UTC', anchorMs: 0, ...spec });
  return parsed.ok ? [] : parsed.errors;
};

describe('Function: parseRecurrence', () => {
  it('accepts 5-field and 6-field (seconds first) cron, and cron(...) wrapped', () => {
    expect(occurrencesAfter(recurrence({ cron: '*/15 * * * *' }), at('2026-01-01T00:00:00Z'), 2).map(iso)).toEqual([
      '2026-01-01T00:15:00.000Z',
      '2026-01-01T00:30:00.000Z',
    ]);
    expect(occurrencesAfter(recurrence({ cron: '*/10 * * * * *' }), at('2026-01-01T00:00:00Z'), 2).map(iso)).toEqual([
      '2026-01-01T00:00:10.000Z',
      '2026-01-01T00:00:20.000Z',
    ]);
    expect(nextOccurrence(recurrence({ cron: 'cron(0 9 * * *)' }), at('2026-01-01T00:00:00Z'))).toBe(
      at('2026-01-01T09:00:00Z'),
    );
  });

  it('counts a rate from startAt, or one interval after the anchor, in singular or plural', () => {
    const anchored = recurrence({ rate: '5 seconds', anchorMs: at('2026-01-01T00:00:00Z') });
    expect(occurrencesAfter(anchored, at('2026-01-01T00:00:00Z') - 1, 3).map(iso)).toEqual([
      '2026-01-01T00:00:05.000Z',
      '2026-01-01T00:00:10.000Z',
      '2026-01-01T00:00:15.000Z',
    ]);
    const started = recurrence({ rate: 'rate(1 hour)', startAtMs: at('2026-02-01T10:00:00Z') });
    expect(nextOccurrence(started, at('2026-01-01T00:00:00Z'))).toBe(at('2026-02-01T10:00:00Z'));
    expect(nextOccurrence(started, at('2026-02-01T10:00:00Z'))).toBe(at('2026-02-01T11:00:00Z'));
    expect(nextOccurrence(recurrence({ rate: '1 day' }), at('2026-01-01T00:00:00Z'))).toBe(at('2026-01-02T00:00:00Z'));
    expect(nextOccurrence(recurrence({ rate: '2 minutes' }), at('2026-01-01T00:00:00Z'))).toBe(
      at('2026-01-01T00:02:00Z'),
    );
  });

  it('stops at endAt and starts at startAt', () => {
    const bounded = recurrence({
      cron: '0 * * * *',
      startAtMs: at('2026-01-01T05:30:00Z'),
      endAtMs: at('2026-01-01T08:00:00Z'),
    });
    expect(occurrencesAfter(bounded, 0, 10).map(iso)).toEqual([
      '2026-01-01T06:00:00.000Z',
      '2026-01-01T07:00:00.000Z',
      '2026-01-01T08:00:00.000Z',
    ]);
  });

  it('refuses bad input, naming the field', () => {
    expect(errorsOf({ cron: '61 * * * *' })[0]?.path).toBe('cron');
    expect(errorsOf({ cron: '* * *' })[0]).toEqual({
      path: 'cron',
      message: 'must have 5 fields (minute hour day month weekday) or 6 (seconds first)',
    });
    expect(errorsOf({ cron: '0 0 30 2 *' })).toEqual([{ path: 'cron', message: 'the schedule would never fire' }]);
    expect(errorsOf({ cron: '* * * * *', timezone: 'Mars/Olympus_Mons' })[0]?.path).toBe('timezone');
    expect(errorsOf({ rate: '0 seconds' })[0]).toEqual({
      path: 'rate',
      message: 'must be at least 1 second: a rate of 0 never moves on',
    });
    expect(errorsOf({ rate: '5 second' })[0]?.message).toBe('must say "1 second" or "5 seconds"');
    expect(errorsOf({ rate: '1 minutes' })[0]?.path).toBe('rate');
    expect(errorsOf({ rate: '0.5 seconds' })[0]?.path).toBe('rate');
    expect(errorsOf({ rate: 'every minute' })[0]?.path).toBe('rate');
    expect(errorsOf({ cron: '* * * * *', rate: '1 minute' })[0]).toEqual({
      path: 'cron',
      message: 'give exactly one of cron or rate',
    });
    expect(errorsOf({})[0]?.message).toBe('give exactly one of cron or rate');
    expect(errorsOf({ rate: '1 minute', startAtMs: 2000, endAtMs: 1000 })[0]).toEqual({
      path: 'endAt',
      message: 'must be after startAt',
    });
  });

  it('never fires more than once a second: the finest cron and the smallest rate are one second apart', () => {
    const everySecond = occurrencesAfter(recurrence({ cron: '* * * * * *' }), at('2026-01-01T00:00:00.500Z'), 5);
    const gaps = everySecond.slice(1).map((ms, index) => ms - (everySecond[index] ?? 0));
    expect(new Set(gaps)).toEqual(new Set([1000]));
    expect(errorsOf({ rate: '1 second' })).toEqual([]);
  });
});

// Spring forward: Berlin 2026-03-29 02:00 CET → 03:00 CEST; New York 2026-03-08 02:00 EST → 03:00 EDT.
// Fall back: Berlin 2026-10-25 03:00 CEST → 02:00 CET; New York 2026-11-01 02:00 EDT → 01:00 EST.
describe('DST rules', () => {
  it.each([
    ['Europe/Berlin', '2026-03-28T12:00:00Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z'],
    ['America/New_York', '2026-03-07T12:00:00Z', '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z'],
  ])(
    '%s: a daily 02:30 that spring-forward skips fires once, at 03:00, the first valid instant after it',
    (zone, from, skippedDay, nextDay) => {
      const daily = recurrence({ cron: '30 2 * * *', timezone: zone });
      expect(occurrencesAfter(daily, at(from), 2).map(iso)).toEqual([skippedDay, nextDay]);
    },
  );

  it.each([
    ['Europe/Berlin', '2026-10-24T12:00:00Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z'],
    ['America/New_York', '2026-10-31T12:00:00Z', '2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z'],
  ])('%s: a daily time that fall-back repeats fires once, at its first pass', (zone, from, repeatedDay, nextDay) => {
    const time = zone === 'Europe/Berlin' ? '30 2 * * *' : '30 1 * * *';
    const daily = recurrence({ cron: time, timezone: zone });
    expect(occurrencesAfter(daily, at(from), 2).map(iso)).toEqual([repeatedDay, nextDay]);
  });

  it.each([
    // Berlin repeats 02:00–02:59 (00:00Z–00:59Z as CEST, 01:00Z–01:59Z as CET).
    [
      'Europe/Berlin',
      '2026-10-24T23:50:00Z',
      ['2026-10-25T00:00:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-25T02:00:00.000Z'],
    ],
    // New York repeats 01:00–01:59 (05:00Z–05:59Z as EDT, 06:00Z–06:59Z as EST).
    [
      'America/New_York',
      '2026-11-01T04:50:00Z',
      ['2026-11-01T05:00:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-01T07:00:00.000Z'],
    ],
  ])('%s: every half hour through fall-back fires each repeated local time once, not twice', (zone, from, expected) => {
    const halfHourly = recurrence({ cron: '*/30 * * * *', timezone: zone });
    expect(occurrencesAfter(halfHourly, at(from), 3).map(iso)).toEqual(expected);
  });

  it.each([
    [
      'Europe/Berlin',
      '2026-03-29T00:10:00Z',
      ['2026-03-29T00:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-29T01:30:00.000Z'],
    ],
    [
      'America/New_York',
      '2026-03-08T06:10:00Z',
      ['2026-03-08T06:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-08T07:30:00.000Z'],
    ],
  ])(
    '%s: every half hour through spring-forward fires once at 03:00 for the hour that does not exist',
    (zone, from, expected) => {
      const halfHourly = recurrence({ cron: '*/30 * * * *', timezone: zone });
      expect(occurrencesAfter(halfHourly, at(from), 3).map(iso)).toEqual(expected);
    },
  );

  it('keeps a rate in absolute time: DST does not move it', () => {
    const hourly = recurrence({ rate: '1 hour', timezone: 'Europe/Berlin', startAtMs: at('2026-03-28T23:00:00Z') });
    const runs = occurrencesAfter(hourly, at('2026-03-28T23:00:00Z'), 4);
    expect(runs.slice(1).map((ms, index) => ms - (runs[index] ?? 0))).toEqual([3_600_000, 3_600_000, 3_600_000]);
  });
});

describe('Function: successorOf', () => {
  const every5s = recurrence({ rate: '5 seconds', startAtMs: at('2026-01-01T00:00:00Z') });
  const first = at('2026-01-01T00:00:00Z');

  it('is the next occurrence when the pipeline is on time, or late but within MISSED_AFTER_MS', () => {
    expect(successorOf(every5s, first, first + 300)).toBe(first + 5000);
    expect(successorOf(every5s, first, first + MISSED_AFTER_MS)).toBe(first + 5000);
  });

  it('passes over every missed occurrence after an outage and resumes with the first after now', () => {
    const now = first + MISSED_AFTER_MS + 12_345;
    expect(successorOf(every5s, first, now)).toBe(first + MISSED_AFTER_MS + 15_000);
    expect(isMissed(first, now)).toBe(true);
    expect(isMissed(first + MISSED_AFTER_MS, now)).toBe(false);
  });

  it('is undefined once the schedule has ended', () => {
    const ending = recurrence({ rate: '5 seconds', startAtMs: first, endAtMs: first + 5000 });
    expect(successorOf(ending, first + 5000, first + 5000)).toBeUndefined();
  });
});
