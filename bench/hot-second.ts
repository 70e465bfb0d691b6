/**
 * `npm run bench:hot-second -- --tasks 20000 --shards 16`: how long the scanner takes to enqueue
 * one busy second on dynalite and fauxqs (local mode's emulators). It stores the tasks spread
 * over the second, then times the shard reads alone and the whole enqueueSecond (reads, sort,
 * chunked parallel sends), and how far the sends spread over time: the gap between the first and
 * the last chunk leaving is what the lookahead has to cover. Takes about a minute; not a test.
 */
import { parseArgs } from 'node:util';

import { sqsDeliveryQueue } from '../functions/adapters/sqs-queues.js';
import { secondOf } from '../functions/core/kernel/clock.js';
import { newTaskId, taskAddress } from '../functions/core/kernel/ids.js';
import { systemClock, type Task } from '../functions/core/kernel/task.js';
import { enqueueSecond } from '../functions/core/scan/scan.js';
import { startEmulators } from '../test/support/emulators.js';

const { values } = parseArgs({
  options: { tasks: { type: 'string', default: '20000' }, shards: { type: 'string', default: '16' } },
});
const taskCount = Number(values.tasks);
const shardCount = Number(values.shards);
const bucketCount = 10_000_000;

const emulators = await startEmulators();
try {
  const queue = await emulators.createQueue('hot-second');
  const { taskStore, clockStore, occupancy } = emulators.stores({ bucketCount });
  const second = secondOf(Date.now()) + 600;
  const entries = Array.from({ length: taskCount }, (_, index) => {
    const dueAtMs = second * 1000 + Math.floor((index * 1000) / taskCount);
    const location = { fireAtMs: dueAtMs, shard: index % shardCount };
    const id = newTaskId(location);
    const task: Task = {
      id,
      tenantId: 'bench',
      status: 'PENDING',
      dueAtMs,
      fireAtMs: dueAtMs,
      createdAtMs: Date.now(),
      target: { type: 'http', url: 'https://hooks.example.com/timer' },
      payloadJson: '{"orderId":"o-1"}',
      attempts: 0,
    };
    return { task, address: taskAddress(id, location, bucketCount) };
  });
  await taskStore.createMany(entries);

  const shards = Array.from({ length: shardCount }, (_, shard) => shard);
  const readStartedAt = performance.now();
  await Promise.all(shards.map((shard) => taskStore.listDue(second, shard)));
  const readMs = performance.now() - readStartedAt;

  const deliveryQueue = sqsDeliveryQueue(emulators.sqs, queue.url);
  const chunkSentAt: number[] = [];
  const timedQueue = {
    send: async (messages: Parameters<typeof deliveryQueue.send>[0]) => {
      await deliveryQueue.send(messages);
      chunkSentAt.push(performance.now());
    },
  };
  const startedAt = performance.now();
  const scan = await enqueueSecond(
    { taskStore, clockStore, occupancy, deliveryQueue: timedQueue, clock: systemClock, shardCount },
    second,
  );
  const totalMs = performance.now() - startedAt;
  process.stdout.write(
    `${JSON.stringify({
      tasks: taskCount,
      shards: shardCount,
      sent: scan.sent,
      readShardsMs: Math.round(readMs),
      enqueueSecondMs: Math.round(totalMs),
      firstChunkSentAfterMs: Math.round((chunkSentAt[0] ?? startedAt) - startedAt),
      messagesPerSecond: Math.round(scan.sent / (totalMs / 1000)),
    })}\n`,
  );
} finally {
  await emulators.stop();
}
