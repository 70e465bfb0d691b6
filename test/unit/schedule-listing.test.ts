import { describe, expect, it } from 'vitest';

import {
  decodeScheduleCursor,
  encodeScheduleCursor,
  listSchedules,
  type SchedulePageQuery,
} from '../../functions/core/schedules/schedule-listing.js';
import type { Schedule } from '../../functions/core/schedules/schedules.js';
import { FakeScheduleStore, TENANT_ID } from './fakes.js';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

function aSchedule(n: number, overrides: Partial<Schedule> = {}): Schedule {
  return {
    id: `sch_${ALPHABET[n % 32]?.repeat(20)}`,
    tenantId: TENANT_ID,
    rate: '1 hour',
    timezone: 'UTC',
    anchorMs: 0,
    target: { type: 'http', url: 'https://hooks.example.com/tick' },
    payloadJson: 'null',
    catchUp: 'fire-once',
    paused: false,
    revision: 'r1',
    createdAtMs: 0,
    updatedAtMs: 0,
    ...overrides,
  };
}

/** Every page of a listing, following each page's cursor as the API hands it out. */
async function allPages(store: FakeScheduleStore, query: Omit<SchedulePageQuery, 'afterId'>) {
  const pages: string[][] = [];
  let afterId: string | undefined;
  do {
    const page = await listSchedules(store, TENANT_ID, { ...query, ...(afterId !== undefined && { afterId }) });
    pages.push(page.schedules.map((schedule) => schedule.id));
    afterId = page.nextAfterId === undefined ? undefined : decodeScheduleCursor(encodeScheduleCursor(page.nextAfterId));
  } while (afterId !== undefined);
  return pages;
}

describe('Function: listSchedules', () => {
  it("lists every schedule of the tenant with no filter, each once and in id order, a page at a time, and none of another tenant's", async () => {
    // Prepare
    const store = new FakeScheduleStore();
    const ours = [6, 2, 4, 0, 5, 1, 3].map((n) => aSchedule(n));
    for (const schedule of [...ours, aSchedule(7, { tenantId: 'other' }), aSchedule(8, { tenantId: 'other' })]) {
      await store.create(schedule);
    }

    // Act
    const pages = await allPages(store, { limit: 3 });

    // Assess
    expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual(ours.map((schedule) => schedule.id).sort());
  });

  it('keeps only what every given filter matches, across pages, never more than limit a page', async () => {
    // Prepare
    const store = new FakeScheduleStore();
    const schedules = [
      aSchedule(0, { bizId: 'fleet-1', bizType: 'report' }),
      aSchedule(1, { bizId: 'fleet-2', bizType: 'report', paused: true }),
      aSchedule(2, { bizId: 'other-1', bizType: 'report' }),
      aSchedule(3, { bizId: 'fleet-3', bizType: 'reminder' }),
      aSchedule(4),
      aSchedule(5, { bizId: 'fleet-4', bizType: 'report' }),
    ];
    for (const schedule of schedules) await store.create(schedule);
    const ids = (...ns: number[]) => ns.map((n) => schedules[n]?.id);

    // Act
    const byPrefix = (await allPages(store, { limit: 2, bizIdPrefix: 'fleet-' })).flat();
    const reportsOfFleet = (await allPages(store, { limit: 2, bizIdPrefix: 'fleet-', bizType: 'report' })).flat();
    const paused = (await allPages(store, { limit: 2, paused: true })).flat();
    const active = await allPages(store, { limit: 2, paused: false });
    const byId = (await allPages(store, { limit: 50, bizId: 'other-1' })).flat();

    // Assess
    expect(byPrefix).toEqual(ids(0, 1, 3, 5));
    expect(reportsOfFleet).toEqual(ids(0, 1, 5));
    expect(paused).toEqual(ids(1));
    expect(active.flat()).toEqual(ids(0, 2, 3, 4, 5));
    expect(Math.max(...active.map((page) => page.length))).toBe(2);
    expect(byId).toEqual(ids(2));
  });
});

describe('Function: decodeScheduleCursor', () => {
  it('takes back only cursors a listing issued: an encoded schedule id', () => {
    // Prepare
    const id = aSchedule(9).id;

    // Act & Assess
    expect(decodeScheduleCursor(encodeScheduleCursor(id))).toBe(id);
    expect(decodeScheduleCursor(encodeScheduleCursor('SCHEDULES#other'))).toBeUndefined();
    expect(decodeScheduleCursor(`${encodeScheduleCursor(id)}=`)).toBeUndefined();
    expect(decodeScheduleCursor('not a cursor')).toBeUndefined();
  });
});
