/**
 * Starts a timer: `fire` runs after `ms` unless the returned function is called first. Code that
 * waits on the outside world takes one as a parameter, so whoever drives the clock (the
 * interleaving explorer, on its virtual time) drives its timers too.
 */
export type StartTimer = (ms: number, fire: () => void) => () => void;

/** How late a timer may fire before the process is taken to have stalled rather than merely been busy. */
const STALL_TOLERANCE_MS = 100;

/**
 * The process's timers, counting only time the process could watch: a timer that fires more than
 * STALL_TOLERANCE_MS late (the event loop was blocked by a long GC, a CPU-starved host, a
 * neighbour's synchronous work) waits again for as long as it was late, at most once. Node runs
 * due timers before it reads the sockets, so without this a reply that arrived during the stall
 * would be called missing before it is read: every call in flight through a 3 s stall "timed
 * out" at once, and five of those rest a healthy host for 30 s. A stall extends a wait by its own
 * length, never more than `ms` in all, so a hung peer is still given up on. Timers are looked up
 * at each start, so a test's fake timers apply.
 */
export const systemTimer: StartTimer = (ms, fire) => {
  const startedAtMs = Date.now();
  let extended = false;
  let timer: NodeJS.Timeout;
  const check = () => {
    const lateMs = Date.now() - startedAtMs - ms;
    if (!extended && lateMs > STALL_TOLERANCE_MS) {
      extended = true;
      timer = setTimeout(fire, Math.min(lateMs, ms));
      return;
    }
    fire();
  };
  timer = setTimeout(check, ms);
  return () => clearTimeout(timer);
};
