/**
 * Fault injection on the whole pipeline (real dynalite, fauxqs and webhook receiver): a schedule's
 * occurrences with the callback dying at each step of moving the chain on.
 */
import { describe, expect } from 'vitest';

import { eventually } from '../support/webhook-receiver.js';
import { type Harness, occurrenceReport } from './harness.js';
import { crashOnce, pipelineCase } from './pipeline-cases.js';

describe.concurrent('Faults: schedule occurrences', () => {
  const EVERY_MS = 2000;

  /** Creates a rate schedule through the api, runs the pipeline until `count` occurrences arrived, then deletes it. */
  async function runSchedule(h: Harness, name: string, count: number) {
    const created = await h.call('POST /v1/schedules', {
      body: { rate: `${EVERY_MS / 1000} seconds`, target: { type: 'http', url: h.receiver.url('/ok') } },
    });
    expect(created.statusCode).toBe(201);
    const { id } = JSON.parse(created.body) as { id: string };
    h.run();
    await eventually(
      `${count} occurrences`,
      () => occurrenceReport(h, id, EVERY_MS).occurrences.length >= count,
      240,
      250,
    );
    await h.call('DELETE /v1/schedules/{id}', { pathParameters: { id } });
    const result = occurrenceReport(h, id, EVERY_MS);
    console.log(
      `fault "${name}": occurrences ${result.occurrences.length}, gaps ${result.gaps.length}, doubles ${result.doubles.length}, duplicates ${result.duplicates}, early ${result.early}`,
    );
    return result;
  }

  pipelineCase(
    'leaves no gap and no double when the callback dies after moving the schedule on, before storing the next occurrence',
    async ({ start }) => {
      // Prepare: the first write of an occurrence task by the callback (the successor) dies.
      const h = await start();
      const crash = crashOnce(h.callback.delivery.occurrences.taskStore, 'create');

      // Act
      const result = await runSchedule(
        h,
        'callback crash between advancing a schedule and storing its next occurrence',
        6,
      );

      // Assess
      expect(crash.crashed()).toBe(true);
      expect(result.gaps).toEqual([]);
      expect(result.doubles).toEqual([]);
      expect(result.early).toBe(0);
    },
    120_000,
  );

  pipelineCase(
    'leaves no gap and no double when the schedule write lands but the callback dies before hearing so',
    async ({ start }) => {
      // Prepare: the advance is applied, then the process dies before the successor is stored.
      const h = await start();
      const store = h.callback.delivery.occurrences.scheduleStore;
      const advance = store.advance.bind(store);
      let crashed = false;
      store.advance = async (...args: Parameters<typeof advance>) => {
        const applied = await advance(...args);
        if (crashed) return applied;
        crashed = true;
        throw new Error('crash after the schedule write (injected)');
      };

      // Act
      const result = await runSchedule(h, 'callback crash after the schedule write landed', 6);

      // Assess
      expect(crashed).toBe(true);
      expect(result.gaps).toEqual([]);
      expect(result.doubles).toEqual([]);
      expect(result.early).toBe(0);
    },
    120_000,
  );

  pipelineCase(
    "leaves no gap and no double when the callback dies after an occurrence's delivery, before recording it",
    async ({ start }) => {
      // Prepare: the write that records the first delivered occurrence dies; the call was made.
      const h = await start();
      const crash = crashOnce(
        h.callback.delivery.taskStore,
        'finishDelivery',
        (_key: unknown, _attempt: unknown, outcome: { status: string }) => outcome.status === 'DELIVERED',
      );

      // Act
      const result = await runSchedule(h, 'callback crash between an occurrence delivery and its record', 6);

      // Assess: the cut-short occurrence comes again under the same task id (a duplicate), never as a second task.
      expect(crash.crashed()).toBe(true);
      expect(result.gaps).toEqual([]);
      expect(result.doubles).toEqual([]);
      expect(result.duplicates).toBeGreaterThanOrEqual(1);
      expect(result.early).toBe(0);
    },
    120_000,
  );
});
