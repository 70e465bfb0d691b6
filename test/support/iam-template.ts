import type { Template } from 'aws-cdk-lib/assertions';

/** One statement of an IAM policy, as synthesized. */
export interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
}

interface PolicyResource {
  readonly Properties: { readonly Roles: Array<{ Ref: string }>; readonly PolicyDocument: { Statement: Statement[] } };
  readonly Condition?: string;
}

/** A statement's actions, whether synthesized as one string or a list. */
export const actionsOf = (statement: Statement): string[] =>
  Array.isArray(statement.Action) ? statement.Action : [statement.Action];

/** Every statement of the IAM policies attached to the role with this logical id, with the policy's condition. */
export function statementsOfRole(template: Template, roleId: string): Array<Statement & { policyCondition?: string }> {
  const policies = Object.values(template.findResources('AWS::IAM::Policy')) as PolicyResource[];
  return policies
    .filter((policy) => policy.Properties.Roles.some((role) => role.Ref === roleId))
    .flatMap((policy) =>
      policy.Properties.PolicyDocument.Statement.map((statement) => ({
        ...statement,
        ...(policy.Condition && { policyCondition: policy.Condition }),
      })),
    );
}

/** Every IAM policy statement in the template. */
export function allStatements(template: Template): Statement[] {
  const policies = Object.values(template.findResources('AWS::IAM::Policy')) as PolicyResource[];
  return policies.flatMap((policy) => policy.Properties.PolicyDocument.Statement);
}
