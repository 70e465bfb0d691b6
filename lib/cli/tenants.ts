/** `timer tenants …`: tenants, their API keys and their webhook signing secrets, straight in the task table. */
import {
  activeSigningSecrets,
  type ApiKeyRecord,
  DEFAULT_RATE_LIMIT_PER_SECOND,
  DEFAULT_ROTATION_OVERLAP_MS,
  issueApiKey,
  newTenant,
  type Tenant,
  TENANT_CACHE_TTL_MS,
  tenantIdProblem,
  type TenantStore,
  withRotatedSecret,
} from '../../functions/core/tenants/tenants.js';
import { type Command, command, CommandFailed, COMMON_OPTIONS, UsageError } from './command.js';
import { openTenantStore, TABLE_OPTIONS } from './connect.js';
import { type CliIo, fields, isoTime, table } from './io.js';

const STORE_OPTIONS = { ...TABLE_OPTIONS, ...COMMON_OPTIONS } as const;
const TENANT_ARGUMENT = { name: 'tenant', description: 'The tenant id, as `timer tenants list` shows it' } as const;
const HOUR_MS = 3600 * 1000;
/** A changed tenant is written only if nobody changed it since it was read; a few rereads settle any realistic race. */
const UPDATE_ATTEMPTS = 5;

const RATE_LIMIT_OPTION = {
  type: 'string',
  placeholder: 'N',
  description: 'API requests a second the tenant may make; more are answered 429',
} as const;
const ALLOWED_HOSTS_OPTION = {
  type: 'string',
  placeholder: 'HOSTS',
  description: 'Comma-separated hosts its webhooks may call: shop.example.com, or *.example.com for subdomains',
} as const;

function rateLimitOf(text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1) {
    throw new UsageError(`--rate-limit must be a whole number of requests a second, at least 1 (got "${text}")`);
  }
  return value;
}

const HOST_PATTERN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function allowedHostsOf(text: string): string[] {
  const hosts = text
    .split(',')
    .map((host) => host.trim().toLowerCase())
    .filter((host) => host !== '');
  if (hosts.length === 0)
    throw new UsageError('--allowed-hosts needs at least one host (to allow any host, use --any-host)');
  const bad = hosts.find((host) => !HOST_PATTERN.test(host));
  if (bad !== undefined) {
    throw new UsageError(
      `--allowed-hosts: "${bad}" is not a host name; give names like shop.example.com, or *.example.com for its subdomains, separated by commas`,
    );
  }
  return hosts;
}

async function withTenantStore<T>(
  call: { readonly options: Parameters<typeof openTenantStore>[0]; readonly io: CliIo },
  use: (store: TenantStore, location: string) => Promise<T>,
): Promise<T> {
  const opened = await openTenantStore(call.options, call.io);
  try {
    return await use(opened.store, opened.location);
  } catch (error) {
    throw withAwsHint(error, opened.location);
  } finally {
    await opened.close();
  }
}

/** The two AWS errors an operator is likely to meet first, with what to check. */
function withAwsHint(error: unknown, location: string): unknown {
  const name = error instanceof Error ? error.name : '';
  if (name === 'ResourceNotFoundException') {
    return new CommandFailed(`${location} was not found: check --table (the stack output TableName) and --region`);
  }
  if (name === 'CredentialsProviderError') {
    return new CommandFailed(
      `${(error as Error).message}: --table works with your AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID or \`aws sso login\`)`,
    );
  }
  return error;
}

async function existingTenant(store: TenantStore, id: string, location: string): Promise<Tenant> {
  const tenant = await store.getTenant(id);
  if (!tenant)
    throw new CommandFailed(`there is no tenant "${id}" in ${location}; \`timer tenants list\` shows the tenants`);
  return tenant;
}

/** Applies `change` to the tenant's current version, reading it again whenever another writer got there first. */
async function changeTenant(
  store: TenantStore,
  id: string,
  location: string,
  change: (tenant: Tenant) => Tenant,
): Promise<Tenant> {
  for (let attempt = 1; attempt <= UPDATE_ATTEMPTS; attempt++) {
    const changed = change(await existingTenant(store, id, location));
    if (await store.updateTenant(changed)) return changed;
  }
  throw new CommandFailed(`tenant "${id}" kept being changed by someone else at the same time; run the command again`);
}

/** Signing secrets still in use, and when the rotation that left more than one of them ends. */
function signingState(tenant: Tenant, nowMs: number) {
  const retiring = tenant.signingSecrets.flatMap((entry) =>
    entry.retiresAtMs !== undefined && entry.retiresAtMs > nowMs ? [entry.retiresAtMs] : [],
  );
  return {
    active: activeSigningSecrets(tenant, nowMs).length,
    rotationEndsAt: retiring.length > 0 ? isoTime(Math.max(...retiring)) : null,
  };
}

/** A tenant as the CLI shows it: never key digests or secrets. */
function tenantSummary(tenant: Tenant, keys: readonly ApiKeyRecord[], nowMs: number) {
  return {
    id: tenant.id,
    name: tenant.name,
    createdAt: isoTime(tenant.createdAtMs),
    rateLimitPerSecond: tenant.rateLimitPerSecond,
    allowedHosts: tenant.allowedHosts ?? null,
    activeKeys: keys.filter((key) => key.revokedAtMs === undefined).length,
    signingSecrets: signingState(tenant, nowMs),
  };
}

const hostsText = (hosts: readonly string[] | null | undefined) => (hosts ? hosts.join(',') : 'any');

function secretsText(state: ReturnType<typeof signingState>): string {
  return state.rotationEndsAt ? `${state.active} (rotating until ${state.rotationEndsAt})` : String(state.active);
}

const KEY_SHOWN_ONCE = 'The API key is shown only now and cannot be shown again: keep it in your secret store.';

const createTenant = command({
  name: 'tenants create',
  summary: 'Create a tenant, its first API key and its webhook signing secret',
  usage: '<id> [--name NAME] [--rate-limit N] [--allowed-hosts HOSTS]',
  arguments: [
    {
      name: 'id',
      description: 'The new tenant id, such as acme-payments: lowercase letters, digits and hyphens, at most 32',
    },
  ],
  options: {
    name: { type: 'string', placeholder: 'NAME', description: 'A name for people (default: the id)' },
    'rate-limit': {
      ...RATE_LIMIT_OPTION,
      description: `${RATE_LIMIT_OPTION.description} (default ${DEFAULT_RATE_LIMIT_PER_SECOND})`,
    },
    'allowed-hosts': {
      ...ALLOWED_HOSTS_OPTION,
      description: `${ALLOWED_HOSTS_OPTION.description} (default: any public host)`,
    },
    ...STORE_OPTIONS,
  },
  async run(call) {
    const { id } = call.args;
    const problem = tenantIdProblem(id);
    if (problem) throw new UsageError(`<id> "${id}" ${problem}`);
    const nowMs = Date.now();
    const tenant = newTenant(id, nowMs, {
      ...(call.options.name !== undefined && { name: call.options.name }),
      ...(call.options['rate-limit'] !== undefined && { rateLimitPerSecond: rateLimitOf(call.options['rate-limit']) }),
      ...(call.options['allowed-hosts'] !== undefined && {
        allowedHosts: allowedHostsOf(call.options['allowed-hosts']),
      }),
    });
    await withTenantStore(call, async (store, location) => {
      if (!(await store.createTenant(tenant))) {
        throw new CommandFailed(
          `tenant "${id}" already exists in ${location}; \`timer tenants create-key ${id}\` gives it another key`,
        );
      }
      const { apiKey, record } = await issueApiKey(store, id, nowMs);
      const signingSecret = tenant.signingSecrets[0]?.secret ?? '';
      call.output(
        {
          tenant: tenantSummary(tenant, [record], nowMs),
          apiKey,
          keyId: record.keyId,
          signingSecret,
          notice: KEY_SHOWN_ONCE,
        },
        [
          `Created tenant "${id}" in ${location}.`,
          fields([
            ['Name', tenant.name],
            ['Rate limit', `${tenant.rateLimitPerSecond} requests a second`],
            ['Allowed hosts', tenant.allowedHosts ? hostsText(tenant.allowedHosts) : 'any public host'],
            ['Signing secret', `${signingSecret}  (webhooks are signed with it; receivers verify with it)`],
            ['API key', `${apiKey}  (key id ${record.keyId})`],
          ]),
          '',
          KEY_SHOWN_ONCE,
        ].join('\n'),
      );
    });
  },
});

const listTenants = command({
  name: 'tenants list',
  summary: 'List tenants with their limits, active keys and signing secrets',
  usage: '',
  arguments: [],
  options: STORE_OPTIONS,
  async run(call) {
    await withTenantStore(call, async (store, location) => {
      const nowMs = Date.now();
      const tenants = await store.listTenants();
      const summaries = await Promise.all(
        tenants.map(async (tenant) => tenantSummary(tenant, await store.listApiKeys(tenant.id), nowMs)),
      );
      call.output(
        summaries,
        summaries.length === 0
          ? `No tenants in ${location}; \`timer tenants create <id>\` makes one.`
          : [
              `Tenants in ${location}:`,
              table(
                ['ID', 'NAME', 'RATE LIMIT', 'ALLOWED HOSTS', 'ACTIVE KEYS', 'SIGNING SECRETS'],
                summaries.map((tenant) => [
                  tenant.id,
                  tenant.name,
                  `${tenant.rateLimitPerSecond}/s`,
                  hostsText(tenant.allowedHosts),
                  String(tenant.activeKeys),
                  secretsText(tenant.signingSecrets),
                ]),
              ),
            ].join('\n'),
      );
    });
  },
});

const listKeys = command({
  name: 'tenants keys',
  summary: "List a tenant's API keys: ids, labels, when made and revoked",
  usage: '<tenant>',
  arguments: [TENANT_ARGUMENT],
  options: STORE_OPTIONS,
  async run(call) {
    const { tenant: id } = call.args;
    await withTenantStore(call, async (store, location) => {
      await existingTenant(store, id, location);
      const keys = (await store.listApiKeys(id)).sort((a, b) => a.createdAtMs - b.createdAtMs);
      const views = keys.map((key) => ({
        keyId: key.keyId,
        label: key.label ?? null,
        createdAt: isoTime(key.createdAtMs),
        revokedAt: key.revokedAtMs === undefined ? null : isoTime(key.revokedAtMs),
      }));
      call.output(
        views,
        [
          `API keys of tenant "${id}":`,
          table(
            ['KEY ID', 'LABEL', 'CREATED', 'REVOKED'],
            views.map((key) => [key.keyId, key.label ?? '-', key.createdAt, key.revokedAt ?? '-']),
          ),
        ].join('\n'),
      );
    });
  },
});

const createKey = command({
  name: 'tenants create-key',
  summary: 'Give a tenant another API key (for a new caller, or to replace a key)',
  usage: '<tenant> [--label LABEL]',
  arguments: [TENANT_ARGUMENT],
  options: {
    label: { type: 'string', placeholder: 'LABEL', description: 'What the key is for, shown by `timer tenants keys`' },
    ...STORE_OPTIONS,
  },
  async run(call) {
    const { tenant: id } = call.args;
    await withTenantStore(call, async (store, location) => {
      await existingTenant(store, id, location);
      const { apiKey, record } = await issueApiKey(store, id, Date.now(), call.options.label);
      call.output(
        { tenant: id, keyId: record.keyId, apiKey, notice: KEY_SHOWN_ONCE },
        [`New API key for tenant "${id}" (key id ${record.keyId}):`, `  ${apiKey}`, '', KEY_SHOWN_ONCE].join('\n'),
      );
    });
  },
});

const cacheSeconds = TENANT_CACHE_TTL_MS / 1000;

const revokeKey = command({
  name: 'tenants revoke-key',
  summary: "Revoke one of a tenant's API keys",
  usage: '<tenant> <keyId>',
  details: `Running api instances remember keys for up to ${cacheSeconds} s (TENANT_CACHE_TTL_MS), so they may accept a revoked key that long.`,
  arguments: [TENANT_ARGUMENT, { name: 'keyId', description: 'The key id, as `timer tenants keys <tenant>` shows it' }],
  options: STORE_OPTIONS,
  async run(call) {
    const { tenant: id, keyId } = call.args;
    await withTenantStore(call, async (store, location) => {
      const key = await store.getApiKey(id, keyId);
      if (!key) {
        throw new CommandFailed(
          `tenant "${id}" has no key "${keyId}" in ${location}; \`timer tenants keys ${id}\` lists its keys`,
        );
      }
      const nowMs = Date.now();
      const alreadyRevoked = key.revokedAtMs !== undefined;
      if (!alreadyRevoked) await store.revokeApiKey(id, keyId, nowMs);
      const revokedAt = isoTime(key.revokedAtMs ?? nowMs);
      call.output(
        { tenant: id, keyId, revokedAt, alreadyRevoked, acceptedForUpToMs: TENANT_CACHE_TTL_MS },
        alreadyRevoked
          ? `Key ${keyId} of tenant "${id}" was already revoked at ${revokedAt}.`
          : `Revoked key ${keyId} of tenant "${id}". Running api instances may still accept it for up to ${cacheSeconds} s (TENANT_CACHE_TTL_MS), while their cached copy lasts.`,
      );
    });
  },
});

function overlapMsOf(text: string | undefined): number {
  if (text === undefined) return DEFAULT_ROTATION_OVERLAP_MS;
  const hours = Number(text);
  if (text.trim() === '' || !Number.isFinite(hours) || hours < 0) {
    throw new UsageError(`--overlap-hours must be a number of hours, 0 or more (got "${text}")`);
  }
  return hours * HOUR_MS;
}

const rotateSecret = command({
  name: 'tenants rotate-secret',
  summary: 'Add a new webhook signing secret; the old one keeps signing during the overlap',
  usage: '<tenant> [--overlap-hours H]',
  details:
    'Deliveries are signed with every active secret, so receivers that know either one keep verifying. Give receivers the new secret within the overlap.',
  arguments: [TENANT_ARGUMENT],
  options: {
    'overlap-hours': {
      type: 'string',
      placeholder: 'H',
      description: `How long the current secret keeps signing too (default ${DEFAULT_ROTATION_OVERLAP_MS / HOUR_MS})`,
    },
    ...STORE_OPTIONS,
  },
  async run(call) {
    const { tenant: id } = call.args;
    const overlapMs = overlapMsOf(call.options['overlap-hours']);
    await withTenantStore(call, async (store, location) => {
      const nowMs = Date.now();
      const rotated = await changeTenant(store, id, location, (tenant) => withRotatedSecret(tenant, nowMs, overlapMs));
      const newest = rotated.signingSecrets.at(-1)?.secret ?? '';
      const state = signingState(rotated, nowMs);
      call.output(
        { tenant: id, signingSecret: newest, signingSecrets: state },
        [
          `Rotated the signing secret of tenant "${id}".`,
          fields([
            ['New secret', newest],
            ['Active secrets', secretsText(state)],
          ]),
          '',
          `Deliveries are signed with every active secret; running instances pick up the change within ${cacheSeconds} s.`,
        ].join('\n'),
      );
    });
  },
});

const updateTenant = command({
  name: 'tenants update',
  summary: "Change a tenant's name, rate limit or allowed webhook hosts",
  usage: '<tenant> [--name NAME] [--rate-limit N] [--allowed-hosts HOSTS | --any-host]',
  arguments: [TENANT_ARGUMENT],
  options: {
    name: { type: 'string', placeholder: 'NAME', description: 'A name for people' },
    'rate-limit': RATE_LIMIT_OPTION,
    'allowed-hosts': {
      ...ALLOWED_HOSTS_OPTION,
      description: `${ALLOWED_HOSTS_OPTION.description} (replaces the list)`,
    },
    'any-host': { type: 'boolean', description: 'Drop the host list: webhooks may call any public host' },
    ...STORE_OPTIONS,
  },
  async run(call) {
    const { tenant: id } = call.args;
    const { name, 'rate-limit': rateLimit, 'allowed-hosts': hosts, 'any-host': anyHost } = call.options;
    if (hosts !== undefined && anyHost) throw new UsageError('give --allowed-hosts or --any-host, not both');
    if (name === undefined && rateLimit === undefined && hosts === undefined && !anyHost) {
      throw new UsageError('nothing to change: give --name, --rate-limit, --allowed-hosts or --any-host');
    }
    const rateLimitPerSecond = rateLimit === undefined ? undefined : rateLimitOf(rateLimit);
    const allowedHosts = hosts === undefined ? undefined : allowedHostsOf(hosts);
    await withTenantStore(call, async (store, location) => {
      const updated = await changeTenant(store, id, location, ({ allowedHosts: current, ...tenant }) => {
        const hostsAfter = anyHost ? undefined : (allowedHosts ?? current);
        return {
          ...tenant,
          ...(name !== undefined && { name }),
          ...(rateLimitPerSecond !== undefined && { rateLimitPerSecond }),
          ...(hostsAfter && { allowedHosts: hostsAfter }),
          version: tenant.version + 1,
        };
      });
      const summary = tenantSummary(updated, await store.listApiKeys(id), Date.now());
      call.output(
        summary,
        [
          `Updated tenant "${id}".`,
          fields([
            ['Name', summary.name],
            ['Rate limit', `${summary.rateLimitPerSecond} requests a second`],
            ['Allowed hosts', summary.allowedHosts ? hostsText(summary.allowedHosts) : 'any public host'],
          ]),
          '',
          `Running instances pick up the change within ${cacheSeconds} s.`,
        ].join('\n'),
      );
    });
  },
});

export const TENANT_COMMANDS: readonly Command[] = [
  createTenant,
  listTenants,
  listKeys,
  createKey,
  revokeKey,
  rotateSecret,
  updateTenant,
];
