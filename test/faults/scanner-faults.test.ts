/**
 * Fault injection on the whole pipeline (real dynalite, fauxqs and webhook receiver): the scanner
 * crashing at each step of a claim, duplicate and out-of-order ticks, and racing scanners draining
 * a backlog.
 */
import { describe, expect } from 'vitest';

import { type DeliveryMessage } from '../../functions/core/kernel/task.js';
import { eventually } from '../support/webhook-receiver.js';
import { webhookTasks } from './harness.js';
import { crashOnce, pipelineCase, recordClaims, runCase } from './pipeline-cases.js';

describe.concurrent('Faults: the scanner', () => {
  pipelineCase('recovers a second whose scanner crashed after claiming it and before sending', async ({ start }) => {
    // Prepare
    const h = await start();
    const crash = crashOnce(h.scanner.deliveryQueue, 'send');

    // Act
    const { result } = await runCase('scanner crash after claim, before send', h, webhookTasks(h, 40, 2500, 6000));

    // Assess
    expect(crash.crashed()).toBe(true);
    expect(result.delivered).toBe(40);
  });

  pipelineCase('recovers a second whose scanner crashed after sending half of it', async ({ start }) => {
    // Prepare: the first send with several messages gets half of them out, then the process dies.
    const h = await start({ shardCount: 1 });
    const queue = h.scanner.deliveryQueue;
    const original = queue.send.bind(queue);
    let crashed = false;
    queue.send = async (messages: readonly DeliveryMessage[]) => {
      if (crashed || messages.length < 2) return original(messages);
      crashed = true;
      await original(messages.slice(0, Math.floor(messages.length / 2)));
      throw new Error('crash halfway through the batch (injected)');
    };

    // Act: ten tasks in the same second, so one send carries them all.
    const dueAt = Math.ceil((Date.now() + 3000) / 1000) * 1000 + 100;
    const tasks = webhookTasks(h, 10, 0, 0).map((task) => ({ ...task, dueAt }));
    const { result } = await runCase('scanner crash after sending half a batch', h, tasks);

    // Assess
    expect(crashed).toBe(true);
    expect(result.delivered).toBe(10);
  });

  pipelineCase(
    'recovers a second whose scanner sent everything and crashed before writing its marker',
    async ({ start }) => {
      // Prepare
      const h = await start();
      const crash = crashOnce(
        h.scanner.clockStore,
        'markScanned',
        (_range: unknown, enqueued: ReadonlyMap<number, number>) => enqueued.size > 0,
      );

      // Act
      const { result } = await runCase('scanner crash before the finished marker', h, webhookTasks(h, 40, 2500, 6000));

      // Assess: the re-scan only sends duplicates of what the callback already delivered or holds.
      expect(crash.crashed()).toBe(true);
      expect(result.delivered).toBe(40);
    },
  );

  pipelineCase('claims every second once however many duplicate ticks arrive, in any order', async ({ start }) => {
    // Prepare
    const h = await start({ scannersPerTick: 4 });
    const claimed = recordClaims(h);

    // Act
    await runCase('duplicate and out-of-order ticks', h, webhookTasks(h, 40, 2000, 6000));

    // Assess
    expect(claimed.length).toBeGreaterThan(5);
    expect(new Set(claimed).size).toBe(claimed.length);
  });

  pipelineCase(
    'drains an hour of backlog with racing scanners, each second claimed once',
    async ({ start }) => {
      // Prepare: the clock stopped an hour ago; tasks fell due during the last ten minutes of it.
      const h = await start({ shardCount: 2, scannersPerTick: 2 });
      const now = Math.floor(Date.now() / 1000);
      await h.scanner.clockStore.start(now - 3600);
      const claimed = recordClaims(h);
      const tasks = webhookTasks(h, 60, -600_000, 3000);

      // Act
      const { result } = await runCase('an hour of backlog after a 10-minute outage', h, tasks);

      // Assess: the tasks, past due when submitted, went out by the api's own hand; the scanners
      // work through the hour beside them, at whatever pace the machine allows.
      expect(result.delivered).toBe(60);
      const expected = Array.from({ length: 3600 }, (_, index) => now - 3600 + index);
      const unclaimed = () => expected.filter((second) => !claimed.includes(second));
      await eventually('every second of the hour claimed', () => unclaimed().length === 0, 240, 500);
      expect(new Set(claimed).size).toBe(claimed.length);
    },
    240_000,
  );
});
