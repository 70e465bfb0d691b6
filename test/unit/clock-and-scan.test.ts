import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it, vi } from 'vitest';

import { EverySecondOccupancy } from '../../functions/adapters/dynamo/occupancy-index.js';
import { QUEUES } from '../../functions/contract/topology.js';
import {
  claimableThrough,
  claimSeconds,
  CLOCK_SKEW_MS,
  MAX_CLAIM_SECONDS,
  scanThrough,
} from '../../functions/core/kernel/clock.js';
import { tickFor } from '../../functions/core/kernel/tick.js';
import {
  enqueueSecond,
  runScanner,
  scanRange,
  SEND_CHUNK_MESSAGES,
  SHARD_QUERIES_IN_FLIGHT,
} from '../../functions/core/scan/scan.js';
import { sweep } from '../../functions/core/sweep/sweep.js';
import { aTask, FakeClockStore, FakeDeliveryQueue, FakeOccupancyIndex, FakeTaskStore, ManualClock } from './fakes.js';

const NOW_SECOND = 1_780_000_000;
const SHARD_COUNT = 4;

/** Seconds `from` to `to`, both included. */
const secondsFrom = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index);

function scanPorts(
  options: {
    nowMs?: number;
    tasks?: ReturnType<typeof aTask>[];
    clockStore?: FakeClockStore;
    occupied?: number[];
  } = {},
) {
  const tasks = options.tasks ?? [];
  return {
    clock: new ManualClock(options.nowMs ?? NOW_SECOND * 1000),
    clockStore: options.clockStore ?? new FakeClockStore({ cursor: NOW_SECOND, startedAt: NOW_SECOND - 3600 }),
    taskStore: new FakeTaskStore(tasks),
    // As the api leaves it: every stored task's second is in the index, and maybe more.
    occupancy: new FakeOccupancyIndex([
      ...tasks.map((task) => Math.floor(task.dueAtMs / 1000)),
      ...(options.occupied ?? []),
    ]),
    deliveryQueue: new FakeDeliveryQueue(),
    shardCount: SHARD_COUNT,
  };
}

describe('Function: claimSeconds', () => {
  it('starts the clock at the current second when it has never run', async () => {
    // Prepare
    const clock = new ManualClock(NOW_SECOND * 1000 + 750);
    const clockStore = new FakeClockStore();

    // Act
    const claim = await claimSeconds({ clockStore, clock, through: NOW_SECOND + 2 });

    // Assess
    expect(claim).toEqual({ claimed: true, from: NOW_SECOND, through: NOW_SECOND + 2 });
    expect(clockStore.state).toEqual({ cursor: NOW_SECOND + 3, startedAt: NOW_SECOND });
  });

  it('claims every unclaimed second up to the one asked for in one conditional write, then nothing', async () => {
    // Prepare
    const clock = new ManualClock(NOW_SECOND * 1000 + 999);
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND - 1, startedAt: NOW_SECOND - 100 });
    const advance = vi.spyOn(clockStore, 'advance');

    // Act
    const first = await claimSeconds({ clockStore, clock, through: NOW_SECOND + 2 });
    const second = await claimSeconds({ clockStore, clock, through: NOW_SECOND + 2 });

    // Assess
    expect(first).toEqual({ claimed: true, from: NOW_SECOND - 1, through: NOW_SECOND + 2 });
    expect(second).toEqual({ claimed: false });
    expect(advance).toHaveBeenCalledTimes(1);
    expect(clockStore.state?.cursor).toBe(NOW_SECOND + 3);
  });

  it('takes at most a minute of seconds per claim, so a backlog is shared out a minute at a time', async () => {
    // Prepare
    const clock = new ManualClock(NOW_SECOND * 1000);
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND - 600, startedAt: NOW_SECOND - 1000 });

    // Act
    const claim = await claimSeconds({ clockStore, clock, through: NOW_SECOND });

    // Assess
    expect(claim).toEqual({ claimed: true, from: NOW_SECOND - 600, through: NOW_SECOND - 600 + MAX_CLAIM_SECONDS - 1 });
  });

  it("re-reads the cursor after losing a race and claims what follows the rival's claim", async () => {
    // Prepare
    const clock = new ManualClock(NOW_SECOND * 1000);
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND - 5, startedAt: NOW_SECOND - 100 });
    clockStore.loseNextAdvances(1);
    const advance = vi.spyOn(clockStore, 'advance');

    // Act
    const claim = await claimSeconds({ clockStore, clock, through: NOW_SECOND + 2 });

    // Assess
    expect(claim).toEqual({ claimed: true, from: NOW_SECOND - 4, through: NOW_SECOND + 2 });
    expect(advance.mock.calls).toEqual([
      [NOW_SECOND - 5, NOW_SECOND + 2],
      [NOW_SECOND - 4, NOW_SECOND + 2],
    ]);
  });

  it('gives up without a claim when a lost race leaves the cursor past the second asked for', async () => {
    // Prepare
    const clock = new ManualClock(NOW_SECOND * 1000);
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND + 2, startedAt: NOW_SECOND - 100 });
    clockStore.loseNextAdvances(1);

    // Act
    const claim = await claimSeconds({ clockStore, clock, through: NOW_SECOND + 2 });

    // Assess
    expect(claim).toEqual({ claimed: false });
    expect(clockStore.state?.cursor).toBe(NOW_SECOND + 3);
  });
});

describe('Function: enqueueSecond', () => {
  it('reads every shard of the second', async () => {
    // Prepare
    const ports = scanPorts();
    const listDue = vi.spyOn(ports.taskStore, 'listDue');

    // Act
    await enqueueSecond(ports, NOW_SECOND);

    // Assess
    expect(listDue.mock.calls.map(([second, shard]) => [second, shard]).sort()).toEqual(
      [0, 1, 2, 3].map((shard) => [NOW_SECOND, shard]).sort(),
    );
  });

  it('reads a deployment of 80 shards at most SHARD_QUERIES_IN_FLIGHT at a time, every one of them', async () => {
    // Prepare
    const ports = { ...scanPorts(), shardCount: 80 };
    let inFlight = 0;
    let peak = 0;
    const shardsRead: number[] = [];
    ports.taskStore.listDue = async (_second, shard) => {
      peak = Math.max(peak, ++inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      shardsRead.push(shard);
      return [];
    };

    // Act
    await enqueueSecond(ports, NOW_SECOND);

    // Assess
    expect(peak).toBe(SHARD_QUERIES_IN_FLIGHT);
    expect(shardsRead.sort((a, b) => a - b)).toEqual(Array.from({ length: 80 }, (_, shard) => shard));
  });

  it('enqueues the PENDING tasks of every shard and of that second only', async () => {
    // Prepare
    const due = [aTask(NOW_SECOND * 1000, 0), aTask(NOW_SECOND * 1000 + 400, 3), aTask(NOW_SECOND * 1000 + 999, 2)];
    const others = [
      aTask(NOW_SECOND * 1000 + 1000, 1),
      aTask(NOW_SECOND * 1000 - 1, 1),
      aTask(NOW_SECOND * 1000 + 5, 1, { status: 'CANCELLED' }),
    ];
    const ports = scanPorts({ tasks: [...due, ...others] });

    // Act
    const scan = await enqueueSecond(ports, NOW_SECOND);

    // Assess
    expect(scan).toEqual({ found: 3, sent: 3 });
    expect(ports.deliveryQueue.sent.map((message) => message.id).sort()).toEqual(due.map((task) => task.id).sort());
  });

  it("delays each message by the whole seconds until its due time, less the mapping's batching window, rounding down", async () => {
    // Prepare: the delivery mapping gathers a batch for up to a second, so a message surfaces a second earlier still.
    expect(QUEUES.delivery.consumer.maxBatchingWindowSeconds).toBe(1);
    const nowMs = (NOW_SECOND - 4) * 1000 + 500;
    const tasks = [
      aTask(nowMs + 3999, 0),
      aTask(nowMs + 2000, 1),
      aTask(nowMs + 1999, 2),
      aTask(nowMs - 1500, 3), // overdue: a past second scanned late
    ];
    const ports = scanPorts({ nowMs, tasks });

    // Act
    for (const second of new Set(tasks.map((task) => Math.floor(task.dueAtMs / 1000))))
      await enqueueSecond(ports, second);

    // Assess
    const delays = Object.fromEntries(ports.deliveryQueue.sent.map((message) => [message.id, message.delaySeconds]));
    expect(tasks.map((task) => delays[task.id])).toEqual([2, 1, 0, 0]);
  });

  it('sends the second earliest due first, whichever shard each task is in', async () => {
    // Prepare: shard order and due order disagree, so a concatenation of shards would be out of order.
    const tasks = [900, 100, 500, 0, 999, 300].map((ms, index) => aTask(NOW_SECOND * 1000 + ms, 3 - (index % 4)));
    const ports = scanPorts({ nowMs: (NOW_SECOND - 2) * 1000, tasks });

    // Act
    await enqueueSecond(ports, NOW_SECOND);

    // Assess
    const byDue = [...tasks].sort((a, b) => a.dueAtMs - b.dueAtMs).map((task) => task.id);
    expect(ports.deliveryQueue.sent.map((message) => message.id)).toEqual(byDue);
  });

  it('sends a busy second a chunk at a time, each delayed by the clock as it is sent', async () => {
    // Prepare: one and a half chunks due at the same millisecond, and a first chunk that takes 1.2 s to send.
    const dueAtMs = NOW_SECOND * 1000 + 500;
    const tasks = Array.from({ length: SEND_CHUNK_MESSAGES * 1.5 }, (_, index) => aTask(dueAtMs, index % SHARD_COUNT));
    const ports = scanPorts({ nowMs: (NOW_SECOND - 3) * 1000, tasks });
    const delivered = ports.deliveryQueue.send.bind(ports.deliveryQueue);
    const send = vi.spyOn(ports.deliveryQueue, 'send').mockImplementation(async (messages) => {
      await delivered(messages);
      ports.clock.advance(1200);
    });

    // Act
    const scan = await enqueueSecond(ports, NOW_SECOND);

    // Assess: sent 3.5 s before due, the first chunk waits 2 s (a second left for the batching window); the rest, sent 1.2 s later, 1 s.
    expect(scan).toEqual({ found: tasks.length, sent: tasks.length });
    expect(send.mock.calls.map(([messages]) => messages.length)).toEqual([
      SEND_CHUNK_MESSAGES,
      SEND_CHUNK_MESSAGES / 2,
    ]);
    expect(new Set(send.mock.calls[0]?.[0].map((message) => message.delaySeconds))).toEqual(new Set([2]));
    expect(new Set(send.mock.calls[1]?.[0].map((message) => message.delaySeconds))).toEqual(new Set([1]));
  });

  it('stops between chunks once past its deadline, but always sends the first', async () => {
    // Prepare: three chunks, the clock already past the deadline.
    const tasks = Array.from({ length: SEND_CHUNK_MESSAGES * 3 }, (_, index) =>
      aTask(NOW_SECOND * 1000 + (index % 1000), index % SHARD_COUNT),
    );
    const ports = scanPorts({ nowMs: NOW_SECOND * 1000, tasks });

    // Act
    const scan = await enqueueSecond(ports, NOW_SECOND, NOW_SECOND * 1000 - 1);

    // Assess
    expect(scan).toEqual({ found: tasks.length, sent: SEND_CHUNK_MESSAGES });
    expect(ports.deliveryQueue.sent).toHaveLength(SEND_CHUNK_MESSAGES);
  });
});

describe('Function: scanRange', () => {
  it('queries only the seconds the occupancy index names, and marks the whole range scanned', async () => {
    // Prepare: a minute claimed at once, with tasks in two of its seconds.
    const tasks = [
      aTask((NOW_SECOND + 7) * 1000 + 10, 1),
      aTask((NOW_SECOND + 42) * 1000, 3),
      aTask((NOW_SECOND + 42) * 1000 + 5, 0),
    ];
    const ports = scanPorts({ tasks });
    const listDue = vi.spyOn(ports.taskStore, 'listDue');

    // Act
    const scan = await scanRange(ports, { from: NOW_SECOND, through: NOW_SECOND + 59 });

    // Assess
    expect(scan.enqueuedBySecond).toEqual(
      new Map([
        [NOW_SECOND + 7, 1],
        [NOW_SECOND + 42, 2],
      ]),
    );
    expect(scan.finishedThrough).toBe(NOW_SECOND + 59);
    expect(new Set(listDue.mock.calls.map(([second]) => second))).toEqual(new Set([NOW_SECOND + 7, NOW_SECOND + 42]));
    expect(listDue).toHaveBeenCalledTimes(2 * SHARD_COUNT);
    expect(ports.clockStore.markers.size).toBe(60);
    expect(ports.clockStore.markers.get(NOW_SECOND + 42)).toBe(2);
    expect(ports.clockStore.markers.get(NOW_SECOND + 43)).toBe(0);
  });

  it('marks the range scanned only after sending its messages', async () => {
    // Prepare
    const ports = scanPorts({ tasks: [aTask(NOW_SECOND * 1000 + 10, 1)] });
    const send = vi.spyOn(ports.deliveryQueue, 'send');
    const markScanned = vi.spyOn(ports.clockStore, 'markScanned');

    // Act
    await scanRange(ports, { from: NOW_SECOND, through: NOW_SECOND });

    // Assess
    expect(ports.clockStore.markers.get(NOW_SECOND)).toBe(1);
    expect(send.mock.invocationCallOrder[0]).toBeLessThan(markScanned.mock.invocationCallOrder[0] ?? 0);
  });

  it('marks empty seconds as scanned without reading a shard or sending', async () => {
    // Prepare
    const ports = scanPorts();
    const send = vi.spyOn(ports.deliveryQueue, 'send');
    const listDue = vi.spyOn(ports.taskStore, 'listDue');

    // Act
    await scanRange(ports, { from: NOW_SECOND, through: NOW_SECOND + 3 });

    // Assess
    expect(send).not.toHaveBeenCalled();
    expect(listDue).not.toHaveBeenCalled();
    expect([...ports.clockStore.markers]).toEqual(secondsFrom(NOW_SECOND, NOW_SECOND + 3).map((second) => [second, 0]));
  });

  it('reads the occupancy index only after the claim it is given, never before', async () => {
    // Prepare: the order a scanner runs in; the index read must follow the cursor write.
    const ports = scanPorts({ clockStore: new FakeClockStore({ cursor: NOW_SECOND, startedAt: 0 }) });
    const advance = vi.spyOn(ports.clockStore, 'advance');
    const occupied = vi.spyOn(ports.occupancy, 'occupied');

    // Act
    await runScanner({ ...ports, lookaheadSeconds: 2 }, 40_000);

    // Assess
    expect(advance.mock.invocationCallOrder[0]).toBeLessThan(occupied.mock.invocationCallOrder[0] ?? 0);
  });

  it('writes no marker when sending fails, so the sweeper scans the seconds again', async () => {
    // Prepare
    const ports = scanPorts({ tasks: [aTask(NOW_SECOND * 1000 + 10, 1)] });
    ports.deliveryQueue.failure = new Error('SQS unavailable');

    // Act
    const scanning = scanRange(ports, { from: NOW_SECOND, through: NOW_SECOND + 1 });

    // Assess
    await expect(scanning).rejects.toThrow('SQS unavailable');
    expect(ports.clockStore.markers.size).toBe(0);
  });

  it('past its deadline records only the seconds it finished, leaving the rest unmarked', async () => {
    // Prepare: five busy seconds, each taking 3 s to send, against a 5 s deadline.
    const tasks = [0, 1, 2, 3, 4].map((offset) => aTask((NOW_SECOND + offset) * 1000 + 100, offset % SHARD_COUNT));
    const ports = scanPorts({ tasks });
    const delivered = ports.deliveryQueue.send.bind(ports.deliveryQueue);
    vi.spyOn(ports.deliveryQueue, 'send').mockImplementation(async (messages) => {
      await delivered(messages);
      ports.clock.advance(3000);
    });

    // Act
    const scan = await scanRange(
      ports,
      { from: NOW_SECOND - 2, through: NOW_SECOND + 9 },
      {
        deadlineMs: NOW_SECOND * 1000 + 5000,
      },
    );

    // Assess: two seconds sent (the second ending past the deadline), the third never started.
    expect(scan.finishedThrough).toBe(NOW_SECOND + 1);
    expect([...scan.enqueuedBySecond.keys()]).toEqual([NOW_SECOND, NOW_SECOND + 1]);
    expect([...ports.clockStore.markers.keys()]).toEqual(secondsFrom(NOW_SECOND - 2, NOW_SECOND + 1));
  });

  it('writes no marker when the deadline cuts its first busy second short', async () => {
    // Prepare: two chunks in the first second, the deadline long gone.
    const tasks = Array.from({ length: SEND_CHUNK_MESSAGES * 2 }, (_, index) =>
      aTask((NOW_SECOND + 1) * 1000, index % SHARD_COUNT),
    );
    const ports = scanPorts({ tasks });

    // Act
    const scan = await scanRange(ports, { from: NOW_SECOND, through: NOW_SECOND + 2 }, { deadlineMs: 0 });

    // Assess: the empty second before it is finished; the cut one and everything after are not.
    expect(scan).toEqual({
      enqueuedBySecond: new Map([[NOW_SECOND + 1, SEND_CHUNK_MESSAGES]]),
      finishedThrough: NOW_SECOND,
    });
    expect([...ports.clockStore.markers]).toEqual([[NOW_SECOND, 0]]);
  });
});

describe('Function: runScanner', () => {
  it('claims and scans seconds until the cursor passes the lookahead', async () => {
    // Prepare
    const task = aTask((NOW_SECOND + 1) * 1000 + 200, 2);
    const ports = {
      ...scanPorts({ tasks: [task], clockStore: new FakeClockStore({ cursor: NOW_SECOND - 1, startedAt: 0 }) }),
      lookaheadSeconds: 2,
    };

    // Act
    const run = await runScanner(ports, 40_000);

    // Assess
    expect(run).toEqual({ claimed: 4, enqueuedBySecond: new Map([[NOW_SECOND + 1, 1]]), enqueued: 1 });
    expect(ports.deliveryQueue.sent).toEqual([{ id: task.id, delaySeconds: 0 }]);
    expect(ports.clockStore.state?.cursor).toBe(NOW_SECOND + 3);
  });

  it("claims its tick's second when its clock runs up to CLOCK_SKEW_MS behind the clock that sent the tick", async () => {
    // Prepare: the ticker plans a second ahead; its tick surfaces, by the ticker's clock, exactly
    // the lookahead before that second, and the scanner's clock reads CLOCK_SKEW_MS less.
    const lookaheadSeconds = 2;
    const second = NOW_SECOND + 10;
    const task = aTask(second * 1000 + 100, 1);
    const tickerNowMs = NOW_SECOND * 1000 + 300;
    const tick = tickFor(second, tickerNowMs, lookaheadSeconds);
    const ports = {
      ...scanPorts({
        tasks: [task],
        nowMs: tickerNowMs + tick.delaySeconds * 1000 - CLOCK_SKEW_MS,
        clockStore: new FakeClockStore({ cursor: second - 1, startedAt: 0 }),
      }),
      lookaheadSeconds,
    };

    // Act
    const run = await runScanner(ports, 40_000);

    // Assess: the second is sent now, not left to the sweeper's catch-up.
    expect(run.enqueuedBySecond).toEqual(new Map([[second, 1]]));
    expect(ports.deliveryQueue.sent.map((message) => message.id)).toEqual([task.id]);
  });

  it("keeps every scanner's claim within the api's claimableThrough, its clock up to CLOCK_SKEW_MS ahead", () => {
    for (const apiNowMs of [
      NOW_SECOND * 1000,
      NOW_SECOND * 1000 + 1,
      NOW_SECOND * 1000 + 499,
      NOW_SECOND * 1000 + 999,
    ]) {
      for (const skewMs of [-CLOCK_SKEW_MS, 0, CLOCK_SKEW_MS]) {
        expect(scanThrough(apiNowMs + skewMs, 2)).toBeLessThanOrEqual(claimableThrough(apiNowMs, 2));
      }
    }
  });

  it('reads the clock once per caught-up tick, not again to learn it is caught up', async () => {
    // Prepare: the usual steady state, one second to claim per tick.
    const ports = {
      ...scanPorts({ clockStore: new FakeClockStore({ cursor: NOW_SECOND + 2, startedAt: 0 }) }),
      lookaheadSeconds: 2,
    };
    const reads = vi.spyOn(ports.clockStore, 'read');

    // Act
    const run = await runScanner(ports, 40_000);

    // Assess
    expect(run.claimed).toBe(1);
    expect(reads).toHaveBeenCalledTimes(1);
  });

  it("answers a second tick in the same second without reading the clock, and the next second's tick reads it", async () => {
    // Prepare: one second's ticks from several occupancy slots, landing on one warm instance.
    const ports = {
      ...scanPorts({ clockStore: new FakeClockStore({ cursor: NOW_SECOND + 2, startedAt: 0 }) }),
      lookaheadSeconds: 2,
    };
    const reads = vi.spyOn(ports.clockStore, 'read');
    await runScanner(ports, 40_000);

    // Act
    const duplicates = await Promise.all([runScanner(ports, 40_000), runScanner(ports, 40_000)]);
    const readsInTheSecond = reads.mock.calls.length;
    ports.clock.advance(1000);
    const next = await runScanner(ports, 40_000);

    // Assess
    expect(duplicates.map((run) => run.claimed)).toEqual([0, 0]);
    expect(readsInTheSecond).toBe(1);
    expect(next.claimed).toBe(1);
    expect(reads).toHaveBeenCalledTimes(2);
  });

  it('drains a backlog a minute at a time and stops claiming once its time budget is spent', async () => {
    // Prepare: a busy backlog far behind now, and scans slow enough that the budget runs out first.
    const ports = {
      ...scanPorts({
        clockStore: new FakeClockStore({ cursor: NOW_SECOND - 600, startedAt: 0 }),
        occupied: secondsFrom(NOW_SECOND - 600, NOW_SECOND),
      }),
      shardCount: 1,
      lookaheadSeconds: 2,
    };
    vi.spyOn(ports.taskStore, 'listDue').mockImplementation(async () => {
      ports.clock.advance(400);
      return [];
    });

    // Act
    const run = await runScanner(ports, 1000);

    // Assess: the minute in hand was finished; no further one was claimed.
    expect(run.claimed).toBe(MAX_CLAIM_SECONDS);
    expect(ports.clockStore.state?.cursor).toBe(NOW_SECOND - 600 + MAX_CLAIM_SECONDS);
    expect(ports.clockStore.markers.size).toBe(MAX_CLAIM_SECONDS);
  });

  it('ends a claim of many busy seconds within its budget, and the sweeper sends the rest: nothing is lost', async () => {
    // Prepare: a minute of backlog, every second busy, and sends slow enough (a second each)
    // that the minute would take 60 s against a 10 s budget.
    const backlogFrom = NOW_SECOND - 300;
    const tasks = secondsFrom(backlogFrom, backlogFrom + MAX_CLAIM_SECONDS - 1).flatMap((second) => [
      aTask(second * 1000 + 10, 0),
      aTask(second * 1000 + 900, 3),
    ]);
    const ports = {
      ...scanPorts({ tasks, clockStore: new FakeClockStore({ cursor: backlogFrom, startedAt: backlogFrom - 60 }) }),
      lookaheadSeconds: 2,
    };
    const delivered = ports.deliveryQueue.send.bind(ports.deliveryQueue);
    vi.spyOn(ports.deliveryQueue, 'send').mockImplementation(async (messages) => {
      await delivered(messages);
      ports.clock.advance(1000);
    });
    const startedAtMs = ports.clock.now();
    const budgetMs = 10_000;

    // Act
    const run = await runScanner(ports, budgetMs);
    const scannerEndedAtMs = ports.clock.now();
    const report = await sweep(ports, {
      maxSecondsPerRun: 3600,
      graceSeconds: 5,
      overdueGraceSeconds: 600,
      catchUpGraceSeconds: 10,
      budgetMs: 3_600_000,
    });

    // Assess: the scanner stopped within one send of its budget, having recorded only what it
    // finished; the sweeper re-scanned the rest; every task was sent.
    expect(scannerEndedAtMs - startedAtMs).toBeLessThanOrEqual(budgetMs + 1000);
    expect(run.claimed).toBeGreaterThanOrEqual(MAX_CLAIM_SECONDS);
    const finished = secondsFrom(backlogFrom, backlogFrom + MAX_CLAIM_SECONDS - 1).filter((second) =>
      report.rescanned.every((rescanned) => rescanned !== second),
    );
    expect(finished.length).toBeGreaterThan(0);
    expect(report.rescanned.length).toBeGreaterThan(0);
    expect(new Set(ports.deliveryQueue.sent.map((message) => message.id))).toEqual(
      new Set(tasks.map((task) => task.id)),
    );
  });
});

describe('Function: sweep', () => {
  const settings = {
    maxSecondsPerRun: 3600,
    graceSeconds: 5,
    overdueGraceSeconds: 600,
    catchUpGraceSeconds: 10,
    budgetMs: 60_000,
  };

  it('rescans only the unmarked seconds with tasks up to now minus the grace, and records how far it got', async () => {
    // Prepare: the cursor runs ahead of now, so the grace bounds the run. Of the unfinished
    // seconds, -10 and -7 are in the occupancy index (-7's task was never written), -9 is not.
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND + 2, startedAt: NOW_SECOND - 12 });
    for (let second = NOW_SECOND - 12; second <= NOW_SECOND + 1; second++) clockStore.markers.set(second, 0);
    for (const unfinished of [NOW_SECOND - 10, NOW_SECOND - 9, NOW_SECOND - 7, NOW_SECOND - 4])
      clockStore.markers.delete(unfinished);
    const lost = aTask((NOW_SECOND - 10) * 1000 + 100, 3);
    const ports = scanPorts({ tasks: [lost], clockStore, occupied: [NOW_SECOND - 7, NOW_SECOND - 4] });

    // Act
    const report = await sweep(ports, settings);

    // Assess
    expect(report).toEqual({
      caughtUp: 0,
      rescanned: [NOW_SECOND - 10, NOW_SECOND - 7],
      enqueued: 1,
      overdue: 0,
      lagSeconds: -2,
      unsweptSeconds: 5,
      // The overdue pass reached its grace horizon: now - 600 s is before the clock started.
      overdueCheckLagSeconds: 0,
      errors: [],
    });
    expect(ports.deliveryQueue.sent).toEqual([{ id: lost.id, delaySeconds: 0, express: true }]);
    expect(clockStore.markers.get(NOW_SECOND - 10)).toBe(1);
    expect(clockStore.markers.has(NOW_SECOND - 4)).toBe(false);
    expect(clockStore.watermarks.swept).toBe(NOW_SECOND - 5);
  });

  it('starts at the second the clock started when it has never swept', async () => {
    // Prepare
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND, startedAt: NOW_SECOND - 8 });
    const ports = scanPorts({ clockStore, occupied: secondsFrom(NOW_SECOND - 20, NOW_SECOND) });

    // Act
    const report = await sweep(ports, settings);

    // Assess
    expect(report.rescanned).toEqual([NOW_SECOND - 8, NOW_SECOND - 7, NOW_SECOND - 6, NOW_SECOND - 5]);
  });

  it('starts a first sweep of a long-running clock at the oldest marker that can exist, not at the clock start', async () => {
    // Prepare: the clock has run for 100 days; markers are kept for 3.
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND, startedAt: NOW_SECOND - 100 * 86_400 });
    const ports = {
      ...scanPorts({ clockStore, occupied: secondsFrom(NOW_SECOND - 3 * 86_400 - 5, NOW_SECOND - 3 * 86_400 + 5) }),
      shardCount: 1,
    };
    const listDue = vi.spyOn(ports.taskStore, 'listDue');

    // Act
    await sweep(ports, { ...settings, maxSecondsPerRun: 10 });

    // Assess
    const firstSecond = Math.min(...listDue.mock.calls.map(([second]) => second));
    expect(firstSecond).toBe(NOW_SECOND - 3 * 86_400);
  });

  it('resumes after its watermark and never looks behind it', async () => {
    // Prepare
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND, startedAt: NOW_SECOND - 1000 });
    clockStore.watermarks.swept = NOW_SECOND - 7;
    const ports = scanPorts({ clockStore, occupied: secondsFrom(NOW_SECOND - 10, NOW_SECOND) });

    // Act
    const report = await sweep(ports, settings);

    // Assess
    expect(report.rescanned).toEqual([NOW_SECOND - 6, NOW_SECOND - 5]);
  });

  it('leaves no second behind when scans failed for longer than one run can cover', async () => {
    // Prepare: for 12 minutes every scanner claimed its second and then failed to send, so
    // nothing after T-720 has a marker; a sweep covers at most 5 minutes of seconds per run.
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND, startedAt: NOW_SECOND - 1000 });
    clockStore.watermarks.swept = NOW_SECOND - 900;
    for (let second = NOW_SECOND - 899; second <= NOW_SECOND - 720; second++) clockStore.markers.set(second, 0);
    const oldest = aTask((NOW_SECOND - 719) * 1000 + 500, 1);
    const ports = scanPorts({ tasks: [oldest], clockStore, occupied: secondsFrom(NOW_SECOND - 900, NOW_SECOND + 240) });

    // Act: the sweeper runs every minute while time goes on.
    const rescanned: number[] = [];
    for (let run = 0; run < 4; run++) {
      // The overdue pass is kept out of this test: it would (rightly) send the undelivered task again.
      const report = await sweep(ports, { ...settings, maxSecondsPerRun: 300, overdueGraceSeconds: 86_400 });
      rescanned.push(...report.rescanned);
      ports.clock.advance(60_000);
      if (clockStore.state) clockStore.state = { ...clockStore.state, cursor: clockStore.state.cursor + 60 };
    }

    // Assess: every unmarked second up to the grace was re-scanned exactly once, the oldest first.
    expect(rescanned[0]).toBe(NOW_SECOND - 719);
    expect(new Set(rescanned).size).toBe(rescanned.length);
    expect(rescanned).toContain(NOW_SECOND - 6);
    expect(ports.deliveryQueue.sent.map((message) => message.id)).toEqual([oldest.id]);
  });

  it('holds its watermark at a second whose re-scan fails, so the next run tries it again', async () => {
    // Prepare
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND, startedAt: NOW_SECOND - 20 });
    clockStore.watermarks.swept = NOW_SECOND - 21;
    for (let second = NOW_SECOND - 20; second < NOW_SECOND - 12; second++) clockStore.markers.set(second, 0);
    const stuck = aTask((NOW_SECOND - 12) * 1000, 0);
    const ports = scanPorts({ tasks: [stuck], clockStore });
    ports.deliveryQueue.failure = new Error('SQS unavailable');

    // Act
    const report = await sweep(ports, settings);

    // Assess: the failure is reported, and the watermark stops just before the failing second.
    expect(report.errors).toEqual([new Error('SQS unavailable')]);
    expect(clockStore.watermarks.swept).toBe(NOW_SECOND - 13);
  });

  it('stops re-scanning when its share of the time budget is spent and records only what it finished', async () => {
    // Prepare: every second has tasks, is unfinished, and takes 400 ms to re-scan; the pass gets 1 s of a 2.5 s budget.
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND, startedAt: NOW_SECOND - 100 });
    const ports = { ...scanPorts({ clockStore, occupied: secondsFrom(NOW_SECOND - 100, NOW_SECOND) }), shardCount: 1 };
    vi.spyOn(ports.taskStore, 'listDue').mockImplementation(async () => {
      ports.clock.advance(400);
      return [];
    });

    // Act
    const report = await sweep(ports, { ...settings, budgetMs: 2500 });

    // Assess
    expect(report.rescanned).toEqual([NOW_SECOND - 100, NOW_SECOND - 99, NOW_SECOND - 98]);
    expect(clockStore.watermarks.swept).toBe(NOW_SECOND - 98);
  });

  it('does nothing before the clock has started', async () => {
    // Prepare
    const ports = scanPorts({ clockStore: new FakeClockStore() });
    const listDue = vi.spyOn(ports.taskStore, 'listDue');

    // Act
    const report = await sweep(ports, settings);

    // Assess
    expect(report).toEqual({
      caughtUp: 0,
      rescanned: [],
      enqueued: 0,
      overdue: 0,
      lagSeconds: 0,
      unsweptSeconds: 0,
      overdueCheckLagSeconds: 0,
      errors: [],
    });
    expect(listDue).not.toHaveBeenCalled();
  });

  it('re-scans at least one second per run, even when reading what to do spent its budget', async () => {
    // Prepare: slow stores; reading the markers alone takes longer than the whole budget.
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND, startedAt: NOW_SECOND - 100 });
    const ports = { ...scanPorts({ clockStore, occupied: secondsFrom(NOW_SECOND - 100, NOW_SECOND) }), shardCount: 1 };
    const scannedSeconds = clockStore.scannedSeconds.bind(clockStore);
    vi.spyOn(clockStore, 'scannedSeconds').mockImplementation(async (from, to) => {
      ports.clock.advance(5000);
      return scannedSeconds(from, to);
    });

    // Act
    const report = await sweep(ports, { ...settings, budgetMs: 2500 });

    // Assess
    expect(report.rescanned).toEqual([NOW_SECOND - 100]);
    expect(clockStore.watermarks.swept).toBe(NOW_SECOND - 100);
  });

  it('claims and scans, late, the seconds with tasks that no tick claimed, and counts their tasks as missed', async () => {
    // Prepare: an idle clock whose cursor trails now; a tick for -50 was lost; -5 is still within the grace.
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND - 100, startedAt: NOW_SECOND - 1000 });
    const missed = aTask((NOW_SECOND - 50) * 1000 + 300, 2);
    const recent = aTask((NOW_SECOND - 5) * 1000, 1);
    const ports = scanPorts({ tasks: [missed, recent], clockStore });

    // Act
    const report = await sweep(ports, settings);

    // Assess
    expect(report.caughtUp).toBe(1);
    expect(report.lagSeconds).toBe(50);
    expect(ports.deliveryQueue.sent).toEqual([{ id: missed.id, delaySeconds: 0, express: true }]);
    expect(clockStore.state?.cursor).toBe(NOW_SECOND - 9);
  });

  it('reports no lag for an idle clock whose cursor trails now with nothing due', async () => {
    // Prepare
    const clockStore = new FakeClockStore({ cursor: NOW_SECOND - 70, startedAt: NOW_SECOND - 1000 });
    const ports = scanPorts({ clockStore });
    const listDue = vi.spyOn(ports.taskStore, 'listDue');

    // Act
    const report = await sweep(ports, settings);

    // Assess: the cursor moved over the empty seconds without a single shard query.
    expect(report).toMatchObject({ caughtUp: 0, lagSeconds: 0, rescanned: [], errors: [] });
    expect(clockStore.state?.cursor).toBe(NOW_SECOND - 9);
    expect(listDue).not.toHaveBeenCalled();
  });

  describe('overdue pass', () => {
    const overdueSettings = { ...settings, overdueGraceSeconds: 60 };

    /** Every second from the clock's start to the cursor scanned, as a healthy run leaves them. */
    function healthyClock(enqueuedBySecond: Record<number, number> = {}) {
      const clockStore = new FakeClockStore({ cursor: NOW_SECOND, startedAt: NOW_SECOND - 200 });
      for (let second = NOW_SECOND - 200; second < NOW_SECOND; second++) {
        clockStore.markers.set(second, enqueuedBySecond[second] ?? 0);
      }
      return clockStore;
    }

    it('enqueues again tasks never attempted long after they were due, in seconds that had work', async () => {
      // Prepare
      const second = NOW_SECOND - 120;
      const lost = aTask(second * 1000 + 10, 1);
      const retrying = aTask(second * 1000 + 20, 2, { attempts: 2, lastError: 'HTTP 503' });
      const delivered = aTask(second * 1000 + 30, 3, { status: 'DELIVERED', attempts: 1 });
      const clockStore = healthyClock({ [second]: 3 });
      const ports = scanPorts({ tasks: [lost, retrying, delivered], clockStore });

      // Act
      const report = await sweep(ports, overdueSettings);

      // Assess
      expect(report.overdue).toBe(1);
      expect(ports.deliveryQueue.sent).toEqual([{ id: lost.id, delaySeconds: 0, express: true }]);
      expect(clockStore.watermarks.overdueChecked).toBe(NOW_SECOND - 60);
    });

    it('leaves alone a task a receipt names as delivered, though its item is PENDING and never attempted', async () => {
      // Prepare
      const second = NOW_SECOND - 120;
      const lost = aTask(second * 1000 + 10, 1);
      const receipted = aTask(second * 1000 + 20, 2);
      const receiptedAfterFailure = aTask(second * 1000 + 30, 3, { attempts: 1, retryAtMs: second * 1000 + 5000 });
      const clockStore = healthyClock({ [second]: 3 });
      const ports = scanPorts({ tasks: [lost, receipted, receiptedAfterFailure], clockStore });
      await ports.taskStore.recordReceipt({
        id: 'r-1',
        second,
        delivered: new Map([
          [receipted.id, second * 1000 + 25],
          [receiptedAfterFailure.id, second * 1000 + 35],
        ]),
        expiresAtSeconds: NOW_SECOND + 86_400,
      });

      // Act
      const report = await sweep(ports, overdueSettings);

      // Assess
      expect(report.overdue).toBe(1);
      expect(ports.deliveryQueue.sent).toEqual([{ id: lost.id, delaySeconds: 0, express: true }]);
    });

    it('enqueues every stranded task of a second whose receipts cannot be read, rather than none', async () => {
      // Prepare
      const second = NOW_SECOND - 120;
      const stranded = [aTask(second * 1000 + 10, 1), aTask(second * 1000 + 20, 2)];
      const ports = scanPorts({ tasks: stranded, clockStore: healthyClock({ [second]: 2 }) });
      vi.spyOn(ports.taskStore, 'receiptsOf').mockRejectedValue(new Error('InternalServerError'));

      // Act
      const report = await sweep(ports, overdueSettings);

      // Assess
      expect(report.overdue).toBe(2);
      expect(ports.deliveryQueue.sent.map(({ id }) => id).sort()).toEqual(stranded.map(({ id }) => id).sort());
    });

    it('enqueues again a task stranded in a lapsed lease or past its retry time, which no message will bring back', async () => {
      // Prepare: a claim and a retry record whose answers were lost left these with no message.
      const second = NOW_SECOND - 120;
      const nowMs = NOW_SECOND * 1000;
      const staleMs = nowMs - QUEUES.delivery.visibilityTimeoutSeconds * 1000;
      const leaseLapsed = aTask(second * 1000 + 10, 1, {
        status: 'DELIVERING',
        attempts: 1,
        leaseUntilMs: staleMs - 1,
      });
      const retryPassed = aTask(second * 1000 + 20, 2, { attempts: 1, retryAtMs: staleMs - 1 });
      const leaseLive = aTask(second * 1000 + 30, 3, { status: 'DELIVERING', attempts: 1, leaseUntilMs: staleMs });
      const retryComing = aTask(second * 1000 + 40, 0, { attempts: 1, retryAtMs: staleMs });
      const clockStore = healthyClock({ [second]: 4 });
      const ports = scanPorts({ tasks: [leaseLapsed, retryPassed, leaseLive, retryComing], clockStore });

      // Act
      const report = await sweep(ports, overdueSettings);

      // Assess
      expect(report.overdue).toBe(2);
      expect(ports.deliveryQueue.sent.map((message) => message.id).sort()).toEqual(
        [leaseLapsed.id, retryPassed.id].sort(),
      );
    });

    it('queries only seconds with tasks in the occupancy index, and those the api flagged', async () => {
      // Prepare: a late arrival due before the clock even started, whose enqueue failed (the api
      // flagged it at the second it was submitted); a second whose scan sent its task; and a
      // second whose scan sent nothing because its only task arrived later and the api enqueued it.
      const flagged = NOW_SECOND - 500;
      const lost = aTask(flagged * 1000 + 500, 0);
      const scannedBusy = NOW_SECOND - 100;
      const enqueuedByTheApi = aTask((NOW_SECOND - 90) * 1000 + 500, 1);
      const clockStore = healthyClock({ [scannedBusy]: 1 });
      clockStore.rechecks.set(NOW_SECOND - 150, [flagged]);
      const ports = scanPorts({ tasks: [lost, enqueuedByTheApi], clockStore, occupied: [scannedBusy] });
      const listDue = vi.spyOn(ports.taskStore, 'listDue');

      // Act
      await sweep(ports, overdueSettings);

      // Assess: those three seconds were read, no other; both never-attempted tasks went out again.
      const seconds = new Set(listDue.mock.calls.map(([second]) => second));
      expect(seconds).toEqual(new Set([flagged, scannedBusy, NOW_SECOND - 90]));
      expect(ports.deliveryQueue.sent).toEqual([
        { id: lost.id, delaySeconds: 0, express: true },
        { id: enqueuedByTheApi.id, delaySeconds: 0, express: true },
      ]);
    });

    it('still checks overdue tasks when the unfinished pass has more work than its budget', async () => {
      // Prepare: seconds 400..300 before now were claimed but never finished; each re-scan is slow.
      // Flagged tasks wait in an earlier, finished second.
      const clockStore = healthyClock();
      for (let second = NOW_SECOND - 200; second < NOW_SECOND; second++) clockStore.markers.delete(second);
      clockStore.rechecks.set(NOW_SECOND - 201, [NOW_SECOND - 300]);
      clockStore.state = { cursor: NOW_SECOND, startedAt: NOW_SECOND - 400 };
      for (let second = NOW_SECOND - 400; second < NOW_SECOND - 200; second++) clockStore.markers.set(second, 0);
      const lost = aTask((NOW_SECOND - 300) * 1000, 0);
      const ports = {
        ...scanPorts({ tasks: [lost], clockStore, occupied: secondsFrom(NOW_SECOND - 200, NOW_SECOND) }),
        shardCount: 1,
      };
      const listDue = ports.taskStore.listDue.bind(ports.taskStore);
      vi.spyOn(ports.taskStore, 'listDue').mockImplementation(async (second, shard, options) => {
        ports.clock.advance(300);
        return listDue(second, shard, options);
      });

      // Act
      const report = await sweep(ports, { ...overdueSettings, budgetMs: 2000 });

      // Assess: the unfinished pass stopped at its budget; the overdue pass still found the task.
      expect(report.rescanned.length).toBeLessThan(200);
      expect(report.overdue).toBe(1);
      expect(ports.deliveryQueue.sent.map((message) => message.id)).toContain(lost.id);
    });

    it('waits for the grace and for the unfinished pass before judging a second', async () => {
      // Prepare: a second within the grace, and one not yet known to be finished.
      const clockStore = healthyClock({ [NOW_SECOND - 30]: 1 });
      clockStore.markers.delete(NOW_SECOND - 150);
      const tooRecent = aTask((NOW_SECOND - 30) * 1000, 0);
      const unsent = aTask((NOW_SECOND - 150) * 1000, 1);
      const ports = scanPorts({ tasks: [tooRecent, unsent], clockStore });
      vi.spyOn(ports.deliveryQueue, 'send').mockRejectedValue(new Error('SQS unavailable'));

      // Act: the re-scan of the unfinished second fails, so the sweep stops there.
      const report = await sweep(ports, overdueSettings);
      expect(report.errors).toEqual([new Error('SQS unavailable')]);

      // Assess
      expect(clockStore.watermarks.swept).toBe(NOW_SECOND - 151);
      expect(clockStore.watermarks.overdueChecked).toBe(NOW_SECOND - 151);
      // Held back by the first pass, the overdue check trails its 60 s grace by 91 s.
      expect(report.overdueCheckLagSeconds).toBe(91);
    });
  });

  describe('in dense mode, with every second taken as occupied', () => {
    /** The dense index as the sweeper gets it; a client that throws proves it reads nothing to say so. */
    const everySecond = () =>
      new EverySecondOccupancy({
        client: {
          send: () => Promise.reject(new Error('dense mode reads no index')),
        } as unknown as DynamoDBDocumentClient,
        tableName: 'unused',
      });

    it('catches up a second whose tick was lost though no index names it', async () => {
      // Prepare: the api recorded nothing for the task; its second's tick never came.
      const clockStore = new FakeClockStore({ cursor: NOW_SECOND - 100, startedAt: NOW_SECOND - 1000 });
      const missed = aTask((NOW_SECOND - 50) * 1000 + 300, 2);
      const ports = { ...scanPorts({ tasks: [missed], clockStore }), occupancy: everySecond() };

      // Act
      const report = await sweep(ports, settings);

      // Assess
      expect(report).toMatchObject({ caughtUp: 1, lagSeconds: 50, errors: [] });
      expect(ports.deliveryQueue.sent).toEqual([{ id: missed.id, delaySeconds: 0, express: true }]);
    });

    it('finds a lost late arrival the api enqueued itself, in a second whose scan sent nothing and that nobody flagged', async () => {
      // Prepare: every second scanned, none with a busy count; the task's message was lost.
      const clockStore = new FakeClockStore({ cursor: NOW_SECOND, startedAt: NOW_SECOND - 200 });
      for (let second = NOW_SECOND - 200; second < NOW_SECOND; second++) clockStore.markers.set(second, 0);
      const enqueuedByTheApi = aTask((NOW_SECOND - 90) * 1000 + 500, 1);
      const ports = { ...scanPorts({ tasks: [enqueuedByTheApi], clockStore }), occupancy: everySecond() };

      // Act
      const report = await sweep(ports, { ...settings, overdueGraceSeconds: 60 });

      // Assess
      expect(report.overdue).toBe(1);
      expect(ports.deliveryQueue.sent).toEqual([{ id: enqueuedByTheApi.id, delaySeconds: 0, express: true }]);
      expect(clockStore.watermarks.overdueChecked).toBe(NOW_SECOND - 60);
    });
  });
});
