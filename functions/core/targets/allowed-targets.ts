/**
 * Which SQS queues and EventBridge buses a task may name as its target. The deployer lists
 * them (the AllowedQueueArns and AllowedEventBusArns stack parameters), the callback's role is
 * granted exactly those, and the api checks each target against the same lists, so a caller
 * learns at submit time, not at delivery, that a target is out of reach. Entries are ARNs and
 * may use IAM's wildcards (`*`, `?`) within a segment, matched here as IAM matches them.
 */
import type { Target } from '../kernel/task.js';

/** The partition, region and account the service runs in: where a bare event bus name lives. */
export interface AwsHome {
  readonly partition: string;
  readonly region: string;
  readonly account: string;
}

/** `'any'` where nothing is configured (local mode); otherwise the ARNs allowed, perhaps none. */
export type AllowList = 'any' | readonly string[];

export interface TargetAllowLists {
  readonly queueArns: AllowList;
  readonly eventBusArns: AllowList;
}

/** One kind of allow-list, as the stack parameter, the construct and the messages to callers see it. */
export interface AllowListSpec {
  /** The stack parameter the deployer lists the ARNs in. */
  readonly parameter: string;
  /** One entry: an ARN of this kind of target, perhaps with IAM wildcards. */
  readonly pattern: RegExp;
  readonly example: string;
  /** The kind of target, as a caller reads it in a refusal. */
  readonly target: string;
}

export const ALLOW_LISTS = {
  queue: {
    parameter: 'AllowedQueueArns',
    pattern: /^arn:aws[a-z-]*:sqs:[a-z0-9*?-]+:[0-9*?]+:[\w.*?-]+$/,
    example: 'arn:aws:sqs:us-east-1:123456789012:orders',
    target: 'queue',
  },
  eventBus: {
    parameter: 'AllowedEventBusArns',
    pattern: /^arn:aws[a-z-]*:events:[a-z0-9*?-]+:[0-9*?]+:event-bus\/[/\w.*?-]+$/,
    example: 'arn:aws:events:us-east-1:123456789012:event-bus/default',
    target: 'event bus',
  },
} as const satisfies Record<string, AllowListSpec>;

const QUEUE_URL = /^https:\/\/sqs\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?\/(\d{12})\/([\w-]{1,80}(?:\.fifo)?)$/;

/** The partition of a region's endpoints; China's are told apart by their domain, not their region. */
function partitionOf(region: string, chinaDomain: boolean): string {
  if (chinaDomain) return 'aws-cn';
  return region.startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
}

/** The ARN of the queue at an SQS queue URL, or undefined if the URL is not one. */
export function queueArnOf(queueUrl: string): string | undefined {
  const match = QUEUE_URL.exec(queueUrl);
  if (!match) return undefined;
  const [, region = '', chinaDomain, account, name] = match;
  return `arn:${partitionOf(region, chinaDomain !== undefined)}:sqs:${region}:${account}:${name}`;
}

/** The ARN of an event bus given by ARN, or by name for a bus in the service's own account and region. */
export function eventBusArnOf(nameOrArn: string, home: AwsHome): string {
  if (nameOrArn.startsWith('arn:')) return nameOrArn;
  return `arn:${home.partition}:events:${home.region}:${home.account}:event-bus/${nameOrArn}`;
}

/**
 * An allow-list from its environment variable: unset means any target (local mode sets
 * none); otherwise comma-separated ARNs, and an empty value allows none.
 */
export function parseAllowList(envValue: string | undefined): AllowList {
  if (envValue === undefined) return 'any';
  return envValue
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

/** IAM's ARN matching: each colon-separated segment on its own, `*` any run and `?` one character. */
function arnMatches(pattern: string, arn: string): boolean {
  const segment = (text: string) =>
    text
      .replace(/[.+^${}()|[\]\\/]/g, '\\$&')
      .replace(/\*/g, '[^:]*')
      .replace(/\?/g, '[^:]');
  return new RegExp(`^${pattern.split(':').map(segment).join(':')}$`).test(arn);
}

/** Undefined if the list allows the ARN; otherwise what the caller of `field` is told. */
function refusal(field: string, spec: AllowListSpec, list: readonly string[], arn: string): string | undefined {
  if (list.some((pattern) => arnMatches(pattern, arn))) return undefined;
  return `${field} is not an allowed ${spec.target}; the deployer must add ${arn} to the ${spec.parameter} parameter`;
}

/**
 * Undefined when the target may be used; otherwise the reason for the caller, naming the field
 * and what the deployer must add. Webhooks are not governed by these lists.
 */
export function targetAllowed(target: Target, allowLists: TargetAllowLists, home: AwsHome): string | undefined {
  switch (target.type) {
    case 'http':
      return undefined;
    case 'sqs': {
      if (allowLists.queueArns === 'any') return undefined;
      const arn = queueArnOf(target.queueUrl);
      if (arn === undefined) {
        return (
          'target.queueUrl is not an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue>), ' +
          'so it matches no allowed queue'
        );
      }
      return refusal('target.queueUrl', ALLOW_LISTS.queue, allowLists.queueArns, arn);
    }
    case 'eventbridge': {
      if (allowLists.eventBusArns === 'any') return undefined;
      const arn = eventBusArnOf(target.eventBusName, home);
      return refusal('target.eventBusName', ALLOW_LISTS.eventBus, allowLists.eventBusArns, arn);
    }
  }
}
