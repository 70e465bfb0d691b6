/**
 * `--help` for the long-running scripts: parseArgs has already refused any unknown flag, so
 * `npm run bench -- <documented flags> --help` checks a documented command line in a second, where
 * running it would take minutes (test/e2e/docs-commands.test.ts does).
 */
export function exitWithUsageIfAsked(help: boolean | undefined, usage: string): void {
  if (!help) return;
  process.stdout.write(`${usage}\n`);
  process.exit(0);
}
