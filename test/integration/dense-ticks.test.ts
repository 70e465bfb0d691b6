/** Dense mode's once-a-minute plan on dynalite: duplicate ticker runs racing over the real conditional semantics. */
import { describe, expect, it } from 'vitest';

import { EverySecondOccupancy } from '../../functions/adapters/dynamo/occupancy-index.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';

const emulators = emulatorsFixture();

const MINUTE = 29_666_667;

describe('Class: EverySecondOccupancy on dynalite', () => {
  it('of ten runs planning the same minute at once, exactly one ticks it, all 60 seconds', async () => {
    // Prepare: each run is its own instance, as duplicate ticker invocations are.
    const tableName = await emulators.newTable();
    const runs = Array.from({ length: 10 }, () => new EverySecondOccupancy({ client: emulators.dynamo, tableName }));

    // Act
    const plans = await Promise.all(runs.map((run) => run.plan(MINUTE)));
    const nextMinute = await runs[0]?.plan(MINUTE + 1);

    // Assess
    const ticked = plans.filter((seconds) => seconds !== undefined);
    expect(ticked).toEqual([Array.from({ length: 60 }, (_, offset) => MINUTE * 60 + offset)]);
    expect(nextMinute).toHaveLength(60);
  });
});
