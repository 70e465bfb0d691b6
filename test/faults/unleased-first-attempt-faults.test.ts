/**
 * Fault injection on the whole pipeline (real dynalite, fauxqs and webhook receiver): first
 * attempts that take no lease, through the same faults as the leased path.
 */
import { describe, expect } from 'vitest';

import { RECEIPT_WRITE_TRIES } from '../../functions/core/deliver/deliver.js';
import { type DeliveryReceipt, UNLEASED_CANCEL_MARGIN_MS } from '../../functions/core/kernel/task.js';
import { eventually } from '../support/webhook-receiver.js';
import { printReport, report, waitForDeliveries, webhookTasks } from './harness.js';
import { crashOnce, pipelineCase, runCase, statusesOnceSettled, statusOf } from './pipeline-cases.js';

/**
 * Tasks submitted well before their due time (past the late-arrival bound: lookahead, clock skew
 * tolerance and the api's timeout, 22 s) take no lease on their first attempt: one write instead
 * of two. These cases run them through the same faults as the leased path above.
 */
describe.concurrent('Faults: unleased first attempts', () => {
  const FAR_MS = 25_000;

  pipelineCase(
    'redelivers, with the same id and attempt, a task whose callback crashed after the target answered and before its receipt was written',
    async ({ start }) => {
      // Prepare: a first attempt's 2xx is recorded in its batch's receipt, not on the task; the
      // callback dies at the first receipt's write, every try of it. Counting throws alone would
      // not do: two invocations in flight can share them, each retry then succeeds, and nothing crashes.
      // The production webhook timeout, not the harness's 1 s: beside a second npm test a call took
      // longer, failed, and its task came back as attempt 2, which this case does not judge.
      const h = await start({ webhookTimeoutMs: 10_000 });
      let crashing: DeliveryReceipt | undefined;
      const crash = crashOnce(
        h.callback.delivery.taskStore,
        'recordReceipt',
        (receipt: DeliveryReceipt) => (crashing ??= receipt) === receipt,
        RECEIPT_WRITE_TRIES,
      );

      // Act
      const { ids } = await runCase(
        'unleased first attempt: crash after delivering, before its receipt',
        h,
        webhookTasks(h, 20, FAR_MS, FAR_MS + 2000),
        {},
        60_000,
      );

      // Assess
      expect(crash.crashed()).toBe(true);
      const repeats = () =>
        h.receiver.receipts.filter(
          (receipt, index, all) => all.findIndex((other) => other.body.id === receipt.body.id) !== index,
        );
      await eventually('the crashed delivery is made again', () => repeats().length >= 1, 60);
      for (const receipt of repeats()) {
        expect(receipt.headers['webhook-id']).toBe(receipt.body.id);
        expect(receipt.body.attempt).toBe(1);
      }
      expect(await statusesOnceSettled(h, ids, 'DELIVERED')).toEqual(ids.map(() => 'DELIVERED'));
    },
    120_000,
  );

  pipelineCase(
    'never delivers a task whose cancel answered 200, with cancels racing its due time',
    async ({ start }) => {
      // Prepare: 30 tasks, each cancelled at its own moment from 6 s before the cancel margin to 0.5 s
      // after its due time.
      const h = await start();
      const tasks = webhookTasks(h, 30, FAR_MS, FAR_MS + 3000);
      const ids = await h.submit(tasks);
      h.run();

      // Act
      const earliestMs = UNLEASED_CANCEL_MARGIN_MS + 6000;
      const cancels = await Promise.all(
        ids.map(async (id, index) => {
          const dueAt = Number((tasks[index] as { dueAt: number }).dueAt);
          const offsetMs = -earliestMs + Math.floor(((earliestMs + 500) * index) / (ids.length - 1));
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, dueAt + offsetMs - Date.now())));
          const response = await h.call('DELETE /v1/tasks/{id}', { pathParameters: { id } });
          return {
            id,
            status: response.statusCode,
            type: (JSON.parse(response.body) as { type?: string }).type,
            // The api decided before this; on a busy machine, well after the moment planned.
            answeredBeforeMargin: Date.now() < dueAt - UNLEASED_CANCEL_MARGIN_MS,
          };
        }),
      );
      const cancelled = new Set(cancels.filter((cancel) => cancel.status === 200).map((cancel) => cancel.id));
      const kept = ids.filter((id) => !cancelled.has(id));
      await waitForDeliveries(h, kept, 60_000);

      // Assess: 200 before the margin, 409 after it; no cancelled task reaches the receiver.
      const result = report(h, kept);
      const deliveredCancelled = h.receiver.receipts.filter((receipt) => cancelled.has(receipt.body.id));
      printReport(
        `unleased first attempts: cancels racing the due time (${cancelled.size} of ${cancels.length} answered 200; ${deliveredCancelled.length} delivered)`,
        result,
      );
      expect(cancelled.size).toBeGreaterThan(0);
      expect(kept.length).toBeGreaterThan(0);
      // Refused ones were too late to cancel, already delivered, or (for those asked after the due
      // time, on a machine slow enough that an attempt timed out) waiting on an attempt's outcome.
      for (const cancel of cancels.filter((each) => each.status !== 200)) {
        expect(cancel.status).toBe(409);
        expect(['/problems/too-late', '/problems/already-final', '/problems/in-delivery']).toContain(cancel.type);
      }
      // Every cancel answered before its task's margin was taken.
      const beforeMargin = cancels.filter((cancel) => cancel.answeredBeforeMargin);
      expect(beforeMargin.length).toBeGreaterThan(0);
      expect(beforeMargin.map((cancel) => cancel.status)).toEqual(beforeMargin.map(() => 200));
      expect(deliveredCancelled).toEqual([]);
      expect(result.lost).toEqual([]);
      expect(result.early).toEqual([]);
      for (const id of cancelled) expect(await statusOf(h, id)).toBe('CANCELLED');
    },
    120_000,
  );
});
