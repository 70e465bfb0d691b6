/**
 * The local console's script, run by the browser. It polls local mode's console endpoints
 * every second and draws what they say. Task ids, bizIds, payloads, URLs and errors come
 * from callers, so everything is built from DOM nodes and text: no markup is ever parsed
 * from data.
 */
import type {
  ConsoleDelivery,
  ConsoleDlqView,
  ConsoleSchedulesView,
  ConsoleTasksView,
  DueCounts,
  RedriveResult,
} from '../wire.js';

const REFRESH_MS = 1000;
const SVG_NS = 'http://www.w3.org/2000/svg';
const CHART_WIDTH = 640;

type Child = Node | string | number | undefined;

/** Children as nodes and text: strings become text nodes, never markup. */
const nodes = (children: readonly Child[]) =>
  children.flatMap((child) => (child === undefined ? [] : [typeof child === 'number' ? String(child) : child]));

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...nodes(children));
  return node;
}

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number> = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  node.append(...nodes(children));
  return node;
}

function byId<T extends HTMLElement>(id: string, type: new () => T): T {
  const found = document.getElementById(id);
  if (!(found instanceof type)) throw new Error(`the console page has no ${type.name} #${id}`);
  return found;
}

const clockTime = (ms: number) => new Date(ms).toLocaleTimeString([], { hour12: false });

const UNITS: ReadonlyArray<{ readonly below: number; readonly seconds: number; readonly name: string }> = [
  { below: 120, seconds: 1, name: 's' },
  { below: 7200, seconds: 60, name: 'min' },
  { below: 172_800, seconds: 3600, name: 'h' },
  { below: Number.POSITIVE_INFINITY, seconds: 86_400, name: 'd' },
];

/** "in 45 s", "3 min ago". */
function relative(deltaMs: number): string {
  const seconds = Math.round(Math.abs(deltaMs) / 1000);
  const unit = UNITS.find(({ below }) => seconds < below) ?? { seconds: 1, name: 's' };
  const amount = `${Math.round(seconds / unit.seconds)} ${unit.name}`;
  return deltaMs >= 0 ? `in ${amount}` : `${amount} ago`;
}

const duration = (ms: number) =>
  Math.abs(ms) < 10_000 ? `${Math.round(ms).toLocaleString()} ms` : `${(ms / 1000).toFixed(1)} s`;

const plural = (count: number, one: string, many: string) => `${count.toLocaleString()} ${count === 1 ? one : many}`;

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

/** A cell for a caller's string, whole in its title since the layout may cut it short. */
const textCell = (value: string | undefined, className = 'text') =>
  value === undefined
    ? element('td', { class: 'muted' }, '–')
    : element('td', { class: className, title: value }, value);

const numberCell = (value: number | string) => element('td', { class: 'number' }, value);

const idCell = (id: string) => element('td', { class: 'id', title: id }, id);

function fillTable(tableId: string, rows: HTMLTableRowElement[], whenEmpty: string): void {
  const table = byId(tableId, HTMLTableElement);
  const columns = String(table.tHead?.rows[0]?.cells.length ?? 1);
  const empty = element('tr', {}, element('td', { colspan: columns, class: 'empty' }, whenEmpty));
  table.tBodies[0]?.replaceChildren(...(rows.length > 0 ? rows : [empty]));
}

function renderStatusCounts(view: ConsoleTasksView): void {
  const total = sum(view.statusCounts.map(({ count }) => count));
  byId('total', HTMLSpanElement).textContent = `(${plural(total, 'task', 'tasks')})`;
  byId('status-counts', HTMLUListElement).replaceChildren(
    ...view.statusCounts.map(({ status, count }) =>
      element(
        'li',
        { 'data-status': status },
        element('span', { class: 'count' }, count.toLocaleString()),
        element('span', { class: 'label' }, status),
      ),
    ),
  );
  const note = byId('read-note', HTMLParagraphElement);
  note.hidden = view.complete;
  note.textContent = view.complete
    ? ''
    : `The table holds more than the ${view.itemsRead.toLocaleString()} items the console reads: ` +
      'every figure here covers only part of it.';
}

/** A bar per period; each bar's title names its period and count, for pointer and screen reader alike. */
function barChart(due: DueCounts, label: (startMs: number) => string, axis: readonly [string, string, string]) {
  const height = 70;
  const baseline = height - 16;
  const most = Math.max(1, ...due.counts);
  const slot = CHART_WIDTH / due.counts.length;
  const chart = svg('svg', {
    viewBox: `0 0 ${CHART_WIDTH} ${height}`,
    role: 'img',
    'aria-label': `${plural(sum(due.counts), 'task', 'tasks')} due, at most ${most} in one period`,
  });
  chart.append(svg('line', { x1: 0, x2: CHART_WIDTH, y1: baseline + 0.5, y2: baseline + 0.5, class: 'axis' }));
  due.counts.forEach((count, index) => {
    if (count === 0) return;
    const barHeight = Math.max(2, (count / most) * (baseline - 4));
    const title = `${label(due.firstStartMs + index * due.periodMs)}: ${plural(count, 'task', 'tasks')}`;
    const bar = { x: index * slot + 1, y: baseline - barHeight, width: Math.max(1, slot - 2), height: barHeight };
    chart.append(svg('rect', { ...bar, class: 'bar' }, svg('title', {}, title)));
  });
  const [start, middle, end] = axis;
  chart.append(
    svg('text', { x: 0, y: height - 2, class: 'tick' }, start),
    svg('text', { x: CHART_WIDTH / 2, y: height - 2, class: 'tick', 'text-anchor': 'middle' }, middle),
    svg('text', { x: CHART_WIDTH, y: height - 2, class: 'tick', 'text-anchor': 'end' }, end),
  );
  return chart;
}

function renderUpcoming(view: ConsoleTasksView): void {
  const { upcomingSeconds: seconds, upcomingMinutes: minutes } = view;
  const nextMinute = plural(sum(seconds.counts), 'task', 'tasks');
  byId('upcoming-summary', HTMLParagraphElement).textContent =
    `${nextMinute} due in the next minute, ${sum(minutes.counts).toLocaleString()} in the next hour.`;
  byId('upcoming-seconds-chart', HTMLDivElement).replaceChildren(
    barChart(seconds, clockTime, ['now', '+30 s', '+60 s']),
  );
  byId('upcoming-minutes-chart', HTMLDivElement).replaceChildren(
    barChart(minutes, (startMs) => clockTime(startMs).slice(0, 5), ['now', '+30 min', '+60 min']),
  );
  const rows = seconds.counts.flatMap((count, index) => {
    if (count === 0) return [];
    const startMs = seconds.firstStartMs + index * seconds.periodMs;
    return [
      element(
        'tr',
        { 'data-second-start': String(startMs) },
        element('td', {}, clockTime(startMs)),
        element('td', {}, relative(startMs - view.nowMs)),
        numberCell(count),
      ),
    ];
  });
  fillTable('upcoming-seconds', rows, 'Nothing due in the next minute.');
}

function renderLateness(view: ConsoleTasksView): void {
  const { points, windowMs, p50Ms = 0, p99Ms } = view.lateness;
  const worst = Math.max(0, ...points.map((point) => point.latenessMs));
  const summary =
    points.length === 0 || p99Ms === undefined
      ? 'No deliveries in the last two minutes.'
      : [
          `${plural(points.length, 'delivery', 'deliveries')} in 2 min`,
          `p50 ${duration(p50Ms)}`,
          `p99 ${duration(p99Ms)}`,
          `worst ${duration(worst)}`,
        ].join(' · ');
  byId('lateness-summary', HTMLParagraphElement).textContent = summary;

  const height = 200;
  const left = 72;
  const top = 8;
  const bottom = height - 20;
  // The scale tops out at a round number, and at least 100 ms, so an idle chart is not all noise.
  const magnitude = 10 ** Math.floor(Math.log10(Math.max(100, worst)));
  const yMax = Math.ceil(Math.max(100, worst) / magnitude) * magnitude;
  const x = (atMs: number) => left + ((atMs - (view.nowMs - windowMs)) / windowMs) * (CHART_WIDTH - left - 4);
  const y = (latenessMs: number) => bottom - (Math.max(0, latenessMs) / yMax) * (bottom - top);

  const chart = svg('svg', { viewBox: `0 0 ${CHART_WIDTH} ${height}`, role: 'img', 'aria-label': summary });
  for (const share of [0, 0.5, 1]) {
    const value = yMax * share;
    chart.append(
      svg('line', { x1: left, x2: CHART_WIDTH, y1: y(value), y2: y(value), class: share === 0 ? 'axis' : 'grid' }),
      svg('text', { x: left - 6, y: y(value) + 4, class: 'tick', 'text-anchor': 'end' }, duration(value)),
    );
  }
  chart.append(
    svg('text', { x: left, y: height - 4, class: 'tick' }, '2 min ago'),
    svg('text', { x: CHART_WIDTH, y: height - 4, class: 'tick', 'text-anchor': 'end' }, 'now'),
  );
  if (p99Ms !== undefined) {
    chart.append(
      svg('line', { x1: left, x2: CHART_WIDTH, y1: y(p99Ms), y2: y(p99Ms), class: 'p99' }),
      svg('text', { x: left + 4, y: y(p99Ms) - 4, class: 'tick p99-label' }, `p99 ${duration(p99Ms)}`),
    );
  }
  for (const point of points) {
    const title = `${clockTime(point.deliveredAtMs)}: ${duration(point.latenessMs)} late`;
    const position = { cx: x(point.deliveredAtMs), cy: y(point.latenessMs), r: 3.5 };
    chart.append(svg('circle', { ...position, class: 'point' }, svg('title', {}, title)));
  }
  byId('lateness-chart', HTMLDivElement).replaceChildren(chart);
}

function renderDeliveries(deliveries: readonly ConsoleDelivery[]): void {
  const rows = deliveries.map((task) =>
    element(
      'tr',
      { 'data-task-id': task.id },
      element('td', {}, clockTime(task.deliveredAtMs)),
      numberCell(duration(task.latenessMs)),
      textCell(task.tenantId),
      idCell(task.id),
      textCell(task.bizId),
    ),
  );
  fillTable('deliveries', rows, 'No deliveries yet.');
}

function renderTasks(view: ConsoleTasksView): void {
  const rows = view.tasks.map((task) =>
    element(
      'tr',
      { 'data-task-id': task.id },
      element(
        'td',
        { title: new Date(task.dueAtMs).toISOString() },
        `${clockTime(task.dueAtMs)} `,
        element('span', { class: 'muted' }, relative(task.dueAtMs - view.nowMs)),
      ),
      element('td', {}, element('span', { class: 'status', 'data-status': task.status }, task.status)),
      textCell(task.tenantId),
      idCell(task.id),
      textCell(task.bizType),
      textCell(task.bizId),
      textCell(task.target),
      numberCell(task.attempts),
      textCell(task.payloadPreview, 'text code'),
      textCell(task.lastError),
    ),
  );
  fillTable('tasks', rows, 'No tasks yet. Schedule one with POST /v1/tasks.');
}

function renderSchedules(view: ConsoleSchedulesView): void {
  const rows = view.schedules.map((schedule) =>
    element(
      'tr',
      { 'data-schedule-id': schedule.id },
      idCell(schedule.id),
      textCell(schedule.tenantId),
      textCell(schedule.when, 'text code'),
      textCell(schedule.timezone),
      textCell(schedule.bizId),
      textCell(schedule.target),
      element(
        'td',
        { class: 'next-occurrences' },
        ...(schedule.paused
          ? ['paused']
          : schedule.nextOccurrencesMs.length === 0
            ? ['ended']
            : schedule.nextOccurrencesMs.map((atMs) =>
                element(
                  'span',
                  { class: 'occurrence', title: new Date(atMs).toISOString() },
                  `${clockTime(atMs)} `,
                  element('span', { class: 'muted' }, relative(atMs - view.nowMs)),
                ),
              )),
      ),
    ),
  );
  fillTable('schedules', rows, 'No schedules. Create one with POST /v1/schedules.');
}

function renderDlq(view: ConsoleDlqView, redriving: boolean): void {
  byId('dlq-count', HTMLSpanElement).textContent = view.messages.toLocaleString();
  byId('dlq-unit', HTMLSpanElement).textContent = view.messages === 1 ? 'dead letter' : 'dead letters';
  // aria-disabled rather than disabled: a disabled button drops the focus of whoever just pressed it.
  byId('redrive', HTMLButtonElement).setAttribute('aria-disabled', String(redriving || view.messages === 0));
  const rows = view.letters.map((letter) =>
    element(
      'tr',
      { 'data-task-id': letter.taskId },
      idCell(letter.taskId),
      textCell(letter.tenantId),
      textCell(letter.bizId),
      numberCell(letter.attempt ?? '–'),
      textCell(letter.error),
    ),
  );
  fillTable('dead-letters', rows, 'The DLQ is empty.');
}

async function getJson<T>(path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(path, { cache: 'no-store', ...init });
  if (!response.ok) throw new Error(`${path} answered ${response.status}`);
  return (await response.json()) as T;
}

const describeError = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A path local mode wrote into the page, so the script never names one of its own. */
function pagePath(name: 'tasksPath' | 'schedulesPath' | 'dlqPath' | 'redrivePath'): string {
  const path = document.body.dataset[name];
  if (!path) throw new Error(`the console page does not say its ${name}`);
  return path;
}

function start(): void {
  const tasksPath = pagePath('tasksPath');
  const schedulesPath = pagePath('schedulesPath');
  const dlqPath = pagePath('dlqPath');
  const redrivePath = pagePath('redrivePath');
  const connection = byId('connection', HTMLSpanElement);
  const redriveButton = byId('redrive', HTMLButtonElement);
  const redriveResult = byId('redrive-result', HTMLParagraphElement);
  let redriving = false;

  // The connection is a live region: only a change of state is written to it, so it is announced once.
  const showConnection = (state: 'live' | 'down', text: string) => {
    if (connection.textContent !== text) connection.textContent = text;
    connection.dataset.state = state;
  };

  const refresh = async () => {
    try {
      const [tasks, schedules, dlq] = await Promise.all([
        getJson<ConsoleTasksView>(tasksPath),
        getJson<ConsoleSchedulesView>(schedulesPath),
        getJson<ConsoleDlqView>(dlqPath),
      ]);
      renderStatusCounts(tasks);
      renderUpcoming(tasks);
      renderLateness(tasks);
      renderDeliveries(tasks.deliveries);
      renderTasks(tasks);
      renderSchedules(schedules);
      renderDlq(dlq, redriving);
      showConnection('live', 'Live');
      byId('updated', HTMLSpanElement).textContent = `updated ${clockTime(tasks.nowMs)}`;
    } catch (error) {
      showConnection('down', `Cannot reach local mode (${describeError(error)}); retrying`);
    }
  };

  const poll = async () => {
    // A hidden tab reads nothing: each read scans the table in the process that runs the timer.
    if (!document.hidden) await refresh();
    setTimeout(poll, REFRESH_MS);
  };

  const redrive = async () => {
    if (redriveButton.getAttribute('aria-disabled') === 'true') return;
    redriving = true;
    redriveButton.setAttribute('aria-disabled', 'true');
    redriveResult.textContent = 'Moving the dead letters back…';
    try {
      const result = await getJson<RedriveResult>(redrivePath, { method: 'POST' });
      redriveResult.textContent = `Moved ${plural(result.moved, 'dead letter', 'dead letters')} back to the delivery queue.`;
    } catch (error) {
      redriveResult.textContent = `The redrive failed: ${describeError(error)}`;
    } finally {
      redriving = false;
      await refresh();
    }
  };

  // Fire and forget: redrive reports its own failure on the page and refresh never rejects.
  redriveButton.addEventListener('click', () => void redrive());

  void poll();
}

start();
