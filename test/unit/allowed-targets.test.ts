import { describe, expect, it } from 'vitest';

import type { Target } from '../../functions/core/kernel/task.js';
import {
  ALLOW_LISTS,
  eventBusArnOf,
  parseAllowList,
  queueArnOf,
  targetAllowed,
  type TargetAllowLists,
} from '../../functions/core/targets/allowed-targets.js';

const HOME = { partition: 'aws', region: 'eu-west-1', account: '123456789012' };
const ORDERS_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders';
const ORDERS_ARN = 'arn:aws:sqs:eu-west-1:123456789012:orders';
const BILLING_BUS_ARN = 'arn:aws:events:eu-west-1:123456789012:event-bus/billing';

const queue = (queueUrl: string): Target => ({ type: 'sqs', queueUrl });
const bus = (eventBusName: string): Target => ({ type: 'eventbridge', eventBusName });
const lists = (queueArns: TargetAllowLists['queueArns'], eventBusArns: TargetAllowLists['eventBusArns'] = []) => ({
  queueArns,
  eventBusArns,
});

describe('Function: queueArnOf', () => {
  it.each([
    [ORDERS_URL, ORDERS_ARN],
    ['https://sqs.us-east-1.amazonaws.com/210987654321/jobs.fifo', 'arn:aws:sqs:us-east-1:210987654321:jobs.fifo'],
    ['https://sqs.cn-north-1.amazonaws.com.cn/123456789012/orders', 'arn:aws-cn:sqs:cn-north-1:123456789012:orders'],
    [
      'https://sqs.us-gov-west-1.amazonaws.com/123456789012/orders',
      'arn:aws-us-gov:sqs:us-gov-west-1:123456789012:orders',
    ],
  ])('maps %s to %s', (url, arn) => {
    // Act & Assess
    expect(queueArnOf(url)).toBe(arn);
  });

  it.each([
    'http://localhost:4566/000000000000/orders',
    'https://sqs.eu-west-1.amazonaws.com/123456789012/orders/extra',
    'https://sqs.eu-west-1.amazonaws.com.evil.example/123456789012/orders',
    'https://sqs.eu-west-1.amazonaws.com/12345/orders',
  ])('gives no ARN for %s, which is not an SQS queue URL', (url) => {
    // Act & Assess
    expect(queueArnOf(url)).toBeUndefined();
  });
});

describe('Function: eventBusArnOf', () => {
  it('places a bare name in the service’s own partition, region and account', () => {
    // Act & Assess
    expect(eventBusArnOf('billing', HOME)).toBe(BILLING_BUS_ARN);
    expect(eventBusArnOf('default', { partition: 'aws-cn', region: 'cn-north-1', account: '123456789012' })).toBe(
      'arn:aws-cn:events:cn-north-1:123456789012:event-bus/default',
    );
  });

  it('keeps an ARN as it is, another account or region included', () => {
    // Prepare
    const elsewhere = 'arn:aws:events:us-east-1:210987654321:event-bus/shared';

    // Act & Assess
    expect(eventBusArnOf(elsewhere, HOME)).toBe(elsewhere);
  });
});

describe('Function: parseAllowList', () => {
  it('reads an unset variable as any target, which is what local mode leaves it', () => {
    // Act & Assess
    expect(parseAllowList(undefined)).toBe('any');
  });

  it('reads an empty variable as no target at all', () => {
    // Act & Assess
    expect(parseAllowList('')).toEqual([]);
  });

  it('splits on commas and drops blanks and the space around entries', () => {
    // Act & Assess
    expect(parseAllowList(` ${ORDERS_ARN} ,,arn:aws:sqs:eu-west-1:123456789012:jobs `)).toEqual([
      ORDERS_ARN,
      'arn:aws:sqs:eu-west-1:123456789012:jobs',
    ]);
  });
});

describe('Function: targetAllowed', () => {
  it('allows a listed queue and a listed event bus', () => {
    // Prepare
    const allowLists = lists([ORDERS_ARN], [BILLING_BUS_ARN]);

    // Act & Assess
    expect(targetAllowed(queue(ORDERS_URL), allowLists, HOME)).toBeUndefined();
    expect(targetAllowed(bus('billing'), allowLists, HOME)).toBeUndefined();
    expect(targetAllowed(bus(BILLING_BUS_ARN), allowLists, HOME)).toBeUndefined();
  });

  it('refuses an unlisted queue, naming the field and the ARN the deployer must add', () => {
    // Act
    const reason = targetAllowed(
      queue('https://sqs.eu-west-1.amazonaws.com/123456789012/payments'),
      lists([ORDERS_ARN]),
      HOME,
    );

    // Assess
    expect(reason).toBe(
      'target.queueUrl is not an allowed queue; the deployer must add arn:aws:sqs:eu-west-1:123456789012:payments to the AllowedQueueArns parameter',
    );
  });

  it('refuses an unlisted event bus, naming the field and the ARN its name stands for', () => {
    // Act
    const reason = targetAllowed(bus('audit'), lists([], [BILLING_BUS_ARN]), HOME);

    // Assess
    expect(reason).toBe(
      'target.eventBusName is not an allowed event bus; the deployer must add arn:aws:events:eu-west-1:123456789012:event-bus/audit to the AllowedEventBusArns parameter',
    );
  });

  it('refuses every queue and bus when the lists are empty', () => {
    // Prepare
    const none = lists([], []);

    // Act & Assess
    expect(targetAllowed(queue(ORDERS_URL), none, HOME)).toMatch(/^target\.queueUrl is not an allowed queue/);
    expect(targetAllowed(bus('default'), none, HOME)).toMatch(/^target\.eventBusName is not an allowed event bus/);
  });

  it('allows any queue and any bus, local URLs included, when the lists are unset', () => {
    // Prepare
    const any = lists('any', 'any');

    // Act & Assess
    expect(targetAllowed(queue('http://127.0.0.1:4566/000000000000/timer-sink'), any, HOME)).toBeUndefined();
    expect(targetAllowed(bus('anything'), any, HOME)).toBeUndefined();
  });

  it('refuses a queue URL it cannot turn into an ARN when a list is configured', () => {
    // Act
    const reason = targetAllowed(queue('http://127.0.0.1:4566/000000000000/timer-sink'), lists([ORDERS_ARN]), HOME);

    // Assess
    expect(reason).toMatch(/^target\.queueUrl is not an SQS queue URL/);
  });

  it('never governs webhooks', () => {
    // Act & Assess
    expect(targetAllowed({ type: 'http', url: 'https://example.com/hook' }, lists([], []), HOME)).toBeUndefined();
  });

  it('matches IAM wildcards (* any run, ? one character), as the callback role’s policy does', () => {
    // Prepare
    const allowLists = lists(
      ['arn:aws:sqs:*:123456789012:orders-*', 'arn:aws:sqs:eu-west-1:123456789012:job?'],
      ['arn:aws:events:eu-west-1:123456789012:event-bus/*'],
    );
    const url = (region: string, name: string) => `https://sqs.${region}.amazonaws.com/123456789012/${name}`;

    // Act & Assess
    expect(targetAllowed(queue(url('us-east-1', 'orders-eu')), allowLists, HOME)).toBeUndefined();
    expect(targetAllowed(queue(url('eu-west-1', 'jobs')), allowLists, HOME)).toBeUndefined();
    expect(targetAllowed(queue(url('eu-west-1', 'jobs2')), allowLists, HOME)).toBeDefined();
    expect(targetAllowed(queue(url('eu-west-1', 'orders')), allowLists, HOME)).toBeDefined();
    expect(targetAllowed(bus('billing'), allowLists, HOME)).toBeUndefined();
    // The same name in another account is another bus.
    const otherAccountBus = 'arn:aws:events:eu-west-1:210987654321:event-bus/billing';
    expect(targetAllowed(bus(otherAccountBus), allowLists, HOME)).toBeDefined();
  });

  it('takes dots in an entry literally', () => {
    // Prepare
    const allowLists = lists(['arn:aws:sqs:eu-west-1:123456789012:jobs.fifo']);

    // Act & Assess
    expect(
      targetAllowed(queue('https://sqs.eu-west-1.amazonaws.com/123456789012/jobsxfifo'), allowLists, HOME),
    ).toBeDefined();
  });
});

describe('Constant: ALLOW_LISTS', () => {
  it('accepts ARNs with and without wildcards, its examples included', () => {
    const queues = [
      ORDERS_ARN,
      ALLOW_LISTS.queue.example,
      'arn:aws-cn:sqs:cn-north-1:123456789012:jobs.fifo',
      'arn:aws:sqs:*:123456789012:*',
    ];
    for (const arn of queues) {
      expect(arn).toMatch(ALLOW_LISTS.queue.pattern);
    }
    for (const arn of [BILLING_BUS_ARN, ALLOW_LISTS.eventBus.example, 'arn:aws:events:*:123456789012:event-bus/*']) {
      expect(arn).toMatch(ALLOW_LISTS.eventBus.pattern);
    }
  });

  it('refuses queue URLs, bare names, the other kind of ARN and a lone wildcard', () => {
    for (const entry of [ORDERS_URL, 'orders', BILLING_BUS_ARN, '*']) {
      expect(entry).not.toMatch(ALLOW_LISTS.queue.pattern);
    }
    for (const entry of ['billing', ORDERS_ARN, 'arn:aws:events:eu-west-1:123456789012:rule/x', '*']) {
      expect(entry).not.toMatch(ALLOW_LISTS.eventBus.pattern);
    }
  });
});
