/**
 * How a `timer` command is declared, parsed and explained. A command lists its arguments
 * and options once; parsing, the typed values its run function receives, the checks that
 * name a mistake and its fix, and the `--help` text all come from that one list.
 */
import { parseArgs } from 'node:util';

import type { CliIo } from './io.js';

export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  /** What the value stands for in help, such as N or URL. */
  readonly placeholder?: string;
  readonly description: string;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

export interface ArgumentSpec {
  readonly name: string;
  readonly description: string;
}

type OptionValues<O extends OptionSpecs> = {
  readonly [K in keyof O]?: O[K] extends { type: 'string' }
    ? string
    : O[K] extends { type: 'boolean' }
      ? true
      : string | true;
};

type ArgumentValues<A extends readonly ArgumentSpec[]> = { readonly [K in A[number]['name']]: string };

/** One run of a command: its parsed arguments and options, and where it writes. */
export interface Call<
  O extends OptionSpecs = OptionSpecs,
  A extends readonly ArgumentSpec[] = readonly ArgumentSpec[],
> {
  readonly name: string;
  readonly args: ArgumentValues<A>;
  readonly options: OptionValues<O>;
  readonly io: CliIo;
  /** Writes `json` (with --json) or `text` to stdout. */
  output(json: unknown, text: string): void;
}

export interface Command<
  O extends OptionSpecs = OptionSpecs,
  A extends readonly ArgumentSpec[] = readonly ArgumentSpec[],
> {
  /** The words after `timer`, such as "tenants create". */
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** What follows the name in the usage line, such as "<id> [--name N]". */
  readonly usage: string;
  /** More about the command, shown by --help. */
  readonly details?: string;
  readonly arguments: A;
  readonly options: O;
  /** Failures throw: a UsageError exits 2, anything else 1. */
  run(call: Call<O, A>): Promise<void>;
}

/** Declares a command; the const type parameters keep each option's type for the values its run function reads. */
export function command<const O extends OptionSpecs, const A extends readonly ArgumentSpec[]>(
  definition: Command<O, A>,
): Command {
  return definition;
}

/** The caller got the command line wrong: exit 2, pointing at the command's help. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The command ran and could not do what was asked: exit 1. */
export class CommandFailed extends Error {
  override readonly name = 'CommandFailed';
}

/** Options every command takes. */
export const COMMON_OPTIONS = {
  json: { type: 'boolean', description: 'Print machine-readable JSON instead of text' },
  'data-dir': {
    type: 'string',
    placeholder: 'DIR',
    description: "Local mode's data folder (default: TIMER_DATA_DIR, else .timer-data)",
  },
  help: { type: 'boolean', description: 'Show this help' },
} as const satisfies OptionSpecs;

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The candidate a typo most likely meant, if any is close enough to suggest. */
export function closest(given: string, candidates: readonly string[]): string | undefined {
  // A prefix (--rate for --rate-limit) says more about what was meant than a few letters in common.
  const prefixed = candidates.find((candidate) => candidate.startsWith(given));
  if (prefixed) return prefixed;
  const ranked = candidates
    .map((candidate) => ({ candidate, distance: editDistance(given, candidate) }))
    .filter(({ candidate, distance }) => distance <= Math.max(2, Math.floor(candidate.length / 3)))
    .sort((a, b) => a.distance - b.distance);
  return ranked[0]?.candidate;
}

export interface ParsedCall {
  readonly args: Record<string, string>;
  readonly options: Record<string, string | true>;
}

/** Checks argv against the command's declaration; every mistake is a UsageError that names the fix. */
export function parseCall(definition: Command, argv: readonly string[]): ParsedCall {
  const { tokens } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(
      Object.entries(definition.options).map(([name, spec]) => [
        name,
        { type: spec.type, ...(name === 'help' && { short: 'h' }) },
      ]),
    ),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const known = Object.keys(definition.options);
  const options: Record<string, string | true> = {};
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') positionals.push(token.value);
    if (token.kind !== 'option') continue;
    const spec = Object.hasOwn(definition.options, token.name) ? definition.options[token.name] : undefined;
    if (!spec) {
      const suggestion = closest(token.name, known);
      throw new UsageError(`unknown option ${token.rawName}${suggestion ? `; did you mean --${suggestion}?` : ''}`);
    }
    if (spec.type === 'boolean') {
      if (token.value !== undefined) throw new UsageError(`--${token.name} takes no value (got "${token.value}")`);
      options[token.name] = true;
    } else {
      // `--name --json` almost certainly forgot the name rather than naming someone "--json".
      const swallowedOption =
        token.value !== undefined &&
        !token.inlineValue &&
        token.value.startsWith('--') &&
        Object.hasOwn(definition.options, token.value.slice(2));
      if (token.value === undefined || swallowedOption) {
        throw new UsageError(`--${token.name} needs a value: --${token.name} ${spec.placeholder ?? 'VALUE'}`);
      }
      options[token.name] = token.value;
    }
  }
  if (options.help) return { args: {}, options };
  const missing = definition.arguments[positionals.length];
  if (missing) throw new UsageError(`<${missing.name}> is missing: ${missing.description}`);
  if (positionals.length > definition.arguments.length) {
    throw new UsageError(`unexpected argument "${positionals[definition.arguments.length]}"`);
  }
  return {
    args: Object.fromEntries(definition.arguments.map((argument, index) => [argument.name, positionals[index] ?? ''])),
    options,
  };
}

function aligned(rows: ReadonlyArray<readonly [string, string]>): string[] {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`);
}

/** The --help text: usage, what it does, its arguments and options. */
export function helpText(definition: Command): string {
  const lines = [`Usage: timer ${definition.name} ${definition.usage}`.trimEnd(), '', definition.summary];
  if (definition.details) lines.push('', definition.details);
  if (definition.arguments.length > 0) {
    lines.push(
      '',
      'Arguments:',
      ...aligned(definition.arguments.map((argument) => [`<${argument.name}>`, argument.description])),
    );
  }
  const options = Object.entries(definition.options).map(
    ([name, spec]) => [`--${name}${spec.placeholder ? ` ${spec.placeholder}` : ''}`, spec.description] as const,
  );
  lines.push('', 'Options:', ...aligned(options));
  return `${lines.join('\n')}\n`;
}

/** The command list, for `timer --help` and for a group such as `timer tenants`. */
export function commandList(commands: readonly Command[]): string {
  return aligned(commands.map((definition) => [definition.name, definition.summary])).join('\n');
}
