import { describe, expect, it } from 'vitest';

import type { ClockStore } from '../../functions/core/kernel/task.js';

/** An hour boundary lies inside the seconds used below, so a store filing markers by hour must read both hours. */
const SECOND = 1_700_002_798;
const EXPIRES_AT = SECOND + 86_400;

/** What the scanner, sweeper and api rely on from a ClockStore: one cursor moved by compare-and-set, and markers. */
export function clockStoreContract(name: string, makeStore: () => Promise<ClockStore>): void {
  describe(`Contract: ClockStore (${name})`, () => {
    it('starts the cursor once; a second start is refused and changes nothing', async () => {
      // Prepare
      const store = await makeStore();
      const before = await store.read();

      // Act
      const first = await store.start(SECOND);
      const second = await store.start(SECOND + 50);

      // Assess
      expect(before).toBeUndefined();
      expect([first, second]).toEqual([true, false]);
      expect(await store.read()).toEqual({ cursor: SECOND, startedAt: SECOND });
    });

    it('advances only from where the cursor is, so of two scanners claiming one range exactly one wins', async () => {
      // Prepare
      const store = await makeStore();
      const unstarted = await store.advance(SECOND, SECOND + 2);
      await store.start(SECOND);

      // Act
      const claims = await Promise.all([store.advance(SECOND, SECOND + 2), store.advance(SECOND, SECOND + 2)]);
      const stale = await store.advance(SECOND, SECOND + 5);

      // Assess
      expect(unstarted).toBe(false);
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(stale).toBe(false);
      expect(await store.read()).toEqual({ cursor: SECOND + 3, startedAt: SECOND });
    });

    it('reports every second of a scanned range with what it enqueued, and only seconds asked for', async () => {
      // Prepare
      const store = await makeStore();

      // Act
      await store.markScanned({ from: SECOND, through: SECOND + 3 }, new Map([[SECOND + 2, 7]]), EXPIRES_AT);

      // Assess
      expect(await store.scannedSeconds(SECOND - 5, SECOND + 10)).toEqual(
        new Map([
          [SECOND, 0],
          [SECOND + 1, 0],
          [SECOND + 2, 7],
          [SECOND + 3, 0],
        ]),
      );
      expect(await store.scannedSeconds(SECOND + 2, SECOND + 2)).toEqual(new Map([[SECOND + 2, 7]]));
      expect(await store.scannedSeconds(SECOND + 4, SECOND + 10)).toEqual(new Map());
    });

    it('keeps recheck flags by the second they were raised, each due second once', async () => {
      // Prepare
      const store = await makeStore();

      // Act
      await store.markForRecheck([SECOND + 9, SECOND + 12, SECOND + 9], SECOND, EXPIRES_AT);
      await store.markForRecheck([SECOND + 12, SECOND + 20], SECOND, EXPIRES_AT);
      await store.markForRecheck([SECOND + 30], SECOND + 5, EXPIRES_AT);

      // Assess
      const flagged = await store.rechecksFlagged(SECOND, SECOND + 4);
      expect([...flagged.keys()]).toEqual([SECOND]);
      expect([...(flagged.get(SECOND) ?? [])].sort((a, b) => a - b)).toEqual([SECOND + 9, SECOND + 12, SECOND + 20]);
      expect(await store.rechecksFlagged(SECOND + 5, SECOND + 5)).toEqual(new Map([[SECOND + 5, [SECOND + 30]]]));
    });

    it('only ever raises a watermark, and keeps each watermark apart', async () => {
      // Prepare
      const store = await makeStore();
      const unset = await store.watermark('swept');

      // Act
      await store.raiseWatermark('swept', SECOND + 10);
      await store.raiseWatermark('swept', SECOND + 4);
      await store.raiseWatermark('overdueChecked', SECOND + 1);

      // Assess
      expect(unset).toBeUndefined();
      expect(await store.watermark('swept')).toBe(SECOND + 10);
      expect(await store.watermark('overdueChecked')).toBe(SECOND + 1);
    });
  });
}
