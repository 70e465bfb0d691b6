/** Where the CLI reads its environment and writes its output, so tests can run it in-process. */
export interface CliIo {
  /** isTTY: a person is watching, so logs may be indented for reading. */
  readonly stdout: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(text: string): unknown };
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
}

export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };
}

/** Rows under a header, each column as wide as its widest cell. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** `Label:  value` lines with the values aligned; entries without a value are left out. */
export function fields(entries: ReadonlyArray<readonly [string, string | undefined]>, indent = '  '): string {
  const present = entries.filter((entry): entry is readonly [string, string] => entry[1] !== undefined);
  const width = Math.max(...present.map(([label]) => label.length + 1));
  // A value of several lines keeps its later lines under its first.
  const continuation = `\n${' '.repeat(indent.length + width + 2)}`;
  return present
    .map(([label, value]) => `${indent}${`${label}:`.padEnd(width)}  ${value.split('\n').join(continuation)}`)
    .join('\n');
}

export const isoTime = (ms: number) => new Date(ms).toISOString();
