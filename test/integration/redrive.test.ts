import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';

import { DELIVERY_MAX_RECEIVE_COUNT, QUEUES } from '../../functions/contract/topology.js';
import { drainBodies } from '../support/emulators.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';

const emulators = emulatorsFixture();

describe('Queue: delivery queue redrive (fauxqs)', () => {
  it('moves a message that keeps failing to the DLQ after maxReceiveCount receives', async () => {
    // Prepare: the delivery queue as the topology describes it.
    const maxReceiveCount = DELIVERY_MAX_RECEIVE_COUNT;
    const dlq = await emulators.createQueue('delivery-dlq');
    const delivery = await emulators.createQueue('delivery', {
      VisibilityTimeout: String(QUEUES.delivery.visibilityTimeoutSeconds),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: String(maxReceiveCount) }),
    });
    await emulators.sqs.send(new SendMessageCommand({ QueueUrl: delivery.url, MessageBody: '{"id":"poison"}' }));

    // Act: a consumer that never deletes; visibility 0 stands in for the timeout running out.
    let receives = 0;
    for (let poll = 0; poll < maxReceiveCount * 3; poll++) {
      const received = await emulators.sqs.send(
        new ReceiveMessageCommand({ QueueUrl: delivery.url, WaitTimeSeconds: 1, VisibilityTimeout: 0 }),
      );
      if ((received.Messages ?? []).length === 0) break;
      receives++;
    }

    // Assess
    expect(receives).toBe(maxReceiveCount);
    expect(await drainBodies(emulators.sqs, dlq.url)).toEqual(['{"id":"poison"}']);
  });
});
