/**
 * The CDK app: `npx cdk synth` / `npx cdk deploy`. Region and account come from the caller's AWS
 * profile. Synthesis fails on any AWS Solutions (cdk-nag) finding that is not acknowledged, with
 * its reason, on the resource it concerns.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';

import { TimerStack } from '../lib/construct/timer-stack.js';

const app = new App();
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
new TimerStack(app, 'DistributedTimer', {
  // `cdk deploy -c functionUrl=true` adds the api function's URL; the CLI passes context as text.
  functionUrl: String(app.node.tryGetContext('functionUrl')) === 'true',
  // `cdk deploy -c tracing=false` runs the functions without X-Ray (see the construct's prop).
  tracing: String(app.node.tryGetContext('tracing')) !== 'false',
  description:
    'Serverless distributed timer: HTTP API, DynamoDB time buckets, clock-locked scanner, SQS delivery with DLQ',
});
