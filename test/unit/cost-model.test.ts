import { describe, expect, it } from 'vitest';

import {
  costPerTask,
  fixedMonthly,
  idleMonth,
  INDEX_ENTRY_BYTES,
  perMillion,
  type PerTaskUsage,
  plan,
  PRICES,
  resourceInventory,
  SECONDS_PER_MONTH,
  tieredAverage,
  total,
  TRACED_SHARE_UNDER_LOAD,
} from '../../lib/construct/plan/cost-model.js';

/**
 * A task as the bench measures one: three writes, a fraction of a read, SQS in batches of ten;
 * with a bizId and a bizType, a tenth of tasks for an event bus and a fifth for a queue.
 */
const usage: PerTaskUsage = {
  dynamoWriteUnits: 3,
  dynamoReadUnits: 0.2,
  sqsRequests: 0.3,
  apiRequests: 0.01,
  lambdaInvocations: 0.11,
  tracedInvocations: 0.1,
  lambdaGbSeconds: 0.01,
  logBytes: 100,
  storedBytes: 431,
  storedDays: 31,
  indexEntries: 2,
  eventBridgeEvents: 0.1,
  targetSqsMessages: 0.2,
  egressBytes: 1000,
};

describe('Function: costPerTask', () => {
  it('prices on-demand requests at the published per-million prices', () => {
    // Act
    const cost = perMillion(costPerTask(usage, 'on-demand'));

    // Assess
    expect(cost.dynamoWrites).toBeCloseTo(3 * 0.625, 6);
    expect(cost.dynamoReads).toBeCloseTo(0.2 * 0.125, 6);
    expect(cost.sqs).toBeCloseTo(0.3 * 0.4, 6);
    expect(cost.apiGateway).toBeCloseTo(0.01, 6);
    expect(cost.lambda).toBeCloseTo(0.11 * 0.2 + 0.01 * 1e6 * PRICES.lambda.gbSecond, 6);
    // With no monthly volume given, the tiered prices are their first tier's.
    expect(cost.logs).toBeCloseTo(100 * 0.5 * 1e-3, 6);
    expect(cost.egress).toBeCloseTo(1000 * 0.09 * 1e-3, 6);
    // Active tracing records 5% of the traced functions' invocations under load, at $5.00 per million traces.
    expect(cost.tracing).toBeCloseTo(0.1 * 0.05 * 5, 6);
    // 431 bytes for 31 days at $0.25 per GB-month, and as much again at PITR's $0.20.
    expect(cost.dynamoStorage).toBeCloseTo(431e-3 * 0.25 * (31 / 30), 6);
    expect(cost.pitr).toBeCloseTo(431e-3 * 0.2 * (31 / 30), 6);
    // Two index entries: a write unit each, and their keys kept as long as the task.
    expect(cost.indexWrites).toBeCloseTo(2 * (0.625 + INDEX_ENTRY_BYTES * 1e-3 * 0.25 * (31 / 30)), 6);
    expect(cost.eventBridgeTargets).toBeCloseTo(0.1 * 1.0, 6);
    expect(cost.sqsTargets).toBeCloseTo(0.2 * 0.4, 6);
  });

  it("prices Lambda's logs at the tiers a month of such tasks reaches", () => {
    // Act: 656 bytes of logs a task, a billion tasks a day: 19,680 GB a month.
    const cost = perMillion(costPerTask({ ...usage, logBytes: 656 }, 'on-demand', 0.7, TRACED_SHARE_UNDER_LOAD, 30e9));

    // Assess: 10,000 GB at $0.50 and 9,680 GB at $0.25 over 30,000 million tasks.
    expect(cost.logs).toBeCloseTo((10_000 * 0.5 + 9_680 * 0.25) / 30_000, 6);
  });

  it('prices provisioned capacity per unit-second used, grossed up for the auto scaling target', () => {
    // Act
    const cost = perMillion(costPerTask(usage, 'provisioned', 0.7));

    // Assess: a WCU-hour serves 3,600 writes at full use; at a 70% target, 2,520.
    expect(cost.dynamoWrites).toBeCloseTo((3 * 0.00065 * 1e6) / 3600 / 0.7, 6);
    expect(cost.dynamoReads).toBeCloseTo((0.2 * 0.00013 * 1e6) / 3600 / 0.7, 6);
  });
});

describe('Function: tieredAverage', () => {
  it("averages each tier's price over the GB that fall in it", () => {
    // Assess: 60 TB of Lambda logs cost $12,500 where the flat $0.50 made $30,000.
    expect(tieredAverage(PRICES.cloudWatch.lambdaLogs, 60_000) * 60_000).toBeCloseTo(12_500, 6);
    expect(tieredAverage(PRICES.cloudWatch.lambdaLogs, 5_000)).toBe(0.5);
    expect(tieredAverage(PRICES.dataTransferOut, 45_000) * 45_000).toBeCloseTo(10_000 * 0.09 + 35_000 * 0.085, 6);
    expect(tieredAverage(PRICES.dataTransferOut, 0)).toBe(0.09);
  });

  it("prices a month's HTTP API requests past the first 300 million at $0.90 a million", () => {
    // Assess: a billion single submits a day is 30 billion requests a month.
    expect(tieredAverage(PRICES.httpApiRequests, 30_000) * 30_000).toBeCloseTo(300 * 1.0 + 29_700 * 0.9, 6);
    expect(tieredAverage(PRICES.httpApiRequests, 100)).toBe(1);
  });
});

describe('Function: idleMonth', () => {
  it('adds metrics to the running cost and keeps the fixed resources apart', () => {
    // Act
    const month = idleMonth(
      {
        dynamoWriteUnitsPerHour: 120,
        dynamoReadUnitsPerHour: 300,
        sqsRequestsPerHour: 1800,
        lambdaInvocationsPerHour: 120,
        lambdaGbSecondsPerHour: 6,
        logBytesPerHour: 100_000,
        metricsPublished: 4,
      },
      { 'AWS::CloudWatch::Alarm': 17, 'AWS::CloudWatch::Dashboard': 1, 'AWS::KMS::Key': 1 },
    );

    // Assess
    expect(month.running.metrics).toBeCloseTo(1.2, 6);
    expect(month.running.sqs).toBeCloseTo(1800 * 720 * 0.4e-6, 6);
    expect(month.fixed).toBeCloseTo(17 * 0.1 + 3 + 1, 6);
    expect(total(month.running)).toBeGreaterThan(month.running.metrics);
  });
});

describe('Function: resourceInventory', () => {
  it("counts a template's resources by CloudFormation type", () => {
    // Act
    const inventory = resourceInventory({
      MissedTasksAlarm: { Type: 'AWS::CloudWatch::Alarm' },
      ScannerLagAlarm: { Type: 'AWS::CloudWatch::Alarm' },
      DeliveryQueue: { Type: 'AWS::SQS::Queue' },
    });

    // Assess
    expect(inventory).toEqual({ 'AWS::CloudWatch::Alarm': 2, 'AWS::SQS::Queue': 1 });
  });
});

describe('Function: fixedMonthly', () => {
  it('prices only the resource types with a monthly charge of their own', () => {
    // Act
    const fixed = fixedMonthly({
      'AWS::CloudWatch::Alarm': 3,
      'AWS::KMS::Key': 2,
      'AWS::SQS::Queue': 3,
      'AWS::Logs::LogGroup': 6,
    });

    // Assess: queues and log groups cost by use, not by the month.
    expect(fixed).toBeCloseTo(3 * PRICES.cloudWatch.alarmMonth + 2 * PRICES.kmsKeyMonth, 6);
  });
});

describe('Function: plan', () => {
  const input = {
    perDay: 1e9,
    peakPerSecond: 20_000,
    usage,
    deliveryWritesPerTask: 2,
    scanReadUnitsPerTask: 0.1,
    callbackSecondsPerInvocation: 0.2,
    callbackBatchSize: 10,
    apiSecondsPerInvocation: 0.05,
    tasksPerApiRequest: 100,
    idleMonthly: 8,
  };

  it("picks enough shards that the hot second stays within 80% of a partition's 1,000 writes a second", () => {
    // Act
    const result = plan(input);

    // Assess: 20,000 tasks × 3 writes (create, lease, outcome) ÷ 800 = 75 shards, each taking 800 writes.
    expect(result.shardCount).toBe(75);
    expect(result.writesPerKeyAtPeak).toBe(800);
    expect(result.readUnitsPerKeyAtPeak).toBeCloseTo(2000 / 75, 6);
  });

  it('sizes the byBizType index for one bizType taking every create at the peak rate', () => {
    // Act
    const result = plan(input);

    // Assess: 20,000 index writes ÷ 800 = 25 keys; the index rides on the 75 task shards.
    expect(result.indexShardCount).toBe(25);
    expect(result.indexWritesPerKeyAtPeak).toBeCloseTo(20_000 / 75, 6);
  });

  it('lets the index set the shard count when creates outpace the hot second', () => {
    // Act: a billion a day (11,574 creates a second) but never more than 1,000 due at once.
    const result = plan({ ...input, peakPerSecond: 1000 });

    // Assess: the task keys would need 4 shards; one bizType's creates need 15.
    expect(result.shardCount).toBe(15);
    expect(result.indexWritesPerKeyAtPeak).toBeLessThanOrEqual(800);
  });

  it('prices the floor of the scanner shard Queries, which grows with the shard count', () => {
    // Act
    const result = plan(input);

    // Assess: 75 Queries a second for a month, at least a read unit each.
    expect(result.scanQueryFloorMonthly).toBeCloseTo(75 * SECONDS_PER_MONTH * PRICES.dynamo.readRequestUnit, 6);
  });

  it('sizes concurrency and provisioned capacity from the rates', () => {
    // Act
    const result = plan(input);

    // Assess
    expect(result.averagePerSecond).toBeCloseTo(11_574.07, 1);
    expect(result.callbackConcurrencyAtPeak).toBe(400);
    expect(result.apiConcurrencyAtPeak).toBe(10);
    expect(result.sqsRequestsPerSecondAtPeak).toBe(6000);
    // Three writes of its own and its two index entries.
    expect(result.provisionedWriteCapacity).toBe(Math.ceil((11_574.074 * 5) / 0.7));
  });

  it('prices a month in both capacity modes and recommends the cheaper', () => {
    // Act
    const result = plan(input);

    // Assess
    const tasksPerMonth = 1e9 * 30;
    expect(result.byMode['on-demand'].monthly).toBeCloseTo(
      total(costPerTask(usage, 'on-demand', 0.7, TRACED_SHARE_UNDER_LOAD, tasksPerMonth)) * tasksPerMonth + 8,
      2,
    );
    expect(result.recommendedMode).toBe('provisioned');
    expect(result.byMode.provisioned.monthly).toBeLessThan(result.byMode['on-demand'].monthly);
  });

  it('needs one shard for a small deployment', () => {
    expect(plan({ ...input, perDay: 100_000, peakPerSecond: 100 }).shardCount).toBe(1);
  });
});
