import { describe, expect, it } from 'vitest';

import { startEventBridgeSink } from '../../../lib/local/eventbridge-sink.js';
import { PutEventsThrottle } from '../../../lib/local/limits/put-events-throttle.js';
import { ManualClock } from '../../support/clock.js';

describe('Class: PutEventsThrottle', () => {
  it('admits the scaled entries of a second, refuses the rest, and starts again the next second', () => {
    // Prepare: k = 1,000 leaves EventBridge's 10,000 entries a second at 10.
    const clock = new ManualClock(0);
    const throttle = new PutEventsThrottle({ k: 1_000, clock });

    // Act
    const first = [throttle.admit(4), throttle.admit(6), throttle.admit(1)];
    clock.advance(1_000);
    const next = throttle.admit(10);

    // Assess
    expect(first).toEqual([true, true, false]);
    expect(next).toBe(true);
    expect(throttle.report()).toEqual({
      entriesPerSecond: 10,
      requests: 4,
      entries: 20,
      throttled: 1,
      peakEntriesPerSecond: 10,
    });
  });
});

describe('Function: startEventBridgeSink', () => {
  it('answers a PutEvents over the quota with ThrottlingException and keeps none of its events', async () => {
    // Prepare
    let admitted = false;
    const sink = await startEventBridgeSink({ admit: () => admitted });
    const put = () =>
      fetch(sink.endpoint, {
        method: 'POST',
        headers: { 'x-amz-target': 'AWSEvents.PutEvents', 'content-type': 'application/x-amz-json-1.1' },
        body: JSON.stringify({ Entries: [{ EventBusName: 'bus', Source: 's', DetailType: 'd', Detail: '{}' }] }),
      });

    try {
      // Act
      const refused = await put();
      const refusal = (await refused.json()) as { __type: string };
      admitted = true;
      const accepted = await put();
      await accepted.arrayBuffer();

      // Assess
      expect(refused.status).toBe(400);
      expect(refusal.__type).toBe('ThrottlingException');
      expect(accepted.status).toBe(200);
      expect(sink.events).toHaveLength(1);
    } finally {
      await sink.close();
    }
  });
});
