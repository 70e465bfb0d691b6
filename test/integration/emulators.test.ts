import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';

import { createTaskTable, LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb.js';
import { startEmulatorProcess } from '../../lib/local/emulators.js';

const clientOptions = (endpoint: string) => ({ region: LOCAL_REGION, endpoint, credentials: LOCAL_CREDENTIALS });

describe('Function: startEmulatorProcess', () => {
  it('gives each local timer empty emulators, on new ports, when it reuses the processes an earlier one left', async () => {
    // Prepare: emulators that an earlier local timer filled and stopped.
    const [dynamodb, sqs] = await Promise.all([startEmulatorProcess('dynamodb'), startEmulatorProcess('sqs')]);
    await createTaskTable(new DynamoDBClient(clientOptions(dynamodb.endpoint)), 'earlier-table');
    await new SQSClient(clientOptions(sqs.endpoint)).send(new CreateQueueCommand({ QueueName: 'earlier-queue' }));
    await Promise.all([dynamodb.stop(), sqs.stop()]);

    // Act
    const [nextDynamodb, nextSqs] = await Promise.all([startEmulatorProcess('dynamodb'), startEmulatorProcess('sqs')]);

    // Assess
    try {
      expect(nextDynamodb.endpoint).not.toBe(dynamodb.endpoint);
      expect(nextSqs.endpoint).not.toBe(sqs.endpoint);
      const tables = await new DynamoDBClient(clientOptions(nextDynamodb.endpoint)).send(new ListTablesCommand({}));
      expect(tables.TableNames).toEqual([]);
      const queues = await new SQSClient(clientOptions(nextSqs.endpoint)).send(new ListQueuesCommand({}));
      expect(queues.QueueUrls ?? []).toEqual([]);
    } finally {
      await Promise.all([nextDynamodb.stop(), nextSqs.stop()]);
    }
  });

  it('keeps a script alive while it waits for a kept process to answer, when nothing else would', async () => {
    // Act: before an awaited answer held the process, Node left this script's top-level await unsettled (exit 13).
    const script = fileURLToPath(new URL('../support/emulators-in-turn.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { encoding: 'utf8' });

    // Assess
    expect(stdout).toBe('done\n');
  });
});
