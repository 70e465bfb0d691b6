/**
 * The AWS clients a function talks through. Each Lambda entry builds them once per cold start
 * and every invocation reuses them; local mode builds one set pointed at dynalite, fauxqs and
 * the local EventBridge sink and hands it to all five handlers.
 */
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

import type { AwsConfig } from './config.js';

export interface AwsClients {
  readonly dynamo: DynamoDBDocumentClient;
  /** The client for the service's own queues. */
  readonly sqs: SQSClient;
  /** The SQS client for a queue URL's region: a target queue may live outside the service's region. */
  readonly sqsForQueueUrl: (queueUrl: string) => SQSClient;
  readonly eventBridge: EventBridgeClient;
}

export interface AwsClientOptions extends AwsConfig {
  /** Fixed credentials, for emulators; omitted, the SDK's default chain finds the function's role. */
  readonly credentials?: SQSClientConfig['credentials'];
  /** Records each call as an X-Ray subsegment of the invocation's segment. */
  readonly tracer?: Tracer;
}

/**
 * The SDK's logger middleware copies every request's input and output through the operation's
 * schema, masking sensitive members, for the client's logger, even for the default one that
 * drops them: two walks of each item per request. These clients are given no logger (Powertools
 * logs what matters), so the copies are never read; without them one task's three DynamoDB
 * requests cost the client about a tenth less CPU (`npm run bench:request-cost`).
 */
function withoutLogCopies<Client extends { middlewareStack: { remove(name: string): boolean } }>(
  client: Client,
): Client {
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}

export function awsClients({ region, endpoints, credentials, tracer }: AwsClientOptions): AwsClients {
  const captured = <Client extends { middlewareStack: { remove(name: string): boolean } }>(client: Client): Client =>
    tracer ? tracer.captureAWSv3Client(withoutLogCopies(client)) : withoutLogCopies(client);
  const common = { region, ...(credentials && { credentials }) };
  /**
   * By default the SQS client sends to the queue URL's host. When an endpoint override is
   * configured (local mode), the override must win: fauxqs issues URLs like
   * http://sqs.us-east-1.localhost:PORT/…, whose host need not resolve.
   */
  const sqsOptions = { ...common, endpoint: endpoints.sqs, useQueueUrlAsEndpoint: !endpoints.sqs };
  const sqs = captured(new SQSClient(sqsOptions));
  const sqsByRegion = new Map<string, SQSClient>();
  return {
    dynamo: captured(
      DynamoDBDocumentClient.from(new DynamoDBClient({ ...common, endpoint: endpoints.dynamodb }), {
        marshallOptions: { removeUndefinedValues: true },
      }),
    ),
    sqs,
    sqsForQueueUrl(queueUrl) {
      const queueRegion = /^https?:\/\/sqs\.([a-z0-9-]+)\./.exec(queueUrl)?.[1];
      if (!queueRegion || queueRegion === region) return sqs;
      let client = sqsByRegion.get(queueRegion);
      if (!client) {
        client = captured(new SQSClient({ ...sqsOptions, region: queueRegion }));
        sqsByRegion.set(queueRegion, client);
      }
      return client;
    },
    eventBridge: captured(new EventBridgeClient({ ...common, endpoint: endpoints.eventBridge })),
  };
}
