/**
 * A schedule service over fakes, shared by the tests of the schedule core and of its HTTP routes:
 * the api's operations, the scanner and the callback's delivery share one table and one clock.
 */
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

import { type ApiPorts, route } from '../../functions/api/routes.js';
import type { ScheduleRequest } from '../../functions/contract/wire.js';
import { deliverTask, type DeliveryPorts, type Notification } from '../../functions/core/deliver/deliver.js';
import { parseTaskId } from '../../functions/core/kernel/ids.js';
import { newPlacement } from '../../functions/core/kernel/task-kernel.js';
import { runScanner } from '../../functions/core/scan/scan.js';
import { createSchedule, type Schedule, type ScheduleAdminPorts } from '../../functions/core/schedules/schedules.js';
import { cachedBizTypeDirectory } from '../../functions/core/submit/biz-types.js';
import { newApiKey, newKeyring } from '../../functions/core/tenants/tenants.js';
import { testTargetRules } from '../support/target-rules.js';
import {
  aTenant,
  DELIVERY_SETTINGS,
  FakeBizTypeStore,
  FakeIdempotencyStore,
  fakeOccurrencePorts,
  FakeRequestCounter,
  FakeScheduleStore,
  FakeTaskStore,
  fakeTenantDirectory,
  ManualClock,
  TENANT_ID,
} from './fakes.js';

export const START = Date.parse('2026-06-01T12:00:00.000Z');
export const TARGET = { type: 'http', url: 'https://hooks.example.com/tick' } as const;

/** A schedule service over fakes: the api's operations and the callback's delivery share one table. */
export function scheduleWorld() {
  const clock = new ManualClock(START);
  const taskStore = new FakeTaskStore();
  const scheduleStore = new FakeScheduleStore();
  const occurrences = fakeOccurrencePorts(taskStore, clock, scheduleStore);
  const admin: ScheduleAdminPorts = {
    ...occurrences,
    idempotencyStore: new FakeIdempotencyStore(),
    retentionDays: 30,
    horizonDays: 365,
  };
  const calls: Array<{ atMs: number; notification: Notification }> = [];
  const delivery: DeliveryPorts = {
    ...DELIVERY_SETTINGS,
    taskStore,
    occurrences,
    targets: {
      dispatch: async (_target, notification) => {
        calls.push({ atMs: clock.now(), notification });
        return { ok: true };
      },
    },
    tenants: fakeTenantDirectory(),
    deadLetters: { send: async () => undefined },
    callbackCounter: new FakeRequestCounter(),
    clock,
  };
  const create = async (request: Partial<ScheduleRequest> = {}): Promise<Schedule> => {
    const outcome = await createSchedule(admin, TENANT_ID, { rate: '5 seconds', target: TARGET, ...request });
    if (outcome.kind !== 'created' && outcome.kind !== 'replayed') throw new Error(JSON.stringify(outcome));
    return outcome.schedule;
  };
  const stored = (id: string) => scheduleStore.schedules.get(`${TENANT_ID}#${id}`);
  const pending = (scheduleId: string) =>
    [...taskStore.tasks.values()].filter(
      (task) => task.occurrence?.scheduleId === scheduleId && task.status === 'PENDING',
    );
  /** Delivers the schedule's pending occurrence at its due time, as the callback would. */
  const fireNext = async (scheduleId: string) => {
    const next = stored(scheduleId)?.next;
    if (!next) throw new Error('no pending occurrence');
    // Its message comes at its fire time: the occurrence's own, or the one planned in its window.
    const firesAt = parseTaskId(next.taskId, occurrences.shardCount)?.fireAtMs ?? next.atMs;
    if (clock.now() < firesAt) clock.set(firesAt);
    return deliverTask(delivery, next.taskId);
  };
  /**
   * Runs the pipeline second by second until `untilMs`, as the scanner and the callback do: each
   * second's scan reads the occupancy index, and every message it sends is delivered.
   */
  const runUntil = async (untilMs: number) => {
    let delivered = occurrences.deliveryQueue.sent.length;
    while (clock.now() < untilMs) {
      await runScanner(occurrences, 1000);
      for (const message of occurrences.deliveryQueue.sent.slice(delivered)) await deliverTask(delivery, message.id);
      delivered = occurrences.deliveryQueue.sent.length;
      clock.advance(1000);
    }
  };
  const keyring = newKeyring(START);
  const { apiKey, record } = newApiKey(keyring, TENANT_ID, START);
  const api: ApiPorts = {
    ...admin,
    placement: newPlacement(),
    tenants: {
      tenant: async (id) => (id === TENANT_ID ? aTenant() : undefined),
      apiKey: async (tenantId, keyId) => (tenantId === record.tenantId && keyId === record.keyId ? record : undefined),
      keyring: async () => keyring,
    },
    bizTypeStore: new FakeBizTypeStore(),
    bizTypes: cachedBizTypeDirectory(new FakeBizTypeStore(), clock, 0),
    requestCounter: new FakeRequestCounter(),
    targetRules: testTargetRules(false),
    allowInsecureTargets: false,
    // Listing reads the business-query indexes, which only the Dynamo adapter has (business-queries.test.ts).
    taskIndex: {
      page: () => Promise.reject(new Error('no task index over fakes')),
      getMany: () => Promise.reject(new Error('no task index over fakes')),
    },
  };
  /** Calls an api route as the tenant, as API Gateway would. */
  const call = async (routeKey: string, parts: { id?: string; body?: unknown } = {}) => {
    const response = await route(api, {
      routeKey,
      headers: { authorization: `Bearer ${apiKey}` },
      ...(parts.id !== undefined && { pathParameters: { id: parts.id } }),
      ...(parts.body !== undefined && { body: JSON.stringify(parts.body) }),
    } as unknown as APIGatewayProxyEventV2);
    return { statusCode: response.statusCode, json: JSON.parse(response.body ?? 'null') as Record<string, unknown> };
  };
  return {
    clock,
    call,
    taskStore,
    scheduleStore,
    occurrences,
    admin,
    delivery,
    calls,
    create,
    stored,
    pending,
    fireNext,
    runUntil,
  };
}
