/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the signature is
 * HMAC-SHA256 over `${webhook-id}.${webhook-timestamp}.${body}` with the secret's
 * bytes, sent as `v1,<base64>`. Receivers can use any Standard Webhooks library.
 * The one implementation both the service (which signs every delivery) and the client
 * (which verifies one) import; it needs node:crypto and nothing else.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';
/** Receivers should reject timestamps further off than this, which bounds replays. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

export function generateSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

function secretBytes(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error(`a signing secret must start with "${SECRET_PREFIX}"`);
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

export interface SignedHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

/**
 * Signs with every secret given, space-separated as the standard allows: during a secret
 * rotation the old and the new both sign, so a receiver holding either one verifies.
 */
export function signWebhook(
  secrets: readonly string[],
  messageId: string,
  timestampSeconds: number,
  body: string,
): SignedHeaders {
  if (secrets.length === 0) throw new Error('a webhook needs at least one signing secret');
  const signatures = secrets.map(
    (secret) =>
      `v1,${createHmac('sha256', secretBytes(secret)).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64')}`,
  );
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signatures.join(' '),
  };
}

/** True if one of the header's space-separated signatures matches and the timestamp is fresh. */
export function verifyWebhook(
  secret: string,
  headers: Record<string, string | undefined>,
  body: string,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): boolean {
  const id = headers['webhook-id'];
  const timestamp = Number(headers['webhook-timestamp']);
  const signatures = headers['webhook-signature'];
  if (!id || !Number.isInteger(timestamp) || !signatures) return false;
  if (Math.abs(nowSeconds - timestamp) > TIMESTAMP_TOLERANCE_SECONDS) return false;
  const expected = Buffer.from(signWebhook([secret], id, timestamp, body)['webhook-signature']);
  return signatures.split(' ').some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
