/**
 * What deploys, run: the Lambda bundles `cdk synth` writes into the cloud assembly serve local
 * mode's pipeline, and every AWS request the functions make in a representative run is checked
 * against the synthesized roles by an IAM policy simulator. One synthesis serves both.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { type FunctionName, FUNCTIONS } from '../../functions/contract/topology.js';
import { TimerClient } from '../../lib/client/client.js';
import { TimerStack } from '../../lib/construct/timer-stack.js';
import { LOCAL_INBOX_PATH, LOCAL_REDRIVE_PATH } from '../../lib/local/paths.js';
import { type AwsRequest, startLocalTimer } from '../../lib/local/runtime.js';
import {
  type CloudTemplate,
  LOCAL_ACCOUNT,
  localQueueArn,
  localTableArn,
  templateResolver,
} from '../support/cloud-template.js';
import { iamRequestsOf, simulateRequests } from '../support/iam-audit.js';
import { bundledHandlers, bundlePath } from '../support/synthesized-bundles.js';
import { eventually, settledValue, startWebhookReceiver } from '../support/webhook-receiver.js';

const FUNCTION_NAMES = Object.keys(FUNCTIONS) as FunctionName[];

let assemblyDir: string;
let template: CloudTemplate;

beforeAll(() => {
  // Outside the repository, so a bundle can resolve no package from its node_modules: what it imports it must carry.
  assemblyDir = mkdtempSync(join(tmpdir(), 'timer-assembly-'));
  // CDK's built-in CloudFormation validation runs in test/infra/timer-stack.test.ts (test/support/template-app.ts).
  const app = new App({ outdir: assemblyDir, builtinCloudFormationValidation: false });
  new TimerStack(app, 'Timer');
  template = app.synth().getStackByName('Timer').template as CloudTemplate;
}, 180_000);

afterAll(() => {
  rmSync(assemblyDir, { recursive: true, force: true });
});

describe('End to end: the bundles cdk synth builds', () => {
  it('bundles each function with esbuild, offline, into an ESM file of its own that Lambda runs as index.handler', () => {
    // Act
    const functions = Object.values(template.Resources).filter((resource) => resource.Type === 'AWS::Lambda::Function');
    const bundles = FUNCTION_NAMES.map((fn) => bundlePath(template, assemblyDir, fn));

    // Assess
    expect(functions).toHaveLength(FUNCTION_NAMES.length);
    for (const fn of functions) expect(fn.Properties.Handler).toBe('index.handler');
    expect(new Set(bundles).size).toBe(FUNCTION_NAMES.length);
    for (const bundle of bundles) expect(existsSync(bundle), bundle).toBe(true);
  });

  it('carries the AWS SDK inside every bundle instead of importing it', () => {
    for (const fn of FUNCTION_NAMES) {
      // Act
      const bundle = readFileSync(bundlePath(template, assemblyDir, fn), 'utf8');

      // Assess: no import of an SDK package is left (esbuild writes them `from"…"`, `import"…"` or
      // `import("…")`; the SDK's error messages quote `import "…"` with a space), and the SDK's code is there.
      expect(bundle.match(/(?:from|import\(?)["']@aws-sdk\/[^"']*/g) ?? [], fn).toEqual([]);
      expect(bundle.includes('AWS SDK for JavaScript'), fn).toBe(true);
    }
  });

  it('schedules tasks over HTTP and delivers them through the bundled functions', async () => {
    // Prepare
    const bundles = bundledHandlers(template, assemblyDir);
    const timer = await startLocalTimer({ logLevel: 'SILENT', loadHandlers: (local) => bundles.load(local) });
    try {
      const client = new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey });
      const target = { type: 'http' as const, url: `${timer.apiUrl}${LOCAL_INBOX_PATH}` };

      // Act
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push((await client.schedule({ delaySeconds: 1 + i, target, payload: { i }, bizId: 'bundle-e2e' })).id);
      }
      const delivered = () => new Set(timer.inbox.entries.map((entry) => entry.notification.id));
      await eventually('the bundled callback delivered every task', () => ids.every((id) => delivered().has(id)), 60);

      // Assess
      // The inbox has a delivery before the callback records it: the status follows, on a busy machine later.
      const statuses = await settledValue(
        () => Promise.all(ids.map(async (id) => (await client.get(id))?.status)),
        (seen) => seen.every((status) => status === 'DELIVERED'),
      );
      expect(statuses).toEqual(ids.map(() => 'DELIVERED'));
      expect(timer.inbox.entries.every((entry) => entry.signatureValid)).toBe(true);
      expect((await client.list({ bizId: 'bundle-e2e' })).tasks.map((task) => task.id).sort()).toEqual(ids.sort());
    } finally {
      await timer.stop();
      await bundles.close();
    }
  }, 90_000);
});

describe('IAM audit: every AWS request against the synthesized roles', () => {
  it('allows each request the functions and their event source mappings make, by action, resource and condition', async () => {
    // Prepare
    const requests: AwsRequest[] = [];
    const timer = await startLocalTimer({
      logLevel: 'SILENT',
      settings: { maxAttempts: 2, backoffBaseSeconds: 1, backoffMaxSeconds: 1 },
      onRequest: (request) => requests.push(request),
    });
    let downIsUp = false;
    const receiver = await startWebhookReceiver({ '/ok': () => 204, '/down': () => (downIsUp ? 204 : 500) });
    const targetQueueName = 'business-inbox';
    try {
      const client = new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey });
      const targetQueueUrl = (await timer.sqs.send(new CreateQueueCommand({ QueueName: targetQueueName }))).QueueUrl;
      const ok = { type: 'http' as const, url: receiver.url('/ok') };

      // Act: the api's routes, every kind of target, a dead webhook, its redrive; the sweeper runs at start.
      await client.setBizType('orders', { maxAttempts: 2, defaultTarget: ok });
      await client.getBizType('orders');
      await client.listBizTypes();
      const delivered = [
        await client.schedule({ delaySeconds: 1, bizType: 'orders', bizId: 'order-1', idempotencyKey: 'order-1' }),
        await client.schedule({ delaySeconds: 1, target: { type: 'sqs', queueUrl: targetQueueUrl ?? '' } }),
        await client.schedule({
          delaySeconds: 1,
          target: { type: 'eventbridge', eventBusName: 'orders', detailType: 'Order Expired' },
        }),
        ...(await client.scheduleBatch([{ delaySeconds: 2, target: ok }])).results.flatMap((result) =>
          'task' in result ? [result.task] : [],
        ),
      ];
      const dead = await client.schedule({ delaySeconds: 1, target: { type: 'http', url: receiver.url('/down') } });
      const cancelled = await client.schedule({ delaySeconds: 60, target: ok });
      await client.cancel(cancelled.id);
      const moved = await client.schedule({ delaySeconds: 60, target: ok, bizType: 'orders' });
      // A reschedule replaces the task with a successor, which is the one delivered.
      const rescheduled = await client.reschedule(moved.id, { delaySeconds: 2 });
      await client.get(moved.id);
      await client.list({ bizId: 'order-1' });
      await client.list({ bizType: 'orders' });
      await client.deleteBizType('orders');
      // A schedule: created, read, listed, paused, resumed; one occurrence delivered (the callback reads the
      // schedule and stores the next occurrence), then deleted (which cancels the pending one).
      const schedule = await client.createSchedule({ rate: '1 second', target: ok, bizId: 'auction-1' });
      await client.getSchedule(schedule.id);
      await client.listSchedules({ bizId: 'auction-1' });
      await client.changeSchedule(schedule.id, { paused: true });
      await client.changeSchedule(schedule.id, { paused: false });
      await eventually('an occurrence is delivered', () =>
        receiver.receipts.some((receipt) => receipt.body.scheduleId === schedule.id),
      );
      await client.deleteSchedule(schedule.id);
      await eventually('the dead webhook task is FAILED', async () => (await client.get(dead.id))?.status === 'FAILED');
      downIsUp = true;
      await fetch(`${timer.apiUrl}${LOCAL_REDRIVE_PATH}`, { method: 'POST' });
      await eventually('every task is delivered', async () => {
        const tasks = await Promise.all([...delivered, dead, rescheduled].map((task) => client.get(task.id)));
        return tasks.every((task) => task?.status === 'DELIVERED');
      });
    } finally {
      await receiver.close();
      await timer.stop();
    }

    // Assess
    const resolve = templateResolver(template, {
      parameters: {
        AllowedQueueArns: localQueueArn(targetQueueName),
        AllowedEventBusArns: `arn:aws:events:us-east-1:${LOCAL_ACCOUNT}:event-bus/orders`,
      },
    });
    const decisions = await simulateRequests(template, resolve, requests.flatMap(iamRequestsOf));
    // The same simulation refuses what the roles do not grant: an action, a queue, a key outside the condition.
    const refused = await simulateRequests(template, resolve, [
      { fn: 'callback', action: 'dynamodb:DeleteItem', resource: localTableArn, context: {} },
      { fn: 'ticker', action: 'sqs:SendMessage', resource: localQueueArn('timer-delivery'), context: {} },
      {
        fn: 'api',
        action: 'dynamodb:DeleteItem',
        resource: localTableArn,
        context: { 'dynamodb:LeadingKeys': ['TASK#01M87745FY0AZYH590X9SBNGY9'] },
      },
    ]);
    expect(refused.map((probe) => probe.decision)).toEqual(Array(3).fill('ImplicitlyDenied'));
    const callers = new Set(decisions.map((decision) => decision.fn));
    expect([...callers].sort()).toEqual([...FUNCTION_NAMES].sort());
    expect(decisions.filter((decision) => decision.decision !== 'Allowed')).toEqual([]);
  }, 120_000);
});
