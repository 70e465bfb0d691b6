/**
 * Local mode's development tenant: made on first start with a key that is printed once
 * and kept in the data directory (mode 0600) so later starts, tests and the CLI can find
 * it. TIMER_DEV_API_KEY fixes the key instead, for scripts that need a known one.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import type { TenantStore } from '../../functions/core/tenants/tenants.js';
import {
  activeSigningSecrets,
  apiKeyRecordOf,
  issueApiKey,
  issuedUnder,
  keyringOf,
  newTenant,
  parseApiKey,
} from '../../functions/core/tenants/tenants.js';

export const DEV_TENANT_ID = 'dev';
export const DEV_API_KEY_ENV = 'TIMER_DEV_API_KEY';
export const DEV_API_KEY_FILE = 'dev-api-key';
/** Local runs submit in bursts (benchmarks, tests); the limiter still works, just further out. */
const DEV_RATE_LIMIT_PER_SECOND = 10_000;

export interface DevTenant {
  readonly apiKey: string;
  /** The tenant's current webhook signing secret. */
  readonly signingSecret: string;
  /** True when this start made the key (so it should be shown). */
  readonly keyIsNew: boolean;
  /** Where the key is kept, if it is. */
  readonly keyFile?: string;
}

/** The key kept in `file`, or undefined if there is none. */
export async function readKeyFile(file: string | undefined): Promise<string | undefined> {
  if (!file) return undefined;
  try {
    return (await readFile(file, 'utf8')).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Makes sure the development tenant and its key exist, and says what they are. */
export async function ensureDevTenant(
  store: TenantStore,
  dataDir: string | undefined,
  nowMs: number,
): Promise<DevTenant> {
  await store.createTenant(
    newTenant(DEV_TENANT_ID, nowMs, { name: 'Local development', rateLimitPerSecond: DEV_RATE_LIMIT_PER_SECOND }),
  );
  const tenant = await store.getTenant(DEV_TENANT_ID);
  if (!tenant) throw new Error('the development tenant could not be read back after creating it');
  const signingSecret = activeSigningSecrets(tenant, nowMs).at(-1);
  if (!signingSecret) throw new Error('the development tenant has no active signing secret');

  const keyFile = dataDir ? join(dataDir, DEV_API_KEY_FILE) : undefined;
  const given = process.env[DEV_API_KEY_ENV] || (await readKeyFile(keyFile));
  if (given) {
    const parsed = parseApiKey(given);
    const source = process.env[DEV_API_KEY_ENV] ? DEV_API_KEY_ENV : keyFile;
    if (parsed?.tenantId !== DEV_TENANT_ID) {
      throw new Error(
        `${source} must hold an API key of the "${DEV_TENANT_ID}" tenant (tk_${DEV_TENANT_ID}_<12 characters>_<43 characters>_<11 characters>); unset it or delete the file to get a new one`,
      );
    }
    const record = apiKeyRecordOf(parsed, nowMs, 'local development');
    const stored = await store.getApiKey(parsed.tenantId, parsed.keyId);
    if (!stored) await store.putApiKey(record);
    else if (stored.revokedAtMs !== undefined || stored.secretHash !== record.secretHash) {
      throw new Error(
        `the development API key in ${source} was revoked or does not match key ${parsed.keyId}; remove it to get a new one`,
      );
    }
    // Stored before the keyring is first made, a key from before tags is among the keys it lists.
    if (!issuedUnder(await keyringOf(store, nowMs), parsed)) {
      throw new Error(
        `the development API key in ${source} was not issued under this data directory's keyring, so the api would refuse it; remove it to get a new one`,
      );
    }
    return { apiKey: given, signingSecret, keyIsNew: false, ...(keyFile && { keyFile }) };
  }
  const { apiKey } = await issueApiKey(store, DEV_TENANT_ID, nowMs, 'local development');
  if (keyFile) await writeFile(keyFile, `${apiKey}\n`, { mode: 0o600 });
  return { apiKey, signingSecret, keyIsNew: true, ...(keyFile && { keyFile }) };
}
