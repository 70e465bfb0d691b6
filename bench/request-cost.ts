/**
 * `npm run bench:request-cost`: the CPU one task's DynamoDB requests cost the callback's side of
 * the wire, for each way of making them that issue 25 asks to measure. The full bench's CPU per
 * task moves by more than these differences from run to run on a shared machine; this isolates
 * the client: a stub in a process of its own answers every request at once with a task item (a
 * GetItem) or nothing (an UpdateItem), so only the client's CPU is counted. The first two
 * variants are the SDK's document client as it comes and the one the functions build
 * (functions/commons/clients.ts); the others change one thing about the first. Each task is what
 * the callback asks of the table today: a consistent read and two conditional updates, a batch
 * of 100 at a time, as a delivery batch runs them. The variants take turns, round after round,
 * so the machine's load falls on all alike; the spread across rounds shows the noise.
 */
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

import { type AttributeValue, DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';

import { awsClients } from '../functions/commons/clients.js';
import { markdownTable } from '../lib/construct/plan/table-format.js';
import { quantile } from './stats.js';
import { exitWithUsageIfAsked } from './usage.js';

/** A task item as the table holds it after its first attempt (the attributes a GetItem returns). */
const TASK_ITEM: Record<string, AttributeValue> = {
  pk: { S: 'B#1764180000#17' },
  sk: { S: '0001764180000123#t1764180000123x17xk3v9q2' },
  id: { S: 't1764180000123x17xk3v9q2' },
  tenantId: { S: 'dev' },
  status: { S: 'DELIVERING' },
  dueAtMs: { N: '1764180000123' },
  fireAtMs: { N: '1764180000123' },
  createdAtMs: { N: '1764179990000' },
  attempts: { N: '1' },
  leaseUntilMs: { N: '1764180060123' },
  target: { S: '{"type":"http","url":"http://127.0.0.1:40000/hook"}' },
  payload: { S: '{"key":"timer:steady 500/s/1234"}' },
  bizType: { NULL: true },
};

interface Variant {
  readonly name: string;
  /** One task's requests: the read, then the two updates. */
  task(index: number): Promise<void>;
}

const KEY = { pk: 'B#1764180000#17', sk: '0001764180000123#t1764180000123x17xk3v9q2' };
const TABLE = 'timer-tasks';
/** Like claimDelivery's: a condition on the status and the lease, eight values. */
const UPDATE = {
  UpdateExpression:
    'SET #status = :delivering, leaseUntilMs = :lease, attempts = attempts + :one, lastAttemptAtMs = :now',
  ConditionExpression:
    '#status = :pending AND (attribute_not_exists(leaseUntilMs) OR leaseUntilMs < :now) AND tenantId = :tenant AND attempts < :max',
  ExpressionAttributeNames: { '#status': 'status' },
};
const values = (index: number) => ({
  ':delivering': 'DELIVERING',
  ':pending': 'PENDING',
  ':lease': 1764180060123 + index,
  ':one': 1,
  ':now': 1764180000123 + index,
  ':tenant': 'dev',
  ':max': 8,
  ':unused': undefined,
});

/** What the task store does: the document client, which marshals and unmarshals every item. */
function documentClient(raw: DynamoDBClient): Variant['task'] {
  return throughDocumentClient(DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } }));
}

function throughDocumentClient(client: DynamoDBDocumentClient): Variant['task'] {
  return async (index) => {
    await client.send(new GetCommand({ TableName: TABLE, Key: KEY, ConsistentRead: true }));
    for (let update = 0; update < 2; update++) {
      await client.send(
        new UpdateCommand({ TableName: TABLE, Key: KEY, ...UPDATE, ExpressionAttributeValues: values(index) }),
      );
    }
  };
}

/** Values written as AttributeValues by hand, as a table schema that knows each attribute's type would. */
function handMarshalled(raw: DynamoDBClient): Variant['task'] {
  const key = { pk: { S: KEY.pk }, sk: { S: KEY.sk } };
  const plain = (value: AttributeValue): unknown =>
    value.S ?? (value.N === undefined ? (value.BOOL ?? null) : Number(value.N));
  return async (index) => {
    const got = await raw.send(new GetItemCommand({ TableName: TABLE, Key: key, ConsistentRead: true }));
    const item: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(got.Item ?? {})) item[name] = plain(value);
    for (let update = 0; update < 2; update++) {
      const v = values(index);
      await raw.send(
        new UpdateItemCommand({
          TableName: TABLE,
          Key: key,
          ...UPDATE,
          ExpressionAttributeValues: {
            ':delivering': { S: v[':delivering'] },
            ':pending': { S: v[':pending'] },
            ':lease': { N: String(v[':lease']) },
            ':one': { N: '1' },
            ':now': { N: String(v[':now']) },
            ':tenant': { S: v[':tenant'] },
            ':max': { N: '8' },
          },
        }),
      );
    }
  };
}

const flags = parseArgs({
  options: {
    tasks: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '5' },
    /** The stub's side, forked by the measuring side. */
    serve: { type: 'boolean', default: false },
    help: { type: 'boolean' },
  },
}).values;

async function main() {
  exitWithUsageIfAsked(flags.help, 'Usage: npm run bench:request-cost -- [--tasks 2000] [--rounds 5]');
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const stub = fork(new URL(import.meta.url).pathname, ['--serve'], { execArgv: ['--import', 'tsx'] });
  const port = await new Promise<number>((resolve) => stub.once('message', (message) => resolve(message as number)));
  const clientFor = (options: { maxSockets?: number; without?: readonly string[] } = {}) => {
    const client = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${port}`,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      ...(options.maxSockets && { requestHandler: { httpAgent: { keepAlive: true, maxSockets: options.maxSockets } } }),
    });
    for (const name of options.without ?? []) client.middlewareStack.remove(name);
    return client;
  };
  const functionsClients = awsClients({
    region: 'us-east-1',
    endpoints: { dynamodb: `http://127.0.0.1:${port}` },
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const variants: Variant[] = [
    { name: "the SDK's document client", task: documentClient(clientFor()) },
    { name: "the functions' clients (awsClients)", task: throughDocumentClient(functionsClients.dynamo) },
    { name: 'hand-marshalled, raw client', task: handMarshalled(clientFor()) },
    { name: 'document client, maxSockets 100', task: documentClient(clientFor({ maxSockets: 100 })) },
    // The candidates for trimming: no logger is configured, no trace id to pass on here, and AWS needs no User-Agent.
    { name: 'without loggerMiddleware', task: documentClient(clientFor({ without: ['loggerMiddleware'] })) },
    {
      name: 'without recursionDetectionMiddleware',
      task: documentClient(clientFor({ without: ['recursionDetectionMiddleware'] })),
    },
    {
      name: 'without getUserAgentMiddleware',
      task: documentClient(clientFor({ without: ['getUserAgentMiddleware'] })),
    },
  ];
  const tasks = Number(flags.tasks);
  const perTask = new Map<string, number[]>(variants.map((variant) => [variant.name, []]));
  // A round unmeasured first: every client connects and the JIT warms up.
  for (let round = 0; round <= Number(flags.rounds); round++) {
    for (const variant of variants) {
      const before = process.cpuUsage();
      for (let start = 0; start < tasks; start += 100)
        await Promise.all(Array.from({ length: 100 }, (_, offset) => variant.task(start + offset)));
      const used = process.cpuUsage(before);
      if (round > 0) perTask.get(variant.name)?.push((used.user + used.system) / 1000 / tasks);
    }
    process.stderr.write(`round ${round}/${flags.rounds}\n`);
  }
  stub.disconnect();
  const baseline = quantile(perTask.get(variants[0]?.name ?? '') ?? [], 0.5);
  process.stdout.write(
    `${markdownTable(
      ['variant', 'CPU ms per task, median', 'min–max over rounds', "vs the SDK's document client"],
      variants.map(({ name }) => {
        const samples = perTask.get(name) ?? [];
        const median = quantile(samples, 0.5);
        return [
          name,
          median.toFixed(3),
          `${Math.min(...samples).toFixed(3)}–${Math.max(...samples).toFixed(3)}`,
          `${(median / baseline).toFixed(2)}×`,
        ];
      }),
    )}\n`,
  );
}

/** The stub, in the child: answers at once, so the client is all that is measured. */
function serve(): void {
  const got = JSON.stringify({ Item: TASK_ITEM });
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const body = String(request.headers['x-amz-target']).endsWith('GetItem') ? got : '{}';
      response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'stub' }).end(body);
    });
  });
  server.listen(0, '127.0.0.1', () => process.send?.((server.address() as AddressInfo).port));
  process.on('disconnect', () => process.exit(0));
}

if (flags.serve) serve();
else await main();
