/** Tables and numbers as the planner prints them and the bench's report reuses. */
/** A GitHub-flavoured markdown table; numbers are right-aligned. */
export function markdownTable(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const cells = rows.map((row) => row.map((cell) => String(cell)));
  const align = header.map((_, column) => (rows.every((row) => typeof row[column] === 'number') ? '---:' : '---'));
  return [
    `| ${header.join(' | ')} |`,
    `| ${align.join(' | ')} |`,
    ...cells.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

/** A number for a table: thousands separated, `digits` decimals, or a dash for nothing. */
export function fmt(value: number | undefined, digits = 0): string {
  if (value === undefined || Number.isNaN(value)) return '–';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
