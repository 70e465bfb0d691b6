/** The `timer` command line: finds the command argv names, runs it, and says what went wrong and how to fix it. */
import { createRequire } from 'node:module';

import { closest, type Command, commandList, helpText, parseCall, UsageError } from './command.js';
import { DEV_COMMANDS } from './dev.js';
import { DLQ_COMMANDS } from './dlq.js';
import type { CliIo } from './io.js';
import { SCHEDULE_COMMANDS } from './schedules.js';
import { TASK_COMMANDS } from './tasks.js';
import { TENANT_COMMANDS } from './tenants.js';

/** Every command, in the order `timer --help` lists them. */
export const COMMANDS: readonly Command[] = [
  ...TENANT_COMMANDS,
  ...TASK_COMMANDS,
  ...SCHEDULE_COMMANDS,
  ...DLQ_COMMANDS,
  ...DEV_COMMANDS,
];

const GROUP_SUMMARIES: Readonly<Record<string, string>> = {
  tenants: 'Tenants, their API keys and their webhook signing secrets, in the task table.',
  schedules: 'Recurring schedules (cron or rate); each occurrence is a task.',
  dlq: 'The delivery dead-letter queue: tasks whose attempts ran out.',
};

const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

const TOP_LEVEL_HELP = `Usage: timer <command> [arguments] [options]

The distributed timer's command line: tenants and their keys, tasks, schedules, the DLQ, and local mode.

Commands:
${commandList(COMMANDS)}

Tenant commands work on the task table: --table NAME (or TIMER_TABLE_NAME) with your AWS
credentials, else local mode's data folder. Task and schedule commands call the HTTP API: --api-url and
--api-key (or TIMER_URL and TIMER_API_KEY), else the running local mode with its development key.
Run \`timer help <command>\` (or \`timer <command> --help\`) for a command's options; --json prints
machine-readable output; \`timer --version\` prints the version.
`;

const isHelp = (word: string | undefined) => word === '--help' || word === '-h';

/**
 * The installed package's version. The package names itself (its `exports` list package.json), so
 * Node finds the right file from the sources in the repository and from dist/ in an install alike.
 */
function packageVersion(): string {
  const manifest = createRequire(import.meta.url)('distributed-timer/package.json') as { version: string };
  return manifest.version;
}

function groupHelp(group: string, members: readonly Command[]): string {
  return [
    `Usage: timer ${group} <command> [arguments] [options]`,
    '',
    GROUP_SUMMARIES[group] ?? '',
    '',
    'Commands:',
    commandList(members),
    '',
    `Run \`timer ${group} <command> --help\` for a command's options.`,
    '',
  ].join('\n');
}

/** What argv does not match: a group named without its command, or a word that names nothing. */
function unmatched(argv: readonly string[], io: CliIo): number {
  const [first = '', second] = argv;
  const members = COMMANDS.filter((definition) => definition.name.startsWith(`${first} `));
  if (members.length > 0) {
    if (isHelp(second)) {
      io.stdout.write(groupHelp(first, members));
      return EXIT.ok;
    }
    const names = members.map((definition) => definition.name.slice(first.length + 1));
    const suggestion = second === undefined ? undefined : closest(second, names);
    const problem =
      second === undefined
        ? `"timer ${first}" needs a command`
        : `unknown command "timer ${first} ${second}"${suggestion ? `; did you mean "timer ${first} ${suggestion}"?` : ''}`;
    io.stderr.write(`timer: ${problem}\n\n${groupHelp(first, members)}`);
    return EXIT.usage;
  }
  if (first.startsWith('-')) {
    io.stderr.write(`timer: name a command before ${first}; \`timer --help\` lists the commands\n`);
    return EXIT.usage;
  }
  const words = [...new Set(COMMANDS.map((definition) => definition.name.split(' ')[0] ?? ''))];
  const suggestion = closest(first, words);
  io.stderr.write(
    `timer: unknown command "${first}"${suggestion ? `; did you mean "timer ${suggestion}"?` : ''} Run \`timer --help\` for the commands.\n`,
  );
  return EXIT.usage;
}

/** Runs `timer <argv>` and resolves to its exit code: 0 done, 1 failed, 2 called wrongly. */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv[0] === '--version') {
    io.stdout.write(`${packageVersion()}\n`);
    return EXIT.ok;
  }
  // `timer help [command]` is `timer [command] --help`, as in git and npm.
  if (argv[0] === 'help') return run(argv.length === 1 ? ['--help'] : [...argv.slice(1), '--help'], io);
  if (argv.length === 0 || isHelp(argv[0])) {
    (argv.length === 0 ? io.stderr : io.stdout).write(TOP_LEVEL_HELP);
    return argv.length === 0 ? EXIT.usage : EXIT.ok;
  }
  const definition = COMMANDS.find((candidate) =>
    candidate.name.split(' ').every((word, index) => argv[index] === word),
  );
  if (!definition) return unmatched(argv, io);
  try {
    const { args, options } = parseCall(definition, argv.slice(definition.name.split(' ').length));
    if (options.help) {
      io.stdout.write(helpText(definition));
      return EXIT.ok;
    }
    await definition.run({
      name: definition.name,
      args,
      options,
      io,
      output: (json, text) => io.stdout.write(options.json ? `${JSON.stringify(json, null, 2)}\n` : `${text}\n`),
    });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      const { name, usage } = definition;
      io.stderr.write(
        `timer ${name}: ${error.message}\n\nUsage: timer ${name} ${usage}\nRun \`timer ${name} --help\` for details.\n`,
      );
      return EXIT.usage;
    }
    io.stderr.write(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.failed;
  }
}
