import { describe, expect, it, vi } from 'vitest';

import { minuteOf } from '../../functions/core/kernel/clock.js';
import { planTicks } from '../../functions/core/kernel/tick.js';
import { FakeOccupancyIndex, FakeTickQueue, ManualClock } from './fakes.js';

// 20 s into a minute.
const NOW_SECOND = 1_780_000_040;
const THIS_MINUTE = minuteOf(NOW_SECOND);

function tickerPorts(occupied: number[]) {
  return {
    occupancy: new FakeOccupancyIndex(occupied),
    tickQueue: new FakeTickQueue(),
    clock: new ManualClock(NOW_SECOND * 1000 + 300),
    lookaheadSeconds: 2,
  };
}

describe('Function: planTicks', () => {
  it('ticks each occupied second of this minute and the next, lookahead seconds before it, and no empty one', async () => {
    // Prepare
    const occupied = [THIS_MINUTE * 60 + 45, (THIS_MINUTE + 1) * 60 + 3, (THIS_MINUTE + 2) * 60];
    const ports = tickerPorts(occupied);

    // Act
    const ticks = await planTicks(ports);

    // Assess: the second after next minute is left to the next run.
    expect(ticks).toEqual([
      { second: THIS_MINUTE * 60 + 45, delaySeconds: 23 },
      { second: (THIS_MINUTE + 1) * 60 + 3, delaySeconds: 41 },
    ]);
    expect(ports.tickQueue.sent).toEqual(ticks);
    expect(ports.occupancy.planned).toEqual(new Set([THIS_MINUTE, THIS_MINUTE + 1]));
  });

  it('sends nothing for a minute an earlier run planned, and nothing at all when idle', async () => {
    // Prepare
    const ports = tickerPorts([THIS_MINUTE * 60 + 45]);
    await planTicks(ports);
    const send = vi.spyOn(ports.tickQueue, 'send');

    // Act: a duplicate run, then the next minute's run with nothing due.
    const again = await planTicks(ports);
    ports.clock.advance(60_000);
    const idle = await planTicks(ports);

    // Assess
    expect(again).toEqual([]);
    expect(idle).toEqual([]);
    expect(send).not.toHaveBeenCalled();
  });

  it('ticks at once a second of the current minute that is already due, when a failed run left the minute unplanned', async () => {
    // Prepare
    const ports = tickerPorts([NOW_SECOND - 10]);

    // Act
    const ticks = await planTicks(ports);

    // Assess
    expect(ticks).toEqual([{ second: NOW_SECOND - 10, delaySeconds: 0 }]);
  });
});
