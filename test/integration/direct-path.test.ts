import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqsDeliveryQueue } from '../../functions/adapters/sqs-queues';
import { claimNextSecond } from '../../functions/core/clock';
import { scanSecond } from '../../functions/core/scan';
import { type ScheduleResult, scheduleTasks } from '../../functions/core/schedule';
import type { NewTask } from '../../functions/core/schemas';
import { ManualClock } from '../support/clock';
import { drainBodies, type Emulators, startEmulators } from '../support/emulators';

let emulators: Emulators;

beforeAll(async () => {
  emulators = await startEmulators();
});

afterAll(async () => {
  await emulators.stop();
});

const createdIds = (result: ScheduleResult) =>
  result.outcomes.flatMap((outcome) => (outcome.kind === 'created' ? [outcome.task.id] : []));

const request = (dueAtMs: number): NewTask => ({
  fingerprint: `request-${dueAtMs}`,
  dueAtMs,
  target: { type: 'http', url: 'https://example.com/hook' },
  payloadJson: 'null',
});

describe('Invariant 5: late arrivals are enqueued by the api (real dynalite and fauxqs)', () => {
  it('enqueues every task written while the scanner claims and scans its second, whatever the interleaving', async () => {
    // Prepare: each round, 8 submits for the second being claimed race one scanner.
    const queue = await emulators.createQueue('direct-path');
    const deliveryQueue = sqsDeliveryQueue(emulators.sqs, queue.url);
    const stores = emulators.stores();
    const firstSecond = 1_800_000_000;
    const clock = new ManualClock(firstSecond * 1000 + 900);
    const ports = { ...stores, deliveryQueue, clock, bucketCount: 10_000_000, shardCount: 4, retentionDays: 30 };
    await emulators.resetClock();
    await stores.clockStore.start(firstSecond);
    const submitted: string[] = [];

    // Act
    for (let round = 0; round < 15; round++) {
      const second = firstSecond + round;
      clock.set(second * 1000 + 900);
      const submits = Array.from({ length: 8 }, (_, index) =>
        scheduleTasks(ports, 'acme', [request(second * 1000 + index * 100)]).then(createdIds),
      );
      const scan = claimNextSecond({ ...ports, lookaheadSeconds: 0 }).then((claim) =>
        claim.claimed ? scanSecond(ports, claim.second) : undefined,
      );
      const [ids] = await Promise.all([Promise.all(submits), scan]);
      submitted.push(...ids.flat());
    }

    // Assess: no task fell between the write and the claim.
    const enqueued = new Set(
      (await drainBodies(emulators.sqs, queue.url)).map((body) => (JSON.parse(body) as { id: string }).id),
    );
    expect(submitted).toHaveLength(120);
    expect(submitted.filter((id) => !enqueued.has(id))).toEqual([]);
  });

  it('enqueues the task in each of the six orders of write, cursor read, claim and query', async () => {
    // Prepare: the api's two steps are instrumented; the scanner's claim and query are run at
    // chosen points between them: before the first step (0), between the steps (1), after both (2).
    const queue = await emulators.createQueue('interleavings');
    const deliveryQueue = sqsDeliveryQueue(emulators.sqs, queue.url);
    const scannerStores = emulators.stores();
    const firstSecond = 1_800_200_000;
    const clock = new ManualClock(firstSecond * 1000);
    const scanner = { ...scannerStores, deliveryQueue, clock, shardCount: 2, lookaheadSeconds: 0 };
    await emulators.resetClock();
    await scannerStores.clockStore.start(firstSecond);
    const orders = [0, 1, 2].flatMap((claimAt) =>
      [0, 1, 2].filter((queryAt) => queryAt >= claimAt).map((queryAt) => ({ claimAt, queryAt })),
    );
    const submitted: string[] = [];

    // Act
    for (const [round, { claimAt, queryAt }] of orders.entries()) {
      const second = firstSecond + round;
      clock.set(second * 1000);
      let step = 0;
      let claimed: number | undefined;
      const scannerActsAt = async () => {
        if (step === claimAt) {
          const claim = await claimNextSecond(scanner);
          claimed = claim.claimed ? claim.second : undefined;
        }
        if (step === queryAt && claimed !== undefined) await scanSecond(scanner, claimed);
        step++;
      };
      const api = {
        ...scanner,
        bucketCount: 10_000_000,
        retentionDays: 30,
        taskStore: Object.assign(Object.create(scannerStores.taskStore), {
          create: async (...args: Parameters<typeof scannerStores.taskStore.create>) => {
            await scannerActsAt();
            await scannerStores.taskStore.create(...args);
          },
        }),
        clockStore: Object.assign(Object.create(scannerStores.clockStore), {
          read: async () => {
            await scannerActsAt();
            return scannerStores.clockStore.read();
          },
        }),
      };
      const [id] = createdIds(await scheduleTasks(api, 'acme', [request(second * 1000 + 500)]));
      await scannerActsAt();
      expect(claimed).toBe(second);
      submitted.push(id ?? '');
    }

    // Assess
    const enqueued = new Set(
      (await drainBodies(emulators.sqs, queue.url)).map((body) => (JSON.parse(body) as { id: string }).id),
    );
    expect(submitted).toHaveLength(6);
    expect(submitted.filter((id) => !enqueued.has(id))).toEqual([]);
  });

  it('leaves a task due after the cursor to the scanner instead of enqueueing it', async () => {
    // Prepare
    const queue = await emulators.createQueue('future-path');
    const stores = emulators.stores();
    const clock = new ManualClock(1_800_100_000_000);
    const ports = {
      ...stores,
      deliveryQueue: sqsDeliveryQueue(emulators.sqs, queue.url),
      clock,
      bucketCount: 10_000_000,
        retentionDays: 30,
      shardCount: 4,
    };
    const { cursor } = (await stores.clockStore.read()) ?? { cursor: 0 };

    // Act
    await scheduleTasks(ports, 'acme', [request((cursor + 30) * 1000)]);

    // Assess
    expect(await drainBodies(emulators.sqs, queue.url)).toEqual([]);
  });
});
