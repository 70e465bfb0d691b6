// One function's execution environment, as Lambda's Node.js runtime keeps it: a process of its own
// whose environment is the function's, which imports the bundle once (its cold start) and then
// runs invocations sent over IPC. Events and results cross as JSON, as they do through Lambda.
import { pathToFileURL } from 'node:url';

const { handler } = await import(pathToFileURL(process.argv[2]).href);

process.on('message', async ({ id, event, context }) => {
  const deadline = Date.now() + context.remainingMs;
  const lambdaContext = {
    ...context,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {},
    fail() {},
    succeed() {},
  };
  try {
    process.send({ id, result: await handler(event, lambdaContext) });
  } catch (error) {
    process.send({ id, error: { name: error.name, message: error.message, stack: error.stack } });
  }
});
process.send({ ready: true });
