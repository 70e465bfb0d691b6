import { UpdateCommand } from '@aws-sdk/lib-dynamodb';

import type { CounterShare, RequestCounter } from '../../core/tenants/tenants.js';
import { type TableOptions, unlessConditionFails } from './dynamo-helpers.js';
import { counterKey, RATE_COUNTER_PREFIX } from './table-schema.js';

/** Request counts per tenant and second live two minutes, long enough for any clock skew between api instances. */
const RATE_COUNTER_TTL_SECONDS = 120;

export interface RequestCounterOptions extends TableOptions {
  /**
   * What is counted, as the start of the counter's partition key.
   * @default RATE_COUNTER_PREFIX (api requests per tenant)
   */
  readonly keyPrefix?: string;
}

/**
 * A fixed one-second window per subject: one conditional ADD per call, shared by every
 * instance, so the limit holds however many instances run. The key is the subject and
 * second. Callers that admit every request should lease counts through LeasedRequestCounter,
 * so that the key's writes do not grow with the request rate.
 */
export class DynamoRequestCounter implements RequestCounter {
  constructor(private readonly options: RequestCounterOptions) {}

  async admit(subject: CounterShare, second: number, limit: number, count = 1): Promise<boolean> {
    // The condition lets the first write of a second through whatever it counts, so a count
    // the limit cannot hold (a share of a small limit may be 0) is refused here.
    if (count > limit) return false;
    return unlessConditionFails(
      this.options.client.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: counterKey(this.options.keyPrefix ?? RATE_COUNTER_PREFIX, subject, second),
          UpdateExpression: 'ADD requests :count SET expiresAt = :expiresAt',
          ConditionExpression: 'attribute_not_exists(requests) OR requests <= :room',
          ExpressionAttributeValues: {
            ':count': count,
            ':room': limit - count,
            ':expiresAt': second + RATE_COUNTER_TTL_SECONDS,
          },
        }),
      ),
    );
  }
}
