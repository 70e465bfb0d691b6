import { describe, expect, it } from 'vitest';

import { DynamoOccupancyIndex } from '../../functions/adapters/dynamo/occupancy-index.js';
import { claimSeconds, MAX_CLAIM_SECONDS } from '../../functions/core/kernel/clock.js';
import type { DeliveryMessage } from '../../functions/core/kernel/task.js';
import { runScanner } from '../../functions/core/scan/scan.js';
import { ManualClock } from '../support/clock.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';

const emulators = emulatorsFixture();

describe('Invariant 4: one scanner per second (conditional write on CLOCK, real dynalite)', () => {
  it('gives each second of a backlog to exactly one of many racing scanners', async () => {
    // Prepare: the clock stopped 5 minutes ago and 12 scanners wake up at once.
    const { clockStore } = emulators.stores();
    const nowMs = 1_800_000_000_000;
    const clock = new ManualClock(nowMs);
    const lookaheadSeconds = 2;
    const backlogStart = nowMs / 1000 - 300;
    await clockStore.start(backlogStart);
    const claimsBy = Array.from({ length: 12 }, () => [] as number[]);

    // Act
    await Promise.all(
      claimsBy.map(async (claims) => {
        for (;;) {
          // Small claims, so that twelve claimants have a backlog to share.
          const through = Math.min(nowMs / 1000 + lookaheadSeconds, ((await clockStore.read())?.cursor ?? 0) + 9);
          const claim = await claimSeconds({ clockStore, clock, through });
          if (!claim.claimed) {
            if (through >= nowMs / 1000 + lookaheadSeconds) return;
            continue;
          }
          for (let second = claim.from; second <= claim.through; second++) claims.push(second);
        }
      }),
    );

    // Assess: every second from the backlog start to now + lookahead claimed once, and the work was shared.
    const all = claimsBy.flat().sort((a, b) => a - b);
    const expected = Array.from({ length: 300 + lookaheadSeconds + 1 }, (_, index) => backlogStart + index);
    expect(all).toEqual(expected);
    expect(claimsBy.filter((claims) => claims.length > 0).length).toBeGreaterThan(1);
    expect((await clockStore.read())?.cursor).toBe(nowMs / 1000 + lookaheadSeconds + 1);
  });

  it('does not claim a second beyond now + lookahead, however often it is asked', async () => {
    // Prepare
    const emulatorsStores = emulators.stores();
    await emulators.resetClock();
    const clock = new ManualClock(1_900_000_000_500);

    // Act
    const claims = await Promise.all(
      Array.from({ length: 20 }, () => claimSeconds({ ...emulatorsStores, clock, through: 1_900_000_001 })),
    );

    // Assess: the clock started at the current second; one claimant took it and the next one, nobody else anything.
    expect(claims.filter((claim) => claim.claimed)).toEqual([
      { claimed: true, from: 1_900_000_000, through: 1_900_000_001 },
    ]);
  });

  it('drains a backlog with concurrent scanner runs, recording every second as scanned once', async () => {
    // Prepare
    const { taskStore, clockStore } = emulators.stores();
    await emulators.resetClock();
    const nowMs = 1_950_000_000_000;
    await clockStore.start(nowMs / 1000 - 120);
    const sent: DeliveryMessage[] = [];
    const ports = {
      taskStore,
      clockStore,
      occupancy: new DynamoOccupancyIndex({ client: emulators.dynamo, tableName: emulators.tableName }),
      clock: new ManualClock(nowMs),
      shardCount: 2,
      lookaheadSeconds: 0,
      deliveryQueue: { send: async (messages: readonly DeliveryMessage[]) => void sent.push(...messages) },
    };

    // Act
    const runs = await Promise.all(Array.from({ length: 4 }, () => runScanner(ports, 60_000)));

    // Assess
    expect(runs.reduce((sum, run) => sum + run.claimed, 0)).toBe(121);
    expect(runs.every((run) => run.claimed <= 2 * MAX_CLAIM_SECONDS)).toBe(true);
    const marked = await clockStore.scannedSeconds(nowMs / 1000 - 120, nowMs / 1000);
    expect(marked.size).toBe(121);
  });

  it('only ever raises the sweep watermark, whatever order racing sweeps record it in', async () => {
    // Prepare
    const { clockStore } = emulators.stores();

    // Act
    await Promise.all([1_000, 3_000, 2_000, 500].map((second) => clockStore.raiseWatermark('swept', second)));
    await clockStore.raiseWatermark('swept', 1_500);
    await clockStore.raiseWatermark('overdueChecked', 700);

    // Assess
    expect(await clockStore.watermark('swept')).toBe(3_000);
    expect(await clockStore.watermark('overdueChecked')).toBe(700);
  });

  it('files recheck flags under the second they were raised and finds them by that second, edges included', async () => {
    // Prepare
    const { clockStore } = emulators.stores();
    await clockStore.markForRecheck([100, 250], 5_000, 9_999_999);
    await clockStore.markForRecheck([40], 5_001, 9_999_999);
    await clockStore.markForRecheck([7], 5_002, 9_999_999);

    // Act
    const flags = await clockStore.rechecksFlagged(5_000, 5_001);

    // Assess
    expect(flags).toEqual(
      new Map([
        [5_000, [100, 250]],
        [5_001, [40]],
      ]),
    );
  });
});
