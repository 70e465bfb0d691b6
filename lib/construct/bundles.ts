/**
 * The Lambda functions' code. The published package carries every function prebuilt (by
 * bin/build-bundles.ts) in dist/bundles/<name>/, so a consumer's synth needs neither esbuild
 * nor this project's lockfile. Run from the repository's TypeScript sources there is no such
 * folder, and the construct bundles each function itself at synth time, with the same options.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AssetHashType } from 'aws-cdk-lib/core';
import type { BuildOptions } from 'esbuild';

import { type FunctionName, FUNCTIONS } from '../../functions/contract/topology.js';

const here = dirname(fileURLToPath(import.meta.url));
const projectRoot = join(here, '..', '..');

/** The file each bundle is written to, and the Lambda handler that names its `handler` export. */
const BUNDLE_FILE = 'index.mjs';
export const BUNDLE_HANDLER = 'index.handler';

/**
 * How a function is bundled. The AWS SDK is bundled too rather than taken from the Lambda
 * runtime, so the SDK version the tests run against is the one that runs in the cloud.
 */
export function bundleOptions(name: FunctionName, outdir: string): BuildOptions {
  return {
    entryPoints: [join(projectRoot, FUNCTIONS[name].entry)],
    outfile: join(outdir, BUNDLE_FILE),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    sourcemap: true,
    mainFields: ['module', 'main'],
    // Some dependencies are CommonJS and call require(); ESM bundles need it provided.
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    logLevel: 'warning',
  };
}

/**
 * Bundles a function into `outdir`. esbuild is a development dependency, loaded only here, so
 * an installed package, which never bundles, does not need it.
 */
export function buildBundle(name: FunctionName, outdir: string): void {
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  esbuild.buildSync(bundleOptions(name, outdir));
}

/** Where the package's build put a function's bundle: dist/bundles/<name>, beside dist/lib. */
const prebuiltBundleDir = (name: FunctionName) => join(projectRoot, 'bundles', name);

/**
 * A function's code: its prebuilt bundle when there is one, otherwise a bundle built at synth
 * time. The latter is an asset bundled locally, so the CDK skips it for stacks outside
 * `aws:cdk:bundling-stacks` and hashes what was built, never the sources it was built from.
 */
export function functionCode(name: FunctionName): lambda.Code {
  const prebuilt = prebuiltBundleDir(name);
  if (existsSync(join(prebuilt, BUNDLE_FILE))) return lambda.Code.fromAsset(prebuilt);
  // The function's own folder, not the project root: the CDK reuses a bundle staged from the same
  // source path with the same options, and `tryBundle`, the only other difference between the five,
  // is a function its cache key cannot see, so all five would deploy the first one's bundle.
  return lambda.Code.fromAsset(dirname(join(projectRoot, FUNCTIONS[name].entry)), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never pulled: local bundling always succeeds or throws.
      image: lambda.Runtime.NODEJS_24_X.bundlingImage,
      local: {
        tryBundle(outputDir) {
          buildBundle(name, outputDir);
          return true;
        },
      },
    },
  });
}
