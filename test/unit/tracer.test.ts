import { afterEach, describe, expect, it, vi } from 'vitest';

import { awsClients } from '../../functions/commons/clients.js';
import { createObservability, instrumented } from '../../functions/commons/lambda-chain.js';
import { lambdaContext } from './handlers/setup.js';

// cls-hooked, the X-Ray SDK's context, registers its namespaces here when it installs its async hook.
const xrayNamespace = () => (process as { namespaces?: Record<string, unknown> }).namespaces?.AWSXRay;

const unitClients = (tracer: Parameters<typeof awsClients>[0]['tracer']) =>
  awsClients({
    region: 'us-east-1',
    endpoints: {},
    credentials: { accessKeyId: 'AKIAUNITTEST', secretAccessKey: 'unit-test-secret' },
    tracer,
  });

afterEach(() => {
  vi.unstubAllEnvs();
});

// One file, in this order: once tracing has loaded the X-Ray SDK, its hook stays for the process.
describe('Function: createObservability', () => {
  it('with tracing off, loads no X-Ray SDK, so no async hook runs on every promise', async () => {
    // Act
    const observability = await createObservability({ logLevel: 'SILENT', tracingEnabled: false });
    const handler = instrumented(observability, async () => 'done');
    await handler({}, lambdaContext());

    // Assess
    expect(observability.tracer).toBeUndefined();
    expect(xrayNamespace()).toBeUndefined();
  });

  it('with tracing on, captures every AWS client and opens a subsegment per invocation', async () => {
    // Prepare: Powertools traces only inside a Lambda execution environment, and the test run's environment turns it off.
    vi.stubEnv('AWS_EXECUTION_ENV', 'AWS_Lambda_nodejs22.x');
    vi.stubEnv('POWERTOOLS_TRACE_ENABLED', 'true');
    vi.stubEnv('_HANDLER', 'index.handler');
    const observability = await createObservability({ logLevel: 'SILENT', tracingEnabled: true });
    const tracer = observability.tracer;
    if (!tracer) throw new Error('tracing on made no tracer');
    // The invocation's segment, which Lambda opens before the handler runs.
    const subsegments: string[] = [];
    const segment = {
      addNewSubsegment: (name: string) => {
        subsegments.push(name);
        return { name, close: () => undefined };
      },
    };
    vi.spyOn(tracer, 'getSegment').mockReturnValue(segment as unknown as ReturnType<typeof tracer.getSegment>);
    vi.spyOn(tracer, 'setSegment').mockImplementation(() => undefined);
    const clients = unitClients(tracer);
    const handler = instrumented(observability, async () => 'done');

    // Act
    await handler({}, lambdaContext());

    // Assess
    expect(tracer.isTracingEnabled()).toBe(true);
    expect(xrayNamespace()).toBeDefined();
    for (const client of [clients.dynamo, clients.sqs, clients.eventBridge])
      expect(client.middlewareStack.identify()).toContainEqual(expect.stringContaining('XRaySDKInstrumentation'));
    expect(subsegments).toEqual(['## index.handler']);
  });
});
