import { createHmac } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { generateSigningSecret, signWebhook, verifyWebhook } from '../../functions/contract/webhook-signature.js';

const KEY = Buffer.from('0123456789abcdef0123456789abcdef');
const SECRET = `whsec_${KEY.toString('base64')}`;
const OTHER_SECRET = `whsec_${Buffer.from('fedcba9876543210fedcba9876543210').toString('base64')}`;
const ID = '01KGZ3Q7W2000ABCDEFGHJKMNP';
const NOW_SECONDS = 1_780_000_000;
const BODY = '{"id":"01KGZ3Q7W2000ABCDEFGHJKMNP","attempt":1}';

describe('Function: signWebhook', () => {
  it('signs id, timestamp and body with HMAC-SHA256 over the decoded secret', () => {
    // Prepare
    const expected = createHmac('sha256', KEY).update(`${ID}.${NOW_SECONDS}.${BODY}`).digest('base64');

    // Act
    const headers = signWebhook([SECRET], ID, NOW_SECONDS, BODY);

    // Assess
    expect(headers).toEqual({
      'webhook-id': ID,
      'webhook-timestamp': String(NOW_SECONDS),
      'webhook-signature': `v1,${expected}`,
    });
  });

  it('matches the Standard Webhooks reference vector', () => {
    // Act
    const headers = signWebhook(
      ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );

    // Assess
    expect(headers['webhook-signature']).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('signs with each secret during a rotation, so a receiver holding either one verifies', () => {
    // Act
    const headers: Record<string, string> = { ...signWebhook([OTHER_SECRET, SECRET], ID, NOW_SECONDS, BODY) };

    // Assess
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(verifyWebhook(SECRET, headers, BODY, NOW_SECONDS)).toBe(true);
    expect(verifyWebhook(OTHER_SECRET, headers, BODY, NOW_SECONDS)).toBe(true);
    expect(verifyWebhook(generateSigningSecret(), headers, BODY, NOW_SECONDS)).toBe(false);
  });

  it('refuses to sign without a secret', () => {
    // Act & Assess
    expect(() => signWebhook([], ID, NOW_SECONDS, BODY)).toThrow(/at least one/);
  });

  it('refuses a secret without the whsec_ prefix', () => {
    // Act & Assess
    expect(() => signWebhook([KEY.toString('base64')], ID, NOW_SECONDS, BODY)).toThrow(/whsec_/);
  });
});

describe('Function: verifyWebhook', () => {
  const signed = signWebhook([SECRET], ID, NOW_SECONDS, BODY);

  it('accepts what signWebhook produced', () => {
    // Act & Assess
    expect(verifyWebhook(SECRET, { ...signed }, BODY, NOW_SECONDS)).toBe(true);
  });

  it('rejects a tampered body', () => {
    // Act & Assess
    expect(verifyWebhook(SECRET, { ...signed }, BODY.replace('"attempt":1', '"attempt":2'), NOW_SECONDS)).toBe(false);
  });

  it('rejects a signature made with another secret', () => {
    // Act & Assess
    expect(verifyWebhook(OTHER_SECRET, { ...signed }, BODY, NOW_SECONDS)).toBe(false);
  });

  it('rejects a timestamp more than 300 seconds off', () => {
    // Act & Assess
    expect(verifyWebhook(SECRET, { ...signed }, BODY, NOW_SECONDS + 300)).toBe(true);
    expect(verifyWebhook(SECRET, { ...signed }, BODY, NOW_SECONDS + 301)).toBe(false);
    expect(verifyWebhook(SECRET, { ...signed }, BODY, NOW_SECONDS - 301)).toBe(false);
  });

  it('accepts a header of several signatures when one of them matches', () => {
    // Prepare: as during a secret rotation, the receiver sees the old and the new signature.
    const old = signWebhook([OTHER_SECRET], ID, NOW_SECONDS, BODY)['webhook-signature'];
    const headers = { ...signed, 'webhook-signature': `${old} ${signed['webhook-signature']}` };

    // Act & Assess
    expect(verifyWebhook(SECRET, headers, BODY, NOW_SECONDS)).toBe(true);
    expect(verifyWebhook(SECRET, { ...headers, 'webhook-signature': `${old} v1,bm9wZQ==` }, BODY, NOW_SECONDS)).toBe(
      false,
    );
  });

  it('rejects headers with a part missing', () => {
    // Act & Assess
    expect(verifyWebhook(SECRET, { ...signed, 'webhook-id': undefined }, BODY, NOW_SECONDS)).toBe(false);
    expect(verifyWebhook(SECRET, { ...signed, 'webhook-timestamp': 'soon' }, BODY, NOW_SECONDS)).toBe(false);
    expect(verifyWebhook(SECRET, { ...signed, 'webhook-signature': undefined }, BODY, NOW_SECONDS)).toBe(false);
  });
});
