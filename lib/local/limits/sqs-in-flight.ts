/**
 * SQS's in-flight limits in front of fauxqs, which enforces none of them (it does enforce
 * message size, 1 MiB, and batches of at most 10 entries and 1 MiB in all).
 *
 * - A standard queue holds at most 120,000 messages in flight (received, not deleted, still
 *   invisible), divided here by k. At the cap a short poll fails with OverLimit and a long
 *   poll waits out its WaitTimeSeconds and returns no messages, as AWS documents. Below it a
 *   receive is given no more messages than the cap leaves.
 * - A message may stay invisible at most 12 hours after the receive that took it: a
 *   visibility change past that fails with InvalidParameterValue.
 *
 * In-flight messages are tracked from what passes through the proxy: receives add them,
 * deletes and visibility changes to 0 remove them, and each leaves when its visibility ends.
 * A receive whose WaitTimeSeconds is absent counts as a short poll (the queue's own
 * ReceiveMessageWaitTimeSeconds is not consulted).
 */
import { AWS_LIMITS } from '../../../functions/contract/aws-limits.js';
import type { Clock } from '../../../functions/core/kernel/task.js';
import {
  jsonError,
  jsonResponse,
  type RunningProxy,
  startJsonProxy,
  type Upstream,
  type WireRequest,
  type WireResponse,
} from './json-proxy.js';
import { scaledRate } from './scaled-rate.js';

const NAMESPACE = 'com.amazonaws.sqs';
const MAX_VISIBILITY_MS = AWS_LIMITS.sqs.maxVisibilitySeconds * 1000;

interface InFlightMessage {
  readonly receivedAtMs: number;
  invisibleUntilMs: number;
}

export interface QueueUsage {
  readonly inFlight: number;
  readonly peakInFlight: number;
  readonly received: number;
  /** Receives answered OverLimit (short polls) or left empty (long polls) because the queue was at its cap. */
  readonly receivesAtCap: number;
  /** Visibility changes refused for reaching past 12 hours after the receive. */
  readonly visibilityRefusals: number;
}

export interface SqsInFlightReport {
  readonly inFlightCap: number;
  readonly queues: Readonly<Record<string, QueueUsage>>;
}

interface QueueState {
  /** By receipt handle: a message received again carries a new one, and its old one has expired. */
  readonly messages: Map<string, InFlightMessage>;
  peakInFlight: number;
  received: number;
  receivesAtCap: number;
  visibilityRefusals: number;
}

/** The in-flight book-keeping, apart from HTTP. */
export class SqsInFlightModel {
  readonly inFlightCap: number;
  private readonly queues = new Map<string, QueueState>();

  constructor(private readonly options: { readonly k: number; readonly clock: Pick<Clock, 'now'> }) {
    this.inFlightCap = Math.floor(scaledRate(AWS_LIMITS.sqs.inFlightPerStandardQueue, options.k));
  }

  private queue(url: string): QueueState {
    let state = this.queues.get(url);
    if (!state) {
      state = { messages: new Map(), peakInFlight: 0, received: 0, receivesAtCap: 0, visibilityRefusals: 0 };
      this.queues.set(url, state);
    }
    const now = this.options.clock.now();
    for (const [handle, message] of state.messages) if (message.invisibleUntilMs <= now) state.messages.delete(handle);
    return state;
  }

  /** How many more messages a receive on `url` may take now; 0 means the queue is at its cap (and is counted). */
  room(url: string): number {
    const state = this.queue(url);
    const room = Math.max(0, this.inFlightCap - state.messages.size);
    if (room === 0) state.receivesAtCap += 1;
    return room;
  }

  received(url: string, receiptHandles: readonly string[], visibilitySeconds: number): void {
    const state = this.queue(url);
    const now = this.options.clock.now();
    for (const handle of receiptHandles) {
      state.messages.set(handle, { receivedAtMs: now, invisibleUntilMs: now + visibilitySeconds * 1000 });
    }
    state.received += receiptHandles.length;
    state.peakInFlight = Math.max(state.peakInFlight, state.messages.size);
  }

  deleted(url: string, receiptHandle: string): void {
    this.queue(url).messages.delete(receiptHandle);
  }

  /** Whether a new visibility of `seconds` from now stays within 12 hours of the receive (unknown handles pass). */
  allowsVisibility(url: string, receiptHandle: string, seconds: number): boolean {
    const state = this.queue(url);
    const message = state.messages.get(receiptHandle);
    const allowed = !message || this.options.clock.now() + seconds * 1000 - message.receivedAtMs <= MAX_VISIBILITY_MS;
    if (!allowed) state.visibilityRefusals += 1;
    return allowed;
  }

  visibilityChanged(url: string, receiptHandle: string, seconds: number): void {
    const message = this.queue(url).messages.get(receiptHandle);
    if (message) message.invisibleUntilMs = this.options.clock.now() + seconds * 1000;
  }

  report(): SqsInFlightReport {
    const queues: Record<string, QueueUsage> = {};
    for (const url of this.queues.keys()) {
      const { messages, peakInFlight, received, receivesAtCap, visibilityRefusals } = this.queue(url);
      queues[url] = { inFlight: messages.size, peakInFlight, received, receivesAtCap, visibilityRefusals };
    }
    return { inFlightCap: this.inFlightCap, queues };
  }
}

/** SQS's model gives OverLimit HTTP 403 and the query error code `OverLimit`, which is the name the SDK gives it. */
const overLimit = () =>
  jsonError(NAMESPACE, 'OverLimit', 'The maximum number of in flight messages is reached.', {
    status: 403,
    headers: { 'x-amzn-query-error': 'OverLimit;Sender' },
  });

const visibilityBeyondLimit = (seconds: number) =>
  `Value ${seconds} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [${AWS_LIMITS.sqs.maxVisibilitySeconds} seconds]`;

interface SqsInput {
  QueueUrl?: string;
  MaxNumberOfMessages?: number;
  WaitTimeSeconds?: number;
  VisibilityTimeout?: number;
  ReceiptHandle?: string;
  Entries?: { Id: string; ReceiptHandle: string; VisibilityTimeout?: number }[];
}

interface BatchAnswer {
  Successful?: { Id: string }[];
  Failed?: { Id: string; Code: string; Message: string; SenderFault: boolean }[];
}

const parse = <T>(response: WireResponse): T => JSON.parse(response.body.toString('utf8') || '{}') as T;

class SqsInFlightProxy {
  /** Each queue's default visibility timeout, read once from fauxqs (and again after SetQueueAttributes). */
  private readonly defaultVisibility = new Map<string, number>();

  constructor(
    private readonly model: SqsInFlightModel,
    private readonly upstream: Upstream,
    private readonly clock: Pick<Clock, 'sleep'>,
  ) {}

  private forward(request: WireRequest, payload?: unknown): Promise<WireResponse> {
    const body = payload === undefined ? request.body : Buffer.from(JSON.stringify(payload));
    return this.upstream.send(request.path, request.headers, body);
  }

  async handle(request: WireRequest): Promise<WireResponse> {
    const input = JSON.parse(request.body.toString('utf8') || '{}') as SqsInput;
    const url = input.QueueUrl ?? '';
    switch (request.operation) {
      case 'ReceiveMessage':
        return this.receive(request, input, url);
      case 'DeleteMessage': {
        const response = await this.forward(request);
        if (response.status === 200) this.model.deleted(url, input.ReceiptHandle ?? '');
        return response;
      }
      case 'DeleteMessageBatch': {
        const response = await this.forward(request);
        if (response.status !== 200) return response;
        const handles = new Map((input.Entries ?? []).map((entry) => [entry.Id, entry.ReceiptHandle]));
        for (const { Id } of parse<BatchAnswer>(response).Successful ?? [])
          this.model.deleted(url, handles.get(Id) ?? '');
        return response;
      }
      case 'ChangeMessageVisibility':
        return this.changeVisibility(request, input, url);
      case 'ChangeMessageVisibilityBatch':
        return this.changeVisibilityBatch(request, input, url);
      case 'SetQueueAttributes':
        this.defaultVisibility.delete(url);
        return this.forward(request);
      default:
        return this.forward(request);
    }
  }

  private async queueVisibility(request: WireRequest, url: string): Promise<number> {
    const known = this.defaultVisibility.get(url);
    if (known !== undefined) return known;
    const { json } = await this.upstream.call(request, 'GetQueueAttributes', {
      QueueUrl: url,
      AttributeNames: ['VisibilityTimeout'],
    });
    const seconds = Number(
      (json as { Attributes?: { VisibilityTimeout?: string } }).Attributes?.VisibilityTimeout ?? 30,
    );
    this.defaultVisibility.set(url, seconds);
    return seconds;
  }

  private async receive(request: WireRequest, input: SqsInput, url: string): Promise<WireResponse> {
    const room = this.model.room(url);
    if (room === 0) {
      if (!input.WaitTimeSeconds) return overLimit();
      await this.clock.sleep(input.WaitTimeSeconds * 1000);
      return jsonResponse(200, {});
    }
    const wanted = input.MaxNumberOfMessages ?? 1;
    const response = await this.forward(request, wanted > room ? { ...input, MaxNumberOfMessages: room } : undefined);
    if (response.status !== 200) return response;
    const messages = parse<{ Messages?: { ReceiptHandle?: string }[] }>(response).Messages ?? [];
    if (messages.length > 0) {
      const visibility = input.VisibilityTimeout ?? (await this.queueVisibility(request, url));
      this.model.received(
        url,
        messages.map((message) => message.ReceiptHandle ?? ''),
        visibility,
      );
    }
    return response;
  }

  private async changeVisibility(request: WireRequest, input: SqsInput, url: string): Promise<WireResponse> {
    const handle = input.ReceiptHandle ?? '';
    const seconds = input.VisibilityTimeout ?? 0;
    if (!this.model.allowsVisibility(url, handle, seconds)) {
      return jsonError(NAMESPACE, 'InvalidParameterValue', visibilityBeyondLimit(seconds), {
        headers: { 'x-amzn-query-error': 'InvalidParameterValue;Sender' },
      });
    }
    const response = await this.forward(request);
    if (response.status === 200) this.model.visibilityChanged(url, handle, seconds);
    return response;
  }

  private async changeVisibilityBatch(request: WireRequest, input: SqsInput, url: string): Promise<WireResponse> {
    const entries = input.Entries ?? [];
    const allowed = entries.filter((entry) =>
      this.model.allowsVisibility(url, entry.ReceiptHandle, entry.VisibilityTimeout ?? 0),
    );
    const refused = entries
      .filter((entry) => !allowed.includes(entry))
      .map((entry) => ({
        Id: entry.Id,
        Code: 'InvalidParameterValue',
        Message: visibilityBeyondLimit(entry.VisibilityTimeout ?? 0),
        SenderFault: true,
      }));
    // fauxqs, like SQS, refuses an empty batch, so a batch refused whole is answered here.
    const response =
      allowed.length === 0
        ? jsonResponse(200, {})
        : await this.forward(request, refused.length > 0 ? { ...input, Entries: allowed } : undefined);
    if (response.status !== 200) return response;
    const answer = parse<BatchAnswer>(response);
    const byId = new Map(entries.map((entry) => [entry.Id, entry]));
    for (const { Id } of answer.Successful ?? []) {
      const entry = byId.get(Id);
      if (entry) this.model.visibilityChanged(url, entry.ReceiptHandle, entry.VisibilityTimeout ?? 0);
    }
    if (refused.length === 0) return response;
    return jsonResponse(200, { Successful: answer.Successful ?? [], Failed: [...(answer.Failed ?? []), ...refused] });
  }
}

/** Starts the SQS in-flight proxy in front of `sqsEndpoint` (fauxqs). */
export function startSqsInFlightProxy(
  sqsEndpoint: string,
  model: SqsInFlightModel,
  clock: Pick<Clock, 'sleep'>,
): Promise<RunningProxy> {
  return startJsonProxy(sqsEndpoint, (upstream) => {
    const proxy = new SqsInFlightProxy(model, upstream, clock);
    return (request) => proxy.handle(request);
  });
}
