/** `npm start`: the same as `timer dev` (port from TIMER_PORT, data in TIMER_DATA_DIR, logs at TIMER_LOG_LEVEL). */
import { processIo } from '../lib/cli/io.js';
import { run } from '../lib/cli/run.js';

process.exit(await run(['dev', ...process.argv.slice(2)], processIo()));
