/**
 * Turning the bench's results into text: the progress bar and cost rows. The usage the cost
 * model prices, and the table format, are the planner's (lib/construct/plan/), read from there.
 */
import { type CostBreakdown, total } from '../lib/construct/plan/cost-model.js';
import { fmt } from '../lib/construct/plan/table-format.js';

/** One line of progress, redrawn in place: a bar, a percentage and what the numbers are. */
export function progressLine(label: string, done: number, totalCount: number, detail: string, width = 24): string {
  const share = totalCount > 0 ? Math.min(1, done / totalCount) : 0;
  const filled = Math.round(share * width);
  return `${label.padEnd(22)} [${'█'.repeat(filled)}${'░'.repeat(width - filled)}] ${String(Math.round(share * 100)).padStart(3)}% ${detail}`;
}

/** Redraws a progress line in place on a terminal; elsewhere (a log file, CI) prints one every 10 s. */
export function progress(label: string, status: () => { done: number; total: number; detail: string }) {
  const live = process.stderr.isTTY;
  const draw = (last = false) => {
    const { done, total: all, detail } = status();
    const line = progressLine(label, done, all, detail);
    process.stderr.write(live ? `\r${line}\u001b[K${last ? '\n' : ''}` : `${line}\n`);
  };
  const timer = setInterval(draw, live ? 500 : 10_000);
  return () => {
    clearInterval(timer);
    draw(true);
  };
}

/** A cost breakdown as table rows, in dollars with `digits` decimals, plus a total row. */
export function costRows(breakdown: CostBreakdown, digits: number): Array<[string, string]> {
  return [
    ...Object.entries(breakdown).map(([component, dollars]): [string, string] => [
      component,
      `$${fmt(dollars, digits)}`,
    ]),
    ['total', `$${fmt(total(breakdown), digits)}`],
  ];
}
