import { describe, expect, it } from 'vitest';

import type { Schedule, ScheduleStore } from '../../functions/core/schedules/schedules.js';

export const AT = Date.parse('2026-06-01T12:00:00.000Z');
export const first = { taskId: 'OCCURRENCE-1', atMs: AT + 5000 };
export const second = { taskId: 'OCCURRENCE-2', atMs: AT + 10_000 };

/** A schedule of tenant acme, its first occurrence pending; `overrides` change any part. */
export const aSchedule = (overrides: Partial<Schedule> = {}): Schedule => ({
  id: 'sch_0123456789abcdefghjk',
  tenantId: 'acme',
  rate: '5 seconds',
  timezone: 'UTC',
  anchorMs: AT,
  target: { type: 'http', url: 'https://hooks.example.com/tick' },
  payloadJson: '{"v":1}',
  catchUp: 'fire-once',
  paused: false,
  revision: 'r0',
  createdAtMs: AT,
  updatedAtMs: AT,
  next: first,
  ...overrides,
});

/**
 * What the schedule chain relies on: an advance moves `next` only from the occurrence it names,
 * under the revision it read; a change replaces the schedule only while both its revision and its
 * chain position are as the change read them, so the two never both take effect over one read.
 */
export function scheduleStoreContract(name: string, makeStore: () => Promise<ScheduleStore>): void {
  describe(`Contract: ScheduleStore (${name})`, () => {
    it('replaces a schedule whose revision and pending occurrence are as read', async () => {
      // Prepare
      const store = await makeStore();
      await store.create(aSchedule());
      const changed = aSchedule({ revision: 'r1', payloadJson: '{"v":2}', next: second });

      // Act
      const replaced = await store.replace(changed, { revision: 'r0', nextTaskId: first.taskId });

      // Assess
      expect(replaced).toBe(true);
      expect(await store.get('acme', changed.id)).toEqual(changed);
    });

    it('refuses a replace once an occurrence advanced the chain under the same revision', async () => {
      // Prepare: the change read r0 at the first occurrence; that occurrence then advanced the chain.
      const store = await makeStore();
      await store.create(aSchedule());
      expect(await store.advance('acme', aSchedule().id, 'r0', first.taskId, second)).toBe(true);

      // Act
      const replaced = await store.replace(aSchedule({ revision: 'r1', next: undefined, paused: true }), {
        revision: 'r0',
        nextTaskId: first.taskId,
      });

      // Assess
      expect(replaced).toBe(false);
      expect(await store.get('acme', aSchedule().id)).toMatchObject({
        revision: 'r0',
        next: second,
        advancedFrom: first.taskId,
      });
    });

    it('refuses a replace over another revision, and one that read no pending occurrence where there is one', async () => {
      // Prepare
      const store = await makeStore();
      await store.create(aSchedule());
      const changed = aSchedule({ revision: 'r2' });

      // Act
      const overOther = await store.replace(changed, { revision: 'r1', nextTaskId: first.taskId });
      const overNone = await store.replace(changed, { revision: 'r0' });

      // Assess
      expect([overOther, overNone]).toEqual([false, false]);
      expect(await store.get('acme', changed.id)).toMatchObject({ revision: 'r0' });
    });

    it('replaces a schedule with no pending occurrence (paused) when the change read none', async () => {
      // Prepare
      const store = await makeStore();
      await store.create(aSchedule({ paused: true, next: undefined }));
      const resumed = aSchedule({ revision: 'r1', next: second });

      // Act
      const replaced = await store.replace(resumed, { revision: 'r0' });

      // Assess
      expect(replaced).toBe(true);
      expect(await store.get('acme', resumed.id)).toEqual(resumed);
    });

    it("pages through every schedule of the tenant in id order, counts them, and leaves out another tenant's", async () => {
      // Prepare: ids in no particular order, and one schedule of another tenant.
      const store = await makeStore();
      const ids = Array.from(
        { length: 20 },
        (_, index) => `sch_${String((index * 7) % 20).padStart(2, '0')}23456789abcdefghj`,
      );
      for (const id of ids) await store.create(aSchedule({ id }));
      await store.create(aSchedule({ id: 'sch_zz23456789abcdefghj', tenantId: 'globex' }));

      // Act
      const pages: string[][] = [];
      let afterId: string | undefined;
      for (let more = true; more;) {
        const page = await store.page('acme', 6, afterId);
        pages.push(page.schedules.map((schedule) => schedule.id));
        afterId = page.schedules.at(-1)?.id;
        more = page.more;
      }

      // Assess
      expect(pages.slice(0, 3).map((page) => page.length)).toEqual([6, 6, 6]);
      expect(pages.flat()).toEqual([...ids].sort());
      expect(await store.count('acme')).toBe(20);
    });

    it('advances only from the pending occurrence, under the revision read', async () => {
      // Prepare
      const store = await makeStore();
      await store.create(aSchedule());

      // Act
      const staleRevision = await store.advance('acme', aSchedule().id, 'r9', first.taskId, second);
      const notPending = await store.advance('acme', aSchedule().id, 'r0', second.taskId, second);
      const advanced = await store.advance('acme', aSchedule().id, 'r0', first.taskId, second);
      const again = await store.advance('acme', aSchedule().id, 'r0', first.taskId, second);

      // Assess
      expect([staleRevision, notPending, advanced, again]).toEqual([false, false, true, false]);
    });
  });
}
