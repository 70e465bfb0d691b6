/**
 * Schedules end to end: local mode over HTTP with a real webhook receiver, whose clock judges
 * lateness. Each occurrence is a task, so these are the same pipeline's guarantees, one at a time.
 */
import { describe, expect, it } from 'vitest';

import type { ScheduleView } from '../../functions/contract/wire.js';
import { localTimerFixture } from '../support/local-timer-fixture.js';
import { eventually, quantile } from '../support/webhook-receiver.js';

const local = localTimerFixture({
  '/every-5s': () => 204,
  '/paused': () => 204,
  '/deleted': () => 204,
});

const receiptsAt = (path: string) => local.receiver.receipts.filter((receipt) => receipt.path === path);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('End to end: schedules over HTTP in local mode', () => {
  // The first three wait on occurrences, each at a path of its own, so they wait at once; the
  // listing reads every schedule of the tenant, so it runs after them, when they are deleted.
  it.concurrent(
    'fires a rate(5 seconds) schedule 6 times in 30 s, each by its own tick and never early, each occurrence once',
    async () => {
      // Prepare
      const created = await local.api('POST', '/v1/schedules', {
        rate: '5 seconds',
        target: { type: 'http', url: local.receiver.url('/every-5s') },
        payload: { auction: 42 },
        bizId: 'auction-42',
      });
      expect(created.status).toBe(201);
      const schedule = created.body as unknown as ScheduleView;
      expect(schedule.nextOccurrences).toHaveLength(5);

      // Act
      await eventually('six occurrences', () => receiptsAt('/every-5s').length >= 6, 80, 500);
      await local.api('DELETE', `/v1/schedules/${schedule.id}`);

      // Assess: by the receiver's clock, against each occurrence's nominal time.
      const six = receiptsAt('/every-5s').slice(0, 6);
      const occurrences = six.map((receipt) => Date.parse(String(receipt.body.occurrence)));
      const lateness = six.map((receipt) => receipt.receivedAtMs - Date.parse(String(receipt.body.occurrence)));
      expect(six.every((receipt) => receipt.body.scheduleId === schedule.id)).toBe(true);
      expect(occurrences.slice(1).map((ms, index) => ms - (occurrences[index] ?? 0))).toEqual([
        5000, 5000, 5000, 5000, 5000,
      ]);
      expect(occurrences[0]).toBe(Date.parse(schedule.nextOccurrences[0] ?? ''));
      expect(new Set(six.map((receipt) => receipt.body.id)).size).toBe(6);
      expect(lateness.filter((ms) => ms < 0)).toEqual([]);
      // Each came by its own tick, not the sweeper's catch-up.
      expect(six.filter((receipt) => local.sentBySweeper.has(receipt.body.id))).toEqual([]);
      expect(six.at(-1)?.body.payload).toEqual({ auction: 42 });
      const listed = await local.api('GET', '/v1/schedules?bizId=auction-42');
      expect(listed.body.schedules).toEqual([]);
      console.log(
        `schedule rate(5 seconds): 6 occurrences, lateness p50 ${quantile(lateness, 0.5)} ms, max ${Math.max(...lateness)} ms`,
      );
    },
    90_000,
  );
  it.concurrent(
    'never fires a paused schedule, and fires again once resumed',
    async () => {
      // Prepare
      const created = await local.api('POST', '/v1/schedules', {
        rate: '2 seconds',
        target: { type: 'http', url: local.receiver.url('/paused') },
      });
      const { id } = created.body as unknown as ScheduleView;

      // Act
      const paused = await local.api('PATCH', `/v1/schedules/${id}`, { paused: true });
      await sleep(6000);
      const whilePaused = receiptsAt('/paused').length;
      const resumed = await local.api('PATCH', `/v1/schedules/${id}`, { paused: false });
      await eventually('an occurrence after resuming', () => receiptsAt('/paused').length > 0, 40, 250);

      // Assess
      expect(paused.body).toMatchObject({ paused: true, nextOccurrences: [] });
      expect(whilePaused).toBe(0);
      expect(resumed.body).toMatchObject({ paused: false });
      expect(Date.parse(String(receiptsAt('/paused')[0]?.body.occurrence))).toBeGreaterThan(
        Date.parse(String((resumed.body as unknown as ScheduleView).updatedAt)),
      );
      await local.api('DELETE', `/v1/schedules/${id}`);
    },
    60_000,
  );
  it.concurrent(
    "never fires a deleted schedule's next occurrence",
    async () => {
      // Prepare
      const created = await local.api('POST', '/v1/schedules', {
        rate: '3 seconds',
        target: { type: 'http', url: local.receiver.url('/deleted') },
      });
      const schedule = created.body as unknown as ScheduleView;

      // Act
      const deleted = await local.api('DELETE', `/v1/schedules/${schedule.id}`);
      await sleep(7000);

      // Assess
      expect(deleted).toEqual({ status: 200, body: { id: schedule.id, deleted: true } });
      expect(receiptsAt('/deleted')).toEqual([]);
      expect((await local.api('GET', `/v1/schedules/${schedule.id}`)).status).toBe(404);
      const task = await local.api('GET', `/v1/tasks/${schedule.nextTaskId}`);
      expect(task.body.status).toBe('CANCELLED');
    },
    30_000,
  );
  it('lists every schedule of the tenant with only the API key, a page at a time, and filters by bizId prefix and paused', async () => {
    // Prepare
    const created = await Promise.all(
      ['fleet-1', 'fleet-2', 'depot-1'].map(
        async (bizId) =>
          (
            await local.api('POST', '/v1/schedules', {
              rate: '1 day',
              target: { type: 'http', url: local.receiver.url('/listed') },
              bizId,
            })
          ).body as unknown as ScheduleView,
      ),
    );
    const ids = created.map((schedule) => schedule.id);
    await local.api('PATCH', `/v1/schedules/${ids[1]}`, { paused: true });

    // Act
    const first = await local.api('GET', '/v1/schedules?limit=2');
    const rest = await local.api('GET', `/v1/schedules?limit=2&cursor=${String(first.body.nextCursor)}`);
    const fleet = await local.api('GET', '/v1/schedules?bizIdPrefix=fleet-');
    const paused = await local.api('GET', '/v1/schedules?paused=true');
    const forged = await local.api('GET', '/v1/schedules?cursor=U0NIRURVTEVTI290aGVy');

    // Assess
    const listed = [first, rest].flatMap((page) => (page.body.schedules as ScheduleView[]).map(({ id }) => id));
    expect(first.status).toBe(200);
    expect(first.body.schedules).toHaveLength(2);
    expect(listed).toEqual([...ids].sort());
    expect(rest.body.nextCursor).toBeUndefined();
    expect((fleet.body.schedules as ScheduleView[]).map(({ bizId }) => bizId).sort()).toEqual(['fleet-1', 'fleet-2']);
    expect((paused.body.schedules as ScheduleView[]).map(({ id }) => id)).toEqual([ids[1]]);
    expect(forged.status).toBe(400);
    expect(forged.body.errors).toEqual([expect.objectContaining({ path: 'cursor' })]);
    for (const id of ids) await local.api('DELETE', `/v1/schedules/${id}`);
  });
});
