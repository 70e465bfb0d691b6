/**
 * AWS's own limits and default quotas, as published: the one place the core (SQS's delay cap,
 * batch sizes), the adapters, the planner and the local scale model read them. The scale model
 * divides the rates by its k; sizes and durations it keeps, since a 1/k model runs 1/k of the
 * load with the same items, messages and timeouts.
 */
export const AWS_LIMITS = {
  dynamodb: {
    /** Per partition (and so per partition key): DynamoDB's hard ceiling, whatever the table's capacity mode. */
    partitionWriteUnitsPerSecond: 1_000,
    partitionReadUnitsPerSecond: 3_000,
    /** The default account quota for one on-demand table, per second. */
    tableWriteUnitsPerSecond: 40_000,
    tableReadUnitsPerSecond: 40_000,
    /** BatchWriteItem takes at most 25 put or delete requests. */
    batchWriteItems: 25,
    /** BatchGetItem takes at most 100 keys. */
    batchGetKeys: 100,
    /** One write unit covers 1 KB of item; one read unit 4 KB (strongly consistent). */
    writeUnitBytes: 1_024,
    readUnitBytes: 4_096,
  },
  sqs: {
    /** In-flight (received, not deleted, still invisible) messages per standard queue. */
    inFlightPerStandardQueue: 120_000,
    /** A message stays invisible at most 12 hours after the receive that took it, however often it is extended. */
    maxVisibilitySeconds: 43_200,
    /** The longest DelaySeconds a message (or a queue) can be given: 15 minutes. */
    maxDelaySeconds: 900,
    /** Entries in one SendMessageBatch / DeleteMessageBatch, and messages one ReceiveMessage returns. */
    batchEntries: 10,
  },
  lambda: {
    /** The account's concurrent executions: the default quota. */
    accountConcurrency: 1_000,
    /** Concurrency Lambda keeps unreserved: reservations may take the rest of the account's pool. */
    unreservedConcurrencyMinimum: 100,
    /** Request and response payload of a synchronous invocation. */
    syncPayloadBytes: 6 * 1024 * 1024,
    /** Each function adds at most this many execution environments per 10 s window, whatever its concurrency limit. */
    newEnvironmentsPer10Seconds: 1_000,
    /** An SQS event source mapping starts at this many concurrent batches... */
    mappingInitialConcurrency: 5,
    /** ...and adds at most this many a minute while messages wait. */
    mappingScaleUpPerMinute: 300,
  },
  eventBridge: {
    /**
     * PutEvents per account and region, us-east-1's default (2,400 in smaller regions); counted
     * here per entry, the stricter reading (the callback puts one entry a request, so the two agree).
     */
    putEventsPerSecond: 10_000,
  },
  apiGateway: {
    /** HTTP API account-level (and so default stage) throttle: steady rate and burst. */
    requestsPerSecond: 10_000,
    burst: 5_000,
    /** The largest request body an HTTP API accepts. */
    payloadBytes: 10 * 1024 * 1024,
  },
} as const;
