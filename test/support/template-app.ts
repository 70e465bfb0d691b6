import { App } from 'aws-cdk-lib';

/**
 * An app for the tests that read a synthesized template. Bundling is skipped:
 * test/e2e/synthesized-stack.test.ts synthesizes with it and runs the bundles. CDK's built-in
 * CloudFormation validation is off: it costs about 3.5 CPU-s a process and 1.2 a synthesis, and
 * test/infra/timer-stack.test.ts runs it on the stack `bin/timer.ts` deploys, its findings
 * failing the synthesis.
 */
export function templateApp(): App {
  return new App({ builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] } });
}
