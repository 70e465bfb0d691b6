/**
 * The checks a task's target gets at submit beyond its shape: the tenant's webhook host
 * allow-list, where the webhook's host name points now, and the deployer's SQS and
 * EventBridge allow-lists. The callback checks the webhook's addresses again at connect
 * time (a name can change what it points to); these checks give the caller a 400 now
 * rather than a FAILED task later.
 */
import { isIP } from 'node:net';

import type { FieldError } from '../../contract/wire.js';
import type { Target } from '../kernel/task.js';
import type { Tenant } from '../tenants/tenants.js';
import { type AwsHome, targetAllowed, type TargetAllowLists } from './allowed-targets.js';
import { type AddressPolicy, forbiddenAddressReason, webhookUrlProblem } from './egress.js';

/** Resolves a host name to its addresses, as dns.lookup with `all: true` does. */
export type ResolveHost = (hostname: string) => Promise<ReadonlyArray<{ readonly address: string }>>;

export interface TargetRules {
  readonly policy: AddressPolicy;
  readonly allowLists: TargetAllowLists;
  readonly home: AwsHome;
  /** Resolves webhook hosts at submit; unused where private addresses are allowed (local mode). */
  readonly resolveHost: ResolveHost;
}

/**
 * The rules with each host name resolved at most once, for one request: a batch of 100
 * tasks to the same webhook host makes one lookup, not 100.
 */
export function resolvingEachHostOnce(rules: TargetRules): TargetRules {
  const lookups = new Map<string, ReturnType<ResolveHost>>();
  return {
    ...rules,
    resolveHost: (hostname) => {
      let lookup = lookups.get(hostname);
      if (!lookup) {
        lookup = rules.resolveHost(hostname);
        lookups.set(hostname, lookup);
      }
      return lookup;
    },
  };
}

/** Names that do not exist, as opposed to lookups that failed for now (which the connect-time check covers). */
const NO_SUCH_HOST = new Set(['ENOTFOUND', 'ENODATA']);

async function webhookHostProblem(url: string, rules: TargetRules): Promise<string | undefined> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (rules.policy.allowPrivateAddresses || isIP(host) !== 0) return undefined;
  let addresses: ReadonlyArray<{ readonly address: string }>;
  try {
    addresses = await rules.resolveHost(host);
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    return NO_SUCH_HOST.has(code) ? `names host ${host}, which does not resolve; check the spelling` : undefined;
  }
  for (const { address } of addresses) {
    const reason = forbiddenAddressReason(address);
    if (reason)
      return `names host ${host}, which resolves to ${address}, which ${reason}; webhooks must reach public addresses`;
  }
  return undefined;
}

/** The first problem with the target for this tenant and deployment, as a field error under `prefix`. */
export async function targetProblem(
  target: Target,
  tenant: Tenant,
  rules: TargetRules,
  prefix: string,
): Promise<FieldError | undefined> {
  if (target.type !== 'http') {
    const refusal = targetAllowed(target, rules.allowLists, rules.home);
    return refusal ? { path: `${prefix}target`, message: refusal } : undefined;
  }
  const path = `${prefix}target.url`;
  const urlProblem = webhookUrlProblem(target.url, {
    ...rules.policy,
    ...(tenant.allowedHosts && { allowedHosts: tenant.allowedHosts }),
  });
  if (urlProblem) return { path, message: urlProblem };
  const hostProblem = await webhookHostProblem(target.url, rules);
  return hostProblem ? { path, message: hostProblem } : undefined;
}
