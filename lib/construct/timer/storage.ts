import { AttributeType, type Billing, ProjectionType, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { RemovalPolicy } from 'aws-cdk-lib/core';
import type { Construct } from 'constructs';

import { TABLE } from '../../../functions/contract/topology.js';

export interface TimerStorageProps {
  /** What happens to the task table when the construct is removed. */
  readonly removalPolicy: RemovalPolicy;
  /** On-demand (with or without a throughput ceiling) or provisioned capacity; the indexes inherit it. */
  readonly billing: Billing;
}

/**
 * The task table: tasks, their per-second buckets, tenants and bizType settings, keyed as
 * functions/contract/topology.ts TABLE says. A part of `DistributedTimer` that adds its resources
 * to the timer's own scope (see there why it is not a construct of its own).
 */
export class TimerStorage {
  readonly table: TableV2;

  constructor(scope: Construct, props: TimerStorageProps) {
    this.table = new TableV2(scope, 'Tasks', {
      partitionKey: { name: TABLE.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE.sortKey, type: AttributeType.STRING },
      billing: props.billing,
      timeToLiveAttribute: TABLE.ttlAttribute,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // The AWS managed key (aws/dynamodb): KMS encryption with every use in CloudTrail, and no key
      // policy to get wrong. A customer managed key would buy revocation and cross-account sharing,
      // which nothing here needs, at the price of a key whose disabling or deletion locks a retained
      // table of customer data.
      encryption: TableEncryptionV2.awsManagedKey(),
      removalPolicy: props.removalPolicy,
      globalSecondaryIndexes: Object.values(TABLE.indexes).map((index) => ({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
        sortKey: { name: index.sortKey, type: AttributeType.STRING },
        projectionType: ProjectionType[index.projection],
      })),
    });
  }
}
