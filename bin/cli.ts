#!/usr/bin/env node
/** The `timer` command line (`npx timer --help`); npm links bin/launch.mjs, which runs this source or its compiled form, dist/bin/cli.js. */
import { processIo } from '../lib/cli/io.js';
import { run } from '../lib/cli/run.js';

// The SDK's notice that it will need Node.js 22 concerns this workstation, not the service.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
// Exit explicitly: SDK clients and local mode's servers may hold sockets open after the command is done.
process.exit(await run(process.argv.slice(2), processIo()));
