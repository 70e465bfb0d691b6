import { describe, expect, it } from 'vitest';

import type { OccupancyIndex } from '../../functions/core/kernel/task.js';

/** A minute whose seconds cross no hour boundary, and the next minute. */
const MINUTE = 28_333_340;
const FIRST = MINUTE * 60;
const NEXT_MINUTE_FIRST = FIRST + 60;

/** What the api, ticker and scanner rely on: a planned minute tells later writers which seconds are theirs to tick. */
export function occupancyIndexContract(name: string, makeIndex: () => Promise<OccupancyIndex>): void {
  describe(`Contract: OccupancyIndex (${name})`, () => {
    it('plans a minute once, returning its occupied seconds in order and no other minute’s', async () => {
      // Prepare
      const index = await makeIndex();
      const unticked = await index.occupy([FIRST + 40, FIRST + 3, NEXT_MINUTE_FIRST + 1]);

      // Act
      const planned = await index.plan(MINUTE);
      const again = await index.plan(MINUTE);

      // Assess
      expect(unticked).toEqual([]);
      expect(planned).toEqual([FIRST + 3, FIRST + 40]);
      expect(again).toBeUndefined();
    });

    it('hands a second new to an already planned minute back to its writer, and nothing else', async () => {
      // Prepare
      const index = await makeIndex();
      await index.occupy([FIRST + 3]);
      await index.plan(MINUTE);

      // Act
      const unticked = await index.occupy([FIRST + 3, FIRST + 7, FIRST + 7, NEXT_MINUTE_FIRST + 2]);

      // Assess
      expect([...unticked].sort((a, b) => a - b)).toEqual([FIRST + 7]);
    });

    it('reads back the occupied seconds of a range, across minutes', async () => {
      // Prepare
      const index = await makeIndex();
      await index.occupy([FIRST + 1, FIRST + 59, NEXT_MINUTE_FIRST + 5, NEXT_MINUTE_FIRST + 30]);

      // Act
      const occupied = await index.occupied(FIRST + 2, NEXT_MINUTE_FIRST + 5);

      // Assess
      expect(occupied).toEqual(new Set([FIRST + 59, NEXT_MINUTE_FIRST + 5]));
    });
  });
}
