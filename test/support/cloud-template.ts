/**
 * The synthesized stack read in local terms: its table and queues stand for local mode's, so a
 * function's environment and its role's policies resolve to the names and ARNs the local run uses.
 */
import { type FunctionName, QUEUES } from '../../functions/contract/topology.js';
import { capitalized } from '../../lib/construct/timer/construct-helpers.js';
import { LOCAL_REGION, LOCAL_TABLE_NAME } from '../../lib/local/dynamodb.js';

/** The account local mode's emulators name in their ARNs (fauxqs's queues, the EventBridge sink). */
export const LOCAL_ACCOUNT = '000000000000';

interface CfnResource {
  readonly Type: string;
  readonly Properties: Record<string, unknown>;
  readonly Condition?: string;
}

export interface CloudTemplate {
  readonly Resources: Record<string, CfnResource>;
  readonly Parameters?: Record<string, { Type: string; Default?: string | number }>;
  readonly Conditions?: Record<string, unknown>;
}

/** A policy document as IAM reads it, every intrinsic resolved. */
export interface PolicyDocument {
  readonly Version: '2012-10-17';
  readonly Statement: unknown[];
}

export const localQueueName = (key: keyof typeof QUEUES) => `timer-${QUEUES[key].name}`;
export const localTableArn = `arn:aws:dynamodb:${LOCAL_REGION}:${LOCAL_ACCOUNT}:table/${LOCAL_TABLE_NAME}`;
export const localQueueArn = (name: string) => `arn:aws:sqs:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${name}`;

/**
 * Resolves `Ref`, `Fn::GetAtt`, `Fn::Join` and the condition functions the stack uses. The table
 * is local mode's table, each queue local mode's queue (its `Ref`, a URL, from `queueUrls`), each
 * parameter the value a deployment gives it in `parameters` (its default otherwise).
 */
export function templateResolver(
  template: CloudTemplate,
  { queueUrls = {}, parameters = {} }: { queueUrls?: Record<string, string>; parameters?: Record<string, string> },
) {
  const queueKeyOf = (logicalId: string) =>
    (Object.keys(QUEUES) as Array<keyof typeof QUEUES>).find((key) => logicalId.startsWith(`${capitalized(key)}Queue`));
  const ref = (id: string): unknown => {
    if (id === 'AWS::AccountId') return LOCAL_ACCOUNT;
    if (id === 'AWS::Partition') return 'aws';
    if (id === 'AWS::Region') return LOCAL_REGION;
    const parameter = template.Parameters?.[id];
    if (parameter) {
      const value = parameters[id] ?? String(parameter.Default ?? '');
      return parameter.Type === 'CommaDelimitedList' ? value.split(',') : value;
    }
    const resource = template.Resources[id];
    if (resource?.Type === 'AWS::DynamoDB::GlobalTable') return LOCAL_TABLE_NAME;
    const queue = queueKeyOf(id);
    if (resource?.Type === 'AWS::SQS::Queue' && queue) return queueUrls[queue] ?? localQueueName(queue);
    return id;
  };
  const getAtt = (id: string, attribute: string): string => {
    const resource = template.Resources[id];
    const queue = queueKeyOf(id);
    if (resource?.Type === 'AWS::DynamoDB::GlobalTable' && attribute === 'Arn') return localTableArn;
    if (resource?.Type === 'AWS::SQS::Queue' && queue && attribute === 'Arn')
      return localQueueArn(localQueueName(queue));
    // Resources no local request names (log groups, roles) keep a placeholder of their own.
    return `arn:aws:cloudformation:${LOCAL_REGION}:${LOCAL_ACCOUNT}:${id}/${attribute}`;
  };
  const resolve = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.flatMap((item) => resolve(item));
    if (typeof value !== 'object' || value === null) return value;
    const entries = Object.entries(value) as Array<[string, unknown]>;
    const [intrinsic, argument] = entries.length === 1 ? (entries[0] as [string, unknown]) : [];
    switch (intrinsic) {
      case 'Ref':
        return ref(argument as string);
      case 'Fn::GetAtt':
        return getAtt(...(argument as [string, string]));
      case 'Fn::Join': {
        const [separator, parts] = argument as [string, unknown[]];
        return [resolve(parts)].flat().join(separator);
      }
      case 'Fn::Equals': {
        const [left, right] = (argument as unknown[]).map((side) => resolve(side));
        return left === right;
      }
      case 'Fn::Not':
        return !resolve((argument as unknown[])[0]);
      case 'Condition':
        return resolve(template.Conditions?.[argument as string]);
      default:
        return Object.fromEntries(entries.map(([key, inner]) => [key, resolve(inner)]));
    }
  };
  return resolve;
}

/** The logical id of a function's resource: `<Name>Function` and the hash CDK appends. */
export function functionLogicalId(template: CloudTemplate, fn: FunctionName): string {
  const ids = Object.entries(template.Resources)
    .filter(
      ([id, resource]) => resource.Type === 'AWS::Lambda::Function' && id.startsWith(`${capitalized(fn)}Function`),
    )
    .map(([id]) => id);
  if (ids.length !== 1) throw new Error(`expected one ${fn} function in the template, found ${ids.length}`);
  return ids[0] as string;
}

export const functionResource = (template: CloudTemplate, fn: FunctionName) =>
  template.Resources[functionLogicalId(template, fn)] as CfnResource;

/** The policies attached to a function's role whose deploy-time condition holds, resolved. */
export function rolePolicies(
  template: CloudTemplate,
  fn: FunctionName,
  resolve: (value: unknown) => unknown,
): Array<{ name: string; policy: PolicyDocument }> {
  const role = functionResource(template, fn).Properties.Role as { 'Fn::GetAtt': [string, string] };
  const roleId = role['Fn::GetAtt'][0];
  return Object.entries(template.Resources)
    .filter(([, resource]) => resource.Type === 'AWS::IAM::Policy')
    .filter(([, resource]) => (resource.Properties.Roles as Array<{ Ref: string }>).some((r) => r.Ref === roleId))
    .filter(([, resource]) => !resource.Condition || resolve({ Condition: resource.Condition }) === true)
    .map(([name, resource]) => {
      const document = resource.Properties.PolicyDocument as { Statement: unknown[] };
      return { name, policy: { Version: '2012-10-17', Statement: resolve(document.Statement) as unknown[] } };
    });
}
