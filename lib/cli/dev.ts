/**
 * `timer dev` and `npm start`: the whole timer on this machine until Ctrl+C. Data lives in
 * the data folder, so scheduled tasks survive a restart.
 */
import { join } from 'node:path';

import { DEV_API_KEY_ENV } from '../local/dev-tenant.js';
import { runningLocalEndpoints } from '../local/endpoints.js';
import { LOCAL_CONSOLE_PATH, LOCAL_INBOX_PATH } from '../local/paths.js';
import type { LocalTimer } from '../local/runtime.js';
import { type Command, command, CommandFailed, COMMON_OPTIONS, UsageError } from './command.js';
import { dataDirOf, DEFAULT_LOCAL_PORT } from './connect.js';
import type { CliIo } from './io.js';

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/** Resolves on the first Ctrl+C or SIGTERM; a second one gets Node's default, so it ends a stop that hangs. */
function firstStopSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      for (const signal of STOP_SIGNALS) process.off(signal, stop);
      resolve();
    };
    for (const signal of STOP_SIGNALS) process.on(signal, stop);
  });
}

function banner(timer: LocalTimer, dataDir: string, io: CliIo): string {
  const inbox = `${timer.apiUrl}${LOCAL_INBOX_PATH}`;
  return [
    '',
    'Distributed timer running locally',
    `  API:             ${timer.apiUrl}/v1/tasks`,
    `  Console:         ${timer.apiUrl}${LOCAL_CONSOLE_PATH}  (tasks of every tenant, deliveries, lateness and the DLQ, live in a browser)`,
    `  Data:            ${dataDir}`,
    timer.devTenant.keyIsNew
      ? `  API key:         ${timer.apiKey}  (new: tenant "dev"; kept in ${timer.devTenant.keyFile ?? 'memory only'})`
      : `  API key:         tenant "dev"'s key from ${io.env[DEV_API_KEY_ENV] ? DEV_API_KEY_ENV : timer.devTenant.keyFile}`,
    `  Signing secret:  ${timer.signingSecret}  (webhooks carry Standard Webhooks signatures made with it)`,
    '  Webhook targets: local mode allows http:// and loopback or private addresses; a deployment allows only public https://',
    `  Webhook inbox:   ${inbox}  (a receiver for trying it out: checks signatures, logs arrivals)`,
    `  EventBridge:     events to eventbridge targets are appended to ${join(dataDir, 'eventbridge-events.jsonl')}`,
    timer.recovered > 0 ? `  Recovered:       ${timer.recovered} tasks re-enqueued after the restart` : '',
    '',
    'Schedule a webhook 10 seconds from now, to the inbox (the CLI finds this process and its key):',
    `  npx timer schedule --in 10s --url ${inbox} --payload '{"hello":"world"}'`,
    'or over HTTP:',
    `  export TIMER_API_KEY=$(cat ${timer.devTenant.keyFile ?? '<the key above>'})`,
    `  curl -s -X POST ${timer.apiUrl}/v1/tasks -H "authorization: Bearer $TIMER_API_KEY" -H 'content-type: application/json' \\`,
    `    -d '{"delaySeconds":10,"target":{"type":"http","url":"${inbox}"},"payload":{"hello":"world"}}'`,
    '',
    'Press Ctrl+C to stop.',
    '',
  ]
    .filter((line, index, lines) => line !== '' || lines[index - 1] !== '')
    .join('\n');
}

/** What to do about a port another program holds (a local mode on this data folder was ruled out before starting). */
function portTaken(port: number): string {
  const free = port + 1;
  return `port ${port} is already in use by another program (perhaps a local mode on another data folder): stop it, or start on a free port with TIMER_PORT=${free} npm start (timer dev --port ${free})`;
}

const dev = command({
  name: 'dev',
  summary: 'Run the whole service on this machine until Ctrl+C (what `npm start` does)',
  usage: '[--port N] [--data-dir DIR] [--log-level LEVEL]',
  details:
    'dynalite (on disk in the data folder) stands in for DynamoDB, fauxqs for SQS; the real handlers run unchanged. Other `timer` commands find it through <data-dir>/local-endpoints.json.',
  arguments: [],
  options: {
    port: {
      type: 'string',
      placeholder: 'N',
      description: 'API port, 0 for any free one (default: TIMER_PORT, else 3000)',
    },
    'log-level': {
      type: 'string',
      placeholder: 'LEVEL',
      description: "The handlers' log level: DEBUG, INFO, WARN, ERROR or SILENT (default: TIMER_LOG_LEVEL, else INFO)",
    },
    ...COMMON_OPTIONS,
  },
  async run(call) {
    const portText = call.options.port ?? call.io.env.TIMER_PORT ?? String(DEFAULT_LOCAL_PORT);
    const port = Number(portText);
    if (!/^\d+$/.test(portText) || port > 65_535) {
      throw new UsageError(`--port must be a port number from 0 to 65535 (got "${portText}")`);
    }
    const dataDir = dataDirOf(call.options, call.io);
    const running = await runningLocalEndpoints(dataDir);
    if (running) {
      throw new CommandFailed(
        `local mode is already running on ${dataDir} (pid ${running.pid}, API ${running.apiUrl}); stop it first, or start another with its own --data-dir and TIMER_PORT`,
      );
    }
    const logLevel = call.options['log-level'] ?? call.io.env.TIMER_LOG_LEVEL ?? 'INFO';
    const prettyLogs = call.io.stdout.isTTY === true;
    // Loaded here, not with the CLI: local mode's handlers and SDK clients are most of what the
    // CLI would load (1.2 s of 1.2 s), and every other command, and --help, goes without them.
    const { startLocalTimer } = await import('../local/runtime.js');
    const timer = await startLocalTimer({ port, dataDir, logLevel, prettyLogs }).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new CommandFailed(portTaken(port));
      throw new CommandFailed(`local mode failed to start: ${error instanceof Error ? error.message : String(error)}`);
    });
    call.output(
      {
        apiUrl: timer.apiUrl,
        dataDir,
        apiKeyFile: timer.devTenant.keyFile ?? null,
        signingSecret: timer.signingSecret,
      },
      banner(timer, dataDir, call.io),
    );
    await firstStopSignal();
    call.io.stderr.write('Stopping…\n');
    await timer.stop();
  },
});

export const DEV_COMMANDS: readonly Command[] = [dev];
