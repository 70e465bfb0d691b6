/**
 * What the parts of the `DistributedTimer` construct share: how a resource is named, how a
 * cdk-nag rule is acknowledged, and the log group every function and the API's access logs use.
 */
import * as logs from 'aws-cdk-lib/aws-logs';
import { RemovalPolicy, Validations } from 'aws-cdk-lib/core';
import type { Construct, IConstruct } from 'constructs';

/**
 * Acknowledges a cdk-nag (AwsSolutions) rule on one resource: the CloudFormation resource of
 * `construct`, never a scope above it, so the acknowledgement cannot hide a finding elsewhere.
 */
export function acknowledgeNagRule(construct: IConstruct, rule: string, reason: string): void {
  Validations.of(construct.node.defaultChild ?? construct).acknowledge({ id: `AwsSolutions-${rule}`, reason });
}

/** Construct ids are PascalCase; topology keys are camelCase. */
export const capitalized = (name: string): string => `${name[0]?.toUpperCase()}${name.slice(1)}`;

/** A log group kept for `retention` and removed with the stack: logs are diagnostics, not data. */
export function timerLogGroup(scope: Construct, id: string, retention: logs.RetentionDays): logs.LogGroup {
  return new logs.LogGroup(scope, id, { retention, removalPolicy: RemovalPolicy.DESTROY });
}
