/**
 * `npm run checks`: the type check and eslint in one process, over one TypeScript program per
 * tsconfig, then prettier and knip. A type check and `eslint .` run apart each build the program
 * (parsing aws-cdk-lib's 3,000 declaration files), and eslint's type-aware rules then ask for
 * types the type check has already worked out: apart they took 101 CPU-s on 2 cores, together
 * 48, and `npm test` runs this beside the suite. The findings are the same: the same tsconfigs,
 * and eslint.config.js with the programs in place of its project service.
 *
 * `npm run typecheck` is this with `--types-only`: the type check alone, over the same tsconfigs.
 */
import { spawnSync } from 'node:child_process';

import { ESLint } from 'eslint';
import ts from 'typescript';

/** The root project, then the console page's (the root leaves the page's folder to it). */
const TSCONFIGS = ['tsconfig.json', 'lib/local/console/page/tsconfig.json'];

function programFor(tsconfig) {
  const config = ts.getParsedCommandLineOfConfigFile(
    tsconfig,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  return ts.createProgram({ rootNames: config.fileNames, options: config.options });
}

function typeCheck(programs) {
  const diagnostics = programs.flatMap((program) => ts.getPreEmitDiagnostics(program));
  const host = {
    getCanonicalFileName: (name) => name,
    getCurrentDirectory: ts.sys.getCurrentDirectory,
    getNewLine: () => ts.sys.newLine,
  };
  const format = process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
  if (diagnostics.length > 0) process.stdout.write(format(diagnostics, host));
  return diagnostics.length === 0;
}

async function lint(programs) {
  const eslint = new ESLint({
    // Only the TypeScript files: eslint.config.js lints the JavaScript ones without types.
    overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parserOptions: { projectService: false, programs } } }],
  });
  const results = await eslint.lintFiles(['.']);
  const formatter = await eslint.loadFormatter('stylish');
  process.stdout.write(await formatter.format(results));
  return ESLint.getErrorResults(results).length === 0;
}

/** A step's command through npx, its output going straight through. */
const passes = (command) =>
  spawnSync(process.platform === 'win32' ? 'npx.cmd' : 'npx', command, { stdio: 'inherit' }).status === 0;

const programs = TSCONFIGS.map(programFor);
const typed = typeCheck(programs);
if (process.argv.includes('--types-only')) process.exit(typed ? 0 : 1);
const linted = await lint(programs);
const formatted = passes(['prettier', '--check', '.']);
const alive = passes(['knip']);
process.exit(typed && linted && formatted && alive ? 0 : 1);
