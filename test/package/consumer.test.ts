/**
 * The package as another team gets it: `npm pack`ed, installed into a throw-away CDK app set up
 * as `cdk init app --language typescript` sets one up (CommonJS, tsconfig NodeNext), type-checked
 * with tsc and run with plain node; the client package installed on its own; and the `timer`
 * executable npm links.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FUNCTIONS } from '../../functions/contract/topology.js';
import { LOCAL_INBOX_PATH } from '../../lib/local/paths.js';
import { type LocalTimer, startLocalTimer } from '../../lib/local/runtime.js';

const repo = resolve(import.meta.dirname, '../..');
const work = mkdtempSync(join(tmpdir(), 'timer-package-'));
/**
 * The checkout as it stands, copied without what a build or a run makes, so that the pack's build
 * writes its dist/ there: another `npm test` in this checkout may be packing at the same time.
 */
const source = join(work, 'source');
const MADE_HERE = new Set(['.git', 'node_modules', 'dist', 'cdk.out', 'reports', '.timer-data']);
const clientPackage = join(source, 'packages/client');
const app = join(work, 'app');
const clientOnly = join(work, 'client-only');

const versionIn = (dir: string) =>
  (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
const installedVersion = (name: string) => versionIn(join(repo, 'node_modules', name));
/**
 * What the app already has, as a CDK app does before it adds this package: the repository's own
 * aws-cdk-lib and constructs, linked (npm links a `file:` folder), so that npm extracts only this
 * package and what it needs. Extracting aws-cdk-lib's 186 MB again took 7 of the install's 19 CPU-s.
 * The package itself is installed from its tarball, and what it imports resolves from its own
 * install, never from the repository.
 */
const alreadyInstalled = (name: string) => `file:${join(repo, 'node_modules', name)}`;

const run = async (command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env) =>
  (await promisify(execFile)(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 })).stdout;

/**
 * The app's synthesis without CDK's built-in CloudFormation validation, which only warns here and
 * took 6.5 of its 13 CPU-s: test/infra/timer-stack.test.ts runs it on the same construct, strict.
 */
const WITHOUT_CFN_VALIDATION = { ...process.env, CDK_VALIDATION: 'false' };

/**
 * Building the package and installing it take about 40 s of CPU in all, which
 * takes minutes when the machine is shared.
 */
const SLOW_MS = 600_000;

/**
 * Packs a package into `work` and returns the tarball's path. The root package's prepack is the
 * type check and then the build; the type check is `npm run checks`' job in `npm test`, so this
 * runs the build alone and packs what it wrote.
 */
async function pack(dir: string): Promise<string> {
  await run('npm', ['pack', '--ignore-scripts', '--pack-destination', work], dir);
  const { name, version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, string>;
  return join(work, `${name}-${version}.tgz`);
}

/** Installs from npm's cache where it can: every version asked for is one this repository installed. */
const install = (dir: string) => run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], dir);

/**
 * The tsconfig `cdk init app --language typescript` writes, read from the installed aws-cdk's own
 * template, less what its jest setup and its ts-node run need: this app has no tests, and plain
 * node runs what tsc emits.
 */
function cdkInitTsconfig(): object {
  const template = join(repo, 'node_modules/aws-cdk/lib/init-templates/app/typescript/tsconfig.json');
  const tsconfig = JSON.parse(readFileSync(template, 'utf8')) as {
    compilerOptions: { noEmit?: boolean; types: string[] } & Record<string, unknown>;
  };
  const { noEmit: _noEmit, types, ...compilerOptions } = tsconfig.compilerOptions;
  return { ...tsconfig, compilerOptions: { ...compilerOptions, types: types.filter((name) => name !== 'jest') } };
}

function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
}

let timer: LocalTimer;

beforeAll(async () => {
  // The root build also compiles packages/client, so the client is packed from that build.
  cpSync(repo, source, { recursive: true, filter: (path) => !MADE_HERE.has(basename(path)) });
  symlinkSync(join(repo, 'node_modules'), join(source, 'node_modules'));
  await run('npm', ['run', '--silent', 'build'], source);
  const [rootTarball, clientTarball] = await Promise.all([pack(source), pack(clientPackage)]);
  writeFiles(app, {
    'package.json': JSON.stringify({
      name: 'orders-app',
      version: '0.1.0',
      bin: { 'orders-app': 'bin/app.js' },
      dependencies: {
        'aws-cdk-lib': alreadyInstalled('aws-cdk-lib'),
        constructs: alreadyInstalled('constructs'),
        'distributed-timer': `file:${rootTarball}`,
      },
      devDependencies: { '@types/node': installedVersion('@types/node') },
    }),
    'tsconfig.json': JSON.stringify(cdkInitTsconfig()),
    'bin/app.ts': [
      "import { App } from 'aws-cdk-lib';",
      "import { OrdersStack } from '../lib/orders-stack';",
      'const app = new App({ outdir: process.argv[2] });',
      "new OrdersStack(app, 'OrdersStack');",
      'app.synth();',
    ].join('\n'),
    'lib/orders-stack.ts': [
      "import { Stack, type StackProps } from 'aws-cdk-lib';",
      "import type { Construct } from 'constructs';",
      "import { DistributedTimer } from 'distributed-timer';",
      'export class OrdersStack extends Stack {',
      '  constructor(scope: Construct, id: string, props?: StackProps) {',
      '    super(scope, id, props);',
      "    new DistributedTimer(this, 'Timer');",
      '  }',
      '}',
    ].join('\n'),
    'schedule.mjs': [
      "import { TimerClient } from 'distributed-timer/client';",
      'const [baseUrl, apiKey, url] = process.argv.slice(2);',
      'const client = new TimerClient({ baseUrl, apiKey });',
      "const created = await client.schedule({ delaySeconds: 600, target: { type: 'http', url }, bizId: 'esm' });",
      'console.log(JSON.stringify({ created, read: await client.get(created.id) }));',
    ].join('\n'),
    'schedule.cjs': [
      "const { TimerClient } = require('distributed-timer/client');",
      'const [baseUrl, apiKey, url] = process.argv.slice(2);',
      'const client = new TimerClient({ baseUrl, apiKey });',
      "client.schedule({ delaySeconds: 600, target: { type: 'http', url }, bizId: 'cjs' }).then(async (created) => {",
      '  console.log(JSON.stringify({ created, read: await client.get(created.id) }));',
      '});',
    ].join('\n'),
  });
  writeFiles(clientOnly, {
    'package.json': JSON.stringify({
      name: 'billing-service',
      version: '0.1.0',
      dependencies: { 'distributed-timer-client': `file:${clientTarball}` },
    }),
    'verify.cjs': [
      "const { TimerClient, verifyWebhook } = require('distributed-timer-client');",
      'console.log(typeof TimerClient, typeof verifyWebhook);',
    ].join('\n'),
  });
  [timer] = await Promise.all([startLocalTimer({ port: 0, logLevel: 'SILENT' }), install(app), install(clientOnly)]);
}, SLOW_MS);

afterAll(async () => {
  await timer?.stop();
  await rm(work, { recursive: true, force: true });
}, SLOW_MS);

describe('Package: distributed-timer, installed into a cdk-init app', () => {
  it(
    'type-checks with the cdk-init tsconfig and synthesizes the five functions with plain node',
    async () => {
      // Prepare
      const assembly = join(work, 'cdk.out');

      // Act
      await run(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', '.'], app);
      await run(process.execPath, ['bin/app.js', assembly], app, WITHOUT_CFN_VALIDATION);

      // Assess
      const template = JSON.parse(readFileSync(join(assembly, 'OrdersStack.template.json'), 'utf8')) as {
        Resources: Record<string, { Type: string; Properties: { Handler?: string } }>;
      };
      const functions = Object.entries(template.Resources).filter(
        ([, resource]) => resource.Type === 'AWS::Lambda::Function',
      );
      for (const name of Object.keys(FUNCTIONS)) {
        const capitalized = `${name[0]?.toUpperCase()}${name.slice(1)}`;
        const fn = functions.find(([logicalId]) => logicalId.startsWith(`Timer${capitalized}Function`));
        expect(fn?.[1].Properties.Handler, name).toBe('index.handler');
      }
      const bundles = readdirSync(assembly).filter((entry) => entry.startsWith('asset.'));
      for (const bundle of bundles) expect(readdirSync(join(assembly, bundle))).toContain('index.mjs');
      expect(bundles).toHaveLength(Object.keys(FUNCTIONS).length);
    },
    SLOW_MS,
  );

  it.each(['schedule.mjs', 'schedule.cjs'])(
    'loads the client with plain node from %s and schedules a task',
    async (file) => {
      // Act
      const output = await run(
        process.execPath,
        [file, timer.apiUrl, timer.apiKey, `${timer.apiUrl}${LOCAL_INBOX_PATH}`],
        app,
      );

      // Assess
      const { created, read } = JSON.parse(output) as { created: { id: string }; read: { id: string; status: string } };
      expect(read).toMatchObject({ id: created.id, status: 'PENDING', bizId: file.endsWith('.mjs') ? 'esm' : 'cjs' });
    },
  );

  it('links a `timer` executable that runs without the repository', async () => {
    // Act
    const help = await run(join(app, 'node_modules/.bin/timer'), ['--help'], app);
    const version = await run(join(app, 'node_modules/.bin/timer'), ['--version'], app);

    // Assess
    expect(help).toContain('Usage: timer <command>');
    expect(help).toContain('tenants create');
    // From dist/bin/cli.js in node_modules, not from the repository's sources.
    expect(version).toBe(`${versionIn(repo)}\n`);
  });
});

describe('Package: distributed-timer-client, installed alone', () => {
  it('installs nothing besides itself, and loads from CommonJS', async () => {
    // Act
    const installed = readdirSync(join(clientOnly, 'node_modules')).filter((entry) => !entry.startsWith('.'));
    const loaded = await run(process.execPath, ['verify.cjs'], clientOnly);

    // Assess
    expect(installed).toEqual(['distributed-timer-client']);
    expect(loaded.trim()).toBe('function function');
  });
});
