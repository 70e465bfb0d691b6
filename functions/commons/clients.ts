/**
 * AWS clients, built once per cold start and reused by every invocation. Endpoints come
 * from the SDK's own AWS_ENDPOINT_URL_<SERVICE> variables, which is how local mode
 * points the very same handlers at dynalite, fauxqs and the local EventBridge sink.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

import { tracer } from './tracer.js';

export const dynamo = tracer.captureAWSv3Client(
  DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } }),
);

/**
 * By default the SQS client sends to the queue URL's host. When an endpoint override is
 * configured (local mode), the override must win: fauxqs issues URLs like
 * http://sqs.us-east-1.localhost:PORT/…, whose host need not resolve.
 */
const sqsOptions = { useQueueUrlAsEndpoint: !process.env.AWS_ENDPOINT_URL_SQS };

export const sqs = tracer.captureAWSv3Client(new SQSClient(sqsOptions));

const sqsByRegion = new Map<string, SQSClient>();

/** The SQS client for a queue URL's region: a target queue may live outside the service's region. */
export function sqsForQueueUrl(queueUrl: string): SQSClient {
  const region = /^https?:\/\/sqs\.([a-z0-9-]+)\./.exec(queueUrl)?.[1];
  if (!region || region === process.env.AWS_REGION) return sqs;
  let client = sqsByRegion.get(region);
  if (!client) {
    client = tracer.captureAWSv3Client(new SQSClient({ ...sqsOptions, region }));
    sqsByRegion.set(region, client);
  }
  return client;
}

export const eventBridge = tracer.captureAWSv3Client(new EventBridgeClient({}));
