/**
 * `npm run scale`: the billion-timers-a-day shape through a 1/k scale model of AWS's limits
 * (lib/local/limits/) on the real emulators. Every rate limit is divided by k and so is the
 * load; time is not scaled. Five scenarios, each on a fresh local timer:
 *   (a) single submits at the average rate, with a mix of due times;
 *   (b) the same in batches of 100;
 *   (c) 20,000/k tasks due in one second;
 *   (d) the batches of (b) over four tenants, one of whose webhooks hangs until the timeout;
 *   (e) a steady state: batches at the average rate with every task due within the run, so
 *       deliveries match submits, over 100 tenants, with bizIds, SQS and EventBridge targets,
 *       schedules, a webhook host cap, and the hot second of (c) on top.
 * Flags: --k <n> (default 100), --quick (a CI-sized run), --within-run <share>, --tenants <n>
 * ((e)'s tenants, default 100), --only <a,b,…>
 * (run just those scenarios, to look into one), --hot-second (scenario (c) alone, at k = 10 unless
 * --k says otherwise: a scanner reservation of 5, so its CLOCK contention is exercised, and a
 * hot second large enough that its bucket keys' counts mean something), --publish (refused with
 * --only or --hot-second).
 *
 * The DynamoDB model runs in partition mode: keys hash into as many partitions as a table of a
 * billion tasks a day kept `retentionDays` has, so hot keys that share a partition throttle
 * together. The verdict fails (exit code 1) on any throttle, loss or early delivery, a p99
 * lateness of a second or more, or a hottest key or partition at 90% of its limit or more:
 * 100% with no throttle is luck, not headroom.
 */
import './scale-flags.js';

// Loaded after the flags, so that `--help` or a refused flag answers without loading local mode,
// the SDK and the emulators (the docs test runs every documented `npm run scale` line with --help).
await import('./scale-run.js');
