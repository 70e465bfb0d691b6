import { verifyWebhook } from '../../functions/contract/webhook-signature.js';
import type { WebhookNotification as Notification } from '../../functions/contract/wire.js';

export interface InboxEntry {
  readonly receivedAt: string;
  readonly latenessMs: number;
  readonly signatureValid: boolean;
  readonly notification: Notification;
}

/** Newest arrivals kept for GET; older ones are only in the log. */
const KEPT = 100;

/**
 * A webhook receiver built into local mode, so the README's first curl has somewhere to
 * land: it checks the Standard Webhooks signature as a real receiver would (against the
 * current secrets of every local tenant), prints the arrival with its lateness, and lists
 * recent arrivals on GET.
 */
export function createWebhookInbox(
  signingSecrets: () => Promise<readonly string[]>,
  print: (message: string, fields: Record<string, unknown>) => void,
) {
  const entries: InboxEntry[] = [];
  return {
    entries: entries as readonly InboxEntry[],
    async receive(
      headers: Record<string, string | undefined>,
      rawBody: string,
    ): Promise<{ status: number; body: unknown }> {
      const receivedAtMs = Date.now();
      let notification: Notification;
      try {
        notification = JSON.parse(rawBody) as Notification;
      } catch {
        return { status: 400, body: { message: 'the body is not JSON' } };
      }
      const secrets = await signingSecrets();
      const entry: InboxEntry = {
        receivedAt: new Date(receivedAtMs).toISOString(),
        latenessMs: receivedAtMs - Date.parse(notification.dueAt),
        signatureValid: secrets.some((secret) => verifyWebhook(secret, headers, rawBody)),
        notification,
      };
      entries.push(entry);
      if (entries.length > KEPT) entries.shift();
      print('webhook received', {
        taskId: notification.id,
        dueAt: notification.dueAt,
        latenessMs: entry.latenessMs,
        attempt: notification.attempt,
        signature: entry.signatureValid ? 'valid' : 'INVALID',
        payload: notification.payload,
      });
      return { status: 200, body: { received: true } };
    },
  };
}
