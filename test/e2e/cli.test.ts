/**
 * The `timer` CLI against local mode running in this process: the commands run in-process
 * with captured output, find local mode through its data folder, and change what the API
 * then does. One test spawns the real executable, as `npx timer` does.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

import { systemClock } from '../../functions/core/kernel/task.js';
import {
  activeSigningSecrets,
  authenticate,
  cachedTenantDirectory,
  TENANT_CACHE_TTL_MS,
} from '../../functions/core/tenants/tenants.js';
import { COMMANDS, run } from '../../lib/cli/run.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb.js';
import { runningLocalEndpoints } from '../../lib/local/endpoints.js';
import { LOCAL_INBOX_PATH } from '../../lib/local/paths.js';
import { LOCAL_TABLE_NAME, type LocalTimer } from '../../lib/local/runtime.js';
import { startTestTimer } from '../support/local-timer-fixture.js';
import { eventually } from '../support/webhook-receiver.js';

let timer: LocalTimer;
let dataDir: string;
const otherDataDirs: string[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'timer-cli-'));
  timer = await startTestTimer({ dataDir });
});

afterAll(async () => {
  await timer?.stop();
  for (const dir of [dataDir, ...otherDataDirs]) await rm(dir, { recursive: true, force: true });
});

/** Runs `timer <argv>` in-process with only the data folder in its environment, so the caller's own settings cannot leak in. */
async function timerCli(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { TIMER_DATA_DIR: dataDir },
    cwd: dataDir,
  });
  return { code, stdout, stderr };
}

async function createTenant(id: string) {
  const created = await timerCli('tenants', 'create', id, '--json');
  expect(created).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(created.stdout) as { apiKey: string; keyId: string; signingSecret: string };
}

const inbox = () => `${timer.apiUrl}${LOCAL_INBOX_PATH}`;

describe('Command: timer tenants create, then the task commands with its key', () => {
  it("schedules, shows and cancels a task with the new tenant's key, which the dev tenant cannot see", async () => {
    // Prepare
    const { apiKey, signingSecret } = await createTenant('acme');

    // Act
    const scheduled = await timerCli(
      'schedule',
      '--in',
      '10m',
      '--url',
      inbox(),
      '--payload',
      '{"orderId":42}',
      '--biz-id',
      'order-42',
      '--api-key',
      apiKey,
      '--json',
    );
    const { id } = JSON.parse(scheduled.stdout) as { id: string };
    const shown = await timerCli('get', id, '--api-key', apiKey);
    const byOtherTenant = await timerCli('get', id);
    const cancelled = await timerCli('cancel', id, '--api-key', apiKey, '--json');

    // Assess
    expect(apiKey).toMatch(/^tk_acme_/);
    expect(signingSecret).toMatch(/^whsec_/);
    expect(scheduled.code).toBe(0);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/Status:\s+PENDING/);
    expect(shown.stdout).toContain('order-42');
    expect(byOtherTenant).toMatchObject({ code: 1, stdout: '' });
    expect(byOtherTenant.stderr).toContain(`tenant "dev" has no task with the id "${id}"`);
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ id, status: 'CANCELLED' });
  });

  it("delivers the new tenant's webhook, which local mode's inbox finds validly signed", async () => {
    // Prepare
    const { apiKey } = await createTenant('soylent');

    // Act
    const scheduled = await timerCli('schedule', '--in', '0s', '--url', inbox(), '--api-key', apiKey, '--json');
    const { id } = JSON.parse(scheduled.stdout) as { id: string };
    await eventually(
      'the webhook to reach the inbox',
      () => timer.inbox.entries.some((entry) => entry.notification.id === id),
      60,
      250,
    );

    // Assess
    expect(timer.inbox.entries.find((entry) => entry.notification.id === id)?.signatureValid).toBe(true);
  });

  it('prints the API key once, with a warning, and never again in the list', async () => {
    // Act
    const created = await timerCli('tenants', 'create', 'globex', '--name', 'Globex', '--rate-limit', '50');
    const listed = await timerCli('tenants', 'list');
    const apiKey = /tk_globex_\S+/.exec(created.stdout)?.[0] ?? '';

    // Assess
    expect(created.code).toBe(0);
    expect(created.stdout).toContain('cannot be shown again');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/globex\s+Globex\s+50\/s\s+any\s+1\s+1/);
    expect(listed.stdout).not.toContain('whsec_');
    expect(listed.stdout).not.toContain(apiKey.slice(-43));
  });

  it("lists a business id's tasks a page at a time, or all of them", async () => {
    // Prepare
    const { apiKey } = await createTenant('wayne');
    for (const delay of ['1h', '2h', '3h']) {
      await timerCli(
        'schedule',
        '--in',
        delay,
        '--url',
        inbox(),
        '--biz-id',
        'order-77',
        '--biz-type',
        'order',
        '--api-key',
        apiKey,
      );
    }
    const listAll = () => timerCli('list', '--biz-id', 'order-77', '--all', '--api-key', apiKey, '--json');
    // The listing indexes are eventually consistent.
    await eventually(
      'the three tasks to be listed',
      async () => (JSON.parse((await listAll()).stdout) as { tasks: unknown[] }).tasks.length === 3,
    );

    // Act
    const firstPage = await timerCli('list', '--biz-id', 'order-77', '--limit', '2', '--api-key', apiKey);
    const cursor = /--cursor (\S+),/.exec(firstPage.stdout)?.[1] ?? '';
    const secondPage = await timerCli(
      'list',
      '--biz-id',
      'order-77',
      '--limit',
      '2',
      '--cursor',
      cursor,
      '--api-key',
      apiKey,
      '--json',
    );
    const delivered = await timerCli(
      'list',
      '--biz-id',
      'order-77',
      '--status',
      'DELIVERED',
      '--all',
      '--api-key',
      apiKey,
    );

    // Assess
    expect(firstPage.code).toBe(0);
    expect(firstPage.stdout.match(/PENDING/g)).toHaveLength(2);
    expect(JSON.parse(secondPage.stdout)).toMatchObject({ tasks: [expect.objectContaining({ bizId: 'order-77' })] });
    expect(delivered.stdout).toBe('No tasks match.\n');
  });

  it('shows what the API refused, field by field with the flag to fix', async () => {
    // Act
    const refused = await timerCli('schedule', '--in', '5s', '--url', 'ftp://example.com/hook');

    // Assess
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('target.url (--url): must use http:// or https://');
  });

  it('schedules with --window and shows when the task fires within it; a window over 15 minutes is refused at --window', async () => {
    // Act
    const scheduled = await timerCli('schedule', '--in', '10m', '--window', '2m', '--url', inbox());
    const refused = await timerCli('schedule', '--in', '5m', '--window', '20m', '--url', inbox());

    // Assess
    expect(scheduled.code).toBe(0);
    const timeOf = (label: string) => Date.parse(new RegExp(`${label}:\\s+(\\S+)`).exec(scheduled.stdout)?.[1] ?? '');
    expect(timeOf('Fires') - timeOf('Due')).toBeGreaterThanOrEqual(0);
    expect(timeOf('Fires') - timeOf('Due')).toBeLessThanOrEqual(120_000);
    expect(scheduled.stdout).toMatch(/Window:\s+120 s/);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('window.seconds (--window): must be a whole number of seconds from 1 to 900');
  });
});

describe('Command: timer schedules', () => {
  it('creates a schedule, shows its next occurrences, pauses, lists, resumes and deletes it', async () => {
    // Act
    const created = await timerCli(
      'schedules',
      'create',
      '--cron',
      '0 9 * * 1-5',
      '--timezone',
      'Europe/Berlin',
      '--url',
      inbox(),
      '--biz-id',
      'report-1',
      '--json',
    );
    const { id, nextOccurrences } = JSON.parse(created.stdout) as { id: string; nextOccurrences: string[] };
    const shown = await timerCli('schedules', 'get', id);
    const paused = await timerCli('schedules', 'pause', id, '--json');
    const listed = await timerCli('schedules', 'list', '--biz-id', 'report-1');
    const resumed = await timerCli('schedules', 'resume', id, '--json');
    const deleted = await timerCli('schedules', 'delete', id);
    const gone = await timerCli('schedules', 'get', id);

    // Assess: 09:00 Berlin on weekdays, in UTC an hour or two earlier depending on DST.
    expect(created.code).toBe(0);
    expect(nextOccurrences).toHaveLength(5);
    for (const at of nextOccurrences) expect(new Date(at).getUTCHours()).toBeOneOf([7, 8]);
    expect(shown.stdout).toMatch(/Time zone:\s+Europe\/Berlin/);
    expect(shown.stdout).toContain(nextOccurrences[1]);
    expect(JSON.parse(paused.stdout)).toMatchObject({ paused: true, nextOccurrences: [] });
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+0 9 \\* \\* 1-5\\s+Europe/Berlin\\s+paused`));
    expect(JSON.parse(resumed.stdout)).toMatchObject({ paused: false, nextOccurrences });
    expect(deleted).toMatchObject({ code: 0, stdout: `Deleted schedule ${id}.\n` });
    expect(gone.code).toBe(1);
  });

  it("lists the tenant's schedules with no filter, a page at a time with --limit and --cursor, or all with --all", async () => {
    // Prepare
    const ids: string[] = [];
    for (const bizId of ['route-1', 'route-2', 'route-3']) {
      const created = await timerCli(
        'schedules',
        'create',
        '--rate',
        '1 day',
        '--url',
        inbox(),
        '--biz-id',
        bizId,
        '--json',
      );
      ids.push((JSON.parse(created.stdout) as { id: string }).id);
    }

    // Act
    const everything = await timerCli('schedules', 'list');
    const first = await timerCli('schedules', 'list', '--limit', '2');
    const cursor = /--cursor (\S+),/.exec(first.stdout)?.[1] ?? '';
    const rest = await timerCli('schedules', 'list', '--limit', '2', '--cursor', cursor);
    const all = await timerCli('schedules', 'list', '--limit', '1', '--all', '--json');
    const prefixed = await timerCli('schedules', 'list', '--biz-id-prefix', 'route-', '--active', '--json');
    const both = await timerCli('schedules', 'list', '--paused', '--active');

    // Assess
    const idsIn = (text: string) => text.match(/sch_\w{20}/g) ?? [];
    expect(everything.code).toBe(0);
    expect(idsIn(everything.stdout)).toEqual([...ids].sort());
    expect(everything.stdout).toMatch(new RegExp(`${ids[0]}\\s+rate 1 day\\s+UTC\\s+active\\s+route-1`));
    expect(idsIn(first.stdout)).toHaveLength(2);
    expect([...idsIn(first.stdout), ...idsIn(rest.stdout)]).toEqual([...ids].sort());
    expect(rest.stdout).not.toContain('--cursor');
    expect((JSON.parse(all.stdout) as { schedules: Array<{ id: string }> }).schedules.map(({ id }) => id)).toEqual(
      [...ids].sort(),
    );
    expect((JSON.parse(prefixed.stdout) as { schedules: unknown[] }).schedules).toHaveLength(3);
    expect(both).toMatchObject({ code: 2, stderr: expect.stringContaining('give --paused or --active, not both') });
    for (const id of ids) await timerCli('schedules', 'delete', id);
  });

  it('names the flag to fix when the API refuses a schedule, and asks for exactly one of --cron and --rate', async () => {
    // Act
    const zero = await timerCli('schedules', 'create', '--rate', '0 seconds', '--url', inbox());
    const both = await timerCli('schedules', 'create', '--rate', '1 minute', '--cron', '* * * * *', '--url', inbox());

    // Assess
    expect(zero.code).toBe(1);
    expect(zero.stderr).toContain('rate (--rate): must be at least 1 second');
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give --cron or --rate, exactly one of them');
  });
});

describe('Command: timer tenants revoke-key, rotate-secret, update', () => {
  it('revokes a key: a directory without a cached copy refuses it at once', async () => {
    // Prepare
    const { apiKey, keyId } = await createTenant('initech');
    const directory = () => cachedTenantDirectory(timer.tenantStore, systemClock, TENANT_CACHE_TTL_MS);
    const before = await authenticate(directory(), `Bearer ${apiKey}`);

    // Act
    const revoked = await timerCli('tenants', 'revoke-key', 'initech', keyId);
    const keys = await timerCli('tenants', 'keys', 'initech', '--json');

    // Assess
    expect(before.ok).toBe(true);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`up to ${TENANT_CACHE_TTL_MS / 1000} s`);
    expect(await authenticate(directory(), `Bearer ${apiKey}`)).toEqual({ ok: false, reason: 'invalid' });
    expect(JSON.parse(keys.stdout)).toEqual([expect.objectContaining({ keyId, revokedAt: expect.any(String) })]);
  });

  it('rotates the signing secret: old and new both sign during the overlap', async () => {
    // Prepare
    const { signingSecret } = await createTenant('hooli');

    // Act
    const rotated = await timerCli('tenants', 'rotate-secret', 'hooli', '--overlap-hours', '2', '--json');
    const tenant = await timer.tenantStore.getTenant('hooli');

    // Assess
    expect(rotated.code).toBe(0);
    const { signingSecret: newSecret } = JSON.parse(rotated.stdout) as { signingSecret: string };
    expect(tenant && activeSigningSecrets(tenant, Date.now())).toEqual([signingSecret, newSecret]);
    expect(tenant && activeSigningSecrets(tenant, Date.now() + 2 * 3600 * 1000 + 1)).toEqual([newSecret]);
  });

  it('updates the rate limit and allowed hosts, and drops the hosts with --any-host', async () => {
    // Prepare
    await createTenant('umbrella');

    // Act
    const limited = await timerCli(
      'tenants',
      'update',
      'umbrella',
      '--rate-limit',
      '7',
      '--allowed-hosts',
      'shop.example.com,*.umbrella.test',
    );
    const afterLimit = await timer.tenantStore.getTenant('umbrella');
    const opened = await timerCli('tenants', 'update', 'umbrella', '--any-host');
    const afterOpen = await timer.tenantStore.getTenant('umbrella');

    // Assess
    expect(limited.code).toBe(0);
    expect(afterLimit).toMatchObject({ rateLimitPerSecond: 7, allowedHosts: ['shop.example.com', '*.umbrella.test'] });
    expect(opened.code).toBe(0);
    expect(afterOpen?.allowedHosts).toBeUndefined();
    expect(afterOpen?.rateLimitPerSecond).toBe(7);
  });
});

describe('Command: timer tenants, without a running local mode', () => {
  it('opens the data folder itself, and leaves it for the next command', async () => {
    // Prepare
    const otherDir = await mkdtemp(join(tmpdir(), 'timer-cli-offline-'));
    otherDataDirs.push(otherDir);

    // Act
    const created = await timerCli('tenants', 'create', 'offline-co', '--data-dir', otherDir);
    const listed = await timerCli('tenants', 'list', '--data-dir', otherDir, '--json');

    // Assess
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toContain(`local data folder ${otherDir}`);
    expect((JSON.parse(listed.stdout) as Array<{ id: string }>).map((tenant) => tenant.id)).toEqual(['offline-co']);
  });
});

describe('Command: timer tenants --table', () => {
  afterEach(() => vi.unstubAllEnvs());

  it("uses the named table with the SDK's own settings, and says which flags to check when it does not exist", async () => {
    // Prepare: the SDK's own settings (endpoint, region, keys) point at local mode's dynalite.
    const endpoints = await runningLocalEndpoints(dataDir);
    vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', endpoints?.dynamodbEndpoint);
    vi.stubEnv('AWS_REGION', LOCAL_REGION);
    vi.stubEnv('AWS_ACCESS_KEY_ID', LOCAL_CREDENTIALS.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', LOCAL_CREDENTIALS.secretAccessKey);

    // Act
    const listed = await timerCli('tenants', 'list', '--table', LOCAL_TABLE_NAME, '--json');
    const missing = await timerCli('tenants', 'list', '--table', 'no-such-table');

    // Assess
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as Array<{ id: string }>).map((tenant) => tenant.id)).toContain('dev');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      'table no-such-table was not found: check --table (the stack output TableName) and --region',
    );
  });
});

describe('Command: timer dlq redrive', () => {
  it("moves local mode's dead letters back (none here)", async () => {
    // Act
    const redriven = await timerCli('dlq', 'redrive', '--json');

    // Assess
    expect(redriven.code).toBe(0);
    expect(JSON.parse(redriven.stdout)).toEqual({ moved: 0, taskIds: [] });
  });
});

describe('Command: timer dev', () => {
  it('refuses a second local mode on the same data folder, naming its pid and the fix', async () => {
    // Act
    const second = await timerCli('dev', '--port', '0');

    // Assess
    expect(second.code).toBe(1);
    expect(second.stderr).toBe(
      `Error: local mode is already running on ${dataDir} (pid ${process.pid}, API ${timer.apiUrl}); stop it first, or start another with its own --data-dir and TIMER_PORT\n`,
    );
  });

  it('says in one sentence that the port is taken and how to choose another, with no stack trace', async () => {
    // Prepare: `npm start` as a newcomer runs it, on another data folder but the port this process holds.
    const port = Number(new URL(timer.apiUrl).port);
    const otherDataDir = await mkdtemp(join(tmpdir(), 'timer-cli-busy-'));
    otherDataDirs.push(otherDataDir);

    // Act
    const started = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [join('node_modules', 'tsx', 'dist', 'cli.mjs'), join('bin', 'local.ts')],
        { env: { ...process.env, TIMER_PORT: String(port), TIMER_DATA_DIR: otherDataDir, TIMER_LOG_LEVEL: 'SILENT' } },
        (error, _stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stderr }),
      );
    });

    // Assess
    expect(started.code).toBe(1);
    expect(started.stderr).not.toMatch(/\n\s+at /);
    expect(started.stderr).toContain(
      `Error: port ${port} is already in use by another program (perhaps a local mode on another data folder): stop it, or start on a free port with TIMER_PORT=${port + 1} npm start`,
    );
  }, 60_000);
});

describe('Usage', () => {
  it.each(COMMANDS.map((definition) => definition.name))(
    'timer %s --help prints its usage and options',
    async (name) => {
      // Act
      const help = await timerCli(...name.split(' '), '--help');

      // Assess
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: timer ${name}\\b`));
      expect(help.stdout).toContain('--json');
    },
  );

  it.each(['tenants create', 'schedule', 'dlq redrive', 'dev'])(
    'timer help %s prints what that command prints for --help',
    async (name) => {
      // Act
      const viaHelp = await timerCli('help', ...name.split(' '));
      const viaFlag = await timerCli(...name.split(' '), '--help');

      // Assess
      expect(viaHelp).toEqual({ code: 0, stdout: viaFlag.stdout, stderr: '' });
    },
  );

  it('timer help alone prints the command list, and timer help tenants the group', async () => {
    // Act
    const help = await timerCli('help');
    const group = await timerCli('help', 'tenants');

    // Assess
    expect(help).toEqual({ code: 0, stdout: (await timerCli('--help')).stdout, stderr: '' });
    expect(group.code).toBe(0);
    expect(group.stdout).toMatch(/^Usage: timer tenants <command>/);
  });

  it("timer --version prints package.json's version", async () => {
    // Prepare
    const { version } = JSON.parse(await readFile(join(import.meta.dirname, '../../package.json'), 'utf8')) as {
      version: string;
    };

    // Act
    const printed = await timerCli('--version');

    // Assess
    expect(printed).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('lists every command in timer --help', async () => {
    // Act
    const help = await timerCli('--help');

    // Assess
    expect(help.code).toBe(0);
    for (const definition of COMMANDS) expect(help.stdout).toContain(definition.name);
  });

  it.each([
    [['tenants', 'create', 'acme2', '--rate', '5'], 'unknown option --rate; did you mean --rate-limit?'],
    [['tenants', 'create', 'Acme!'], '<id> "Acme!" must be 1 to 32 lowercase letters'],
    [['tenants', 'update', 'acme', '--rate-limit', 'lots'], '--rate-limit must be a whole number'],
    [['schedule', '--url', 'https://example.com'], 'give --in (such as 30s, 5m, 2h) or --at'],
    [
      ['schedule', '--in', '5m', '--window', '60', '--url', 'https://example.com'],
      '--window must be a whole number with a unit',
    ],
    [['get'], '<id> is missing'],
    [['list', '--status', 'PENDING'], 'give --biz-id or --biz-type'],
    [
      ['list', '--biz-id', 'order-1', '--status', 'done'],
      '--status must be one of PENDING, DELIVERING, DELIVERED, FAILED, CANCELLED',
    ],
    [['tenant', 'list'], 'did you mean "timer tenants"?'],
    [['tenants', 'revoke'], 'did you mean "timer tenants revoke-key"?'],
  ])('timer %j exits 2 and names the fix', async (argv, message) => {
    // Act
    const result = await timerCli(...argv);

    // Assess
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(message);
  });
});
