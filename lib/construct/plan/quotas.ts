/**
 * The limits a deployment of a given size needs: the stack's own settings (the API stage
 * throttle, the api's reserved concurrency) and the AWS quotas to raise before deploying it.
 * `npm run plan` prints them and the scale model applies them, so the model runs the
 * deployment the plan describes, not one on AWS's default quotas, which a billion single
 * submits a day outgrow.
 */
import { AWS_LIMITS } from '../../../functions/contract/aws-limits.js';
import { ACCOUNT_CONCURRENCY, FUNCTIONS, QUEUES } from '../../../functions/contract/topology.js';

/** Submits come in a daily wave: the busiest second of submits is taken as this many times the average. */
export const SUBMIT_PEAK_TO_AVERAGE = 2;

/** Room left on every rate and pool the plan sizes, for the bursts inside a busy second. */
const HEADROOM = 1.5;

export interface QuotaInput {
  readonly perDay: number;
  /** Tasks due in the busiest second. */
  readonly peakPerSecond: number;
  /** Tasks per API request: 1 for single submits, up to 100 for batches. */
  readonly tasksPerApiRequest: number;
  /** Seconds one api invocation takes. */
  readonly apiSecondsPerRequest: number;
  /** DynamoDB write units a task spends over its life (create, outcome, index shares). */
  readonly writeUnitsPerTask: number;
  /** Of those, the ones spent in the second the task is delivered (the outcome). */
  readonly deliveryWriteUnitsPerTask: number;
  /** DynamoDB read units a task spends over its life, nearly all when it falls due (its scan, its read before the call). */
  readonly readUnitsPerTask: number;
}

export interface Quotas {
  /** The API stage throttle to deploy with (the construct's `apiThrottle`). */
  readonly apiThrottle: { readonly rateLimit: number; readonly burstLimit: number };
  /** The api function's reserved concurrency (the construct's `apiReservedConcurrency`). */
  readonly apiReservedConcurrency: number;
  /** The seconds one api invocation lasts in the cloud, which the reservation is sized for. */
  readonly apiSecondsPerRequest: number;
  /** API Gateway's regional request quota the stage throttle needs (the default is 10,000 a second). */
  readonly apiGatewayRequestsPerSecond: number;
  /** Lambda's concurrent executions the reservations and mappings need (the default is 1,000). */
  readonly lambdaConcurrency: number;
  /** The on-demand table's write request units a second at the busiest second (the default quota is 40,000). */
  readonly tableWriteUnitsPerSecond: number;
  /** The on-demand table's read request units a second at the busiest second (the default quota is 40,000). */
  readonly tableReadUnitsPerSecond: number;
}

const roundUp = (value: number, step: number) => Math.ceil(value / step) * step;

export function quotasFor(input: QuotaInput): Quotas {
  const averageTasks = input.perDay / 86_400;
  const peakRequests = (averageTasks * SUBMIT_PEAK_TO_AVERAGE) / input.tasksPerApiRequest;
  const rateLimit = Math.max(roundUp(peakRequests * HEADROOM, 1000), AWS_LIMITS.apiGateway.requestsPerSecond / 10);
  const apiReservedConcurrency = Math.max(
    roundUp(peakRequests * input.apiSecondsPerRequest * HEADROOM, 50),
    FUNCTIONS.api.reservedConcurrency ?? 0,
  );
  const reserved = apiReservedConcurrency + (FUNCTIONS.scanner.reservedConcurrency ?? 0);
  const mappingCaps = QUEUES.delivery.consumer.maxConcurrency + QUEUES.express.consumer.maxConcurrency;
  const lambdaConcurrency = Math.max(
    roundUp(reserved + mappingCaps + AWS_LIMITS.lambda.unreservedConcurrencyMinimum, 500),
    ACCOUNT_CONCURRENCY,
  );
  // The busiest second takes a wave of creates and, at once, either the hot second's deliveries or
  // its creates: the tasks due in one second are often made in one (a flash sale's orders, each
  // timed to close unpaid), and a create costs far more than a delivery, whose outcome is a receipt.
  const createUnits = input.writeUnitsPerTask - input.deliveryWriteUnitsPerTask;
  const peakWriteUnits =
    input.peakPerSecond * Math.max(input.deliveryWriteUnitsPerTask, createUnits) +
    averageTasks * SUBMIT_PEAK_TO_AVERAGE * createUnits;
  // A task's reads come when it falls due: the hot second's, on top of a busy second's deliveries.
  const peakReadUnits = (input.peakPerSecond + averageTasks * SUBMIT_PEAK_TO_AVERAGE) * input.readUnitsPerTask;
  return {
    apiThrottle: { rateLimit, burstLimit: roundUp(rateLimit / 2, 1000) },
    apiReservedConcurrency,
    apiSecondsPerRequest: input.apiSecondsPerRequest,
    apiGatewayRequestsPerSecond: Math.max(rateLimit, AWS_LIMITS.apiGateway.requestsPerSecond),
    lambdaConcurrency,
    tableWriteUnitsPerSecond: Math.max(
      roundUp(peakWriteUnits * HEADROOM, 10_000),
      AWS_LIMITS.dynamodb.tableWriteUnitsPerSecond,
    ),
    tableReadUnitsPerSecond: Math.max(
      roundUp(peakReadUnits * HEADROOM, 10_000),
      AWS_LIMITS.dynamodb.tableReadUnitsPerSecond,
    ),
  };
}
