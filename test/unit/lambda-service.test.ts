import { describe, expect, it } from 'vitest';

import {
  createLambdaService,
  currentEnvironment,
  type EnvironmentFactory,
  sharedEnvironments,
  SYNC_PAYLOAD_LIMIT_BYTES,
} from '../../lib/local/lambda-service.js';

/** A handler whose invocations stay running until the test releases them. */
function heldHandler() {
  const releases: Array<() => void> = [];
  let running = 0;
  let peak = 0;
  return {
    handler: async () => {
      running += 1;
      peak = Math.max(peak, running);
      await new Promise<void>((resolve) => releases.push(resolve));
      running -= 1;
      return { ok: true };
    },
    releaseAll: () => releases.splice(0).forEach((release) => release()),
    peak: () => peak,
  };
}

const noErrors = () => undefined;

describe('Service: local Lambda', () => {
  it('never runs a reserved function beyond its reservation, and throttles the rest', async () => {
    // Prepare
    const scanner = heldHandler();
    const lambda = createLambdaService({
      handlers: sharedEnvironments({ scanner: scanner.handler }),
      limits: { scanner: { reservedConcurrency: 3 } },
      onError: noErrors,
    });

    // Act
    const results = Array.from({ length: 5 }, () => lambda.invoke('scanner', {}));
    const throttled = await Promise.all(results.slice(3));
    scanner.releaseAll();
    const ran = await Promise.all(results.slice(0, 3));

    // Assess
    expect(throttled.map((result) => result.outcome)).toEqual(['throttled', 'throttled']);
    expect(ran.map((result) => result.outcome)).toEqual(['ok', 'ok', 'ok']);
    expect(scanner.peak()).toBe(3);
    expect(lambda.stats().scanner).toEqual({
      invocations: 3,
      errors: 0,
      timeouts: 0,
      throttles: 2,
      scalingThrottles: 0,
      concurrency: 0,
      peakConcurrency: 3,
      machinePeakConcurrency: 3,
      durationMs: expect.any(Number),
      environments: 3,
    });
  });

  it('holds a function given a cloud duration to its reservation by its starts a second times that duration, not by how long they ran here', async () => {
    // Prepare: 2 reserved, an invocation lasting 400 ms in the cloud, so 5 starts a second; here they all hang.
    const api = heldHandler();
    const lambda = createLambdaService({
      handlers: sharedEnvironments({ api: api.handler }),
      limits: { api: { reservedConcurrency: 2 } },
      cloudDurationMs: { api: 400 },
      onError: noErrors,
    });
    const second = () => new Promise((resolve) => setTimeout(resolve, 1000 - (performance.now() % 1000) + 5));

    // Act: six start at once, early in a second; in the next second, five more, though the first still hang.
    await second();
    const first = Array.from({ length: 6 }, () => lambda.invoke('api', {}));
    await second();
    const later = Array.from({ length: 5 }, () => lambda.invoke('api', {}));
    await new Promise((resolve) => setTimeout(resolve, 10));
    api.releaseAll();
    const outcomes = (await Promise.all([...first, ...later])).map((result) => result.outcome);

    // Assess
    expect(outcomes).toEqual([...Array(5).fill('ok'), 'throttled', ...Array(5).fill('ok')]);
    expect(lambda.stats().api).toMatchObject({ throttles: 1, peakConcurrency: 2, machinePeakConcurrency: 10 });
  });

  it("throttles a cold start past the function's new environments per 10 s, while a warm environment still runs", async () => {
    // Prepare: a 1/100 model's 10 new environments per 10 s.
    const api = heldHandler();
    const lambda = createLambdaService({
      handlers: sharedEnvironments({ api: api.handler }),
      newEnvironmentsPer10Seconds: 10,
      onError: noErrors,
    });

    // Act: 12 at once need 12 environments; after they finish, one more finds a warm one.
    const burst = Array.from({ length: 12 }, () => lambda.invoke('api', {}));
    const refused = await Promise.all(burst.slice(10));
    api.releaseAll();
    await Promise.all(burst.slice(0, 10));
    const warm = lambda.invoke('api', {});
    await Promise.resolve();
    api.releaseAll();

    // Assess
    expect(refused.map((result) => result.outcome)).toEqual(['throttled', 'throttled']);
    expect((await warm).outcome).toBe('ok');
    expect(lambda.stats().api).toMatchObject({ environments: 10, throttles: 2, scalingThrottles: 2 });
  });

  it('runs concurrent invocations in execution environments of their own, reuses idle ones, and drops one that timed out', async () => {
    // Prepare: each environment counts its own invocations, as a handler's module state would.
    const held = heldHandler();
    let started = 0;
    const lambda = createLambdaService({
      handlers: {
        api: async () => {
          const environment = ++started;
          let invocations = 0;
          return async (event: unknown) => {
            invocations += 1;
            if ((event as { hold?: boolean }).hold) await held.handler();
            if ((event as { hang?: boolean }).hang) await new Promise(() => undefined);
            return { environment, invocations };
          };
        },
      },
      limits: { api: { timeoutSeconds: 0.05 } },
      onError: noErrors,
    });

    // Act
    const concurrent = [lambda.invoke('api', { hold: true }), lambda.invoke('api', { hold: true })];
    await new Promise((resolve) => setImmediate(resolve));
    held.releaseAll();
    const firstTwo = await Promise.all(concurrent);
    const warm = await lambda.invoke('api', {});
    const hung = await lambda.invoke('api', { hang: true });
    const concurrentAgain = [lambda.invoke('api', { hold: true }), lambda.invoke('api', { hold: true })];
    await new Promise((resolve) => setImmediate(resolve));
    held.releaseAll();
    const afterTimeout = await Promise.all(concurrentAgain);

    // Assess
    expect(firstTwo).toEqual([
      { outcome: 'ok', response: { environment: 1, invocations: 1 } },
      { outcome: 'ok', response: { environment: 2, invocations: 1 } },
    ]);
    expect(warm).toEqual({ outcome: 'ok', response: { environment: 2, invocations: 2 } });
    expect(hung).toEqual({ outcome: 'timeout' });
    // Environment 2 timed out and is gone; environment 1 is still warm.
    expect(afterTimeout).toEqual([
      { outcome: 'ok', response: { environment: 1, invocations: 2 } },
      { outcome: 'ok', response: { environment: 3, invocations: 1 } },
    ]);
    expect(lambda.stats().api.environments).toBe(3);
  });

  it('keeps each reservation for its function when the unreserved functions exhaust the account pool', async () => {
    // Prepare: an account of 10, of which the scanner reserves 4 and the api 2; the callback and ticker share 4.
    const callback = heldHandler();
    const api = heldHandler();
    const scanner = heldHandler();
    const lambda = createLambdaService({
      handlers: sharedEnvironments({
        callback: callback.handler,
        api: api.handler,
        scanner: scanner.handler,
        ticker: async () => ({}),
      }),
      limits: { scanner: { reservedConcurrency: 4 }, api: { reservedConcurrency: 2 } },
      accountConcurrency: 10,
      onError: noErrors,
    });

    // Act: a callback surge takes the whole unreserved pool.
    const surge = Array.from({ length: 8 }, () => lambda.invoke('callback', {}));
    const tick = await lambda.invoke('ticker', {});
    const apiCalls = Array.from({ length: 2 }, () => lambda.invoke('api', {}));
    const scans = Array.from({ length: 4 }, () => lambda.invoke('scanner', {}));
    const fifthScan = await lambda.invoke('scanner', {});
    callback.releaseAll();
    api.releaseAll();
    scanner.releaseAll();
    const surgeResults = await Promise.all(surge);
    const apiResults = await Promise.all(apiCalls);
    const scanResults = await Promise.all(scans);

    // Assess: the surge got four and the unreserved ticker none; the api and the scanner their reservations, and no more.
    expect(surgeResults.filter((result) => result.outcome === 'ok')).toHaveLength(4);
    expect(lambda.stats().callback.peakConcurrency).toBe(4);
    expect(tick.outcome).toBe('throttled');
    expect(apiResults.map((result) => result.outcome)).toEqual(['ok', 'ok']);
    expect(scanResults.map((result) => result.outcome)).toEqual(['ok', 'ok', 'ok', 'ok']);
    expect(fifthScan.outcome).toBe('throttled');
  });

  it('refuses reservations the account cannot hold', () => {
    // Act / Assess
    expect(() =>
      createLambdaService({
        handlers: sharedEnvironments({}),
        limits: { scanner: { reservedConcurrency: 8 }, api: { reservedConcurrency: 8 } },
        accountConcurrency: 10,
        onError: noErrors,
      }),
    ).toThrow(/reserved concurrency \(16\) exceeds the account's concurrency \(10\)/);
  });

  it('abandons an invocation at its timeout: counted as an error, its late result discarded, its concurrency freed', async () => {
    // Prepare: the first invocation outlives its 0.1 s timeout; the second answers at once.
    const errors: unknown[] = [];
    let release: (() => void) | undefined;
    let calls = 0;
    const lambda = createLambdaService({
      handlers: sharedEnvironments({
        callback: async () => {
          calls += 1;
          if (calls === 1) await new Promise<void>((resolve) => (release = resolve));
          return { call: calls };
        },
      }),
      limits: { callback: { timeoutSeconds: 0.1, reservedConcurrency: 1 } },
      onError: (_fn, error) => errors.push(error),
    });

    // Act
    const timedOut = await lambda.invoke('callback', {});
    const next = await lambda.invoke('callback', {});
    release?.();

    // Assess
    expect(timedOut).toEqual({ outcome: 'timeout' });
    expect(next).toEqual({ outcome: 'ok', response: { call: 2 } });
    expect(String(errors[0])).toContain('Task timed out after 0.1 seconds');
    expect(lambda.stats().callback).toMatchObject({ invocations: 2, errors: 1, timeouts: 1, concurrency: 0 });
  });

  it('answers an invocation whose cold start fails as an error, and starts a new environment for the next', async () => {
    // Prepare
    const errors: unknown[] = [];
    let starts = 0;
    const lambda = createLambdaService({
      handlers: {
        api: async () => {
          starts += 1;
          if (starts === 1) throw new Error('config missing');
          return async () => ({ ok: true });
        },
      },
      onError: (_fn, error) => errors.push(error),
    });

    // Act
    const failed = await lambda.invoke('api', {});
    const next = await lambda.invoke('api', {});

    // Assess
    expect(failed).toMatchObject({ outcome: 'error' });
    expect(String(errors[0])).toContain('config missing');
    expect(next).toEqual({ outcome: 'ok', response: { ok: true } });
    expect(lambda.stats().api).toMatchObject({ invocations: 2, errors: 1, environments: 2, concurrency: 0 });
  });

  it('refuses a request over 6 MB before the handler runs, and fails a response over 6 MB', async () => {
    // Prepare
    let calls = 0;
    const lambda = createLambdaService({
      handlers: sharedEnvironments({
        api: async (event) => {
          calls += 1;
          return { body: 'x'.repeat((event as { size: number }).size) };
        },
      }),
      onError: noErrors,
    });

    // Act
    const tooLarge = await lambda.invoke('api', { body: 'x'.repeat(SYNC_PAYLOAD_LIMIT_BYTES) });
    const hugeAnswer = await lambda.invoke('api', { size: SYNC_PAYLOAD_LIMIT_BYTES });

    // Assess
    expect(tooLarge.outcome).toBe('request-too-large');
    expect(calls).toBe(1);
    expect(hugeAnswer.outcome).toBe('error');
    expect(lambda.stats().api).toMatchObject({ invocations: 1, errors: 1 });
  });

  it("runs each environment's init and invocations in its own context, starting until its first invocation ends", async () => {
    // Prepare: an api function whose init and invocations note the environment they run in.
    const seen: Array<{ id: string; starting: boolean } | undefined> = [];
    const note = () => {
      const environment = currentEnvironment();
      seen.push(environment && { ...environment });
    };
    const startApi: EnvironmentFactory = () => {
      note();
      return Promise.resolve(async () => {
        await Promise.resolve();
        note();
        return { ok: true };
      });
    };
    const lambda = createLambdaService({ handlers: { api: startApi }, onError: noErrors });

    // Act: two at once start two environments; a third reuses one of them, warm.
    await Promise.all([lambda.invoke('api', {}), lambda.invoke('api', {})]);
    await lambda.invoke('api', {});

    // Assess
    expect(seen.slice(0, 4)).toEqual(
      expect.arrayContaining([
        { id: 'api:1', starting: true },
        { id: 'api:1', starting: true },
        { id: 'api:2', starting: true },
        { id: 'api:2', starting: true },
      ]),
    );
    expect(seen[4]).toMatchObject({ starting: false, id: expect.stringMatching(/^api:[12]$/) });
    expect(currentEnvironment()).toBeUndefined();
  });
});
