/** Local mode's own endpoints, beside the API (never deployed). */

/** The built-in webhook receiver: POST to deliver, GET to list recent arrivals. */
export const LOCAL_INBOX_PATH = '/local/webhooks';

/** POST moves every delivery dead letter back to the delivery queue (what `npm run dlq:redrive -- --local` calls). */
export const LOCAL_REDRIVE_PATH = '/local/dlq/redrive';
