import { App } from 'aws-cdk-lib/core';

import { TimerStack } from '../timer-stack.js';
import { type ResourceInventory, resourceInventory } from './cost-model.js';

/**
 * The resources `bin/timer.ts` would deploy, counted by CloudFormation type from a synthesis in
 * this process, so a cost estimate prices the stack as it is rather than a list kept by hand.
 * Bundling is skipped: it changes the functions' code, never which resources there are. So is
 * CDK's built-in CloudFormation validation, the deployer's synthesis's job, which took half of
 * `npm run plan`'s 7 s.
 */
export function timerStackInventory(): ResourceInventory {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: false });
  const stack = new TimerStack(app, 'Timer');
  const resources: Record<string, { Type: string }> = app.synth().getStackByName(stack.stackName).template.Resources;
  return resourceInventory(resources);
}
