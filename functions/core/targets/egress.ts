/**
 * Where webhooks may go. Callers choose webhook URLs, so without these checks the timer
 * would POST wherever it is told, including the network it runs in (SSRF): the instance
 * metadata service, private addresses, loopback. The api applies `webhookUrlProblem` when a
 * task is submitted; the webhook client applies it again before each call (tasks stored
 * under older rules are called too) and checks every address DNS gives at connect time.
 * Pure: no DNS, no sockets.
 */
import { BlockList, isIP } from 'node:net';

/** What a webhook URL may point at. */
export interface EgressPolicy {
  /** Whether http:// is accepted besides https:// (local mode). */
  readonly allowHttp: boolean;
  /** Whether loopback, private and other non-public hosts and addresses are reachable (local mode). */
  readonly allowPrivateAddresses: boolean;
  /**
   * Hosts a sender's webhooks may use: exact names, or `*.example.com` for any subdomain
   * (not example.com itself); case-insensitive, trailing dots ignored.
   * @default any host
   */
  readonly allowedHosts?: readonly string[];
}

/** The part of the policy that holds for every call of a dispatcher; the allowed hosts vary by sender. */
export type AddressPolicy = Omit<EgressPolicy, 'allowedHosts'>;

/**
 * The policy of a deployment: the cloud allows https to public hosts only; local mode
 * (`allowInsecureTargets`) also http and receivers on the developer's machine or network.
 */
export function addressPolicy(allowInsecureTargets: boolean): AddressPolicy {
  return { allowHttp: allowInsecureTargets, allowPrivateAddresses: allowInsecureTargets };
}

interface Range {
  readonly cidr: string;
  /** A noun phrase: the reason reads "is <what> (<cidr>)". */
  readonly what: string;
}

/** Ranges a webhook must not reach, the most specific first so the reason names it. */
const IPV4_FORBIDDEN: readonly Range[] = [
  { cidr: '169.254.169.254/32', what: 'the cloud instance metadata address' },
  { cidr: '0.0.0.0/8', what: 'an unspecified ("this network") address' },
  { cidr: '10.0.0.0/8', what: 'a private address' },
  { cidr: '100.64.0.0/10', what: 'a carrier-grade NAT address' },
  { cidr: '127.0.0.0/8', what: 'a loopback address' },
  { cidr: '169.254.0.0/16', what: 'a link-local address' },
  { cidr: '172.16.0.0/12', what: 'a private address' },
  { cidr: '192.0.0.0/24', what: 'an IETF protocol assignment address' },
  { cidr: '192.0.2.0/24', what: 'a documentation address' },
  { cidr: '192.88.99.0/24', what: 'a 6to4 relay address' },
  { cidr: '192.168.0.0/16', what: 'a private address' },
  { cidr: '198.18.0.0/15', what: 'a benchmarking address' },
  { cidr: '198.51.100.0/24', what: 'a documentation address' },
  { cidr: '203.0.113.0/24', what: 'a documentation address' },
  { cidr: '224.0.0.0/4', what: 'a multicast address' },
  { cidr: '255.255.255.255/32', what: 'the broadcast address' },
  { cidr: '240.0.0.0/4', what: 'a reserved address' },
];

const IPV6_FORBIDDEN: readonly Range[] = [
  { cidr: '::/128', what: 'the unspecified address' },
  { cidr: '::1/128', what: 'the loopback address' },
  { cidr: 'fd00:ec2::254/128', what: 'the AWS instance metadata address' },
  // Local-use NAT64 (RFC 8215) translates into whatever IPv4 network its operator chose.
  { cidr: '64:ff9b:1::/48', what: 'a local-use NAT64 address' },
  // 6to4 and Teredo are tunnels whose relays forward to the IPv4 address inside; both are
  // obsolete (RFC 7526, RFC 4380), so no webhook needs them and they are refused outright.
  { cidr: '2002::/16', what: 'a 6to4 tunnel address' },
  { cidr: '2001::/32', what: 'a Teredo tunnel address' },
  { cidr: '2001:2::/48', what: 'a benchmarking address' },
  { cidr: '2001:db8::/32', what: 'a documentation address' },
  { cidr: '3fff::/20', what: 'a documentation address' },
  { cidr: '100::/64', what: 'a discard-only address' },
  { cidr: 'fc00::/7', what: 'a unique local (private) address' },
  { cidr: 'fe80::/10', what: 'a link-local address' },
  { cidr: 'fec0::/10', what: 'a site-local address' },
  { cidr: 'ff00::/8', what: 'a multicast address' },
];

/**
 * IPv6 forms that carry an IPv4 address in their last 32 bits and reach it: judged by that
 * address. NAT64 is among them because DNS64 gives such addresses for every IPv4-only host
 * in an IPv6-only subnet, public webhooks included.
 */
const IPV4_EMBEDDING: readonly Range[] = [
  { cidr: '::ffff:0:0/96', what: 'IPv4-mapped' },
  { cidr: '::ffff:0:0:0/96', what: 'IPv4-translated' },
  { cidr: '64:ff9b::/96', what: 'NAT64' },
  { cidr: '::/96', what: 'IPv4-compatible' },
];

function blockListOf(cidr: string): BlockList {
  const [network = '', prefix = ''] = cidr.split('/');
  const list = new BlockList();
  list.addSubnet(network, Number(prefix), isIP(network) === 6 ? 'ipv6' : 'ipv4');
  return list;
}

const withBlockList = (ranges: readonly Range[]) =>
  ranges.map((range) => ({ ...range, list: blockListOf(range.cidr) }));
const ipv4Forbidden = withBlockList(IPV4_FORBIDDEN);
const ipv6Forbidden = withBlockList(IPV6_FORBIDDEN);
const ipv4Embedding = withBlockList(IPV4_EMBEDDING);
const globalUnicast = blockListOf('2000::/3');

/** The IPv4 address in the last 32 bits of an IPv6 address. */
function embeddedIpv4(ipv6: string): string {
  // The URL parser writes IPv6 in one canonical form (RFC 5952), which is simple to expand.
  const canonical = new URL(`http://[${ipv6}]/`).hostname.slice(1, -1);
  const words = canonical.split(':');
  const low = Number.parseInt(words.at(-1) || '0', 16);
  const high = Number.parseInt(words.at(-2) || '0', 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

const describeRange = (range: Range) => `is ${range.what} (${range.cidr})`;

/**
 * Why a webhook must not connect to this IP address (v4 or v6), as a phrase such as
 * "is a private address (10.0.0.0/8)"; undefined for a public address.
 */
export function forbiddenAddressReason(ip: string): string | undefined {
  // A zone index (fe80::1%eth0) names an interface, not part of the address.
  const address = ip.split('%')[0] ?? '';
  switch (isIP(address)) {
    case 4: {
      const range = ipv4Forbidden.find(({ list }) => list.check(address, 'ipv4'));
      return range && describeRange(range);
    }
    case 6: {
      // Checked first: :: and ::1 also lie in the IPv4-compatible range below.
      const range = ipv6Forbidden.find(({ list }) => list.check(address, 'ipv6'));
      if (range) return describeRange(range);
      const embedding = ipv4Embedding.find(({ list }) => list.check(address, 'ipv6'));
      if (embedding) {
        const ipv4 = embeddedIpv4(address);
        const inner = forbiddenAddressReason(ipv4);
        return inner && `maps to ${ipv4} (${embedding.what}, ${embedding.cidr}), which ${inner}`;
      }
      return globalUnicast.check(address, 'ipv6') ? undefined : 'is outside the global unicast range (2000::/3)';
    }
    default:
      return 'is not an IP address';
  }
}

/**
 * Ports the Fetch standard blocks (https://fetch.spec.whatwg.org/#bad-port): other protocols
 * listen there, and an HTTP request could be made to speak to them. Global fetch refused
 * them before the webhook client replaced it; every other port is allowed, because
 * receivers commonly listen on 8080, 8443 or a port of their platform's choosing.
 */
const BLOCKED_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/**
 * Suffixes of names that only resolve inside a private network: `localhost` (RFC 6761),
 * `local` (mDNS), `internal` (reserved for private use in 2024; GCP's and AWS's metadata
 * and instance names live there), `home.arpa` (RFC 8375) and `localdomain` (/etc/hosts).
 */
const PRIVATE_NAME_SUFFIXES = ['localhost', 'local', 'internal', 'home.arpa', 'localdomain'];

/** A host name in the form it is compared in: lower case, without trailing dots. */
const normalHost = (host: string) => host.toLowerCase().replace(/\.+$/, '');

function matchesAllowedHost(host: string, entry: string): boolean {
  const pattern = normalHost(entry);
  return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern;
}

/** Said of any URL field whose text is not a URL. */
export const ABSOLUTE_URL_PROBLEM = 'must be an absolute URL such as https://example.com/hook';

const PUBLIC_NAME_FIX = "use your webhook's public host name";

/** Why a host must not be called under a policy that keeps webhooks to public addresses. */
function privateHostProblem(host: string): string | undefined {
  if (isIP(host)) {
    const reason = forbiddenAddressReason(host);
    return reason && `must not point at ${host}, which ${reason}; ${PUBLIC_NAME_FIX}`;
  }
  const suffix = PRIVATE_NAME_SUFFIXES.find((name) => host === name || host.endsWith(`.${name}`));
  if (suffix) {
    return `must not point at ${host}, which resolves only inside private networks (${suffix} and its subdomains are for local use); ${PUBLIC_NAME_FIX}`;
  }
  // Single-label names resolve through search domains and /etc/hosts, that is to hosts inside
  // the network the timer runs in; every public webhook host has at least one dot.
  if (!host.includes('.')) {
    return `must not use the single-label host "${host}", which would resolve inside the timer service's network; use a fully qualified name such as hooks.example.com`;
  }
  return undefined;
}

/**
 * What is wrong with a webhook URL under a policy, phrased to follow the field's name
 * ("must use https://"); undefined if nothing is. Addresses a name resolves to are checked
 * when connecting: DNS may answer differently by then.
 */
export function webhookUrlProblem(url: string, policy: EgressPolicy): string | undefined {
  if (!URL.canParse(url)) return ABSOLUTE_URL_PROBLEM;
  const parsed = new URL(url);
  if (parsed.protocol !== 'https:' && !(policy.allowHttp && parsed.protocol === 'http:')) {
    return policy.allowHttp ? 'must use http:// or https://' : 'must use https://';
  }
  if (parsed.username || parsed.password) {
    return 'must not contain a user name or password (user:pass@); send credentials in target.headers instead';
  }
  if (parsed.port && BLOCKED_PORTS.has(Number(parsed.port))) {
    return `must not use port ${parsed.port}, which belongs to a protocol other than HTTP; use 443 or another port your webhook serves HTTP on`;
  }
  // The URL parser has already turned decimal, octal and hex IPv4 (http://2130706433/) into dotted quads.
  const host = normalHost(parsed.hostname.replace(/^\[(.*)\]$/, '$1'));
  if (!policy.allowPrivateAddresses) {
    const problem = privateHostProblem(host);
    if (problem) return problem;
  }
  const { allowedHosts } = policy;
  if (allowedHosts && !allowedHosts.some((entry) => matchesAllowedHost(host, entry))) {
    const listed = allowedHosts.length > 0 ? allowedHosts.join(', ') : 'none are configured';
    return `must point at one of the sender's allowed hosts (${listed}); ${host} is not one of them`;
  }
  return undefined;
}
