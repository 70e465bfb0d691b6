/** Local mode's own endpoints, beside the API (never deployed). */

/** The built-in webhook receiver: POST to deliver, GET to list recent arrivals. */
export const LOCAL_INBOX_PATH = '/local/webhooks';

/** POST moves every delivery dead letter back to the delivery queue (what `npm run dlq:redrive -- --local` calls). */
export const LOCAL_REDRIVE_PATH = '/local/dlq/redrive';

/** The local console: a page of tasks by status, upcoming seconds, deliveries and the DLQ, for a browser. */
export const LOCAL_CONSOLE_PATH = '/console';
/** The console page's script and style sheet. */
export const LOCAL_CONSOLE_SCRIPT_PATH = '/console/console.js';
export const LOCAL_CONSOLE_STYLE_PATH = '/console/console.css';
/** GET: tasks of every tenant as the console shows them (a ConsoleTasksView). */
export const LOCAL_CONSOLE_TASKS_PATH = '/local/console/tasks';
/** GET: every tenant's schedules with their next occurrences (a ConsoleSchedulesView). */
export const LOCAL_CONSOLE_SCHEDULES_PATH = '/local/console/schedules';
/** GET: the delivery DLQ's size and a look at up to ten dead letters (a ConsoleDlqView). */
export const LOCAL_CONSOLE_DLQ_PATH = '/local/console/dlq';
