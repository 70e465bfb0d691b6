/**
 * Tenants and their API keys. A tenant owns tasks, webhook signing secrets and limits;
 * an API key names its tenant and key id in clear and carries a 256-bit secret of which
 * only a SHA-256 digest is stored. A 256-bit random secret needs no slow hash: guessing
 * it is hopeless, and the digest makes a leaked table useless for calling the API. A key
 * also carries a tag, an HMAC of its tenant and key id under the deployment's keyring, so
 * the api refuses a made-up key before it reads anything.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

import { generateSigningSecret } from '../../contract/webhook-signature.js';
import type { Clock } from '../kernel/task.js';
import { ttlCache } from '../kernel/ttl-cache.js';

export interface SigningSecret {
  /** `whsec_<base64>`, the Standard Webhooks form. */
  readonly secret: string;
  readonly createdAtMs: number;
  /** Set when a newer secret replaced it; deliveries are signed with it until then, so receivers can switch over. */
  readonly retiresAtMs?: number;
}

export interface Tenant {
  readonly id: string;
  readonly name: string;
  readonly createdAtMs: number;
  /** Every delivery is signed with each secret that has not retired: one, or two during a rotation. */
  readonly signingSecrets: readonly SigningSecret[];
  /** Hosts webhook targets may name (exact, or `*.example.com` for subdomains); unset allows any public host. */
  readonly allowedHosts?: readonly string[];
  /** API requests per second the tenant may make; more are answered 429. */
  readonly rateLimitPerSecond: number;
  /** Bumped by every change, so concurrent changes cannot overwrite each other. */
  readonly version: number;
}

export interface ApiKeyRecord {
  readonly tenantId: string;
  readonly keyId: string;
  /** SHA-256 of the key's secret part, base64url. */
  readonly secretHash: string;
  readonly createdAtMs: number;
  readonly label?: string;
  readonly revokedAtMs?: number;
}

/**
 * The deployment's secret for tagging API keys, made once, by whichever of the CLI, local mode or
 * the api needs it first. The tag is not what authenticates a caller (the key's secret is); it
 * lets the api tell a key it issued from a made-up one without a read, so a flood of made-up
 * keys costs no DynamoDB read however many distinct keys it holds.
 */
export interface Keyring {
  /** 256 random bits, base64url: the HMAC key of every tag. */
  readonly tagSecret: string;
  readonly createdAtMs: number;
  /**
   * `<tenant>_<key id>` of each key that was live when the keyring was made: issued before keys
   * carried tags, they have none, and keep working because they are listed here.
   */
  readonly untaggedKeys: ReadonlySet<string>;
}

export interface ReadOptions {
  readonly consistent?: boolean;
}

export interface TenantStore {
  /** Stores a new tenant; false if the id is taken. */
  createTenant(tenant: Tenant): Promise<boolean>;
  /** A strongly consistent read, unless `consistent` is false (half the cost, possibly a second stale). */
  getTenant(id: string, options?: ReadOptions): Promise<Tenant | undefined>;
  listTenants(): Promise<Tenant[]>;
  /** Replaces the tenant if it is still at `tenant.version - 1`; false if someone changed it first. */
  updateTenant(tenant: Tenant): Promise<boolean>;
  putApiKey(record: ApiKeyRecord): Promise<void>;
  getApiKey(tenantId: string, keyId: string, options?: ReadOptions): Promise<ApiKeyRecord | undefined>;
  listApiKeys(tenantId: string): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked; false if there is no such key. */
  revokeApiKey(tenantId: string, keyId: string, nowMs: number): Promise<boolean>;
  /** The deployment's keyring, or undefined before one is made; a strongly consistent read. */
  getKeyring(): Promise<Keyring | undefined>;
  /** Stores the keyring; false if there is one already. */
  createKeyring(keyring: Keyring): Promise<boolean>;
}

/** The default rate limit: 200 requests a second is 20,000 tasks a second through the batch route. */
export const DEFAULT_RATE_LIMIT_PER_SECOND = 200;
/** How long a rotated-out signing secret keeps signing, unless the rotation says otherwise. */
export const DEFAULT_ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

const TENANT_ID = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;
const KEY_ID_CHARS = 12;
const KEY_ID_ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
/** The secret is 43 characters and the tag 11, so a key with a tag is told from one without by its length. */
const API_KEY =
  /^tk_([a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?)_([0-9a-hjkmnp-tv-z]{12})_([A-Za-z0-9_-]{43})(?:_([A-Za-z0-9_-]{11}))?$/;
/** 64 bits of HMAC: a made-up tag passes once in 2^64 tries. */
const TAG_BYTES = 8;

/** Why a tenant id is unusable, or undefined if it is fine. */
export function tenantIdProblem(id: string): string | undefined {
  return TENANT_ID.test(id)
    ? undefined
    : 'must be 1 to 32 lowercase letters, digits and hyphens, starting and ending with a letter or digit (for example "acme-payments")';
}

function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

function newKeyId(): string {
  let id = '';
  for (const byte of randomBytes(KEY_ID_CHARS)) id += KEY_ID_ALPHABET[byte % 32];
  return id;
}

export interface ParsedApiKey {
  readonly tenantId: string;
  readonly keyId: string;
  readonly secret: string;
  /** Absent from keys issued before the keyring. */
  readonly tag?: string;
}

/** Splits `tk_<tenant>_<keyId>_<secret>_<tag>` (or a key from before tags, without `_<tag>`); undefined for anything else. */
export function parseApiKey(text: string): ParsedApiKey | undefined {
  const match = API_KEY.exec(text);
  if (!match) return undefined;
  const [, tenantId = '', keyId = '', secret = '', tag] = match;
  return { tenantId, keyId, secret, ...(tag !== undefined && { tag }) };
}

const untaggedName = (tenantId: string, keyId: string) => `${tenantId}_${keyId}`;

function tagOf(keyring: Keyring, tenantId: string, keyId: string): Buffer {
  return createHmac('sha256', Buffer.from(keyring.tagSecret, 'base64url'))
    .update(`${tenantId}_${keyId}`)
    .digest()
    .subarray(0, TAG_BYTES);
}

/** Whether the keyring vouches for the key: its tag is right, or it has none and was live when the keyring was made. */
export function issuedUnder(keyring: Keyring, key: ParsedApiKey): boolean {
  if (key.tag === undefined) return keyring.untaggedKeys.has(untaggedName(key.tenantId, key.keyId));
  const given = Buffer.from(key.tag, 'base64url');
  const expected = tagOf(keyring, key.tenantId, key.keyId);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A new keyring; `live` are the keys issued before it, which carry no tag. */
export function newKeyring(nowMs: number, live: readonly ApiKeyRecord[] = []): Keyring {
  return {
    tagSecret: randomBytes(32).toString('base64url'),
    createdAtMs: nowMs,
    untaggedKeys: new Set(
      live.filter((key) => key.revokedAtMs === undefined).map((key) => untaggedName(key.tenantId, key.keyId)),
    ),
  };
}

/**
 * The deployment's keyring, made now if there is none. Every key issued before it has no tag, so
 * the keys live at that moment are listed in it and keep working; a key an older CLI issues after
 * it is refused. Two makers at once agree: the second's write fails and it reads the first's.
 */
export async function keyringOf(store: TenantStore, nowMs: number): Promise<Keyring> {
  const stored = await store.getKeyring();
  if (stored) return stored;
  const tenants = await store.listTenants();
  const live = (await Promise.all(tenants.map((tenant) => store.listApiKeys(tenant.id)))).flat();
  const made = newKeyring(nowMs, live);
  if (await store.createKeyring(made)) return made;
  const first = await store.getKeyring();
  if (!first) throw new Error('another writer made the keyring, but it could not be read back');
  return first;
}

/** A new key for the tenant, tagged under the keyring: the text to hand to its owner (shown once) and the record to store. */
export function newApiKey(
  keyring: Keyring,
  tenantId: string,
  nowMs: number,
  label?: string,
): { apiKey: string; record: ApiKeyRecord } {
  const keyId = newKeyId();
  const secret = randomBytes(32).toString('base64url');
  const tag = tagOf(keyring, tenantId, keyId).toString('base64url');
  return {
    apiKey: `tk_${tenantId}_${keyId}_${secret}_${tag}`,
    record: {
      tenantId,
      keyId,
      secretHash: hashSecret(secret).toString('base64url'),
      createdAtMs: nowMs,
      ...(label !== undefined && { label }),
    },
  };
}

/** Issues the tenant a new key under the deployment's keyring (made now if there is none) and stores its record. */
export async function issueApiKey(
  store: TenantStore,
  tenantId: string,
  nowMs: number,
  label?: string,
): Promise<{ apiKey: string; record: ApiKeyRecord }> {
  const issued = newApiKey(await keyringOf(store, nowMs), tenantId, nowMs, label);
  await store.putApiKey(issued.record);
  return issued;
}

/** The record that a known key text would be stored as; local mode uses it to adopt a key given in its environment. */
export function apiKeyRecordOf(parsed: ParsedApiKey, nowMs: number, label?: string): ApiKeyRecord {
  return {
    tenantId: parsed.tenantId,
    keyId: parsed.keyId,
    secretHash: hashSecret(parsed.secret).toString('base64url'),
    createdAtMs: nowMs,
    ...(label !== undefined && { label }),
  };
}

/** Compared whatever the lookup found, so a missing key costs the same as a wrong secret. */
const NO_SUCH_KEY_HASH = Buffer.alloc(32);

export type Authentication =
  | { readonly ok: true; readonly tenant: Tenant; readonly keyId: string }
  | { readonly ok: false; readonly reason: 'missing' | 'invalid' };

/**
 * Who is calling, from an `Authorization: Bearer <api key>` header. A malformed, unknown,
 * revoked or wrong key all answer the same `invalid`, so a caller learns nothing about
 * which tenants or key ids exist; the digest comparison takes constant time. A key the
 * keyring does not vouch for is refused before the directory is asked, so it costs no read.
 */
export async function authenticate(
  directory: TenantDirectory,
  authorization: string | undefined,
): Promise<Authentication> {
  const bearer = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  if (!bearer) return { ok: false, reason: 'missing' };
  const parsed = parseApiKey(bearer[1] ?? '');
  if (!parsed || !issuedUnder(await directory.keyring(), parsed)) return { ok: false, reason: 'invalid' };
  const record = await directory.apiKey(parsed.tenantId, parsed.keyId);
  const stored = record ? Buffer.from(record.secretHash, 'base64url') : NO_SUCH_KEY_HASH;
  const given = hashSecret(parsed.secret);
  const matches = stored.length === given.length && timingSafeEqual(stored, given);
  if (!record || !matches || record.revokedAtMs !== undefined) return { ok: false, reason: 'invalid' };
  const tenant = await directory.tenant(parsed.tenantId);
  return tenant ? { ok: true, tenant, keyId: parsed.keyId } : { ok: false, reason: 'invalid' };
}

/** The secrets deliveries are signed with now: those not yet retired. */
export function activeSigningSecrets(tenant: Tenant, nowMs: number): string[] {
  return tenant.signingSecrets
    .filter((entry) => entry.retiresAtMs === undefined || entry.retiresAtMs > nowMs)
    .map((entry) => entry.secret);
}

export function newTenant(
  id: string,
  nowMs: number,
  options: {
    name?: string;
    allowedHosts?: readonly string[];
    rateLimitPerSecond?: number;
    signingSecret?: string;
  } = {},
): Tenant {
  return {
    id,
    name: options.name ?? id,
    createdAtMs: nowMs,
    signingSecrets: [{ secret: options.signingSecret ?? generateSigningSecret(), createdAtMs: nowMs }],
    ...(options.allowedHosts !== undefined && { allowedHosts: options.allowedHosts }),
    rateLimitPerSecond: options.rateLimitPerSecond ?? DEFAULT_RATE_LIMIT_PER_SECOND,
    version: 1,
  };
}

/**
 * Adds a new signing secret. Secrets still signing keep doing so for `overlapMs` more (or
 * less, if they were due to retire sooner), so receivers can switch to the new one first;
 * secrets already retired are dropped.
 */
export function withRotatedSecret(
  tenant: Tenant,
  nowMs: number,
  overlapMs: number,
  secret = generateSigningSecret(),
): Tenant {
  const retiresAtMs = nowMs + overlapMs;
  const kept = tenant.signingSecrets
    .filter((entry) => entry.retiresAtMs === undefined || entry.retiresAtMs > nowMs)
    .map((entry) => ({ ...entry, retiresAtMs: Math.min(entry.retiresAtMs ?? retiresAtMs, retiresAtMs) }))
    .filter((entry) => entry.retiresAtMs > nowMs);
  return { ...tenant, signingSecrets: [...kept, { secret, createdAtMs: nowMs }], version: tenant.version + 1 };
}

/** Reads tenants and keys, remembering what it read for `ttlMs`; revocations and changes take effect within that. */
export interface TenantDirectory {
  tenant(id: string): Promise<Tenant | undefined>;
  apiKey(tenantId: string, keyId: string): Promise<ApiKeyRecord | undefined>;
  /** The deployment's keyring, read (or made) once and then remembered: it never changes. */
  keyring(): Promise<Keyring>;
}

/**
 * Reads through a cache, each miss with an eventually consistent read first: every cold api and
 * callback instance reads each tenant and key it serves, so a burst of cold starts (a latency
 * blip raises concurrency, and each new instance starts cold) met the partition's 3,000 strongly
 * consistent reads a second when all tenants shared one; eventual reads cost half and any
 * replica serves them. An
 * item found may be a second stale, which the cache's TTL already allows; one not found is read
 * again strongly before it is remembered as missing, so a tenant or key created a moment ago is
 * never refused for the cache's lifetime.
 */
export function cachedTenantDirectory(store: TenantStore, clock: Clock, ttlMs: number): TenantDirectory {
  // Made-up key ids are remembered too, as missing, within the missing entries' own bound, so they never push out a real key.
  const remembered = ttlCache(clock, ttlMs);
  const eventuallyThenStrongly = async <T>(read: (options: ReadOptions) => Promise<T | undefined>) =>
    (await read({ consistent: false })) ?? read({ consistent: true });
  let keyring: Promise<Keyring> | undefined;
  return {
    keyring: () =>
      (keyring ??= keyringOf(store, clock.now()).catch((error: unknown) => {
        keyring = undefined;
        throw error;
      })),
    tenant: (id) =>
      remembered(JSON.stringify(['tenant', id]), () =>
        eventuallyThenStrongly((options) => store.getTenant(id, options)),
      ),
    apiKey: (tenantId, keyId) =>
      remembered(JSON.stringify(['key', tenantId, keyId]), () =>
        eventuallyThenStrongly((options) => store.getApiKey(tenantId, keyId, options)),
      ),
  };
}

/** How long the api and callback remember a tenant or key; a revoked key stops working within this. */
export const TENANT_CACHE_TTL_MS = 30_000;

/** What a rate limit counts: a tenant's api requests, or its callbacks of one bizType. */
export interface CounterSubject {
  readonly tenantId: string;
  readonly bizType?: string;
}

/** A subject's counter, or, with `share`, one of the counters its limit is spread over (see sharesOf). */
export interface CounterShare extends CounterSubject {
  readonly share?: number;
}

/** Admits one request of `subject` in `second` if the second's admissions stay within `limit`. */
export interface RateLimiter {
  admit(subject: CounterSubject, second: number, limit: number): Promise<boolean>;
}

export interface RequestCounter {
  /**
   * Counts `count` (default 1) requests of `subject` in `second`, if the second's total stays
   * within `limit`; otherwise counts nothing and answers false. The store builds the counter's key.
   */
  admit(subject: CounterShare, second: number, limit: number, count?: number): Promise<boolean>;
}
