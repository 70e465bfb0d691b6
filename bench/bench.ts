/**
 * `npm run bench`: the timer's local mode and BullMQ on a local Redis, side by side, on this
 * machine. Tasks go in through the timer's HTTP API (batch endpoint) and BullMQ's addBulk, and
 * come back to one webhook receiver, which judges lateness by its own clock.
 *
 * Scenarios: steady (a fixed rate for a minute), burst (thousands due in one second), long
 * horizon (due 1 minute to 30 days out, submitted as fast as possible) and idle (nothing due;
 * the requests an idle deployment makes). Each timer scenario gets a fresh local mode in a
 * process of its own; each BullMQ one a flushed Redis and a fresh worker process.
 *
 * Writes reports/bench-<time>.{json,md,svg} (and reports/latest.*); `--publish` also updates
 * docs/benchmarks.{json,svg} and the tables in docs/benchmarks.md. `--quick` runs a short version.
 */
import './bench-flags.js';

// Loaded after the flags, so that `--help` or a refused flag answers without loading local mode,
// the SDK and the emulators (the docs test runs every documented `npm run bench` line with --help).
await import('./bench-run.js');
