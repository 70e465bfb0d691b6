import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import { generateSigningSecret, signWebhook } from '../../functions/contract/webhook-signature.js';
import type { WebhookNotification } from '../../functions/contract/wire.js';
import { createWebhookInbox } from '../../lib/local/webhook-inbox.js';

/** What local mode's logLine puts before every line's own fields. */
const LOG_ENVELOPE = ['level', 'message', 'service', 'timestamp'];

async function receiveOne() {
  const secret = generateSigningSecret();
  const print = vi.fn();
  const inbox = createWebhookInbox(async () => [secret], print);
  const notification: WebhookNotification = {
    id: '01M7YYKQXC08S84Q1QP61YE1GQ',
    dueAt: new Date(Date.now() - 31).toISOString(),
    firedAt: new Date().toISOString(),
    attempt: 1,
    bizType: null,
    bizId: null,
    payload: { hello: 'world' },
  };
  const body = JSON.stringify(notification);
  await inbox.receive({ ...signWebhook([secret], 'msg_1', Math.floor(Date.now() / 1000), body) }, body);
  return { print, notification };
}

describe('Function: createWebhookInbox', () => {
  it('logs an arrival as "webhook received" with the task id, due time, lateness, attempt, signature and payload', async () => {
    // Act
    const { print, notification } = await receiveOne();

    // Assess
    expect(print).toHaveBeenCalledExactlyOnceWith('webhook received', {
      taskId: notification.id,
      dueAt: notification.dueAt,
      latenessMs: expect.any(Number) as number,
      attempt: 1,
      signature: 'valid',
      payload: { hello: 'world' },
    });
  });

  it.each(['README.md', 'docs/cli.md'])('%s shows the same fields, in order, as the line it logs', async (doc) => {
    // Prepare
    const text = await readFile(join(import.meta.dirname, '../..', doc), 'utf8');
    const sample = /```json\n(\{\n {2}"level": "INFO",\n {2}"message": "webhook received",[\s\S]*?\n\})\n```/.exec(
      text,
    )?.[1];

    // Act
    const { print } = await receiveOne();

    // Assess
    const fields = print.mock.calls[0]?.[1] as Record<string, unknown>;
    expect(Object.keys(JSON.parse(sample ?? '{}') as object)).toEqual([...LOG_ENVELOPE, ...Object.keys(fields)]);
  });
});
