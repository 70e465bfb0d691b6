/**
 * The explorer's runner: scenarios as fast-check arbitraries, the interleaving as fast-check's
 * scheduler, one property (a run of the world, then the checker), and a report that names the
 * seed and path that replay a counterexample. Used by explorer.test.ts and `npm run explore`.
 *
 * Scenarios are an array of timed actions rather than `fc.commands`: commands check a model
 * after each step, while here the checker reads the whole history once the run is quiescent,
 * and actions happen at virtual times rather than in sequence.
 */
import fc from 'fast-check';

import { DEFAULT_HOST_BREAKER } from '../../functions/core/deliver/host-breaker.js';
import type { Task } from '../../functions/core/kernel/task.js';
import { FIRST_ATTEMPT_READ_AHEAD_MS, UNLEASED_CANCEL_MARGIN_MS } from '../../functions/core/kernel/task.js';
import { clockTime } from '../support/clock.js';
import { check, type FinalState } from './checker.js';
import {
  type Action,
  type ActorKind,
  type Answer,
  type Faults,
  type FollowUp,
  type HistoryEvent,
  type InvocationFaults,
  type Scenario,
  SKEW_BOUND_MS,
  World,
} from './world.js';

/** Mostly `undefined`: faults are the exception, and shrinking drops them first. */
const rarely = <T>(arbitrary: fc.Arbitrary<T>, weight = 1) =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight, arbitrary });

/**
 * At most one fault per invocation, at one of its first port calls. A lost response is one whose
 * request waited `slowMs` before it landed (it timed out, so the SDK sent it again).
 */
const faultsArb: fc.Arbitrary<Faults> = rarely(
  fc.record({
    kind: fc.constantFrom('crash', 'lose', 'slow'),
    // An invocation's first call is the likeliest: an api's cancel, a callback's read.
    at: fc.oneof(fc.constant(0), fc.nat(5)),
    // Around the cancel margin, where a cancel that lands late races the first attempt; or any.
    slowMs: fc.oneof(
      fc.integer({ min: 0, max: 3000 }),
      fc.integer({ min: UNLEASED_CANCEL_MARGIN_MS - 300, max: UNLEASED_CANCEL_MARGIN_MS + 500 }),
    ),
  }),
  2,
).map((fault) => {
  if (!fault) return { slowMs: 0 };
  if (fault.kind === 'crash') return { crashAt: fault.at, slowMs: 0 };
  if (fault.kind === 'slow') return { slowAt: fault.at, slowMs: fault.slowMs };
  return { loseAt: fault.at, slowAt: fault.at, slowMs: fault.slowMs };
});

/**
 * A request held up long enough to land around the fire time of what it races (a cancel against
 * a first attempt, a schedule change against its due occurrence), its answer lost half the time.
 */
const lateLandingArb = (calls: fc.Arbitrary<number>): fc.Arbitrary<Faults> =>
  fc
    .record({
      at: calls,
      lost: fc.boolean(),
      slowMs: fc.integer({ min: UNLEASED_CANCEL_MARGIN_MS - 300, max: UNLEASED_CANCEL_MARGIN_MS + 900 }),
    })
    .map(({ at, lost, slowMs }) => ({ slowAt: at, slowMs, ...(lost && { loseAt: at }) }));

/** The call of a DELETE that writes the cancel: the route reads the task first, to move a schedule's chain past an occurrence. */
const CANCEL_WRITE_CALL = 1;

/**
 * A cancel asked just outside the margin whose write lands around the time the first attempt reads
 * (up to FIRST_ATTEMPT_READ_AHEAD_MS before the fire time) or calls, its answer lost half the time,
 * each of its calls a round trip of up to 300 ms: where it races the first attempt's read and record,
 * and where an undo comes after the read. Half the time it lands within the skew bound before the
 * earliest read, where whether the api confirms it (by its clock) or the callback reads first (by
 * its own) turns on the two clocks being at most the bound apart.
 */
const lateCancelArb = fc
  .record({
    leadMs: fc.integer({ min: UNLEASED_CANCEL_MARGIN_MS, max: UNLEASED_CANCEL_MARGIN_MS + 600 }),
    landsAfterFireMs: fc.oneof(
      fc.integer({ min: -FIRST_ATTEMPT_READ_AHEAD_MS - SKEW_BOUND_MS, max: -FIRST_ATTEMPT_READ_AHEAD_MS }),
      fc.integer({ min: -FIRST_ATTEMPT_READ_AHEAD_MS - 400, max: 600 }),
    ),
    lost: fc.boolean(),
    callMs: fc.integer({ min: 0, max: 300 }),
  })
  .map(({ leadMs, landsAfterFireMs, lost, callMs }) => ({
    leadMs,
    faults: {
      slowAt: CANCEL_WRITE_CALL,
      slowMs: Math.max(0, leadMs + landsAfterFireMs - (CANCEL_WRITE_CALL + 1) * callMs),
      callMs,
      ...(lost && { loseAt: CANCEL_WRITE_CALL }),
    },
  }));

const answerArb: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ status: fc.constant(200), afterMs: fc.integer({ min: 0, max: 1000 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({ status: fc.constantFrom(404, 503), afterMs: fc.integer({ min: 0, max: 1000 }) }),
  },
  // Late but within the webhook timeout.
  { weight: 1, arbitrary: fc.record({ status: fc.constant(200), afterMs: fc.integer({ min: 2000, max: 10_000 }) }) },
  { weight: 1, arbitrary: fc.record({ status: fc.constant('none' as const), afterMs: fc.constant(0) }) },
);

/** Around the margin a cancel of a never-attempted task must keep, where the races are; or any time. */
const leadArb = fc.oneof(
  fc.integer({ min: UNLEASED_CANCEL_MARGIN_MS - 300, max: UNLEASED_CANCEL_MARGIN_MS + 600 }),
  fc.integer({ min: -1000, max: 30_000 }),
);

const submitArb: fc.Arbitrary<Action> = fc.record({
  kind: fc.constant('submit' as const),
  atMs: fc.integer({ min: 0, max: 30_000 }),
  // Due within the late-arrival reach (handed off by the api) or beyond it (found by the scan).
  dueInMs: fc.array(fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 25_000, max: 45_000 })), {
    minLength: 1,
    maxLength: 2,
  }),
  maxAttempts: fc.integer({ min: 1, max: 3 }),
  answers: fc.array(answerArb, { minLength: 1, maxLength: 3 }),
  idempotent: fc.boolean(),
  dueAtGiven: fc.boolean(),
  faults: faultsArb,
  cancel: rarely(fc.oneof(fc.record({ leadMs: leadArb, faults: faultsArb }), lateCancelArb), 3),
  // A PATCH moving the task near (a late arrival) or further out, racing its first attempt around the margin.
  reschedule: rarely(
    fc.record({
      leadMs: leadArb,
      moveToMs: fc.oneof(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 20_000, max: 45_000 })),
      faults: fc.oneof(faultsArb, lateLandingArb(fc.integer({ min: 0, max: 4 }))),
    }),
    2,
  ),
});

const followUpArb: fc.Arbitrary<FollowUp> = fc.record({
  op: fc.constantFrom('patch', 'pause', 'resume', 'delete', 'cancel-occurrence'),
  nth: fc.nat(3),
  leadMs: fc.oneof(fc.integer({ min: -500, max: 1500 }), fc.integer({ min: -5000, max: 9000 })),
  // A change reads the schedule first and writes it last: held up in between, it races the occurrence.
  faults: fc.oneof(faultsArb, lateLandingArb(fc.integer({ min: 1, max: 4 }))),
});

const scheduleArb: fc.Arbitrary<Action> = fc.record({
  kind: fc.constant('schedule' as const),
  atMs: fc.integer({ min: 0, max: 30_000 }),
  timing: fc.constantFrom('cron-10s', 'rate-10s', 'rate-1m-window-30s'),
  answers: fc.array(answerArb, { minLength: 1, maxLength: 2 }),
  faults: faultsArb,
  followUps: fc.array(followUpArb, { maxLength: 2 }),
});

const invocationFaultsArb: fc.Arbitrary<InvocationFaults> = fc.record({
  actor: fc.constantFrom('callback', 'scanner', 'sweeper', 'ticker'),
  nth: fc.nat(8),
  faults: faultsArb,
});

const HALF_SKEW_MS = SKEW_BOUND_MS / 2;

/** One kind's clock offsets, at the bound half the time: two clocks as far apart as the design allows are where a margin is too thin. */
const kindSkewsArb = fc.array(
  fc.oneof(fc.constantFrom(-HALF_SKEW_MS, HALF_SKEW_MS), fc.integer({ min: -HALF_SKEW_MS, max: HALF_SKEW_MS })),
  { minLength: 1, maxLength: 3 },
);

const anySkewsArb: fc.Arbitrary<Scenario['skewsMs']> = fc.record({
  api: kindSkewsArb,
  ticker: kindSkewsArb,
  scanner: kindSkewsArb,
  sweeper: kindSkewsArb,
  callback: kindSkewsArb,
});

type RacingPair = readonly [ActorKind, ActorKind];

/**
 * Two kinds whose clocks race, the full bound apart: every invocation of one at -bound/2, of the
 * other at +bound/2, either way round. Mostly the api against the callback (a late cancel or
 * reschedule against the first attempt's read-ahead); the scanner's claim against either.
 */
const apartSkewsArb: fc.Arbitrary<Scenario['skewsMs']> = fc
  .record({
    others: anySkewsArb,
    pair: fc.oneof(
      { weight: 2, arbitrary: fc.constant<RacingPair>(['api', 'callback']) },
      { weight: 1, arbitrary: fc.constantFrom<RacingPair>(['api', 'scanner'], ['scanner', 'callback']) },
    ),
    firstBehind: fc.boolean(),
  })
  .map(({ others, pair: [first, second], firstBehind }) => {
    const sign = firstBehind ? -1 : 1;
    return { ...others, [first]: [sign * HALF_SKEW_MS], [second]: [-sign * HALF_SKEW_MS] };
  });

/** Half the runs have two racing kinds the full bound apart: dealt at random, that pairing is rare. */
const skewsArb = fc.oneof(apartSkewsArb, anySkewsArb);

export const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  randomSeed: fc.noShrink(fc.integer()),
  startOffsetMs: fc.integer({ min: 0, max: 59_999 }),
  sweeperOffsetMs: fc.integer({ min: 0, max: 59_999 }),
  actions: fc.array(fc.oneof({ weight: 2, arbitrary: submitArb }, { weight: 1, arbitrary: scheduleArb }), {
    minLength: 1,
    maxLength: 4,
  }),
  invocationFaults: fc.array(invocationFaultsArb, { maxLength: 3 }),
  duplicates: fc.uniqueArray(fc.nat(6), { maxLength: 3 }),
  skewsMs: skewsArb,
  // Mostly one: a run has a few tasks, and a circuit that opens on a single unanswered call is
  // where a refused call meets the attempts it must not spend. The deployment's five, sometimes.
  breakerThreshold: fc.oneof(
    { weight: 3, arbitrary: fc.constant(1) },
    { weight: 1, arbitrary: fc.integer({ min: 2, max: DEFAULT_HOST_BREAKER.failureThreshold }) },
  ),
});

/** What a run broke, with the history that led there, as the failure's message. */
class Counterexample extends Error {
  override readonly name = 'Counterexample';
}

/**
 * What a quiescent run ends with, as the checker reads it: each task as GET shows it, its item with
 * its receipt read in (a task delivered by a receipt keeps a PENDING item).
 */
export function finalState(world: World): FinalState {
  const tasks = new Map<string, Task>();
  for (const id of world.taskStore.tasks.keys()) {
    const shown = world.taskStore.shown(id);
    if (shown) tasks.set(id, shown);
  }
  return {
    tasks,
    schedules: world.scheduleStore.schedules,
    messageOnItsWay: (taskId) => world.messageOnItsWay(taskId),
  };
}

/** Runs one scenario under one interleaving to quiescence and throws if the checker finds a broken promise. */
export async function runScenario(scheduler: fc.Scheduler, scenario: Scenario): Promise<void> {
  const world = new World(scheduler, scenario);
  await world.run();
  const final = finalState(world);
  const violations = check(world.history, final);
  if (violations.length > 0) {
    throw new Counterexample(
      [
        ...violations.map((violation) => `broken: ${violation}`),
        'history:',
        ...world.history.map(describe),
        'final state of the tasks not DELIVERED:',
        ...[...final.tasks.values()]
          .filter((task) => task.status !== 'DELIVERED')
          .map((task) => `  ${JSON.stringify(task)}`),
      ].join('\n'),
    );
  }
}

export interface ExploreOptions {
  readonly runs: number;
  readonly seed?: number;
  /** A counterexample's path, to replay it (with its seed). */
  readonly path?: string;
  /** Stops exploring, and shrinking, after this long: what was found by then is reported. */
  readonly timeLimitMs?: number;
}

export interface ExploreResult {
  /** Runs made, up to and including the first that broke a promise; fewer than asked if the time limit cut them short. */
  readonly runs: number;
  readonly seed: number;
  /** The shrunk counterexample and how to replay it, when a run broke a promise. */
  readonly counterexample?: string;
}

const REPORTED_STEPS = 60;

export async function explore(options: ExploreOptions): Promise<ExploreResult> {
  const details = await fc.check(fc.asyncProperty(fc.scheduler(), scenarioArb, runScenario), {
    numRuns: options.runs,
    ...(options.seed !== undefined && { seed: options.seed }),
    ...(options.path !== undefined && { path: options.path }),
    ...(options.timeLimitMs !== undefined && { interruptAfterTimeLimit: options.timeLimitMs }),
  });
  // Cut short by the time limit before any run finished, fast-check fails with no counterexample: the runs tell.
  if (!details.failed || details.counterexample === null) return { runs: details.numRuns, seed: details.seed };
  const [scheduler, scenario] = details.counterexample;
  const message =
    details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  return {
    runs: details.numRuns,
    seed: details.seed,
    counterexample: [
      `counterexample after ${details.numRuns} runs (${details.numShrinks} shrinks): seed ${details.seed}, path ${details.counterexamplePath}`,
      `replay: npm run explore -- --seed=${details.seed} --path=${details.counterexamplePath}`,
      message,
      `scenario: ${JSON.stringify(scenario)}`,
      `interleaving (the last ${REPORTED_STEPS} steps): ${String(scheduler).split('\n').slice(-REPORTED_STEPS).join('\n')}`,
    ].join('\n'),
  };
}

function describe(event: HistoryEvent): string {
  const { type, atMs, ...rest } = event;
  return `  ${clockTime(atMs)} ${type} ${JSON.stringify(rest)}`;
}
