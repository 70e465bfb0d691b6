/**
 * Fault injection on the whole pipeline (real dynalite, fauxqs and webhook receiver): dynamoDB
 * throttling and SQS failing at every call site, and the api dying at its keyed task write.
 */
import { describe, expect } from 'vitest';

import { failShare, injectFaults, webhookTasks } from './harness.js';
import { crashOnce, pipelineCase, runCase } from './pipeline-cases.js';

describe.concurrent('Faults: the AWS services', () => {
  pipelineCase(
    'loses nothing when DynamoDB throttles and SQS fails on every call site',
    async ({ start }) => {
      // Prepare: in every component, one attempt in five of DynamoDB and SQS calls is
      // throttled (the SDK retries those with backoff), and one call in ten fails
      // outright, past the SDK, so the timer's own recovery has to find its way around it.
      const throttled = new Map<string, number>();
      const failed = new Map<string, number>();
      const h = await start({
        clientsFor: (component, clients) => {
          // Each component and client draws its own sequence, as independent processes would.
          const seed = ['api', 'scanner', 'callback', 'sweeper'].indexOf(component) * 4;
          injectFaults(
            clients.dynamo,
            'withinRetries',
            failShare(0.2, 'ProvisionedThroughputExceededException', throttled, seed + 1),
          );
          injectFaults(clients.sqs, 'withinRetries', failShare(0.2, 'RequestThrottled', throttled, seed + 2));
          injectFaults(clients.dynamo, 'beforeRetries', failShare(0.1, 'InternalServerError', failed, seed + 3));
          injectFaults(clients.sqs, 'beforeRetries', failShare(0.1, 'ServiceUnavailable', failed, seed + 4));
        },
      });

      // Act: submits are retried by the client with their idempotency keys, as callers should.
      const tasks = [...webhookTasks(h, 30, 2000, 6000), ...webhookTasks(h, 10, -5000, -1000)];
      // Late arrivals whose enqueue failed wait for the overdue pass, which fails as often as the
      // rest: on a loaded machine it can take longer than the usual wait to reach them all.
      const { ids, result } = await runCase(
        'DynamoDB throttling and SQS errors everywhere',
        h,
        tasks,
        { oneByOne: true },
        100_000,
      );

      // Assess: retried submits created no extra tasks, and faults really hit every kind of call.
      expect(new Set(ids).size).toBe(40);
      expect(result.delivered).toBe(40);
      // Inside the retry loop the document client's commands carry their low-level names (PutItemCommand…).
      for (const injected of [throttled, failed]) {
        const kinds = [...injected.keys()].join(' ');
        for (const operation of ['Put', 'Update', 'Query', 'Get', 'SendMessageBatch'])
          expect(kinds).toContain(operation);
      }
      console.log(
        `  injected: ${[...throttled.values()].reduce((a, b) => a + b, 0)} throttles, ${[...failed.values()].reduce((a, b) => a + b, 0)} hard failures`,
      );
    },
    180_000,
  );

  pipelineCase(
    'keeps one task per idempotency key when the api dies at its keyed task write and the submit is retried',
    async ({ start }) => {
      // Prepare
      const h = await start();
      const crash = crashOnce(h.api.taskStore, 'create');
      const tasks = webhookTasks(h, 1, 2000, 2000);

      // Act: the harness retries the failed submit with the same key.
      const { ids, result } = await runCase('api crash at a keyed task write', h, tasks);
      const again = await h.submit(tasks);

      // Assess
      expect(crash.crashed()).toBe(true);
      expect(again).toEqual(ids);
      expect(result).toMatchObject({ delivered: 1, duplicates: 0 });
    },
  );
});
