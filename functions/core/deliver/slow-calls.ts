import type { Target } from '../kernel/task.js';
import { type StartTimer, systemTimer } from '../kernel/timers.js';
import type { Notification, Sender, TargetDispatcher, TargetResult } from './deliver.js';

/**
 * Watches the target calls an invocation makes and tells when one of them has gone unanswered
 * for `slowMs`: a receiver that hangs holds its call, and the invocation with it, for the whole
 * webhook timeout (a call is never given up early, invariant 12), and whoever holds the
 * invocation (the callback's records, see `deliverRecords`) can put that time to use.
 */
export class SlowCallWatch implements TargetDispatcher {
  private slowCalls = 0;
  private waiting: Array<() => void> = [];

  /**
   * @param counts whether a call to this target unanswered for `slowMs` is slow: a host that has
   *   been answering is up, and its slow call is more likely a busy machine, where taking more
   *   work would only make every call slower.
   */
  constructor(
    private readonly dispatcher: TargetDispatcher,
    readonly slowMs: number,
    private readonly counts: (target: Target, sender: Sender) => boolean = () => true,
    private readonly startTimer: StartTimer = systemTimer,
  ) {}

  async dispatch(target: Target, notification: Notification, sender: Sender): Promise<TargetResult> {
    let slow = false;
    const stop = this.startTimer(this.slowMs, () => {
      if (!this.counts(target, sender)) return;
      slow = true;
      this.slowCalls += 1;
      for (const wake of this.waiting.splice(0)) wake();
    });
    try {
      return await this.dispatcher.dispatch(target, notification, sender);
    } finally {
      stop();
      if (slow) this.slowCalls -= 1;
    }
  }

  /**
   * Whether a call in flight goes unanswered for `slowMs` (true, at once if one already has)
   * before `settled` settles (false). The watch outlives invocations, so a wait that `settled`
   * ends leaves nothing behind.
   */
  async slowCallBefore(settled: Promise<unknown>): Promise<boolean> {
    if (this.slowCalls > 0) return true;
    let wake = () => {};
    const slowCall = new Promise<true>((resolve) => {
      wake = () => resolve(true);
      this.waiting.push(wake);
    });
    const ended = settled.then(
      () => false as const,
      () => false as const,
    );
    try {
      return await Promise.race([slowCall, ended]);
    } finally {
      this.waiting = this.waiting.filter((waiter) => waiter !== wake);
    }
  }
}
