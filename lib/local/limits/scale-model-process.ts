/** The entry of the scale model's own process: its DynamoDB and SQS proxies, started by scale-model.ts. */
import { serveLocalProcess } from '../local-process.js';
import { type EmulatorEndpoints, type ScaleModel, startLimitProxies } from './scale-model.js';

const { model, emulators } = JSON.parse(process.argv[2] ?? '{}') as { model: ScaleModel; emulators: EmulatorEndpoints };
await serveLocalProcess(async () => {
  const proxies = await startLimitProxies(model, emulators);
  return {
    ready: { dynamodbEndpoint: proxies.dynamodbEndpoint, sqsEndpoint: proxies.sqsEndpoint },
    answer: () => proxies.report(),
    stop: () => proxies.close(),
  };
});
