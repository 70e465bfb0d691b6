/**
 * Checks the AWS requests a local run made against the synthesized roles: each request becomes
 * the IAM request it is in the cloud (action, resource ARN, condition keys), made by the role of
 * the function that sent it, and @cloud-copilot/iam-simulate decides it against that role's policies.
 */
import { runSimulation } from '@cloud-copilot/iam-simulate';

import { type FunctionName, QUEUES } from '../../functions/contract/topology.js';
import { LOCAL_REGION } from '../../lib/local/dynamodb.js';
import type { AwsRequest } from '../../lib/local/runtime.js';
import { type CloudTemplate, LOCAL_ACCOUNT, localQueueArn, localQueueName, rolePolicies } from './cloud-template.js';

/** One request as IAM authorizes it. */
export interface IamRequest {
  readonly fn: FunctionName;
  readonly action: string;
  readonly resource: string;
  readonly context: Record<string, string | string[]>;
}

const EVENT_SOURCE_PREFIX = 'EventSourceMapping.';

/** SQS's batch APIs are authorized as their single-message actions. */
const SQS_ACTIONS: Record<string, string> = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};

const queueNameOf = (queueUrl: unknown) => String(queueUrl).split('/').pop() ?? '';
const tableArn = (table: unknown) => `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${String(table)}`;

/** A key attribute's value, whether the document client has marshalled it yet or not. */
const plain = (value: unknown): string =>
  typeof value === 'object' && value !== null && 'S' in value ? String(value.S) : String(value);

/** `dynamodb:LeadingKeys`: the partition key values a single-item request or a Query (`pk = :pk`) touches. */
function leadingKeys(input: Record<string, unknown>): Record<string, string[]> {
  const key = (input.Key ?? input.Item) as Record<string, unknown> | undefined;
  const queried = String(input.KeyConditionExpression ?? '').startsWith('pk = :pk')
    ? (input.ExpressionAttributeValues as Record<string, unknown> | undefined)?.[':pk']
    : undefined;
  const pk = key?.pk ?? queried;
  return pk === undefined ? {} : { 'dynamodb:LeadingKeys': [plain(pk)] };
}

function dynamoRequests(command: string, input: Record<string, unknown>): Array<Omit<IamRequest, 'fn'>> {
  if (command === 'BatchGetItem' || command === 'BatchWriteItem') {
    return Object.keys(input.RequestItems as object).map((table) => ({
      action: `dynamodb:${command}`,
      resource: tableArn(table),
      context: {},
    }));
  }
  const index = input.IndexName === undefined ? '' : `/index/${String(input.IndexName)}`;
  return [
    { action: `dynamodb:${command}`, resource: `${tableArn(input.TableName)}${index}`, context: leadingKeys(input) },
  ];
}

function eventBusArn(name: unknown): string {
  const bus = name === undefined ? 'default' : String(name);
  return bus.startsWith('arn:') ? bus : `arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT}:event-bus/${bus}`;
}

/** The function whose event source mapping polls the queue: Lambda polls with that function's role. */
function consumerOf(queueUrl: unknown): FunctionName | undefined {
  const name = queueNameOf(queueUrl);
  const key = (Object.keys(QUEUES) as Array<keyof typeof QUEUES>).find((queue) => localQueueName(queue) === name);
  const spec = key && QUEUES[key];
  return spec && 'consumer' in spec ? spec.consumer.fn : undefined;
}

/** The IAM requests an AWS request needs allowed; none for local mode's own requests (redrive, console). */
export function iamRequestsOf(request: AwsRequest): IamRequest[] {
  const polled = request.name.startsWith(EVENT_SOURCE_PREFIX);
  const fn = polled ? consumerOf(request.input.QueueUrl) : request.fn;
  if (!fn) return [];
  const [service, command = ''] = request.name.slice(polled ? EVENT_SOURCE_PREFIX.length : 0).split('.');
  const { input } = request;
  switch (service) {
    case 'DynamoDB':
      return dynamoRequests(command, input).map((iam) => ({ fn, ...iam }));
    case 'SQS':
      return [
        {
          fn,
          action: `sqs:${SQS_ACTIONS[command] ?? command}`,
          resource: localQueueArn(queueNameOf(input.QueueUrl)),
          context: {},
        },
      ];
    case 'EventBridge':
      return [
        ...new Set((input.Entries as Array<{ EventBusName?: string }>).map((entry) => eventBusArn(entry.EventBusName))),
      ].map((resource) => ({ fn, action: `events:${command}`, resource, context: {} }));
    default:
      throw new Error(`no IAM mapping for ${request.name}; add one so the audit covers it`);
  }
}

/** What the simulator decided for one distinct request. */
export interface IamDecision extends IamRequest {
  readonly decision: string;
}

/** Simulates each distinct request against its function's role policies as the template resolves them. */
export async function simulateRequests(
  template: CloudTemplate,
  resolve: (value: unknown) => unknown,
  requests: readonly IamRequest[],
): Promise<IamDecision[]> {
  const distinct = new Map(requests.map((request) => [JSON.stringify(request), request]));
  const decisions: IamDecision[] = [];
  for (const request of distinct.values()) {
    const response = await runSimulation(
      {
        identityPolicies: rolePolicies(template, request.fn, resolve),
        serviceControlPolicies: [],
        resourceControlPolicies: [],
        request: {
          action: request.action,
          principal: `arn:aws:iam::${LOCAL_ACCOUNT}:role/timer-${request.fn}`,
          resource: { accountId: LOCAL_ACCOUNT, resource: request.resource },
          contextVariables: request.context,
        },
      },
      {},
    );
    const decision =
      response.resultType === 'error' ? `Error: ${JSON.stringify(response.errors)}` : response.overallResult;
    decisions.push({ ...request, decision });
  }
  return decisions;
}
