import { describe, expect, it } from 'vitest';

import { DynamoOccupancyIndex } from '../../functions/adapters/dynamo/occupancy-index.js';
import { taskNameTexts } from '../../functions/adapters/dynamo/table-schema.js';
import { sqsDeliveryQueue } from '../../functions/adapters/sqs-queues.js';
import { claimableThrough, claimSeconds, CLOCK_SKEW_MS } from '../../functions/core/kernel/clock.js';
import type { Tick } from '../../functions/core/kernel/tick.js';
import { scanRange } from '../../functions/core/scan/scan.js';
import type { NewTask } from '../../functions/core/submit/schemas.js';
import { type SubmitResult, submitTasks } from '../../functions/core/submit/submit.js';
import { ManualClock } from '../support/clock.js';
import { drainBodies } from '../support/emulators.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';

const emulators = emulatorsFixture();

const createdIds = (result: SubmitResult) =>
  result.outcomes.flatMap((outcome) => (outcome.kind === 'created' ? [outcome.task.id] : []));

/** An api instance's occupancy index: each call its own, as separate Lambda instances would be. */
const apiOccupancy = () => new DynamoOccupancyIndex({ client: emulators.dynamo, tableName: emulators.tableName });
const ticks: Tick[] = [];
const tickQueue = { send: async (sent: readonly Tick[]) => void ticks.push(...sent) };

/**
 * The ids enqueued on `queueUrl`, polled until every one of `expected` has come or `polls` long
 * polls have passed: the messages carry DelaySeconds (the tests' clocks run seconds before the
 * tasks' due times), so some surface only after a while.
 */
async function enqueuedIds(queueUrl: string, expected: readonly string[], polls = 8): Promise<Set<string>> {
  const ids = new Set<string>();
  for (let poll = 0; poll < polls && expected.some((id) => !ids.has(id)); poll++) {
    for (const body of await drainBodies(emulators.sqs, queueUrl)) ids.add((JSON.parse(body) as { id: string }).id);
  }
  return ids;
}

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
    const ports = {
      ...stores,
      occupancy: apiOccupancy(),
      deliveryQueue,
      tickQueue,
      clock,
      bucketCount: 10_000_000,
      shardCount: 4,
      nameTexts: taskNameTexts,
      retentionDays: 30,
      lookaheadSeconds: 0,
    };
    await emulators.resetClock();
    await stores.clockStore.start(firstSecond);
    const submitted: string[] = [];

    // Act
    for (let round = 0; round < 15; round++) {
      const second = firstSecond + round;
      // The scanner claims the second as soon as its clock, CLOCK_SKEW_MS (the bound) ahead of
      // the api's, reaches it.
      clock.set(second * 1000 - CLOCK_SKEW_MS);
      const submits = Array.from({ length: 8 }, (_, index) =>
        submitTasks({ ...ports, occupancy: apiOccupancy() }, 'acme', [request(second * 1000 + index * 100)]).then(
          createdIds,
        ),
      );
      const scan = claimSeconds({ ...ports, through: second }).then((claim) =>
        claim.claimed ? scanRange(ports, claim) : undefined,
      );
      const [ids] = await Promise.all([Promise.all(submits), scan]);
      submitted.push(...ids.flat());
    }

    // Assess: no task fell between the write and the claim.
    const enqueued = await enqueuedIds(queue.url, submitted);
    expect(submitted).toHaveLength(120);
    expect(submitted.filter((id) => !enqueued.has(id))).toEqual([]);
  });

  it('enqueues the task in each of the 10 orders of index write, task write, claim, index read and query', async () => {
    // Prepare: the api's two writes are instrumented; the scanner's claim, index read and query
    // run, in that order, at chosen points among them: before the first write (0), between
    // them (1), or after the last (2). The scanner's clock runs CLOCK_SKEW_MS (the bound) ahead of the api's.
    const queue = await emulators.createQueue('interleavings');
    const deliveryQueue = sqsDeliveryQueue(emulators.sqs, queue.url);
    const scannerStores = emulators.stores();
    const firstSecond = 1_800_200_000;
    const clock = new ManualClock(firstSecond * 1000);
    const scanner = { ...scannerStores, occupancy: apiOccupancy(), deliveryQueue, clock, shardCount: 2 };
    await emulators.resetClock();
    await scannerStores.clockStore.start(firstSecond);
    const points = [0, 1, 2];
    const orders = points.flatMap((claimAt) =>
      points.flatMap((indexAt) =>
        points
          .filter((queryAt) => claimAt <= indexAt && indexAt <= queryAt)
          .map((queryAt) => ({ claimAt, indexAt, queryAt })),
      ),
    );
    const submitted: string[] = [];

    // Act
    for (const [round, { claimAt, indexAt, queryAt }] of orders.entries()) {
      const second = firstSecond + round;
      clock.set(second * 1000 - CLOCK_SKEW_MS);
      let step = 0;
      let claim: Awaited<ReturnType<typeof claimSeconds>> = { claimed: false };
      let occupied: Set<number> | undefined;
      const scannerActsAt = async () => {
        if (step === claimAt) claim = await claimSeconds({ ...scanner, through: second });
        if (step === indexAt && claim.claimed) occupied = await scanner.occupancy.occupied(claim.from, claim.through);
        if (step === queryAt && claim.claimed) await scanRange(scanner, claim, { occupied });
        step++;
      };
      const occupancy = apiOccupancy();
      const api = {
        ...scanner,
        nameTexts: taskNameTexts,
        bucketCount: 10_000_000,
        retentionDays: 30,
        lookaheadSeconds: 0,
        tickQueue,
        occupancy: Object.assign(Object.create(occupancy), {
          occupy: async (...args: Parameters<typeof occupancy.occupy>) => {
            await scannerActsAt();
            return occupancy.occupy(...args);
          },
        }),
        taskStore: Object.assign(Object.create(scannerStores.taskStore), {
          create: async (...args: Parameters<typeof scannerStores.taskStore.create>) => {
            await scannerActsAt();
            await scannerStores.taskStore.create(...args);
          },
        }),
      };
      const [id] = createdIds(await submitTasks(api, 'acme', [request(second * 1000 + 500)]));
      await scannerActsAt();
      expect(claim).toEqual({ claimed: true, from: second, through: second });
      submitted.push(id ?? '');
    }

    // Assess
    const enqueued = await enqueuedIds(queue.url, submitted);
    expect(submitted).toHaveLength(10);
    expect(submitted.filter((id) => !enqueued.has(id))).toEqual([]);
  });

  it('would lose a task if the index were read before the claim, which is why scanRange reads it after', async () => {
    // Prepare: the wrong order, index read first, with the api's whole submit in between.
    const queue = await emulators.createQueue('wrong-order');
    const deliveryQueue = sqsDeliveryQueue(emulators.sqs, queue.url);
    const stores = emulators.stores();
    const second = 1_800_300_000;
    const clock = new ManualClock(second * 1000);
    const scanner = { ...stores, occupancy: apiOccupancy(), deliveryQueue, clock, shardCount: 2 };
    await emulators.resetClock();
    await stores.clockStore.start(second);
    const api = {
      ...scanner,
      nameTexts: taskNameTexts,
      occupancy: apiOccupancy(),
      tickQueue,
      bucketCount: 10_000_000,
      retentionDays: 30,
      lookaheadSeconds: 0,
    };

    // Act: the task is due 5 s past what the api enqueues itself; the scanner claims its
    // second once it is due, scanning with the index it read before the submit.
    const due = claimableThrough(second * 1000, 0) + 5;
    const occupiedTooEarly = await scanner.occupancy.occupied(second, due);
    const [id] = createdIds(await submitTasks(api, 'acme', [request(due * 1000 + 500)]));
    clock.set(due * 1000);
    const claim = await claimSeconds({ ...scanner, through: due });
    if (claim.claimed) await scanRange(scanner, claim, { occupied: occupiedTooEarly });

    // Assess: neither side enqueued the task, which is why scanRange reads the index after the claim.
    const enqueued = await enqueuedIds(queue.url, [id ?? '']);
    expect(enqueued.has(id ?? '')).toBe(false);
  });

  it('leaves a task due beyond what any scanner can have claimed to the scanner instead of enqueueing it', async () => {
    // Prepare
    const queue = await emulators.createQueue('future-path');
    const stores = emulators.stores();
    const clock = new ManualClock(1_800_100_000_000);
    const ports = {
      ...stores,
      occupancy: apiOccupancy(),
      deliveryQueue: sqsDeliveryQueue(emulators.sqs, queue.url),
      tickQueue,
      clock,
      bucketCount: 10_000_000,
      retentionDays: 30,
      shardCount: 4,
      nameTexts: taskNameTexts,
      lookaheadSeconds: 2,
    };
    const { cursor } = (await stores.clockStore.read()) ?? { cursor: 0 };

    // Act
    await submitTasks(ports, 'acme', [request((cursor + 30) * 1000)]);

    // Assess
    expect(await drainBodies(emulators.sqs, queue.url)).toEqual([]);
  });

  it('gives every second occupied while its minute is being planned a tick from the plan or from the api', async () => {
    // Prepare: for each of 30 minutes, 6 api instances occupy seconds while the ticker plans the minute.
    const planner = apiOccupancy();
    const firstMinute = 31_000_000;
    const missing: number[] = [];

    // Act
    for (let minute = firstMinute; minute < firstMinute + 30; minute++) {
      const seconds = Array.from({ length: 6 }, (_, index) => minute * 60 + index * 7);
      const [planned, ...fromApis] = await Promise.all([
        planner.plan(minute),
        ...seconds.map((second) => apiOccupancy().occupy([second])),
      ]);
      const ticked = new Set([...(planned ?? []), ...fromApis.flat()]);
      missing.push(...seconds.filter((second) => !ticked.has(second)));
    }

    // Assess
    expect(missing).toEqual([]);
  });
});
