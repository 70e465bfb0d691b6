/**
 * `npm start`: the whole timer on this machine. Data lives in TIMER_DATA_DIR (default
 * .timer-data), so scheduled tasks survive a restart; the API listens on TIMER_PORT
 * (default 3000).
 */
import { resolve } from 'node:path';
import { DEV_API_KEY_ENV } from '../lib/local/dev-tenant';
import { LOCAL_CONSOLE_PATH, LOCAL_INBOX_PATH } from '../lib/local/paths';
import { startLocalTimer } from '../lib/local/runtime';

const port = Number(process.env.TIMER_PORT ?? 3000);
const dataDir = resolve(process.env.TIMER_DATA_DIR ?? '.timer-data');

const timer = await startLocalTimer({
  port,
  dataDir,
  logLevel: process.env.TIMER_LOG_LEVEL ?? 'INFO',
  prettyLogs: process.stdout.isTTY,
}).catch(
  (error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    const hint = /EADDRINUSE/.test(reason) ? ` Port ${port} is taken: set TIMER_PORT to a free port.` : '';
    process.stderr.write(`Local timer failed to start: ${reason}.${hint}\n`);
    process.exit(1);
  },
);

process.stdout.write(
  [
    '',
    `Distributed timer running locally`,
    `  API:             ${timer.apiUrl}/v1/tasks`,
    `  Console:         ${timer.apiUrl}${LOCAL_CONSOLE_PATH}  (tasks of every tenant, deliveries, lateness and the DLQ, live in a browser)`,
    `  Data:            ${dataDir}`,
    timer.devTenant.keyIsNew
      ? `  API key:         ${timer.apiKey}  (new: tenant "dev"; kept in ${timer.devTenant.keyFile ?? 'memory only'})`
      : `  API key:         tenant "dev"'s key from ${process.env[DEV_API_KEY_ENV] ? DEV_API_KEY_ENV : timer.devTenant.keyFile}`,
    `  Signing secret:  ${timer.signingSecret}  (webhooks carry Standard Webhooks signatures made with it)`,
    '  Webhook targets: local mode allows http:// and loopback or private addresses; a deployment allows only public https://',
    `  Webhook inbox:   ${timer.apiUrl}${LOCAL_INBOX_PATH}  (a receiver for trying it out: checks signatures, logs arrivals)`,
    `  EventBridge:     events to eventbridge targets are appended to ${resolve(dataDir, 'eventbridge-events.jsonl')}`,
    timer.recovered > 0 ? `  Recovered:       ${timer.recovered} tasks re-enqueued after the restart` : '',
    '',
    'Schedule a webhook 10 seconds from now, to the inbox:',
    `  export TIMER_API_KEY=$(cat ${timer.devTenant.keyFile ?? '<the key above>'})`,
    `  curl -s -X POST ${timer.apiUrl}/v1/tasks -H "authorization: Bearer $TIMER_API_KEY" -H 'content-type: application/json' \\`,
    `    -d '{"delaySeconds":10,"target":{"type":"http","url":"${timer.apiUrl}${LOCAL_INBOX_PATH}"},"payload":{"hello":"world"}}'`,
    '',
    'Press Ctrl+C to stop.',
    '',
  ]
    .filter((line, index, lines) => line !== '' || lines[index - 1] !== '')
    .join('\n'),
);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, async () => {
    if (stopping) process.exit(1);
    stopping = true;
    process.stdout.write('Stopping…\n');
    await timer.stop();
    process.exit(0);
  });
}
