/**
 * The peer in the comparison: a BullMQ worker, in a process of its own, that takes delayed
 * jobs from Redis when they fall due and POSTs each to the bench's webhook receiver with the
 * same body the timer's callback sends. It reports its CPU time and peak memory over IPC.
 */
import { Worker } from 'bullmq';

export type WorkerRequest = { type: 'snapshot' } | { type: 'stop' };
export type WorkerMessage = { type: 'ready' } | { type: 'snapshot'; cpuMs: number; peakRssBytes: number };

/** A job's data, as the bench adds it. */
export interface BenchJob {
  readonly key: string;
  readonly dueAtMs: number;
  readonly url: string;
}

const send = (message: WorkerMessage) => process.send?.(message);

let peakRssBytes = 0;
const sampleMemory = () => {
  peakRssBytes = Math.max(peakRssBytes, process.memoryUsage().rss);
};
setInterval(sampleMemory, 250).unref();

const worker = new Worker<BenchJob>(
  process.env.BENCH_QUEUE ?? 'bench',
  async (job) => {
    const body = JSON.stringify({
      id: job.id,
      dueAt: new Date(job.data.dueAtMs).toISOString(),
      firedAt: new Date().toISOString(),
      attempt: job.attemptsMade + 1,
      bizType: null,
      bizId: null,
      payload: { key: job.data.key },
    });
    const response = await fetch(job.data.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    await response.body?.cancel();
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
  },
  {
    connection: { host: '127.0.0.1', port: Number(process.env.BENCH_REDIS_PORT) },
    concurrency: Number(process.env.BENCH_CONCURRENCY ?? 100),
  },
);

async function answer(message: WorkerRequest) {
  if (message.type === 'snapshot') {
    sampleMemory();
    const usage = process.cpuUsage();
    send({ type: 'snapshot', cpuMs: (usage.user + usage.system) / 1000, peakRssBytes });
    return;
  }
  await worker.close();
  process.exit(0);
}

// Fire and forget: a failure here is the child's crash, which the bench's parent reports.
process.on('message', (message: WorkerRequest) => void answer(message));

await worker.waitUntilReady();
send({ type: 'ready' });
