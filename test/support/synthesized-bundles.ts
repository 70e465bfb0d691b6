/**
 * The Lambda bundles `cdk synth` wrote into a cloud assembly, run as local mode's five handlers:
 * each in a process of its own (bundle-host.mjs) with the environment the template gives its
 * function, endpoints pointing at local mode's emulators.
 *
 * A process per function rather than importing the five into the test's: each bundle reads
 * `process.env` at module load (its config, its clients, Powertools), and the SDK's credential
 * chain and Powertools read it again later, so one shared environment swapped per import would
 * leak between functions; a child also imports the file untouched (vitest would transform it)
 * and cannot resolve a package the bundle left out, since the assembly lies outside the repository.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { Context } from 'aws-lambda';

import { ENV, type FunctionName, FUNCTIONS } from '../../functions/contract/topology.js';
import type { AnyHandler } from '../../lib/local/function-wiring.js';
import type { LocalResources } from '../../lib/local/runtime.js';
import { type CloudTemplate, functionResource, templateResolver } from './cloud-template.js';

const HOST = fileURLToPath(new URL('./bundle-host.mjs', import.meta.url));

/** A function's bundle in the assembly: its `Code.S3Key` is `<asset hash>.zip`, staged as `asset.<hash>/`. */
export function bundlePath(template: CloudTemplate, assemblyDir: string, fn: FunctionName): string {
  const code = functionResource(template, fn).Properties.Code as { S3Key: string };
  return join(assemblyDir, `asset.${code.S3Key.replace(/\.zip$/, '')}`, 'index.mjs');
}

/**
 * The function's environment as the template sets it, its table and queues local mode's, plus
 * what Lambda's runtime adds (region, credentials) and the SDK's endpoint overrides.
 */
export function bundleEnvironment(
  template: CloudTemplate,
  fn: FunctionName,
  local: LocalResources,
): Record<string, string> {
  const queueUrls = Object.fromEntries(Object.entries(local.queues).map(([key, queue]) => [key, queue.url]));
  const resolve = templateResolver(template, { queueUrls });
  const environment = functionResource(template, fn).Properties.Environment as { Variables: unknown };
  return {
    ...(resolve(environment.Variables) as Record<string, string>),
    // Local mode's one departure from the cloud, as startLocalTimer makes it: targets on http://localhost.
    [ENV.allowInsecureTargets]: 'true',
    AWS_REGION: local.region,
    AWS_LAMBDA_FUNCTION_NAME: `timer-${fn}`,
    AWS_ACCESS_KEY_ID: local.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: local.credentials.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: local.endpoints.dynamodb,
    AWS_ENDPOINT_URL_SQS: local.endpoints.sqs,
    AWS_ENDPOINT_URL_EVENTBRIDGE: local.endpoints.eventBridge,
    // No X-Ray daemon and no CloudWatch here; the template turns tracing on through the function, not a variable.
    POWERTOOLS_TRACE_ENABLED: 'false',
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

type Reply = { id: number; result?: unknown; error?: { name: string; message: string; stack?: string } };

/** Starts one host; resolves once its bundle is imported, rejects if the import fails. */
function startHost(bundle: string, env: Record<string, string>): Promise<ChildProcess> {
  const child = fork(HOST, [bundle], { env, execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`the bundle ${bundle} exited with ${code} at import`)));
  });
}

/** A handler that runs each invocation in the host, as Lambda passes an event and a context to its runtime. */
function remoteHandler(child: ChildProcess): AnyHandler {
  let nextId = 0;
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  child.on('message', (reply: Reply) => {
    const waiting = pending.get(reply.id);
    if (!waiting) return;
    pending.delete(reply.id);
    if (reply.error) waiting.reject(Object.assign(new Error(reply.error.message), reply.error));
    else waiting.resolve(reply.result);
  });
  child.on('exit', () => {
    for (const waiting of pending.values()) waiting.reject(new Error('the function process exited'));
    pending.clear();
  });
  return (event: unknown, context: Context) => {
    const id = nextId++;
    const { functionName, functionVersion, invokedFunctionArn, memoryLimitInMB, awsRequestId } = context;
    const wire = { functionName, functionVersion, invokedFunctionArn, memoryLimitInMB, awsRequestId };
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      child.send({ id, event, context: { ...wire, remainingMs: context.getRemainingTimeInMillis() } });
    });
  };
}

/** The five bundles, each running in its host: handlers for `startLocalTimer`'s `loadHandlers`, and a way to stop them. */
export function bundledHandlers(template: CloudTemplate, assemblyDir: string) {
  const children: ChildProcess[] = [];
  return {
    async load(local: LocalResources): Promise<Record<FunctionName, AnyHandler>> {
      const names = Object.keys(FUNCTIONS) as FunctionName[];
      const hosts = await Promise.all(
        names.map((fn) => startHost(bundlePath(template, assemblyDir, fn), bundleEnvironment(template, fn, local))),
      );
      children.push(...hosts);
      return Object.fromEntries(names.map((fn, index) => [fn, remoteHandler(hosts[index] as ChildProcess)])) as Record<
        FunctionName,
        AnyHandler
      >;
    },
    async close(): Promise<void> {
      await Promise.all(
        children.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null) return resolve();
              child.once('exit', () => resolve());
              child.kill();
            }),
        ),
      );
    },
  };
}
