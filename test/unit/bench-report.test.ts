import { describe, expect, it } from 'vitest';

import { niceCeiling, renderChart } from '../../bench/chart.js';
import { type BenchReport, emulatorCpuPerTask, headline, type ScenarioResult } from '../../bench/render.js';
import { progressLine } from '../../bench/report.js';
import { attributeBytes, histogram, itemBytes, peakPerKey, perSecond, quantile, summarize } from '../../bench/stats.js';
import {
  invocationSeconds,
  perTaskUsage,
  type RequestsReport,
  type SubmitPhase,
  unmeasured,
  usageOfPhase,
} from '../../lib/construct/plan/measured-usage.js';
import { markdownTable } from '../../lib/construct/plan/table-format.js';

describe('Function: quantile and summarize', () => {
  it('takes the nearest rank', () => {
    const values = Array.from({ length: 100 }, (_, index) => index + 1);
    expect(quantile(values, 0.5)).toBe(50);
    expect(quantile(values, 0.99)).toBe(99);
    expect(summarize(values)).toEqual({ p50: 50, p95: 95, p99: 99, max: 100 });
    expect(Number.isNaN(quantile([], 0.5))).toBe(true);
  });
});

describe('Function: histogram', () => {
  it('counts values between edges, with an overflow bin', () => {
    const bins = histogram([5, 60, 99, 100, 2500], [50, 100, 1000]);
    expect(bins.map((bin) => bin.count)).toEqual([1, 2, 1, 1]);
    expect(bins.map((bin) => [bin.from, bin.to])).toEqual([
      [0, 50],
      [50, 100],
      [100, 1000],
      [1000, Number.POSITIVE_INFINITY],
    ]);
  });
});

describe('Function: perSecond', () => {
  it('counts arrivals per whole second from the start, with empty seconds as zeros', () => {
    expect(perSecond([1000, 1500, 3999, 4000], 1000)).toEqual([2, 0, 1, 1]);
    expect(perSecond([], 0)).toEqual([]);
  });
});

describe('Function: peakPerKey', () => {
  it('finds the busiest key-second and the busiest key overall, for keys with the prefix', () => {
    const activity = new Map([
      [
        'B#1#0',
        new Map([
          [10, { writes: 5, reads: 1 }],
          [11, { writes: 5, reads: 0 }],
        ]),
      ],
      ['B#1#1', new Map([[10, { writes: 7, reads: 2 }]])],
      ['CLOCK', new Map([[10, { writes: 50, reads: 50 }]])],
    ]);
    const peak = peakPerKey(activity, 'writes', 'B#');
    expect(peak.busiestSecond).toEqual({ key: 'B#1#1', perSecond: 7, total: 7 });
    expect(peak.busiestKey).toEqual({ key: 'B#1#0', perSecond: 5, total: 10 });
  });
});

describe('Function: itemBytes', () => {
  it("counts names and values by DynamoDB's rules", () => {
    expect(attributeBytes('héllo')).toBe(6);
    expect(attributeBytes(12345)).toBe(4);
    expect(attributeBytes(true)).toBe(1);
    expect(attributeBytes({ a: 'xy' })).toBe(3 + 1 + 1 + 2);
    expect(attributeBytes(new Set([1, 2]))).toBe(4);
    expect(itemBytes({ pk: 'B#1#0', n: 1 })).toBe(2 + 5 + 1 + 2);
  });
});

describe('Function: progressLine', () => {
  it('draws a bar with the share done', () => {
    const line = progressLine('steady', 5, 10, 'half', 10);
    expect(line).toContain('[█████░░░░░]');
    expect(line).toContain(' 50% half');
  });
});

describe('Function: markdownTable', () => {
  it('right-aligns columns that hold only numbers', () => {
    expect(
      markdownTable(
        ['name', 'count'],
        [
          ['a', 1],
          ['b', 22],
        ],
      ),
    ).toBe('| name | count |\n| --- | ---: |\n| a | 1 |\n| b | 22 |');
  });
});

describe('Function: invocationSeconds and perTaskUsage', () => {
  it('stretches CPU time by the share of a vCPU the memory buys and adds the critical path', () => {
    // The callback has 512 MB: 512/1769 of a vCPU. Its path: lease, webhook, outcome.
    expect(invocationSeconds('callback', 10, 100)).toBeCloseTo((10 * 1769) / 512 / 1000 + 0.112, 6);
  });

  it('turns a run into per-task usage', () => {
    const usage = perTaskUsage(
      {
        tasks: 1000,
        requests: { 'SQS.SendMessageBatch': 100, 'EventSourceMapping.SQS.ReceiveMessage': 100, 'DynamoDB.Query': 10 },
        writeUnits: 3000,
        readUnits: 200,
        invocations: { callback: 100, api: 10 },
        cpuMs: { callback: 2000, api: 500 },
        callbackWaitMs: 80_000,
        logBytes: 50_000,
      },
      { webhookMs: 100, tasksPerApiRequest: 100, storedBytes: 431, storedDays: 31 },
    );
    expect(usage).toMatchObject({
      dynamoWriteUnits: 3,
      dynamoReadUnits: 0.2,
      sqsRequests: 0.2,
      apiRequests: 0.01,
      lambdaInvocations: 0.11,
    });
    // The callback's wait for its records' due times is billed like its work.
    expect(usage.lambdaGbSeconds).toBeCloseTo(
      (100 * invocationSeconds('callback', 20, 100) * 0.5 + 80 * 0.5 + 10 * invocationSeconds('api', 50, 100) * 0.5) /
        1000,
      9,
    );
    // The functions' own lines (EMF metrics among them, as measured) plus Lambda's per invocation.
    // Only the functions' own lines: Lambda's START and REPORT lines are INFO system logs, which WARN drops.
    expect(usage.logBytes).toBeCloseTo(50_000 / 1000, 6);
  });
});

describe('Function: renderChart', () => {
  it('draws one bar per bin and system and one line per series, as valid-looking SVG', () => {
    const svg = renderChart({
      title: 'a & b',
      histograms: [
        { label: 'timer', color: '#111', bins: histogram([10, 20, 600], [100, 1000]) },
        { label: 'peer', color: '#222', bins: histogram([5], [100, 1000]) },
      ],
      series: [{ label: 'timer', color: '#111', values: [1, 5, 3] }],
    });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('a &amp; b');
    expect(svg.match(/<rect class="bar" /g)).toHaveLength(6);
    expect(svg.match(/<polyline /g)).toHaveLength(1);
  });

  it('picks tidy axis maxima', () => {
    expect([0, 7, 12, 180, 2500].map(niceCeiling)).toEqual([1, 10, 20, 200, 5000]);
  });
});

describe('Function: usageOfPhase', () => {
  const phase: SubmitPhase = {
    tasks: 1000,
    seconds: 40,
    tasksPerRequest: 1,
    keyed: false,
    responseBytes: 300_000,
    requests: {
      'SQS.SendMessageBatch': 100,
      'EventSourceMapping.SQS.ReceiveMessage': 600,
      'EventSourceMapping.SQS.DeleteMessageBatch': 100,
    },
    writeUnits: 2000,
    readUnits: 1000,
    callbackWaitMs: 0,
    invocations: { api: 1000, callback: 15 },
    cpuMs: { api: 2000, callback: 4000 },
    logBytes: 300_000,
  };
  const report: RequestsReport = {
    measuredAt: '2026-11-26T00:00:00.000Z',
    machine: { cpus: 2, node: 'v20' },
    settings: { tickEverySecond: true, shardCount: 80 },
    idlePerSecond: { requests: {}, writeUnits: 0, readUnits: 0, invocations: {}, cpuMs: {}, logBytes: 0 },
    phases: {
      single: phase,
      batch: { ...phase, tasksPerRequest: 100 },
      keyedSingle: { ...phase, keyed: true },
      keyedBatch: { ...phase, tasksPerRequest: 100, keyed: true },
    },
    denseSecond: { tasks: 580, shardCount: 4, tasksPerShard: 145, queryReadUnits: 145 },
    storedBytesPerTask: 465,
    storedBytesPerKey: 180,
    webhookRequestBytes: 700,
  };
  const options = {
    webhookMs: 100,
    averageDelayDays: 1,
    retentionDays: 30,
    indexEntries: 2,
    targets: { http: 0.5, sqs: 0.25, eventbridge: 0.25 },
  };

  it("prices one receive per delete, as Lambda's mappings make them under load, not the local pollers' count", () => {
    // Act
    const usage = usageOfPhase(report, phase, { ...options, frontDoor: 'api-gateway' });

    // Assess: a send, a receive and a delete per ten tasks.
    expect(usage.sqsRequests).toBeCloseTo(0.3, 9);
  });

  it('charges no API Gateway request for a submit through the function URL, and one per request through the HTTP API', () => {
    // Act
    const url = usageOfPhase(report, phase, { ...options, frontDoor: 'function-url' });
    const gateway = usageOfPhase(report, phase, { ...options, frontDoor: 'api-gateway' });
    const batched = usageOfPhase(report, report.phases.batch, { ...options, frontDoor: 'api-gateway' });

    // Assess
    expect(url.apiRequests).toBe(0);
    expect(gateway.apiRequests).toBe(1);
    expect(batched.apiRequests).toBe(0.01);
    expect(url.lambdaInvocations).toBeCloseTo(1.015, 9);
    // The api runs untraced by default; the callback's invocations are traced.
    expect(url.tracedInvocations).toBeCloseTo(0.015, 9);
  });

  it("adds the dense second's scan reads to the phase's own, which idle's Queries already paid the floor of", () => {
    // Act
    const usage = usageOfPhase(report, phase, { ...options, frontDoor: 'api-gateway' });

    // Assess: 145 read units over 580 tasks is a quarter of a unit each.
    expect(usage.dynamoReadUnits).toBeCloseTo(1 + 0.25, 9);
  });

  it('names what a report made before the dense second, the keyed phases and the byte counts lacks', () => {
    // Prepare
    const { single, batch } = report.phases;
    const { denseSecond: _dense, webhookRequestBytes: _bytes, ...older } = report;
    const { responseBytes: _answers, ...unkeyed } = single;

    // Act
    const missing = unmeasured({ ...older, phases: { single: unkeyed, batch } });

    // Assess
    expect(missing).toEqual([
      'scan reads at a dense second',
      'keyed submits',
      'webhook egress',
      "the API's answers' egress",
    ]);
    expect(unmeasured(report)).toEqual([]);
  });

  it('stores a keyed task with its key item, and prices its targets and egress by the mix', () => {
    // Act
    const keyed = usageOfPhase(report, { ...phase, keyed: true }, { ...options, frontDoor: 'api-gateway' });
    const unkeyed = usageOfPhase(report, phase, { ...options, frontDoor: 'api-gateway' });

    // Assess
    expect(keyed.storedBytes).toBe(465 + 180);
    expect(unkeyed.storedBytes).toBe(465);
    expect(unkeyed.indexEntries).toBe(2);
    expect(unkeyed.eventBridgeEvents).toBe(0.25);
    expect(unkeyed.targetSqsMessages).toBe(0.25);
    // Half the deliveries are webhooks of 700 bytes; every answer of 300 bytes leaves AWS.
    expect(unkeyed.egressBytes).toBeCloseTo(0.5 * 700 + 300, 9);
  });
});

describe('Function: headline', () => {
  /** A scenario's result with only the figures the headline reads. */
  const result = (
    system: ScenarioResult['system'],
    scenario: string,
    figures: { cpu: Record<string, number>; delivered?: number; p99?: number; doneAfterS?: number },
  ) =>
    ({
      system,
      scenario,
      cpuMsPerTask: figures.cpu,
      deliveredPerSecond: { mean: figures.delivered ?? 0, peak: 0 },
      lateness: { p50: 0, p95: 0, p99: figures.p99 ?? 0, max: 0 },
      deliveredWithinSeconds: figures.doneAfterS ?? 0,
    }) as ScenarioResult;
  const report = (results: ScenarioResult[]) =>
    ({ settings: { rates: [100, 200, 500], bursts: [2000] }, results }) as unknown as BenchReport;

  it("compares the timer's handlers' process with all of BullMQ's, the emulators set apart", () => {
    // Prepare: the emulators' 9 ms would make it 6× if they counted.
    const results = [
      result('timer', 'steady 100/s', { cpu: { callback: 1, 'whole process': 3, dynalite: 8, fauxqs: 1 } }),
      result('bullmq', 'steady 100/s', { cpu: { worker: 1, redis: 1 } }),
      result('timer', 'steady 200/s', { cpu: { 'whole process': 2 }, p99: 30 }),
      result('bullmq', 'steady 200/s', { cpu: { worker: 0.5, redis: 0.5 }, p99: 20 }),
      result('timer', 'steady 500/s', { cpu: { 'whole process': 1.5 }, delivered: 475, p99: 30 }),
      result('bullmq', 'steady 500/s', { cpu: { worker: 0.5, redis: 0.25 }, delivered: 500, p99: 20 }),
      result('timer', 'burst 2000', { cpu: {}, doneAfterS: 5 }),
      result('bullmq', 'burst 2000', { cpu: {}, doneAfterS: 2 }),
    ];

    // Act
    const line = headline(report(results));

    // Assess
    expect(line).toBe(
      'timer ÷ BullMQ: CPU per task 1.50×, 2.00×, 2.00× at 100, 200, 500/s; 500/s delivered 0.95×; 200/s p99 1.50×; burst done 2.50×',
    );
    expect(emulatorCpuPerTask(results[0] as ScenarioResult)).toBe(9);
    expect(emulatorCpuPerTask(results[2] as ScenarioResult)).toBeUndefined();
  });

  it('reads – for a figure whose scenario one system did not run', () => {
    // Act: a run without the peer (--no-peer).
    const line = headline(report([result('timer', 'steady 100/s', { cpu: { 'whole process': 3 } })]));

    // Assess
    expect(line).toBe(
      'timer ÷ BullMQ: CPU per task –, –, – at 100, 200, 500/s; 500/s delivered –; 200/s p99 –; burst done –',
    );
  });
});
