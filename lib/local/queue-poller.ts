import type { Message } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';

import { AWS_LIMITS } from '../../functions/contract/aws-limits.js';
import type { InvokeResult } from './lambda-service.js';
import type { MappingQueue } from './mapping-queue.js';

/**
 * How Lambda scales an SQS event source mapping on a standard queue: it starts with five
 * concurrent batches and, while messages remain, adds up to 300 a minute, up to the mapping's
 * MaximumConcurrency; when traffic falls it scales back towards five. Both may be fractions (a
 * 1/k scale model's 5/k and 300/k): the mapping accumulates them and runs the whole batches
 * they add up to, at least one.
 */
export interface SqsScaling {
  readonly initialConcurrency: number;
  readonly scaleUpPerMinute: number;
}

export const SQS_SCALING: SqsScaling = {
  initialConcurrency: AWS_LIMITS.lambda.mappingInitialConcurrency,
  scaleUpPerMinute: AWS_LIMITS.lambda.mappingScaleUpPerMinute,
};

export interface SqsEventSourceOptions {
  readonly queue: MappingQueue;
  readonly queueUrl: string;
  readonly queueArn: string;
  /** Lambda's invoke, for the mapping's function. */
  readonly invoke: (event: SQSEvent) => Promise<InvokeResult<SQSBatchResponse | undefined>>;
  readonly batchSize: number;
  /**
   * The mapping's MaximumBatchingWindowInSeconds: once a receive finds messages, it keeps
   * gathering for up to this long or until the batch is full. @default 0 — one receive a batch
   */
  readonly maxBatchingWindowSeconds?: number;
  /** The mapping's MaximumConcurrency. */
  readonly maxConcurrency: number;
  readonly scaling?: SqsScaling;
  /** Told of a receive or delete that failed. */
  readonly onError: (error: unknown) => void;
}

/** What the mapping is doing, for tests and the benchmark. */
export interface SqsEventSourceStats {
  /** Batches the mapping may have in flight now, as scaled so far, and the most it has allowed. */
  readonly scaledConcurrency: number;
  readonly peakScaledConcurrency: number;
  /** Batches received and not yet finished, and the most at once. */
  readonly batchesInFlight: number;
  readonly peakBatchesInFlight: number;
  /** Batches handed to the function, and those Lambda throttled (left in the queue). */
  readonly batches: number;
  readonly throttledBatches: number;
}

export interface SqsEventSource {
  stats(): SqsEventSourceStats;
  stop(): Promise<void>;
}

/** Long-poll wait; short enough that stop() returns promptly. */
const WAIT_SECONDS = 1;
/** After a failed receive or delete, so a broken queue does not become a busy loop. */
const ERROR_PAUSE_MS = 250;
/**
 * Receive loops per mapping. They only fetch batches, which takes milliseconds locally, so two
 * keep hundreds of batches a second flowing while an idle mapping long-polls as little as Lambda's
 * (which optimises down to two pollers when traffic is low).
 */
const RECEIVERS = 2;
/** The mapping reconsiders its concurrency this often; the per-minute rate is spread over the ticks. */
const SCALE_INTERVAL_MS = 1000;
/** SQS hands out, and deletes, at most this many messages a request; a larger batch takes several. */
const MAX_MESSAGES_PER_RECEIVE = AWS_LIMITS.sqs.batchEntries;
/**
 * Inside a batching window, a receive that found nothing waits this long before the next. Lambda's
 * pollers long-poll at AWS's expense; these receives are local mode's stand-in and cost the
 * handlers' process a request each, so a one-second window makes at most ten empty receives, not
 * fifty. A batch that fills meanwhile is dispatched at most this much later; its tasks were sent a
 * lookahead ahead of their fire time, and the callback waits for it.
 */
const GATHER_PAUSE_MS = 100;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function toRecord(message: Message, queueArn: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? String(Date.now()),
      SenderId: attributes.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: 'us-east-1',
  };
}

/** The records of a batch that must come back: those reported failed, or all when the invocation failed. */
function recordsToKeep(result: InvokeResult<SQSBatchResponse | undefined>, event: SQSEvent): Set<string> {
  if (result.outcome !== 'ok') return new Set(event.Records.map((record) => record.messageId));
  return new Set((result.response?.batchItemFailures ?? []).map((failure) => failure.itemIdentifier));
}

/**
 * What Lambda's SQS event source mapping does, on one machine: receive up to a batch and hand
 * it to the function without waiting for it to finish, so batches run side by side, as many as
 * the mapping has scaled to. What succeeded is deleted. Reported batch item failures, and every
 * record of a batch whose invocation threw, timed out or was throttled, stay in the queue and
 * come back after their visibility timeout; fauxqs moves them to the DLQ after maxReceiveCount.
 */
export function startSqsEventSource(options: SqsEventSourceOptions): SqsEventSource {
  const scaling = options.scaling ?? SQS_SCALING;
  const initial = Math.min(scaling.initialConcurrency, options.maxConcurrency);
  const step = (scaling.scaleUpPerMinute * SCALE_INTERVAL_MS) / 60_000;
  let running = true;
  /** The mapping's concurrency as scaled so far, a fraction in a scale model; `allowed` is what it runs. */
  let scaled = initial;
  const allowed = () => Math.max(1, Math.floor(scaled));
  let peakScaledConcurrency = allowed();
  let batchesInFlight = 0;
  /** Batches in flight plus receives under way: a receiver takes its slot before it receives, so two cannot share one. */
  let slotsTaken = 0;
  let peakBatchesInFlight = 0;
  let peakInInterval = 0;
  let batches = 0;
  let throttledBatches = 0;
  let lastReceiveFoundMessages = false;
  /** Set when a receiver found every slot taken just after a receive found messages: messages are waiting. */
  let backlogged = false;
  let waiters: Array<() => void> = [];
  const inFlight = new Set<Promise<void>>();

  const wakeReceivers = () => {
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
  };
  /** Waits for a free slot and takes it in the same turn, so no other receiver can take it first. */
  const takeSlot = async (): Promise<boolean> => {
    while (running && slotsTaken >= allowed()) {
      if (lastReceiveFoundMessages) backlogged = true;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
    if (running) slotsTaken += 1;
    return running;
  };

  const scaler = setInterval(() => {
    if (backlogged) scaled = Math.min(options.maxConcurrency, scaled + step);
    else if (peakInInterval < scaled - step) scaled = Math.max(initial, scaled - step);
    peakScaledConcurrency = Math.max(peakScaledConcurrency, allowed());
    backlogged = false;
    peakInInterval = batchesInFlight;
    // Receivers still waiting look again: for a slot the scale-up made, or to mark the next interval backlogged.
    wakeReceivers();
  }, SCALE_INTERVAL_MS);

  const deleteDone = async (messages: Message[], keep: Set<string>) => {
    const done = messages.filter((message) => !keep.has(message.MessageId ?? ''));
    // SQS deletes at most ten messages a request, as it receives them.
    const chunks = Array.from({ length: Math.ceil(done.length / MAX_MESSAGES_PER_RECEIVE) }, (_, chunk) =>
      done.slice(chunk * MAX_MESSAGES_PER_RECEIVE, (chunk + 1) * MAX_MESSAGES_PER_RECEIVE),
    );
    await Promise.all(
      chunks.map((chunk) =>
        options.queue.deleteBatch({
          QueueUrl: options.queueUrl,
          Entries: chunk.map((message, index) => ({ Id: String(index), ReceiptHandle: message.ReceiptHandle })),
        }),
      ),
    );
  };

  const processBatch = async (messages: Message[]) => {
    const event: SQSEvent = { Records: messages.map((message) => toRecord(message, options.queueArn)) };
    try {
      const result = await options.invoke(event);
      if (result.outcome === 'throttled') {
        throttledBatches += 1;
        // Lambda backs the mapping off when the function is throttled, rather than keep asking.
        scaled = Math.max(initial, scaled - step);
      }
      await deleteDone(messages, recordsToKeep(result, event));
    } catch (error) {
      options.onError(error);
    } finally {
      batchesInFlight -= 1;
      slotsTaken -= 1;
      wakeReceivers();
    }
  };

  const receiveUpTo = (count: number, waitSeconds: number) =>
    options.queue.receive({
      QueueUrl: options.queueUrl,
      MaxNumberOfMessages: Math.min(MAX_MESSAGES_PER_RECEIVE, count),
      WaitTimeSeconds: waitSeconds,
      MessageSystemAttributeNames: ['All'],
    });

  /** One batch: a long poll, then, with a batching window, more receives until it is full or the window ends. */
  const gatherBatch = async (): Promise<Message[]> => {
    const messages = await receiveUpTo(options.batchSize, WAIT_SECONDS);
    const windowMs = (options.maxBatchingWindowSeconds ?? 0) * 1000;
    if (messages.length === 0 || windowMs === 0) return messages;
    const windowEndsMs = Date.now() + windowMs;
    while (running && messages.length < options.batchSize && Date.now() < windowEndsMs) {
      const more = await receiveUpTo(options.batchSize - messages.length, 0);
      if (more.length === 0) await pause(Math.min(GATHER_PAUSE_MS, windowEndsMs - Date.now()));
      messages.push(...more);
    }
    return messages;
  };

  const receive = async () => {
    while (running) {
      if (!(await takeSlot())) return;
      let dispatched = false;
      try {
        const messages = await gatherBatch();
        lastReceiveFoundMessages = messages.length > 0;
        if (messages.length === 0) continue;
        dispatched = true;
        batches += 1;
        batchesInFlight += 1;
        peakBatchesInFlight = Math.max(peakBatchesInFlight, batchesInFlight);
        peakInInterval = Math.max(peakInInterval, batchesInFlight);
        const batch = processBatch(messages).finally(() => inFlight.delete(batch));
        inFlight.add(batch);
      } catch (error) {
        if (running) options.onError(error);
        await pause(ERROR_PAUSE_MS);
      } finally {
        if (!dispatched) slotsTaken -= 1;
      }
    }
  };
  const receivers = Array.from({ length: RECEIVERS }, receive);

  return {
    stats: () => ({
      scaledConcurrency: allowed(),
      peakScaledConcurrency,
      batchesInFlight,
      peakBatchesInFlight,
      batches,
      throttledBatches,
    }),
    async stop() {
      running = false;
      clearInterval(scaler);
      wakeReceivers();
      await Promise.all(receivers);
      await Promise.all(inFlight);
    },
  };
}
