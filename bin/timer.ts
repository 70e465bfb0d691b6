/** The CDK app: `npx cdk synth` / `npx cdk deploy`. Region and account come from the caller's AWS profile. */
import { App } from 'aws-cdk-lib';
import { TimerStack } from '../lib/timer-stack';

const app = new App();
new TimerStack(app, 'DistributedTimer', {
  description:
    'Serverless distributed timer: HTTP API, DynamoDB time buckets, clock-locked scanner, SQS delivery with DLQ',
});
