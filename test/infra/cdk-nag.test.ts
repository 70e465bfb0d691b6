import { type App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';

import { API_ROUTES } from '../../functions/contract/topology.js';
import { TimerStack, type TimerStackProps } from '../../lib/construct/timer-stack.js';
import { templateApp } from '../support/template-app.js';

/** The stack as `bin/timer.ts` builds it, in an app for template tests. */
function timerApp(props: TimerStackProps = {}): App {
  const app = templateApp();
  new TimerStack(app, 'Timer', props);
  return app;
}

/** Every acknowledgement in the tree, as "rule at construct path". */
function acknowledgements(root: IConstruct): string[] {
  return root.node
    .findAll()
    .flatMap((construct) =>
      construct.node.metadata
        .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
        .flatMap((entry) =>
          Object.keys(entry.data as Record<string, string>).map(
            (id) => `${id.replace(/^annotation::/i, '')} at ${construct.node.path}`,
          ),
        ),
    );
}

let app: App;

beforeAll(() => {
  app = timerApp();
  // Synthesis first, so the pack sees the tree as CloudFormation will (aspects applied, policies merged).
  app.synth();
});

describe('Rule pack: cdk-nag AwsSolutions', () => {
  it('finds no error or warning that is not acknowledged', () => {
    // Act
    const report = new AwsSolutionsChecks(app, { verbose: true }).validateScope(app);

    // Assess: one line per finding names the rule, its severity, the resource and what to fix.
    const findings = report.violations.flatMap((violation) =>
      violation.violatingResources.map(
        ({ constructPath }) =>
          `${violation.ruleName} (${violation.severity}) at ${constructPath}: ${violation.description}`,
      ),
    );
    expect(findings).toEqual([]);
  });

  it('acknowledges only the rules reviewed, each on the one resource it concerns', () => {
    // Act
    const acknowledged = acknowledgements(app);

    // Assess
    // A route's construct id is its key with the space dropped and each slash made "--".
    const routes = API_ROUTES.map((routeKey) => routeKey.replace(' ', '').replaceAll('/', '--'));
    expect(acknowledged.sort()).toEqual(
      [
        'AwsSolutions-SQS3 at Timer/Default/TickQueue/Resource',
        ...routes.map((route) => `AwsSolutions-APIG4 at Timer/Default/HttpApi/${route}/Resource`),
        // X-Ray's "*" grant, on the traced functions only: the api runs untraced by default.
        ...['Ticker', 'Scanner', 'Callback', 'Sweeper'].map(
          (fn) => `AwsSolutions-IAM5[Resource::*] at Timer/Default/${fn}FunctionRole/DefaultPolicy/Resource`,
        ),
      ].sort(),
    );
  });

  it('gives every acknowledgement a written reason', () => {
    // Act
    const reasons = app.node
      .findAll()
      .flatMap((construct) => construct.node.metadata)
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) => Object.values(entry.data as Record<string, string>));

    // Assess
    expect(reasons.length).toBeGreaterThan(0);
    for (const reason of reasons) expect(reason.length).toBeGreaterThan(80);
  });

  it('raises no finding on the stack with the api function URL, so the URL needs no acknowledgement', () => {
    // Prepare
    const withUrl = timerApp({ functionUrl: true });
    withUrl.synth();

    // Act
    const report = new AwsSolutionsChecks(withUrl, { verbose: true }).validateScope(withUrl);

    // Assess: no new finding, and no acknowledgement beyond the stack's own.
    expect(report.violations.flatMap((violation) => violation.violatingResources)).toEqual([]);
    expect(acknowledgements(withUrl).sort()).toEqual(acknowledgements(app).sort());
  });

  it('passes synthesis with the pack registered the way bin/timer.ts registers it', () => {
    // Prepare
    const checked = timerApp();
    Validations.of(checked).addPlugins(new AwsSolutionsChecks(checked));

    // Act & Assess: a finding fails synthesis with CDK's validation report.
    expect(() => checked.synth()).not.toThrow();
  });
});
