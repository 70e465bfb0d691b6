/**
 * The two SQS calls a local event source mapping makes, in SQS's JSON protocol straight over a
 * keep-alive connection. Lambda's mappings poll at AWS's expense, not the function's; local mode's
 * stand-in runs in the handlers' process, where each call through the SDK (its middleware, request
 * signing and retry bookkeeping) cost as much CPU as a function's request, and a mapping makes
 * several for each batch it hands on. fauxqs, and the scale model's proxies in front of it, read
 * the operation from `X-Amz-Target` and check no signature.
 */
import { Agent, request as httpRequest } from 'node:http';

import type { DeleteMessageBatchRequest, Message, ReceiveMessageRequest } from '@aws-sdk/client-sqs';

import type { AwsRequest } from './function-wiring.js';

/** What an event source mapping asks of its queue. */
export interface MappingQueue {
  receive(request: ReceiveMessageRequest): Promise<Message[]>;
  deleteBatch(request: DeleteMessageBatchRequest): Promise<void>;
}

/** An error SQS answered, named by its `__type`. */
export class QueueCallError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status: number,
  ) {
    super(`${type}: ${message}`);
    this.name = type;
  }
}

/**
 * A MappingQueue speaking to the SQS endpoint `endpoint`. `observe` is told of each call once it
 * ends, named `EventSourceMapping.SQS.<operation>` as the functions' counted requests are named.
 */
export function sqsJsonQueue(endpoint: string, observe?: (request: AwsRequest) => void): MappingQueue {
  const url = new URL(endpoint);
  const agent = new Agent({ keepAlive: true });
  const call = async (operation: string, input: object): Promise<Record<string, unknown>> => {
    const name = `EventSourceMapping.SQS.${operation}`;
    try {
      const output = await post(url, agent, operation, input).catch((error: unknown) => {
        // A connection reset as the call set out (a kept-alive one the server had just closed):
        // sent again once, as the SDK would. A receive that did reach SQS leaves its messages
        // invisible until their visibility timeout, never lost.
        if (!isStaleConnection(error)) throw error;
        return post(url, agent, operation, input);
      });
      observe?.({ name, input: input as Record<string, unknown>, output });
      return output;
    } catch (error) {
      observe?.({ name, input: input as Record<string, unknown> });
      throw error;
    }
  };
  return {
    async receive(request) {
      return ((await call('ReceiveMessage', request)).Messages as Message[] | undefined) ?? [];
    },
    async deleteBatch(request) {
      await call('DeleteMessageBatch', request);
    },
  };
}

function post(url: URL, agent: Agent, operation: string, input: object): Promise<Record<string, unknown>> {
  const body = JSON.stringify(input);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: '/',
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': `AmazonSQS.${operation}`,
          'content-length': Buffer.byteLength(body),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            const answer = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
            const status = response.statusCode ?? 0;
            if (status >= 200 && status < 300) resolve(answer);
            else
              reject(
                new QueueCallError(String(answer.__type ?? 'UnknownError'), String(answer.message ?? text), status),
              );
          } catch {
            reject(new QueueCallError('UnparsableResponse', text.slice(0, 200), response.statusCode ?? 0));
          }
        });
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

function isStaleConnection(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}
