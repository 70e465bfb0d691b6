import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { deliverRecords } from '../../functions/callback/records.js';
import {
  deliverTask,
  type DeliveryPorts,
  type TargetDispatcher,
  type TargetResult,
} from '../../functions/core/deliver/deliver.js';
import { circuitOf, guardedByHostBreaker, HostBreaker } from '../../functions/core/deliver/host-breaker.js';
import type { Task } from '../../functions/core/kernel/task.js';
import {
  aTask,
  aTenant,
  DELIVERY_SETTINGS,
  FakeDeliveryQueue,
  fakeOccurrencePorts,
  FakeRequestCounter,
  FakeTaskStore,
  fakeTenantDirectory,
  ManualClock,
} from './fakes.js';
import { sqsRecord } from './handlers/setup.js';

const NOW_MS = Date.UTC(2026, 10, 21, 12);
const SETTINGS = { failureThreshold: 3, openMs: 30_000, maxOpenMs: 120_000, slowCallMs: 2_000 };
const TIMEOUT_MS = 10_000;

/** A Retry-After spread over [seconds, 1.5 × seconds], so a dead host's parked tasks do not all come back at once. */
const spreadFrom = (seconds: number) => ({
  asymmetricMatch: (actual: unknown) => typeof actual === 'number' && actual >= seconds && actual <= 1.5 * seconds,
  toAsymmetricMatcher: () => `a number from ${seconds} to ${1.5 * seconds}`,
});

describe('Class: HostBreaker', () => {
  it('opens after the threshold of consecutive host failures and refuses calls while open', () => {
    // Prepare
    const clock = new ManualClock(NOW_MS);
    const breaker = new HostBreaker(clock, SETTINGS);

    // Act
    for (let i = 0; i < SETTINGS.failureThreshold - 1; i += 1) breaker.record('dead.example', true);
    const beforeThreshold = breaker.state('dead.example');
    breaker.record('dead.example', true);
    clock.advance(10_000);

    // Assess
    expect(beforeThreshold).toBe('closed');
    expect(breaker.state('dead.example')).toBe('open');
    expect(breaker.admit('dead.example')).toEqual({ admitted: false, retryAfterSeconds: 20 });
    expect(breaker.admit('other.example')).toEqual({ admitted: true });
  });

  it('a success in between resets the count, so scattered failures never open the circuit', () => {
    // Prepare
    const breaker = new HostBreaker(new ManualClock(NOW_MS), SETTINGS);

    // Act
    for (let round = 0; round < 5; round += 1) {
      breaker.record('flaky.example', true);
      breaker.record('flaky.example', true);
      breaker.record('flaky.example', false);
    }

    // Assess
    expect(breaker.state('flaky.example')).toBe('closed');
  });

  it('half-opens once its time is up, lets exactly one probe through, and closes when the probe succeeds', () => {
    // Prepare
    const clock = new ManualClock(NOW_MS);
    const breaker = new HostBreaker(clock, SETTINGS);
    for (let i = 0; i < SETTINGS.failureThreshold; i += 1) breaker.record('dead.example', true);
    clock.advance(SETTINGS.openMs);

    // Act
    const probe = breaker.admit('dead.example');
    const duringProbe = breaker.admit('dead.example');
    const stateDuringProbe = breaker.state('dead.example');
    breaker.record('dead.example', false);

    // Assess
    expect(probe).toEqual({ admitted: true });
    expect(duringProbe.admitted).toBe(false);
    expect(stateDuringProbe).toBe('half-open');
    expect(breaker.state('dead.example')).toBe('closed');
    expect(breaker.admit('dead.example')).toEqual({ admitted: true });
  });

  it('opens for twice as long each time a probe goes unanswered, up to its longest period, and an answer starts over', () => {
    // Prepare
    const clock = new ManualClock(NOW_MS);
    const breaker = new HostBreaker(clock, SETTINGS);
    for (let i = 0; i < SETTINGS.failureThreshold; i += 1) breaker.record('dead.example', true);

    // Act: four probes left unanswered, one answered, and the host then fails again.
    const openFor: number[] = [];
    let periodMs = SETTINGS.openMs;
    for (let probe = 0; probe < 4; probe++) {
      clock.advance(periodMs);
      expect(breaker.admit('dead.example')).toEqual({ admitted: true });
      expect(breaker.admit('dead.example')).toEqual({ admitted: false, retryAfterSeconds: periodMs / 1000 });
      breaker.record('dead.example', true);
      const refusal = breaker.admit('dead.example');
      periodMs = refusal.admitted ? 0 : refusal.retryAfterSeconds * 1000;
      openFor.push(periodMs);
    }
    clock.advance(periodMs);
    breaker.admit('dead.example');
    breaker.record('dead.example', false);
    for (let i = 0; i < SETTINGS.failureThreshold; i += 1) breaker.record('dead.example', true);

    // Assess
    expect(openFor).toEqual([60_000, 120_000, 120_000, 120_000]);
    expect(breaker.admit('dead.example')).toEqual({ admitted: false, retryAfterSeconds: SETTINGS.openMs / 1000 });
  });

  it('does not extend an open circuit for a call admitted before it opened that fails late', () => {
    // Prepare
    const clock = new ManualClock(NOW_MS);
    const breaker = new HostBreaker(clock, SETTINGS);
    for (let i = 0; i < SETTINGS.failureThreshold; i += 1) breaker.record('dead.example', true);
    clock.advance(20_000);

    // Act
    breaker.record('dead.example', true);

    // Assess
    expect(breaker.admit('dead.example')).toEqual({ admitted: false, retryAfterSeconds: 10 });
  });

  it('watches slow calls on the timers it is given, so a virtual clock drives the whole breaker', () => {
    // Prepare: timers that fire only when the test says, none of the process's.
    const started: Array<{ ms: number; fire: () => void; stopped: boolean }> = [];
    const breaker = new HostBreaker(new ManualClock(NOW_MS), { ...SETTINGS, failureThreshold: 1 }, (ms, fire) => {
      const timer = { ms, fire, stopped: false };
      started.push(timer);
      return () => {
        timer.stopped = true;
      };
    });

    // Act: one call is still out when its timer fires, while another host answered; another ends before.
    const endSlow = breaker.watchSlowCall('slow.example', () => undefined);
    const endQuick = breaker.watchSlowCall('quick.example', () => undefined);
    endQuick();
    breaker.record('elsewhere.example', false);
    const watches = [...started];
    for (const timer of watches) if (!timer.stopped) timer.fire();

    // Assess: the slow call's watch goes on looking, to end it should no one ever report on it.
    expect(watches.map((timer) => timer.ms)).toEqual([SETTINGS.slowCallMs, SETTINGS.slowCallMs]);
    expect(started.slice(watches.length).map((timer) => timer.ms)).toEqual([SETTINGS.slowCallMs]);
    expect(endSlow()).toBe(true);
    expect(breaker.state('slow.example')).toBe('open');
    expect(breaker.state('quick.example')).toBe('closed');
  });

  it('ends a call no one will ever report on once it has been out ten times slowCallMs, even to a host that answered then, so later calls are not held behind it', () => {
    // Prepare: the host answered just before the call; timers fire when the test says.
    const clock = new ManualClock(NOW_MS);
    const timers: Array<{ fire: () => void; stopped: boolean }> = [];
    const breaker = new HostBreaker(clock, { ...SETTINGS, failureThreshold: 1 }, (_ms, fire) => {
      const timer = { fire, stopped: false };
      timers.push(timer);
      return () => {
        timer.stopped = true;
      };
    });
    breaker.record('lost.example', false);

    // Act: the call is lost (its invocation died); its host then goes quiet past openMs.
    const callEnded = breaker.callStarted('lost.example');
    breaker.watchSlowCall('lost.example', callEnded);
    for (let period = 0; period < 10; period++) {
      clock.advance(SETTINGS.slowCallMs);
      for (const timer of timers.splice(0)) if (!timer.stopped) timer.fire();
    }
    clock.advance(SETTINGS.openMs);

    // Assess: a later call goes at once; before, it waited for the lost call's end for good.
    expect(breaker.nextCallEnd('lost.example')).toBeUndefined();
    expect(breaker.state('lost.example')).toBe('closed');
  });
});

describe('Function: guardedByHostBreaker', () => {
  const notification = {
    id: 't',
    dueAt: '',
    firedAt: '',
    attempt: 1,
    bizType: null,
    bizId: null,
    payload: null,
  };
  const sender = { tenantId: 'acme', signingSecrets: [] };
  const circuit = circuitOf('acme', 'hooks.example.com:8443');
  const webhook = { type: 'http', url: 'https://Hooks.Example.com:8443/timer' } as const;

  it('rests a host only for calls it left unanswered: any HTTP status, 5xx and 429 included, shows it is up', async () => {
    // Prepare
    const breaker = new HostBreaker(new ManualClock(NOW_MS), SETTINGS);
    const answered: TargetResult[] = [400, 500, 502, 503, 504, 429].map((status) => ({
      ok: false,
      error: `HTTP ${status}`,
      statusCode: status,
    }));
    const unanswered: TargetResult[] = Array.from({ length: SETTINGS.failureThreshold }, () => ({
      ok: false,
      error: 'connect ECONNREFUSED',
    }));
    const answers = [...answered, ...unanswered];
    let calls = 0;
    const guarded = guardedByHostBreaker({ dispatch: async () => answers[calls++] ?? { ok: true } }, breaker);

    // Act
    for (let i = 0; i < answered.length; i += 1) await guarded.dispatch(webhook, notification, sender);
    const afterAnswers = breaker.state(circuit);
    for (let i = 0; i < unanswered.length; i += 1) await guarded.dispatch(webhook, notification, sender);

    // Assess
    expect(afterAnswers).toBe('closed');
    expect(breaker.state(circuit)).toBe('open');
    expect(calls).toBe(answers.length);
  });

  it('counts a dispatcher that throws as a host failure, so a probe that throws cannot leave the circuit half-open', async () => {
    // Prepare
    const clock = new ManualClock(NOW_MS);
    const breaker = new HostBreaker(clock, SETTINGS);
    for (let i = 0; i < SETTINGS.failureThreshold; i += 1) breaker.record(circuit, true);
    clock.advance(SETTINGS.openMs);
    const guarded = guardedByHostBreaker(
      {
        dispatch: async () => {
          throw new Error('bug');
        },
      },
      breaker,
    );

    // Act
    const probe = guarded.dispatch(webhook, notification, sender);

    // Assess
    await expect(probe).rejects.toThrow('bug');
    expect(breaker.state(circuit)).toBe('open');
  });

  it('answers a call to an open host at once, without calling it, with the rest of the open time as Retry-After', async () => {
    // Prepare
    const breaker = new HostBreaker(new ManualClock(NOW_MS), SETTINGS);
    for (let i = 0; i < SETTINGS.failureThreshold; i += 1) breaker.record(circuit, true);
    let calls = 0;
    const guarded = guardedByHostBreaker(
      {
        dispatch: async () => {
          calls += 1;
          return { ok: true };
        },
      },
      breaker,
    );

    // Act
    const result = await guarded.dispatch(webhook, notification, sender);
    const queueResult = await guarded.dispatch(
      { type: 'sqs', queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q' },
      notification,
      sender,
    );

    // Assess
    expect(result).toMatchObject({ ok: false, notCalled: true, retryAfterSeconds: spreadFrom(30) });
    expect(queueResult).toEqual({ ok: true });
    expect(calls).toBe(1);
  });

  it('spreads the Retry-After of refused calls over the open time, so parked tasks do not all come back in one second', async () => {
    // Prepare
    const breaker = new HostBreaker(new ManualClock(NOW_MS), SETTINGS);
    for (let i = 0; i < SETTINGS.failureThreshold; i += 1) breaker.record(circuit, true);
    const guarded = guardedByHostBreaker({ dispatch: async () => ({ ok: true }) }, breaker);

    // Act
    const refusals = await Promise.all(
      Array.from({ length: 200 }, () => guarded.dispatch(webhook, notification, sender)),
    );

    // Assess
    const seconds = refusals.map((refusal) => (refusal.ok ? 0 : (refusal.retryAfterSeconds ?? 0)));
    expect(seconds.every((value) => value >= 30 && value <= 45)).toBe(true);
    expect(new Set(seconds).size).toBeGreaterThan(10);
  });

  describe('slow calls', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    /**
     * A breaker guarding a target whose calls answer only when `answer` is called, under fake
     * timers so that slowCallMs can pass at the test's word.
     */
    function pendingTarget(clock = new ManualClock(NOW_MS)) {
      vi.useFakeTimers();
      const breaker = new HostBreaker(clock, SETTINGS);
      const waiting: Array<(result: TargetResult) => void> = [];
      const guarded = guardedByHostBreaker(
        { dispatch: () => new Promise<TargetResult>((resolve) => waiting.push(resolve)) },
        breaker,
      );
      const call = () => guarded.dispatch(webhook, notification, sender);
      return {
        breaker,
        call,
        callsAtOnce: (count: number) => Array.from({ length: count }, call),
        answer: (result: TargetResult) => waiting.splice(0).forEach((resolve) => resolve(result)),
        /** Calls made and not answered yet. */
        inFlight: () => waiting.length,
        /** Another tenant's host answers this instance: its machine is reading answers. */
        othersAnswer: () => breaker.record(circuitOf('other-tenant', 'elsewhere.example'), false),
      };
    }

    /** Lets every call that can go on reach the target (or its refusal). */
    const settle = () => vi.advanceTimersByTimeAsync(0);

    it('calls a host it has not heard from failureThreshold at a time, and the rest at once when one answers', async () => {
      // Prepare
      const target = pendingTarget();

      // Act
      const calls = target.callsAtOnce(10);
      await settle();
      const beforeAnswer = target.inFlight();
      target.answer({ ok: true, statusCode: 204 });
      await settle();
      const afterAnswer = target.inFlight();
      target.answer({ ok: true, statusCode: 204 });

      // Assess
      expect([beforeAnswer, afterAnswer]).toEqual([SETTINGS.failureThreshold, 10 - SETTINGS.failureThreshold]);
      expect(await Promise.all(calls)).toEqual(calls.map(() => ({ ok: true, statusCode: 204 })));
    });

    it('meets a hanging host with failureThreshold calls and refuses the rest, uncalled, once those time out', async () => {
      // Prepare
      const target = pendingTarget();

      // Act: the first calls go slow (the circuit opens), then time out.
      const calls = target.callsAtOnce(10);
      await settle();
      vi.advanceTimersByTime(SETTINGS.slowCallMs);
      await settle();
      const whileSlow = target.inFlight();
      vi.advanceTimersByTime(TIMEOUT_MS - SETTINGS.slowCallMs);
      target.answer({ ok: false, error: `timed out after ${TIMEOUT_MS} ms` });
      const results = await Promise.all(calls);

      // Assess: the rest waited for the calls' end, not their slowness, and were then rested.
      expect(whileSlow).toBe(SETTINGS.failureThreshold);
      expect(results.filter((result) => 'notCalled' in result)).toHaveLength(10 - SETTINGS.failureThreshold);
      expect(results.filter((result) => !('notCalled' in result))).toEqual(
        Array.from({ length: SETTINGS.failureThreshold }, () => ({
          ok: false,
          error: `timed out after ${TIMEOUT_MS} ms`,
        })),
      );
    });

    it("lets the waiting calls through when a slow host's first calls are answered, however late", async () => {
      // Prepare
      const target = pendingTarget();

      // Act: answered at 3.5 s, after the circuit opened for their slowness.
      const calls = target.callsAtOnce(6);
      await settle();
      vi.advanceTimersByTime(3_500);
      target.answer({ ok: true, statusCode: 200 });
      await settle();
      const secondWave = target.inFlight();
      target.answer({ ok: true, statusCode: 200 });

      // Assess
      expect(secondWave).toBe(6 - SETTINGS.failureThreshold);
      expect(await Promise.all(calls)).toEqual(calls.map(() => ({ ok: true, statusCode: 200 })));
    });

    it('counts calls unanswered after slowCallMs as unanswered, so a hanging host is rested long before the webhook timeout', async () => {
      // Prepare
      const target = pendingTarget();
      const { breaker } = target;

      // Act
      const hanging = target.callsAtOnce(SETTINGS.failureThreshold);
      target.othersAnswer();
      vi.advanceTimersByTime(SETTINGS.slowCallMs - 1);
      const stateBefore = breaker.state(circuit);
      vi.advanceTimersByTime(1);
      const refused = await target.call();
      target.answer({ ok: false, error: `timed out after ${TIMEOUT_MS} ms` });
      const ended = await Promise.all(hanging);

      // Assess: open at 2 s, and the calls' own timeouts did not count again (no reopening, no longer rest).
      expect(stateBefore).toBe('closed');
      expect(refused).toMatchObject({
        ok: false,
        notCalled: true,
        retryAfterSeconds: spreadFrom(SETTINGS.openMs / 1000),
      });
      expect(ended).toEqual(hanging.map(() => ({ ok: false, error: `timed out after ${TIMEOUT_MS} ms` })));
      expect(breaker.state(circuit)).toBe('open');
      expect(breaker.admit(circuit)).toEqual({ admitted: false, retryAfterSeconds: SETTINGS.openMs / 1000 });
    });

    it('does not count slow calls while no other call is answered: a machine too busy to read answers is not a hanging host', async () => {
      // Prepare
      const target = pendingTarget();

      // Act: the first calls stay unanswered past slowCallMs, and nobody else answers either.
      const slow = target.callsAtOnce(SETTINGS.failureThreshold);
      vi.advanceTimersByTime(SETTINGS.slowCallMs);
      const stateWhileSlow = target.breaker.state(circuit);
      target.answer({ ok: true, statusCode: 204 });
      await Promise.all(slow);

      // Assess
      expect(stateWhileSlow).toBe('closed');
    });

    it('counts calls nobody will ever report on once they have been out ten times slowCallMs, with no answer anywhere meanwhile', async () => {
      // Prepare
      const target = pendingTarget();

      // Act: the calls are lost (their invocation died, say); nothing else is answered either.
      void Promise.all(target.callsAtOnce(SETTINGS.failureThreshold));
      vi.advanceTimersByTime(SETTINGS.slowCallMs * 9);
      const stateBefore = target.breaker.state(circuit);
      vi.advanceTimersByTime(SETTINGS.slowCallMs);

      // Assess: past any webhook timeout the host is taken for down, so later calls are not held behind the lost ones.
      expect(stateBefore).toBe('closed');
      expect(target.breaker.state(circuit)).toBe('open');
    });

    it('never gives up a slow call: it waits for the answer, which a receiver may send after slowCallMs', async () => {
      // Prepare
      const target = pendingTarget();

      // Act: one call still unanswered well past slowCallMs, answered within the webhook timeout.
      const slow = target.call();
      vi.advanceTimersByTime(3_500);
      target.answer({ ok: true, statusCode: 200 });
      const result = await slow;

      // Assess
      expect(result).toEqual({ ok: true, statusCode: 200 });
      expect(target.breaker.state(circuit)).toBe('closed');
    });

    /** A target whose host answered one call `agoMs` before now. */
    async function answeredAgo(agoMs: number) {
      const clock = new ManualClock(NOW_MS);
      const target = pendingTarget(clock);
      const first = target.call();
      target.answer({ ok: true, statusCode: 200 });
      await first;
      clock.advance(agoMs);
      return target;
    }

    it('does not rest a host that answered within the open time for its slow calls: it is up, merely slow', async () => {
      // Prepare
      const target = await answeredAgo(SETTINGS.openMs - 1);

      // Act
      const slow = target.callsAtOnce(SETTINGS.failureThreshold);
      vi.advanceTimersByTime(SETTINGS.slowCallMs);
      const stateWhileSlow = target.breaker.state(circuit);
      target.answer({ ok: true, statusCode: 200 });
      await Promise.all(slow);

      // Assess
      expect(stateWhileSlow).toBe('closed');
    });

    it('counts slow calls again once the host has not answered for the open time', async () => {
      // Prepare
      const target = await answeredAgo(SETTINGS.openMs + 1);

      // Act
      const slow = target.callsAtOnce(SETTINGS.failureThreshold);
      target.othersAnswer();
      vi.advanceTimersByTime(SETTINGS.slowCallMs);
      const stateWhileSlow = target.breaker.state(circuit);
      target.answer({ ok: true, statusCode: 200 });
      await Promise.all(slow);

      // Assess
      expect(stateWhileSlow).toBe('open');
    });

    it('reopens the circuit when its probe is slow, and closes it when the probe answers late', async () => {
      // Prepare: an open circuit whose time is up.
      const clock = new ManualClock(NOW_MS);
      const target = pendingTarget(clock);
      const { breaker } = target;
      for (let i = 0; i < SETTINGS.failureThreshold; i += 1) breaker.record(circuit, true);
      clock.advance(SETTINGS.openMs);

      // Act: the probe is still unanswered when it counts as slow, and answers later.
      const probe = target.call();
      target.othersAnswer();
      vi.advanceTimersByTime(SETTINGS.slowCallMs);
      const stateWhileSlow = breaker.state(circuit);
      target.answer({ ok: true, statusCode: 200 });
      const answer = await probe;

      // Assess: the host answered, so it is called again, and the probe's answer is its task's.
      expect(stateWhileSlow).toBe('open');
      expect(answer).toEqual({ ok: true, statusCode: 200 });
      expect(breaker.state(circuit)).toBe('closed');
    });

    it('lets the calls in flight run on when their circuit opens, and closes it when one of them answers', async () => {
      // Prepare
      const target = pendingTarget();
      const { breaker } = target;

      // Act
      const slow = target.callsAtOnce(SETTINGS.failureThreshold);
      target.othersAnswer();
      vi.advanceTimersByTime(SETTINGS.slowCallMs);
      const stateWhileSlow = breaker.state(circuit);
      target.answer({ ok: true, statusCode: 200 });
      const results = await Promise.all(slow);

      // Assess: each call's own answer is its result, so no task is called a second time for the same attempt.
      expect(stateWhileSlow).toBe('open');
      expect(results).toEqual(slow.map(() => ({ ok: true, statusCode: 200 })));
      expect(breaker.state(circuit)).toBe('closed');
    });
  });

  it("keeps another tenant's calls to the same host going while one tenant's circuit there is open", async () => {
    // Prepare: two tenants behind one webhook host (a relay, or one company's gateway); only acme's endpoint is down.
    const breaker = new HostBreaker(new ManualClock(NOW_MS), SETTINGS);
    const calls: string[] = [];
    const guarded = guardedByHostBreaker(
      {
        dispatch: async (target) => {
          const url = target.type === 'http' ? target.url : '';
          calls.push(url);
          return url.endsWith('/acme') ? { ok: false, error: 'connect ECONNREFUSED' } : { ok: true };
        },
      },
      breaker,
    );
    const acmeHook = { type: 'http', url: 'https://relay.example/acme' } as const;
    const globexHook = { type: 'http', url: 'https://relay.example/globex' } as const;
    const globex = { tenantId: 'globex', signingSecrets: [] };

    // Act
    for (let i = 0; i < SETTINGS.failureThreshold + 2; i += 1) await guarded.dispatch(acmeHook, notification, sender);
    const globexResult = await guarded.dispatch(globexHook, notification, globex);

    // Assess
    expect(breaker.state(circuitOf('acme', 'relay.example'))).toBe('open');
    expect(calls.filter((url) => url.endsWith('/acme'))).toHaveLength(SETTINGS.failureThreshold);
    expect(globexResult).toEqual({ ok: true });
    expect(breaker.state(circuitOf('globex', 'relay.example'))).toBe('closed');
  });
});

/** A dispatcher whose calls to `deadHost` hang until released, as a receiver that never answers until the timeout. */
function hangingDispatcher(deadHost: string) {
  const hanging: Array<() => void> = [];
  const calls: string[] = [];
  const dispatcher: TargetDispatcher = {
    dispatch: (target) => {
      const host = target.type === 'http' ? new URL(target.url).host : '';
      calls.push(host);
      if (host !== deadHost) return Promise.resolve({ ok: true });
      return new Promise<TargetResult>((resolve) => {
        hanging.push(() => resolve({ ok: false, error: `timed out after ${TIMEOUT_MS} ms` }));
      });
    },
  };
  return { dispatcher, calls, releaseAll: () => hanging.splice(0).forEach((release) => release()) };
}

async function eventually(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 100 && !condition(); attempt += 1) await new Promise((r) => setImmediate(r));
  expect(condition()).toBe(true);
}

describe('Invariant 9: one tenant’s hanging webhook', () => {
  it("neither delays other tenants' records in the same batch nor holds later batches once its circuit opens", async () => {
    // Prepare
    const clock = new ManualClock(NOW_MS);
    const dead = (shard: number) =>
      aTask(NOW_MS, shard, { tenantId: 'slowco', target: { type: 'http', url: 'https://dead.example/hook' } });
    const healthy = (shard: number) => aTask(NOW_MS, shard);
    const firstBatch: Task[] = [dead(0), healthy(1), dead(2), healthy(3), dead(0)];
    const laterBatch: Task[] = [dead(1), healthy(2), dead(3), healthy(0)];
    const store = new FakeTaskStore([...firstBatch, ...laterBatch]);
    const target = hangingDispatcher('dead.example');
    const deliveryQueue = new FakeDeliveryQueue();
    const ports = {
      delivery: {
        ...DELIVERY_SETTINGS,
        taskStore: store,
        occurrences: fakeOccurrencePorts(store, clock),
        targets: guardedByHostBreaker(target.dispatcher, new HostBreaker(clock, SETTINGS)),
        tenants: fakeTenantDirectory([aTenant(), aTenant({ id: 'slowco' })]),
        deadLetters: { send: async () => undefined },
        callbackCounter: new FakeRequestCounter(),
        clock,
      } satisfies DeliveryPorts,
      deliveryQueue,
      logger: new Logger({ serviceName: 'unit', logLevel: 'SILENT' }),
      metrics: new Metrics({ namespace: 'unit' }),
    };
    const records = (tasks: readonly Task[]) =>
      tasks.map((task) => sqsRecord(JSON.stringify({ id: task.id }), task.id));
    const statusOf = (task: Task) => store.shown(task.id)?.status;

    // Act: the first batch runs while the dead host's calls hang; the healthy tasks are called
    // meanwhile, and their batch's receipt, written once it settles, says when.
    const first = deliverRecords(ports, records(firstBatch));
    await eventually(() => target.calls.filter((host) => host === 'hooks.example.com').length === 2);
    clock.advance(TIMEOUT_MS);
    target.releaseAll();
    await first;
    const healthyLatenessInFirst = firstBatch
      .filter((task) => task.tenantId !== 'slowco')
      .map((task) => store.shown(task.id)?.latenessMs);
    const callsAfterFirst = target.calls.length;
    const later = await deliverRecords(ports, records(laterBatch));

    // Assess
    expect(healthyLatenessInFirst).toEqual([0, 0]);
    // The later batch finished without releasing anything: no call to the dead host was made or waited on.
    expect(target.calls.slice(callsAfterFirst)).toEqual(['hooks.example.com', 'hooks.example.com']);
    expect(laterBatch.filter((task) => task.tenantId !== 'slowco').map(statusOf)).toEqual(['DELIVERED', 'DELIVERED']);
    // A retry waits as a new delayed message, so no record of the batch fails.
    expect(later.batchItemFailures).toEqual([]);
    // Put off until the circuit half-opens (opened at the timeout, 10 s in), and still PENDING with a retry to come.
    expect(deliveryQueue.sent.slice(-2).map((message) => [message.id, message.delaySeconds])).toEqual(
      laterBatch.filter((task) => task.tenantId === 'slowco').map((task) => [task.id, spreadFrom(30)]),
    );
    expect(laterBatch.filter((task) => task.tenantId === 'slowco').map(statusOf)).toEqual(['PENDING', 'PENDING']);
  });
});

describe('Invariant 12: a call not made is not an attempt', () => {
  it.each([
    ['a first attempt', {}],
    ['a later attempt', { attempts: 2, retryAtMs: NOW_MS - 1_000, lastError: 'connect ECONNREFUSED' }],
  ] as const)(
    'gives %s refused by an open circuit back uncounted, to ask again when the circuit half-opens',
    async (_case, state) => {
      // Prepare: the host left enough calls unanswered to be rested.
      const clock = new ManualClock(NOW_MS);
      const task = aTask(NOW_MS, 0, state);
      const store = new FakeTaskStore([task]);
      const breaker = new HostBreaker(clock, SETTINGS);
      for (let i = 0; i < SETTINGS.failureThreshold; i += 1)
        breaker.record(circuitOf('acme', 'hooks.example.com'), true);
      const calls: string[] = [];
      const ports: DeliveryPorts = {
        ...DELIVERY_SETTINGS,
        taskStore: store,
        occurrences: fakeOccurrencePorts(store, clock),
        targets: guardedByHostBreaker(
          {
            dispatch: async (_target, notification) => {
              calls.push(notification.id);
              return { ok: true };
            },
          },
          breaker,
        ),
        tenants: fakeTenantDirectory([aTenant()]),
        deadLetters: { send: async () => undefined },
        callbackCounter: new FakeRequestCounter(),
        clock,
      };

      // Act
      const outcome = await deliverTask(ports, task.id);

      // Assess: no call, and the task is as it was: same attempts, no history, no retry time of its own.
      expect(outcome).toMatchObject({ kind: 'rested', retryAfterSeconds: spreadFrom(SETTINGS.openMs / 1000) });
      expect(calls).toEqual([]);
      expect(store.shown(task.id)).toMatchObject({ status: 'PENDING', attempts: task.attempts });
      expect(store.shown(task.id)?.history).toBeUndefined();
      expect(store.shown(task.id)?.retryAtMs).toBe(task.retryAtMs);
    },
  );
});
