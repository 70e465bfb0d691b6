/**
 * bizType settings over real HTTP in local mode, through TimerClient: a tenant's settings
 * are its own, a task without a target takes its bizType's default target and is delivered
 * there, and a task with neither is refused at `target`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { issueApiKey, newTenant } from '../../functions/core/tenants/tenants.js';
import { TimerApiError, TimerClient } from '../../lib/client/client.js';
import type { LocalTimer } from '../../lib/local/runtime.js';
import { startTestTimer } from '../support/local-timer-fixture.js';
import { eventually, startWebhookReceiver } from '../support/webhook-receiver.js';

let timer: LocalTimer;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let ours: TimerClient;
let theirs: TimerClient;

beforeAll(async () => {
  timer = await startTestTimer();
  receiver = await startWebhookReceiver({ '/orders': () => 204 });
  await timer.tenantStore.createTenant(newTenant('globex', Date.now()));
  const issued = await issueApiKey(timer.tenantStore, 'globex', Date.now());
  ours = new TimerClient({ baseUrl: timer.apiUrl, apiKey: timer.apiKey });
  theirs = new TimerClient({ baseUrl: timer.apiUrl, apiKey: issued.apiKey });
});

afterAll(async () => {
  await receiver?.close();
  await timer?.stop();
});

describe('End to end: bizType settings', () => {
  it("sets, reads, lists and deletes a tenant's bizType; another tenant sees none of it", async () => {
    // Act
    const saved = await ours.setBizType('coupon-expiry', {
      maxAttempts: 3,
      backoffBaseSeconds: 10,
      backoffMaxSeconds: 60,
    });
    const read = await ours.getBizType('coupon-expiry');
    const theirRead = await theirs.getBizType('coupon-expiry');
    const theirList = await theirs.listBizTypes();
    const theirDelete = await theirs.deleteBizType('coupon-expiry');
    const listed = await ours.listBizTypes();
    const deleted = await ours.deleteBizType('coupon-expiry');

    // Assess
    expect(saved).toMatchObject({
      bizType: 'coupon-expiry',
      maxAttempts: 3,
      backoffBaseSeconds: 10,
      backoffMaxSeconds: 60,
    });
    expect(read).toEqual(saved);
    expect([theirRead, theirList, theirDelete]).toEqual([undefined, [], false]);
    expect(listed.map((entry) => entry.bizType)).toContain('coupon-expiry');
    expect(deleted).toBe(true);
    expect(await ours.getBizType('coupon-expiry')).toBeUndefined();
  });

  it("delivers a task that names no target to its bizType's default target", async () => {
    // Prepare
    await ours.setBizType('order-close', {
      defaultTarget: { type: 'http', url: receiver.url('/orders') },
      callbackRateLimitPerSecond: 10,
    });

    // Act
    const task = await ours.schedule({ delaySeconds: 1, bizType: 'order-close', payload: { orderId: 'o-9' } });

    // Assess
    await eventually(
      'the default target receives the task',
      () => receiver.receipts.some((receipt) => receipt.body.id === task.id),
      40,
    );
    expect(await ours.get(task.id)).toMatchObject({
      status: 'DELIVERED',
      attempts: 1,
      target: { url: receiver.url('/orders') },
    });
  });

  it("refuses, at `target`, a task whose bizType has no default target, and another tenant's default is not used", async () => {
    // Act
    const refusal = await theirs
      .schedule({ delaySeconds: 60, bizType: 'order-close' })
      .catch((error: unknown) => error);

    // Assess
    expect(refusal).toBeInstanceOf(TimerApiError);
    expect((refusal as TimerApiError).status).toBe(400);
    expect((refusal as TimerApiError).problem?.errors).toEqual([
      { path: 'target', message: expect.stringContaining('set a defaultTarget for bizType "order-close"') },
    ]);
  });
});
