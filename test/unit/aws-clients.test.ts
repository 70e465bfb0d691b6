import { describe, expect, it } from 'vitest';

import { awsClients } from '../../functions/commons/clients.js';

describe('Function: awsClients', () => {
  it("builds every client without the SDK's logger middleware, whose per-request copies of the input and output no logger reads", () => {
    // Act
    const clients = awsClients({
      region: 'us-east-1',
      endpoints: {},
      credentials: { accessKeyId: 'AKIAUNITTEST', secretAccessKey: 'unit-test-secret' },
    });
    const otherRegion = clients.sqsForQueueUrl('https://sqs.eu-west-1.amazonaws.com/123456789012/target');

    // Assess: the stacks still serialize, sign and deserialize.
    expect(otherRegion).not.toBe(clients.sqs);
    for (const client of [clients.dynamo, clients.sqs, otherRegion, clients.eventBridge]) {
      const stack = client.middlewareStack.identify();
      expect(stack.filter((name) => name.startsWith('loggerMiddleware'))).toEqual([]);
      expect(stack).toContainEqual(expect.stringContaining('httpSigningMiddleware'));
    }
  });
});
