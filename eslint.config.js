// @ts-check
// The rules the tooling enforces. Style is prettier's job; this file holds what a reviewer
// would otherwise have to catch by eye: unawaited promises, unused code, hidden tests, and
// the layering (imports run downward: lib/ may import functions/, never the reverse).
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import simpleImportSort from 'eslint-plugin-simple-import-sort';
import tseslint from 'typescript-eslint';

/** A restricted-import pattern: a regex on the import specifier and the reason it is refused. */
const refuse = (regex, message) => ({ regex, message });

// The layer rules are regexes on the specifier as written. A relative import of a sibling layer
// reads `../<layer>/…`, or `../../<layer>/…` from a stage folder of functions/core/.
const functionsStayBelowLib = [
  refuse(
    String.raw`^(\.\./)+(lib|bin|bench|test)(/|$)`,
    'functions/ is the bottom of the project: lib/, bin/, bench/ and test/ import it, never the reverse. Move the shared piece into functions/ (functions/contract/ for names both sides need).',
  ),
];

const coreStaysPure = [
  refuse(
    String.raw`^(\.\./)+adapters(/|$)`,
    'functions/core is the pure core: it takes its ports (task store, queues, clock) as parameters and never imports an adapter. Define the port type in core; let the handler pass the adapter in.',
  ),
  refuse(
    String.raw`^(@aws-sdk|@middy|@aws-lambda-powertools)/`,
    'functions/core does no I/O and knows no Lambda runtime: AWS SDK clients, middy and Powertools belong in functions/adapters, functions/commons or the handler.',
  ),
  refuse(
    String.raw`^(aws-cdk-lib|constructs)(/|$)`,
    'functions/core knows nothing of infrastructure: CDK code lives in lib/.',
  ),
];

// functions/core/ is grouped by the pipeline, bottom first: the task kernel (the record, its
// ports, ids, the clock, how a task is born), tenants and targets beside the stages, then the
// stages in the order a task meets them. A folder imports only folders before it in this list,
// so no stage reaches into a later one for a fact: a fact two stages share moves down.
const CORE_ORDER = ['kernel', 'tenants', 'targets', 'submit', 'schedules', 'scan', 'deliver', 'sweep'];
const laterThan = (folder) => CORE_ORDER.slice(CORE_ORDER.indexOf(folder) + 1);
const pipelineText = CORE_ORDER.join(' → ');

/** What a file in core folder `folder` may not import: any folder later in the pipeline. */
const stageDirection = (folder) =>
  folder === 'sweep'
    ? []
    : [
        refuse(
          String.raw`^\.\./(${laterThan(folder).join('|')})(/|$)`,
          `functions/core/${folder}/ comes before ${laterThan(folder).join(', ')} in the pipeline (${pipelineText}), and imports only what comes before it. Move the shared fact down (to functions/core/kernel/ when every stage needs it).`,
        ),
      ];

// The handler of a stage stands at that stage: the api at submit and schedules, the ticker and
// the scanner at scan, the callback at deliver. It reaches no later stage's core either.
const HANDLER_STAGE = { api: 'schedules', ticker: 'scan', scanner: 'scan', callback: 'deliver' };
const handlerDirection = (handler) => [
  refuse(
    String.raw`^\.\./core/(${laterThan(HANDLER_STAGE[handler]).join('|')})(/|$)`,
    `functions/${handler}/ is the ${HANDLER_STAGE[handler]} stage's handler and imports no later stage of the pipeline (${pipelineText}). Move the shared fact down.`,
  ),
];

const contractIsTheBottom = [
  refuse(
    String.raw`^(?!\./|node:)`,
    'functions/contract is the vocabulary shared by the server, the CDK code and the client, so it imports nothing but other contract files and node built-ins (no zod: the client must stay dependency-free).',
  ),
];

const shippedCodeSkipsTheBench = [
  refuse(
    String.raw`^(\.\./)+bench(/|$)`,
    'bench/ is a development tool, outside the package: bin/ and lib/ never import it. What both need (the measured-usage reader, the table format) lives in lib/construct/plan/, and the bench imports it from there.',
  ),
];

const planAndConstructSkipLocalMode = [
  ...shippedCodeSkipsTheBench,
  refuse(
    String.raw`^(\.\./)+(lib/)?local(/|$)`,
    'The construct and the planner its users run (lib/construct/, bin/plan.ts) need no emulator: local mode imports them, never the reverse. AWS limits are in functions/contract/aws-limits.ts.',
  ),
];

const clientIsServerFree = [
  refuse(
    String.raw`^(?!node:|\./|(\.\./){2}functions/contract/)`,
    "lib/client/ ships to the service's callers with no runtime dependency: it may import only functions/contract/** and node built-ins, never server code, zod (not even its types, which would leak into the client's .d.ts), CDK or adapters.",
  ),
];

// Vitest's `skip`, `only` and `todo` hide failures; `skipIf`/`runIf` hide them conditionally.
const hiddenTests = ['it', 'test', 'describe', 'suite'].flatMap((object) =>
  ['skip', 'only', 'todo', 'skipIf', 'runIf'].map((property) => ({
    object,
    property,
    message: 'A skipped, focused or placeholder test hides failures: fix the test or delete it.',
  })),
);

export default defineConfig(
  globalIgnores([
    'node_modules/',
    '**/dist/',
    'cdk.out/',
    'reports/',
    '.timer-data/',
    'docs/openapi.json',
    'docs/benchmarks.json',
  ]),
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: {
        // Each file is checked by the tsconfig that owns it (the console page has its own).
        projectService: { allowDefaultProject: ['*.js', 'bin/*.mjs', 'bench/*.mjs', 'test/support/*.mjs'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { 'simple-import-sort': simpleImportSort },
    rules: {
      'simple-import-sort/imports': 'error',
      'simple-import-sort/exports': 'error',
      // A closure may read a binding that is assigned once, later (e.g. a mapping that reports on itself).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'all',
          argsIgnorePattern: '^_',
          // Compile-time drift checks between the zod schemas and the wire types: declared to fail typecheck, never used.
          varsIgnorePattern: 'Match(es)?Wire$',
          caughtErrors: 'all',
          caughtErrorsIgnorePattern: '^_',
          // `const { pk, sk, ...record } = item` is how an object drops fields.
          ignoreRestSiblings: true,
        },
      ],
      '@typescript-eslint/no-unused-expressions': 'error',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      'no-unreachable': 'error',
      // Input validation rejects control characters on purpose, so its regexes name them.
      'no-control-regex': 'off',
      // TypeScript resolves names; the two plain JS files are small Node scripts.
      'no-undef': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    files: ['test/**/*.ts'],
    rules: { 'no-restricted-properties': ['error', ...hiddenTests] },
  },
  // Layer rules. Each file gets one `no-restricted-imports` setting (a later matching block
  // replaces an earlier one's), so the deeper folders repeat the rules of the folder above.
  {
    files: ['functions/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: functionsStayBelowLib }] },
  },
  {
    files: ['functions/core/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [...functionsStayBelowLib, ...coreStaysPure] }] },
  },
  ...CORE_ORDER.map((folder) => ({
    files: [`functions/core/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [...functionsStayBelowLib, ...coreStaysPure, ...stageDirection(folder)] },
      ],
    },
  })),
  ...Object.keys(HANDLER_STAGE).map((handler) => ({
    files: [`functions/${handler}/**/*.ts`],
    rules: {
      'no-restricted-imports': ['error', { patterns: [...functionsStayBelowLib, ...handlerDirection(handler)] }],
    },
  })),
  {
    files: ['functions/contract/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: contractIsTheBottom }] },
  },
  {
    files: ['bin/**/*.ts', 'lib/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: shippedCodeSkipsTheBench }] },
  },
  {
    files: ['bin/plan.ts', 'lib/index.ts', 'lib/construct/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: planAndConstructSkipLocalMode }] },
  },
  {
    files: ['lib/client/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: clientIsServerFree }] },
  },
);
