/**
 * A local process (lib/local/local-process.ts) that exits with code 3 when asked its question, the
 * way a child that crashes mid-question does; forked by test/integration/local-process.test.ts.
 */
import { serveLocalProcess } from '../../lib/local/local-process.js';

await serveLocalProcess(async () => ({
  ready: 'ready',
  answer: () => process.exit(3),
  stop: async () => undefined,
}));
