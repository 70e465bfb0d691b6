import type { TargetAllowLists } from '../../functions/core/targets/allowed-targets.js';
import { addressPolicy } from '../../functions/core/targets/egress.js';
import type { ResolveHost, TargetRules } from '../../functions/core/targets/target-rules.js';

/** Public addresses stand in for real hosts; nothing in a test ever connects to them. */
export const TEST_HOSTS: Record<string, readonly string[]> = {
  'hooks.example.com': ['93.184.215.14'],
  'x.example': ['93.184.215.15'],
  'internal.corp.example': ['10.1.2.3'],
  'metadata.attacker.example': ['169.254.169.254'],
  'split.attacker.example': ['93.184.215.16', '127.0.0.1'],
  'v6-loopback.attacker.example': ['::1'],
};

/** A resolver over TEST_HOSTS that answers any other name as dns.lookup does a name that does not exist. */
export const resolveTestHost: ResolveHost = async (hostname) => {
  const addresses = TEST_HOSTS[hostname.toLowerCase()];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address }));
};

/** Target rules as a deployment (false) or local mode (true) has them, in a test account. */
export function testTargetRules(allowInsecureTargets: boolean, allowLists?: TargetAllowLists): TargetRules {
  return {
    policy: addressPolicy(allowInsecureTargets),
    allowLists: allowLists ?? { queueArns: 'any', eventBusArns: 'any' },
    home: { partition: 'aws', region: 'us-east-1', account: '123456789012' },
    resolveHost: resolveTestHost,
  };
}
