/**
 * A bizType's callback rate over the real pipeline (api routes, scanner, callback record
 * handling and sweeper on dynalite and fauxqs, delivering to a real webhook receiver): a hot
 * second of one bizType goes out at the rate it allows, every task exactly once, none early,
 * and the waiting costs no attempt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { QUEUES } from '../../functions/contract/topology.js';
import { type Harness, report, startHarness, waitForDeliveries } from '../faults/harness.js';

let harness: Harness;

beforeAll(async () => {
  // The production webhook timeout and visibility timeout, not the harness's 1 s and 5 s: beside a
  // second npm test a call took longer, failed, and came back as attempt 2, and an invocation held
  // past 5 s had its messages delivered again (3 duplicates), where this file judges each task
  // called once, on its first attempt.
  harness = await startHarness({
    webhookTimeoutMs: 10_000,
    visibilitySeconds: QUEUES.delivery.visibilityTimeoutSeconds,
  });
  harness.run();
});

afterAll(async () => {
  await harness?.stop();
});

describe('Integration: callback rate per bizType', () => {
  it('sends 20 tasks due in one second at most 5 a second with limit 5: all delivered once, none early, each on attempt 1', async () => {
    // Prepare: the bizType names the target, so the tasks name none.
    const put = await harness.call('PUT /v1/biz-types/{bizType}', {
      pathParameters: { bizType: 'order-close' },
      body: { defaultTarget: { type: 'http', url: harness.receiver.url('/ok') }, callbackRateLimitPerSecond: 5 },
    });
    expect(put.statusCode).toBe(200);
    const dueAt = (Math.floor(Date.now() / 1000) + 3) * 1000;
    const tasks = Array.from({ length: 20 }, (_, index) => ({
      dueAt: dueAt + index * 10,
      bizType: 'order-close',
      payload: { index },
      idempotencyKey: `rate-${index}`,
    }));

    // Act
    const ids = await harness.submit(tasks);
    await waitForDeliveries(harness, ids, 30_000);

    // Assess
    const result = report(harness, ids);
    expect(result).toMatchObject({ delivered: 20, duplicates: 0, lost: [], early: [] });
    const receipts = harness.receiver.receipts.filter((receipt) => ids.includes(receipt.body.id));
    expect(receipts).toHaveLength(20);
    const perSecond = new Map<number, number>();
    for (const receipt of receipts) {
      const second = Math.floor(Date.parse(receipt.body.firedAt) / 1000);
      perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
    }
    expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(5);
    expect(perSecond.size).toBeGreaterThanOrEqual(4);
    expect(receipts.every((receipt) => receipt.body.attempt === 1)).toBe(true);
    for (const id of ids) {
      const task = await harness.call('GET /v1/tasks/{id}', { pathParameters: { id } });
      expect(JSON.parse(task.body)).toMatchObject({ status: 'DELIVERED', attempts: 1, bizType: 'order-close' });
    }
  });
});
