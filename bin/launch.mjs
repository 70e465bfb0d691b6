#!/usr/bin/env node
/**
 * The `timer` executable npm links (package.json "bin"). In a clone of the repository it runs the
 * TypeScript source through tsx, so `npx timer …` works right after `npm ci` with no build, and never
 * runs a dist/ left behind by an older build. The published package ships no source, only dist/, so
 * an install runs the compiled command with plain node and needs no tsx.
 */
import { existsSync } from 'node:fs';

const source = new URL('cli.ts', import.meta.url);
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import(new URL('../dist/bin/cli.js', import.meta.url).href);
}
