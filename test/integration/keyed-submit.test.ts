import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';

import { DynamoClockStore } from '../../functions/adapters/dynamo/clock-store.js';
import { DynamoIdempotencyStore } from '../../functions/adapters/dynamo/idempotency-store.js';
import { DynamoOccupancyIndex } from '../../functions/adapters/dynamo/occupancy-index.js';
import { taskNameTexts } from '../../functions/adapters/dynamo/table-schema.js';
import { DynamoTaskStore } from '../../functions/adapters/dynamo/task-store.js';
import { newPlacement } from '../../functions/core/kernel/task-kernel.js';
import { applyBizType } from '../../functions/core/submit/biz-types.js';
import { parseTaskRequest } from '../../functions/core/submit/schemas.js';
import { type SubmitOutcome, submitTasks } from '../../functions/core/submit/submit.js';
import { ManualClock } from '../support/clock.js';
import { emulatorsFixture } from '../support/emulators-fixture.js';
import { FakeDeliveryQueue, FakeTickQueue } from '../unit/fakes.js';

const emulators = emulatorsFixture();

const NOW_MS = 1_800_000_000_400;
const TENANT = 'acme';

/** What one api call wrote to task and key items: requests and items, by operation. */
interface Writes {
  puts: number;
  batchWrites: number;
  batchItems: number;
}

/** Counts the requests that write task items (`B#…`) or idempotency key items (`IDEM#…`). */
function countWrites(client: DynamoDBDocumentClient): Writes {
  const writes: Writes = { puts: 0, batchWrites: 0, batchItems: 0 };
  const counted = (pk: unknown) => /^(B|IDEM)#/.test(String(pk));
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as {
        Item?: { pk?: unknown };
        RequestItems?: Record<string, Array<{ PutRequest?: { Item: { pk?: unknown } } }>>;
      };
      if (context.commandName === 'PutItemCommand' && counted(input.Item?.pk)) writes.puts++;
      if (context.commandName === 'BatchWriteItemCommand') {
        writes.batchWrites++;
        for (const requests of Object.values(input.RequestItems ?? {})) writes.batchItems += requests.length;
      }
      return next(args);
    },
    { step: 'initialize' },
  );
  return writes;
}

/** An api instance over dynalite whose task and key writes are counted. */
function apiPorts() {
  const { dynamo } = emulators.clients();
  const writes = countWrites(dynamo);
  const table = { client: dynamo, tableName: emulators.tableName };
  return {
    writes,
    ports: {
      taskStore: new DynamoTaskStore({ ...table, bucketCount: 10_000_000 }),
      clockStore: new DynamoClockStore(table),
      idempotencyStore: new DynamoIdempotencyStore(table),
      occupancy: new DynamoOccupancyIndex(table),
      deliveryQueue: new FakeDeliveryQueue(),
      tickQueue: new FakeTickQueue(),
      clock: new ManualClock(NOW_MS),
      bucketCount: 10_000_000,
      shardCount: 4,
      nameTexts: taskNameTexts,
      retentionDays: 30,
      lookaheadSeconds: 2,
      placement: newPlacement(),
    },
  };
}

/** A keyed request with a dueAt of its own, validated as the api would pass it on. */
function keyed(key: string, extra: Record<string, unknown> = {}) {
  const parsed = parseTaskRequest(
    {
      dueAt: NOW_MS + 600_000,
      target: { type: 'http', url: 'https://hooks.example.com/t' },
      idempotencyKey: key,
      ...extra,
    },
    { allowInsecureTargets: false, nowMs: NOW_MS },
  );
  const task = parsed.ok ? applyBizType(parsed.value, undefined) : parsed;
  if (!task.ok) throw new Error(JSON.stringify(task.errors));
  return task.value;
}

const idOf = (outcome: SubmitOutcome | undefined) =>
  outcome && (outcome.kind === 'created' || outcome.kind === 'replayed') ? outcome.task.id : outcome?.taskId;

describe('Keyed submits over dynalite: one conditional put, no key item', () => {
  it('creates a keyed task with one PutItem, and answers a retry and a reused key from the task item', async () => {
    // Prepare
    const { ports, writes } = apiPorts();

    // Act
    const created = await submitTasks(ports, TENANT, [keyed('order-1')]);
    const firstWrites = { ...writes };
    const retried = await submitTasks(ports, TENANT, [keyed('order-1')]);
    const reused = await submitTasks(ports, TENANT, [keyed('order-1', { payload: { other: true } })]);

    // Assess
    const id = idOf(created.outcomes[0]);
    expect(created.outcomes[0]?.kind).toBe('created');
    expect(firstWrites).toEqual({ puts: 1, batchWrites: 0, batchItems: 0 });
    expect(retried.outcomes[0]).toMatchObject({ kind: 'replayed', task: { id, createdAtMs: NOW_MS } });
    expect(reused.outcomes[0]).toEqual({ kind: 'conflict', taskId: id });
  });

  it('dedupes keyed batch items against each other and an earlier single, with conditional puts only', async () => {
    // Prepare
    const { ports, writes } = apiPorts();
    const single = await submitTasks(ports, TENANT, [keyed('batch-a')]);

    // Act
    const batch = await submitTasks(ports, TENANT, [keyed('batch-a'), keyed('batch-b'), keyed('batch-b')]);

    // Assess
    const [a, b, bAgain] = batch.outcomes;
    expect(idOf(a)).toBe(idOf(single.outcomes[0]));
    expect(a?.kind).toBe('replayed');
    expect([b?.kind, bAgain?.kind].sort()).toEqual(['created', 'replayed']);
    expect(idOf(bAgain)).toBe(idOf(b));
    expect(writes).toEqual({ puts: 4, batchWrites: 0, batchItems: 0 });
  });

  it('replays a keyed submit whose answer was lost after its put landed', async () => {
    // Prepare: the put lands, and the api dies before it answers.
    const { ports, writes } = apiPorts();
    const { taskStore } = ports;
    const put = taskStore.create.bind(taskStore);
    let crashes = 1;
    taskStore.create = async (task, key) => {
      await put(task, key);
      if (crashes-- > 0) throw new Error('Lambda timed out');
    };
    const crashed = await submitTasks(ports, TENANT, [keyed('lost')]).catch((error: unknown) => error);

    // Act: the client sends the same body again.
    ports.clock.advance(3000);
    const retried = await submitTasks(ports, TENANT, [keyed('lost')]);

    // Assess
    expect(crashed).toBeInstanceOf(Error);
    expect(retried.outcomes[0]).toMatchObject({ kind: 'replayed', task: { createdAtMs: NOW_MS } });
    // The put that landed, and the retry's, which failed its condition and found the task.
    expect(writes).toEqual({ puts: 2, batchWrites: 0, batchItems: 0 });
  });
});
