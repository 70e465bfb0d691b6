/**
 * The bench's chart as plain SVG: a lateness histogram and deliveries per second over time,
 * one colour per system. Hand-written so the bench needs no charting dependency.
 */
import type { Bin } from './stats.js';

export interface ChartInput {
  readonly title: string;
  readonly histograms: ReadonlyArray<{ readonly label: string; readonly color: string; readonly bins: readonly Bin[] }>;
  readonly series: ReadonlyArray<{
    readonly label: string;
    readonly color: string;
    readonly values: readonly number[];
  }>;
}

const WIDTH = 900;
const PANEL_HEIGHT = 260;
const MARGIN = { left: 70, right: 20, top: 40, bottom: 50 };

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A tidy axis maximum: 1, 2 or 5 times a power of ten, at or above `value`. */
export function niceCeiling(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 5, 10].find((factor) => factor * power >= value) ?? 10;
  return step * power;
}

const binLabel = (bin: Bin) => (Number.isFinite(bin.to) ? `<${bin.to}` : `≥${bin.from}`);

function text(x: number, y: number, content: string, attributes = ''): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attributes}>${escapeXml(content)}</text>`;
}

function legend(entries: ReadonlyArray<{ label: string; color: string }>, x: number, y: number): string {
  return entries
    .map(
      (entry, index) =>
        `<rect x="${x + index * 220}" y="${y - 9}" width="10" height="10" fill="${entry.color}"/>` +
        text(x + index * 220 + 14, y, entry.label, 'font-size="12"'),
    )
    .join('');
}

function yAxis(top: number, height: number, max: number, label: string): string {
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((share) => {
    const y = top + height - share * height;
    return (
      `<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y}" y2="${y}" stroke="#ddd"/>` +
      text(MARGIN.left - 6, y + 4, String(Math.round(max * share)), 'font-size="11" text-anchor="end"')
    );
  });
  return (
    ticks.join('') +
    text(
      16,
      top + height / 2,
      label,
      `font-size="12" transform="rotate(-90 16 ${top + height / 2})" text-anchor="middle"`,
    )
  );
}

/** A panel's frame around its marks: title, legend, y axis with grid lines, x axis label. */
function panel(frame: {
  top: number;
  title: string;
  legend: ReadonlyArray<{ label: string; color: string }>;
  legendX: number;
  yMax: number;
  yLabel: string;
  xLabel: string;
  marks: readonly string[];
}): string {
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = PANEL_HEIGHT - MARGIN.top - MARGIN.bottom;
  const plotTop = frame.top + MARGIN.top;
  return [
    text(MARGIN.left, frame.top + 22, frame.title, 'font-size="14" font-weight="bold"'),
    legend(frame.legend, MARGIN.left + frame.legendX, frame.top + 22),
    yAxis(plotTop, plotHeight, frame.yMax, frame.yLabel),
    ...frame.marks,
    text(MARGIN.left + plotWidth / 2, plotTop + plotHeight + 36, frame.xLabel, 'font-size="12" text-anchor="middle"'),
  ].join('');
}

function histogramPanel(input: ChartInput, top: number): string {
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = PANEL_HEIGHT - MARGIN.top - MARGIN.bottom;
  const plotTop = top + MARGIN.top;
  const binCount = Math.max(0, ...input.histograms.map((histogram) => histogram.bins.length));
  // Shares, not counts, so systems that delivered different numbers of tasks compare.
  const shares = input.histograms.map((histogram) => {
    const all = histogram.bins.reduce((sum, bin) => sum + bin.count, 0) || 1;
    return histogram.bins.map((bin) => (100 * bin.count) / all);
  });
  const max = niceCeiling(Math.max(0, ...shares.flat()));
  const groupWidth = plotWidth / Math.max(1, binCount);
  const barWidth = (groupWidth * 0.8) / Math.max(1, input.histograms.length);
  const bars = input.histograms.flatMap((histogram, system) =>
    histogram.bins.map((_, bin) => {
      const height = ((shares[system]?.[bin] ?? 0) / max) * plotHeight;
      const x = MARGIN.left + bin * groupWidth + groupWidth * 0.1 + system * barWidth;
      return `<rect class="bar" x="${x.toFixed(1)}" y="${(plotTop + plotHeight - height).toFixed(1)}" width="${barWidth.toFixed(1)}" height="${height.toFixed(1)}" fill="${histogram.color}"/>`;
    }),
  );
  const labels = (input.histograms[0]?.bins ?? []).map((bin, index) =>
    text(
      MARGIN.left + (index + 0.5) * groupWidth,
      plotTop + plotHeight + 16,
      binLabel(bin),
      'font-size="11" text-anchor="middle"',
    ),
  );
  return panel({
    top,
    title: 'Lateness (ms after dueAt), share of deliveries',
    legend: input.histograms,
    legendX: 360,
    yMax: max,
    yLabel: '% of deliveries',
    xLabel: 'lateness, ms',
    marks: [...bars, ...labels],
  });
}

function seriesPanel(input: ChartInput, top: number): string {
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right;
  const plotHeight = PANEL_HEIGHT - MARGIN.top - MARGIN.bottom;
  const plotTop = top + MARGIN.top;
  const length = Math.max(1, ...input.series.map((series) => series.values.length));
  const max = niceCeiling(Math.max(0, ...input.series.flatMap((series) => series.values)));
  const x = (second: number) => MARGIN.left + (second / Math.max(1, length - 1)) * plotWidth;
  const y = (value: number) => plotTop + plotHeight - (value / max) * plotHeight;
  const lines = input.series.map(
    (series) =>
      `<polyline fill="none" stroke="${series.color}" stroke-width="1.5" points="${series.values
        .map((value, second) => `${x(second).toFixed(1)},${y(value).toFixed(1)}`)
        .join(' ')}"/>`,
  );
  const xTicks = [0, 0.25, 0.5, 0.75, 1].map((share) =>
    text(
      x(share * (length - 1)),
      plotTop + plotHeight + 16,
      String(Math.round(share * (length - 1))),
      'font-size="11" text-anchor="middle"',
    ),
  );
  return panel({
    top,
    title: 'Deliveries per second',
    legend: input.series,
    legendX: 200,
    yMax: max,
    yLabel: 'deliveries / s',
    xLabel: 'seconds since the first task was due',
    marks: [...lines, ...xTicks],
  });
}

/** The whole chart: a title, then the two panels one above the other. */
export function renderChart(input: ChartInput): string {
  const height = 30 + 2 * PANEL_HEIGHT;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif">`,
    `<rect width="${WIDTH}" height="${height}" fill="white"/>`,
    text(WIDTH / 2, 20, input.title, 'font-size="15" text-anchor="middle" font-weight="bold"'),
    histogramPanel(input, 30),
    seriesPanel(input, 30 + PANEL_HEIGHT),
    '</svg>',
    '',
  ].join('\n');
}
