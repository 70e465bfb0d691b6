#!/usr/bin/env node
// What npm links as `timer`. tsx compiles the TypeScript CLI as it loads, so there is no build step.
import { fileURLToPath } from 'node:url';

import { register } from 'tsx/esm/api';

register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
await import('./cli.ts');
