import { describe, expect, it } from 'vitest';

import { deliverTask, type DeliveryPorts, type Notification } from '../../functions/core/deliver/deliver.js';
import type { Task } from '../../functions/core/kernel/task.js';
import {
  applyBizType,
  type BizTypeSettings,
  cachedBizTypeDirectory,
  saveBizType,
} from '../../functions/core/submit/biz-types.js';
import { bizTypeSettingsSchema, parseTaskRequest, type TaskDraft } from '../../functions/core/submit/schemas.js';
import { testTargetRules } from '../support/target-rules.js';
import {
  aTask,
  aTenant,
  DELIVERY_SETTINGS,
  FakeBizTypeStore,
  fakeOccurrencePorts,
  FakeRequestCounter,
  FakeTaskStore,
  fakeTenantDirectory,
  ManualClock,
  TENANT_ID,
} from './fakes.js';

const NOW_MS = Date.UTC(2026, 5, 1, 8, 0, 0);
const DEFAULT_TARGET = { type: 'http', url: 'https://hooks.example.com/orders' } as const;

const settings = (overrides: Partial<BizTypeSettings> = {}): BizTypeSettings => ({
  tenantId: TENANT_ID,
  bizType: 'order-close',
  updatedAtMs: NOW_MS,
  ...overrides,
});

function draft(body: Record<string, unknown>): TaskDraft {
  const parsed = parseTaskRequest({ delaySeconds: 60, ...body }, { allowInsecureTargets: false, nowMs: NOW_MS });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

describe('Function: applyBizType', () => {
  it("gives a task without a target its bizType's default target, and copies the retry policy and callback rate onto it", () => {
    // Act
    const applied = applyBizType(
      draft({ bizType: 'order-close' }),
      settings({ defaultTarget: DEFAULT_TARGET, maxAttempts: 3, backoffBaseSeconds: 2, callbackRateLimitPerSecond: 5 }),
    );

    // Assess
    expect(applied).toMatchObject({
      ok: true,
      value: {
        target: DEFAULT_TARGET,
        policy: { maxAttempts: 3, backoffBaseSeconds: 2, callbackRateLimitPerSecond: 5 },
      },
    });
  });

  it("keeps the task's own target over the default", () => {
    // Act
    const own = { type: 'sqs', queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders' } as const;
    const applied = applyBizType(
      draft({ bizType: 'order-close', target: own }),
      settings({ defaultTarget: DEFAULT_TARGET }),
    );

    // Assess
    expect(applied).toMatchObject({ ok: true, value: { target: own } });
  });

  it('refuses a task with neither a target nor a bizType default at `target`, naming the fix (under the batch item path)', () => {
    // Act
    const withType = applyBizType(draft({ bizType: 'order-close' }), settings(), ['tasks', 3]);
    const without = applyBizType(draft({}), undefined);

    // Assess
    expect(withType).toEqual({
      ok: false,
      errors: [
        {
          path: 'tasks[3].target',
          message:
            'is required: give a target, or set a defaultTarget for bizType "order-close" with PUT /v1/biz-types/{bizType}',
        },
      ],
    });
    expect(without).toMatchObject({ ok: false, errors: [{ path: 'target' }] });
  });

  it('adds no policy when the bizType sets only a default target, so the deployment defaults apply', () => {
    // Act
    const applied = applyBizType(draft({ bizType: 'order-close' }), settings({ defaultTarget: DEFAULT_TARGET }));

    // Assess
    expect(applied.ok && applied.value.policy).toBeUndefined();
  });
});

describe('Function: cachedBizTypeDirectory', () => {
  it('reads each distinct bizType once for a batch of 100 concurrent lookups, and again after the time to live', async () => {
    // Prepare
    const store = new FakeBizTypeStore();
    await store.put(settings());
    const clock = new ManualClock(NOW_MS);
    const directory = cachedBizTypeDirectory(store, clock, 30_000);

    // Act
    await Promise.all(
      Array.from({ length: 100 }, (_, index) => directory.settings(TENANT_ID, index % 2 ? 'order-close' : 'coupon')),
    );
    const readsInBatch = store.reads;
    clock.advance(30_001);
    await directory.settings(TENANT_ID, 'order-close');

    // Assess
    expect(readsInBatch).toBe(2);
    expect(store.reads).toBe(3);
  });

  it("keeps tenants apart: another tenant's bizType of the same name is not yours", async () => {
    // Prepare
    const store = new FakeBizTypeStore();
    await store.put(settings({ tenantId: 'globex', maxAttempts: 9 }));
    const directory = cachedBizTypeDirectory(store, new ManualClock(NOW_MS), 30_000);

    // Act & Assess
    expect(await directory.settings(TENANT_ID, 'order-close')).toBeUndefined();
    expect(await directory.settings('globex', 'order-close')).toMatchObject({ maxAttempts: 9 });
  });

  it('keeps two pairs apart whose tenant and bizType would read alike joined into one text', async () => {
    // Prepare
    const store = new FakeBizTypeStore();
    await store.put(settings({ tenantId: 'a#b', bizType: 'c', maxAttempts: 3 }));
    await store.put(settings({ tenantId: 'a', bizType: 'b#c', maxAttempts: 7 }));
    const directory = cachedBizTypeDirectory(store, new ManualClock(NOW_MS), 30_000);

    // Act & Assess
    expect(await directory.settings('a#b', 'c')).toMatchObject({ maxAttempts: 3 });
    expect(await directory.settings('a', 'b#c')).toMatchObject({ maxAttempts: 7 });
  });
});

describe('Function: bizTypeSettingsSchema', () => {
  const schema = bizTypeSettingsSchema({ allowInsecureTargets: false });

  it('names the field and the bound for out-of-range settings', () => {
    // Act
    const parsed = schema.safeParse({
      maxAttempts: 0,
      backoffBaseSeconds: 60,
      backoffMaxSeconds: 10,
      callbackRateLimitPerSecond: 1.5,
    });

    // Assess
    expect(parsed.success).toBe(false);
    const paths = parsed.error?.issues.map((issue) => issue.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['maxAttempts', 'callbackRateLimitPerSecond']));
  });

  it('refuses a backoff cap below its base', () => {
    // Act
    const parsed = schema.safeParse({ backoffBaseSeconds: 60, backoffMaxSeconds: 10 });

    // Assess
    expect(parsed.error?.issues).toEqual([
      expect.objectContaining({ path: ['backoffMaxSeconds'], message: 'must be at least backoffBaseSeconds' }),
    ]);
  });
});

describe('Function: saveBizType', () => {
  it("refuses a default target outside the tenant's host allow-list at defaultTarget.url, and stores nothing", async () => {
    // Prepare
    const store = new FakeBizTypeStore();
    const tenant = aTenant({ allowedHosts: ['hooks.example.com'] });
    const ports = { bizTypeStore: store, targetRules: testTargetRules(false), clock: new ManualClock(NOW_MS) };

    // Act
    const refused = await saveBizType(ports, tenant, 'order-close', {
      defaultTarget: { type: 'http', url: 'https://elsewhere.example.org/x' },
    });
    const saved = await saveBizType(ports, tenant, 'order-close', { defaultTarget: DEFAULT_TARGET, maxAttempts: 2 });

    // Assess
    expect(refused).toMatchObject({ ok: false, errors: [{ path: 'defaultTarget.url' }] });
    expect(saved).toMatchObject({
      ok: true,
      value: { tenantId: TENANT_ID, bizType: 'order-close', maxAttempts: 2, updatedAtMs: NOW_MS },
    });
    expect(store.settings.size).toBe(1);
  });
});

/** Delivery ports over fakes whose target records each call's time. */
function deliveryPorts(
  tasks: readonly Task[],
  nowMs: number,
  result: { ok: true } | { ok: false; error: string } = { ok: true },
) {
  const clock = new ManualClock(nowMs);
  const calls: Array<{ atMs: number; notification: Notification }> = [];
  const taskStore = new FakeTaskStore(tasks);
  const ports: DeliveryPorts = {
    taskStore,
    occurrences: fakeOccurrencePorts(taskStore, clock),
    targets: {
      dispatch: async (_target, notification) => {
        calls.push({ atMs: clock.now(), notification });
        return result;
      },
    },
    tenants: fakeTenantDirectory(),
    deadLetters: { send: async () => undefined },
    callbackCounter: new FakeRequestCounter(),
    clock,
    ...DELIVERY_SETTINGS,
  };
  return { ports, clock, calls, store: ports.taskStore as FakeTaskStore };
}

describe('Function: deliverTask with bizType settings', () => {
  it("uses the task's own maxAttempts and backoff over the deployment's", async () => {
    // Prepare
    const task = aTask(NOW_MS, 1, {
      bizType: 'order-close',
      policy: { maxAttempts: 2, backoffBaseSeconds: 30, backoffMaxSeconds: 40 },
    });
    const { ports, clock } = deliveryPorts([task], NOW_MS, { ok: false, error: 'HTTP 503' });

    // Act
    const first = await deliverTask(ports, task.id);
    clock.advance(30_000);
    const second = await deliverTask(ports, task.id);

    // Assess
    expect(first).toEqual({
      kind: 'retry',
      attempt: 1,
      retryAfterSeconds: 30,
      retryAtMs: NOW_MS + 30_000,
      error: 'HTTP 503',
    });
    expect(second).toEqual({ kind: 'failed', attempt: 2, error: 'HTTP 503' });
  });

  it('calls at most the callback rate per second; the rest wait without using an attempt and are delivered later, once each', async () => {
    // Prepare: 20 tasks of one bizType due in one second, limit 5.
    const tasks = Array.from({ length: 20 }, (_, index) =>
      aTask(NOW_MS + index, index % 4, { bizType: 'order-close', policy: { callbackRateLimitPerSecond: 5 } }),
    );
    const { ports, clock, calls, store } = deliveryPorts(tasks, NOW_MS + 100);

    // Act: every message is received each second until it is done with.
    let waiting = tasks.map((task) => task.id);
    const outcomesPerSecond: string[][] = [];
    while (waiting.length > 0 && outcomesPerSecond.length < 10) {
      const outcomes = await Promise.all(waiting.map((id) => deliverTask(ports, id)));
      outcomesPerSecond.push(outcomes.map((outcome) => outcome.kind));
      waiting = waiting.filter((_, index) => outcomes[index]?.kind === 'throttled');
      clock.advance(1000);
    }

    // Assess
    const callsPerSecond = new Map<number, number>();
    for (const call of calls)
      callsPerSecond.set(Math.floor(call.atMs / 1000), (callsPerSecond.get(Math.floor(call.atMs / 1000)) ?? 0) + 1);
    expect(Math.max(...callsPerSecond.values())).toBeLessThanOrEqual(5);
    expect(new Set(calls.map((call) => call.notification.id)).size).toBe(20);
    expect(calls).toHaveLength(20);
    expect(outcomesPerSecond).toHaveLength(4);
    expect(outcomesPerSecond[0]?.filter((kind) => kind === 'throttled')).toHaveLength(15);
    for (const task of tasks) expect(store.shown(task.id)).toMatchObject({ status: 'DELIVERED', attempts: 1 });
    for (const call of calls) expect(call.notification.attempt).toBe(1);
  });

  it('gives the lease back when the counter cannot be written, so the attempt is not used and no call is made', async () => {
    // Prepare
    const task = aTask(NOW_MS, 1, { bizType: 'order-close', policy: { callbackRateLimitPerSecond: 5 } });
    const { ports, calls, store } = deliveryPorts([task], NOW_MS + 10);
    const throttledWrite = Object.assign(new Error('Throughput exceeds the current capacity'), {
      name: 'ThrottlingException',
    });
    const failing: DeliveryPorts = { ...ports, callbackCounter: { admit: async () => Promise.reject(throttledWrite) } };

    // Act & Assess
    await expect(deliverTask(failing, task.id)).rejects.toThrow('Throughput');
    expect(calls).toHaveLength(0);
    expect(store.shown(task.id)).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it("counts each tenant's bizType on its own: another tenant's traffic of the same bizType does not use yours", async () => {
    // Prepare
    const ours = aTask(NOW_MS, 1, { bizType: 'order-close', policy: { callbackRateLimitPerSecond: 1 } });
    const theirs = aTask(NOW_MS, 2, {
      tenantId: 'globex',
      bizType: 'order-close',
      policy: { callbackRateLimitPerSecond: 1 },
    });
    const { ports } = deliveryPorts([ours, theirs], NOW_MS + 10);
    const both: DeliveryPorts = { ...ports, tenants: fakeTenantDirectory([aTenant(), aTenant({ id: 'globex' })]) };

    // Act
    const outcomes = await Promise.all([deliverTask(both, theirs.id), deliverTask(both, ours.id)]);

    // Assess
    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['delivered', 'delivered']);
  });
});
