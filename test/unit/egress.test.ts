import { describe, expect, it } from 'vitest';

import { type EgressPolicy, forbiddenAddressReason, webhookUrlProblem } from '../../functions/core/targets/egress.js';

const CLOUD: EgressPolicy = { allowHttp: false, allowPrivateAddresses: false };
const LOCAL: EgressPolicy = { allowHttp: true, allowPrivateAddresses: true };

describe('Function: forbiddenAddressReason', () => {
  it.each([
    ['0.0.0.0', 'is an unspecified ("this network") address (0.0.0.0/8)'],
    ['0.1.2.3', 'is an unspecified ("this network") address (0.0.0.0/8)'],
    ['127.0.0.1', 'is a loopback address (127.0.0.0/8)'],
    ['127.255.255.254', 'is a loopback address (127.0.0.0/8)'],
    ['10.0.0.5', 'is a private address (10.0.0.0/8)'],
    ['10.255.255.255', 'is a private address (10.0.0.0/8)'],
    ['172.16.0.1', 'is a private address (172.16.0.0/12)'],
    ['172.31.255.255', 'is a private address (172.16.0.0/12)'],
    ['192.168.1.10', 'is a private address (192.168.0.0/16)'],
    ['100.64.0.1', 'is a carrier-grade NAT address (100.64.0.0/10)'],
    ['100.100.100.200', 'is a carrier-grade NAT address (100.64.0.0/10)'],
    ['100.127.255.255', 'is a carrier-grade NAT address (100.64.0.0/10)'],
    ['169.254.169.254', 'is the cloud instance metadata address (169.254.169.254/32)'],
    ['169.254.169.253', 'is a link-local address (169.254.0.0/16)'],
    ['169.254.0.1', 'is a link-local address (169.254.0.0/16)'],
    ['192.0.0.8', 'is an IETF protocol assignment address (192.0.0.0/24)'],
    ['192.0.2.1', 'is a documentation address (192.0.2.0/24)'],
    ['192.88.99.1', 'is a 6to4 relay address (192.88.99.0/24)'],
    ['198.18.0.1', 'is a benchmarking address (198.18.0.0/15)'],
    ['198.19.255.255', 'is a benchmarking address (198.18.0.0/15)'],
    ['198.51.100.7', 'is a documentation address (198.51.100.0/24)'],
    ['203.0.113.9', 'is a documentation address (203.0.113.0/24)'],
    ['224.0.0.1', 'is a multicast address (224.0.0.0/4)'],
    ['239.255.255.250', 'is a multicast address (224.0.0.0/4)'],
    ['240.0.0.1', 'is a reserved address (240.0.0.0/4)'],
    ['255.255.255.255', 'is the broadcast address (255.255.255.255/32)'],
  ])('refuses the IPv4 address %s: it %s', (ip, reason) => {
    // Act & Assess
    expect(forbiddenAddressReason(ip)).toBe(reason);
  });

  it.each([
    ['::', 'is the unspecified address (::/128)'],
    ['::1', 'is the loopback address (::1/128)'],
    ['0:0:0:0:0:0:0:1', 'is the loopback address (::1/128)'],
    ['fd00:ec2::254', 'is the AWS instance metadata address (fd00:ec2::254/128)'],
    ['fd12:3456::1', 'is a unique local (private) address (fc00::/7)'],
    ['fc00::1', 'is a unique local (private) address (fc00::/7)'],
    ['fe80::1', 'is a link-local address (fe80::/10)'],
    ['fe80::1%eth0', 'is a link-local address (fe80::/10)'],
    ['febf::1', 'is a link-local address (fe80::/10)'],
    ['fec0::1', 'is a site-local address (fec0::/10)'],
    ['ff02::1', 'is a multicast address (ff00::/8)'],
    ['ff05::2', 'is a multicast address (ff00::/8)'],
    ['2001:db8::1', 'is a documentation address (2001:db8::/32)'],
    ['3fff::1', 'is a documentation address (3fff::/20)'],
    ['2001:2::1', 'is a benchmarking address (2001:2::/48)'],
    ['100::1', 'is a discard-only address (100::/64)'],
    ['2001::1', 'is a Teredo tunnel address (2001::/32)'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'is a Teredo tunnel address (2001::/32)'],
    ['2002:7f00:1::1', 'is a 6to4 tunnel address (2002::/16)'],
    ['2002:808:808::1', 'is a 6to4 tunnel address (2002::/16)'],
    ['64:ff9b:1::a00:5', 'is a local-use NAT64 address (64:ff9b:1::/48)'],
    ['4000::1', 'is outside the global unicast range (2000::/3)'],
  ])('refuses the IPv6 address %s: it %s', (ip, reason) => {
    // Act & Assess
    expect(forbiddenAddressReason(ip)).toBe(reason);
  });

  it.each([
    ['::ffff:127.0.0.1', '127.0.0.1 (IPv4-mapped, ::ffff:0:0/96), which is a loopback address (127.0.0.0/8)'],
    ['::ffff:7f00:1', '127.0.0.1 (IPv4-mapped, ::ffff:0:0/96), which is a loopback address (127.0.0.0/8)'],
    ['::ffff:10.0.0.5', '10.0.0.5 (IPv4-mapped, ::ffff:0:0/96), which is a private address (10.0.0.0/8)'],
    [
      '::ffff:a9fe:a9fe',
      '169.254.169.254 (IPv4-mapped, ::ffff:0:0/96), which is the cloud instance metadata address (169.254.169.254/32)',
    ],
    ['::ffff:0:a00:5', '10.0.0.5 (IPv4-translated, ::ffff:0:0:0/96), which is a private address (10.0.0.0/8)'],
    ['::127.0.0.1', '127.0.0.1 (IPv4-compatible, ::/96), which is a loopback address (127.0.0.0/8)'],
    ['::2', '0.0.0.2 (IPv4-compatible, ::/96), which is an unspecified ("this network") address (0.0.0.0/8)'],
    ['64:ff9b::10.0.0.5', '10.0.0.5 (NAT64, 64:ff9b::/96), which is a private address (10.0.0.0/8)'],
    [
      '64:ff9b::a9fe:a9fe',
      '169.254.169.254 (NAT64, 64:ff9b::/96), which is the cloud instance metadata address (169.254.169.254/32)',
    ],
  ])('judges %s by the IPv4 address inside it: it maps to %s', (ip, reason) => {
    // Act & Assess
    expect(forbiddenAddressReason(ip)).toBe(`maps to ${reason}`);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '11.0.0.1',
    '93.184.216.34',
    '100.63.255.255',
    '100.128.0.0',
    '169.253.255.255',
    '172.15.255.255',
    '172.32.0.0',
    '192.169.0.1',
    '198.17.255.255',
    '198.20.0.0',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450:4001::1',
    '2001:db9::1',
    '2003::1',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
  ])('allows the public address %s', (ip) => {
    // Act & Assess
    expect(forbiddenAddressReason(ip)).toBeUndefined();
  });

  it.each(['example.com', '', '1.2.3', '[::1]'])('refuses %j, which is not an IP address', (text) => {
    // Act & Assess
    expect(forbiddenAddressReason(text)).toBe('is not an IP address');
  });
});

describe('Function: webhookUrlProblem', () => {
  const LOOPBACK = 'must not point at 127.0.0.1, which is a loopback address (127.0.0.0/8)';
  const METADATA =
    'must not point at 169.254.169.254, which is the cloud instance metadata address (169.254.169.254/32)';

  it.each([
    ['https://127.0.0.1/hook', LOOPBACK],
    ['https://127.0.0.1./hook', LOOPBACK],
    ['https://2130706433/hook', LOOPBACK],
    ['https://0177.0.0.1/hook', LOOPBACK],
    ['https://0x7f.1/hook', LOOPBACK],
    ['https://0x7f000001/hook', LOOPBACK],
    ['https://127.1/hook', LOOPBACK],
    ['https://169.254.169.254/latest/meta-data/', METADATA],
    ['https://2852039166/latest/meta-data/', METADATA],
    ['https://0xa9fea9fe/latest/meta-data/', METADATA],
    ['https://0251.0376.0251.0376/latest/meta-data/', METADATA],
    ['https://169.254.43518/latest/meta-data/', METADATA],
    ['https://0/', 'must not point at 0.0.0.0, which is an unspecified ("this network") address (0.0.0.0/8)'],
    ['https://10.0.0.5:8443/hook', 'must not point at 10.0.0.5, which is a private address (10.0.0.0/8)'],
    ['https://[::1]/hook', 'must not point at ::1, which is the loopback address (::1/128)'],
    ['https://[0:0:0:0:0:0:0:1]/hook', 'must not point at ::1, which is the loopback address (::1/128)'],
    ['https://[::ffff:127.0.0.1]/hook', 'must not point at ::ffff:7f00:1, which maps to 127.0.0.1'],
    ['https://[::ffff:7f00:1]/hook', 'must not point at ::ffff:7f00:1, which maps to 127.0.0.1'],
    ['https://[::ffff:a9fe:a9fe]/hook', 'must not point at ::ffff:a9fe:a9fe, which maps to 169.254.169.254'],
    [
      'https://[fd00:ec2::254]/latest/meta-data/',
      'must not point at fd00:ec2::254, which is the AWS instance metadata address (fd00:ec2::254/128)',
    ],
    ['https://[fe80::1]/hook', 'must not point at fe80::1, which is a link-local address (fe80::/10)'],
  ])('refuses %s in the cloud, whatever way the address is written', (url, problem) => {
    // Act
    const found = webhookUrlProblem(url, CLOUD);

    // Assess
    expect(found?.startsWith(problem), found).toBe(true);
    expect(found?.endsWith("; use your webhook's public host name"), found).toBe(true);
  });

  it.each([
    ['https://localhost/hook', 'localhost', 'localhost'],
    ['https://localhost./hook', 'localhost', 'localhost'],
    ['https://LOCALHOST:8443/hook', 'localhost', 'localhost'],
    ['https://api.localhost/hook', 'api.localhost', 'localhost'],
    ['https://metadata.google.internal/computeMetadata/v1/', 'metadata.google.internal', 'internal'],
    ['https://instance-data.ec2.internal/latest/', 'instance-data.ec2.internal', 'internal'],
    ['https://printer.local/', 'printer.local', 'local'],
    ['https://router.home.arpa/', 'router.home.arpa', 'home.arpa'],
    ['https://localhost.localdomain/', 'localhost.localdomain', 'localdomain'],
  ])('refuses %s in the cloud: the name only resolves inside private networks', (url, host, suffix) => {
    // Act & Assess
    expect(webhookUrlProblem(url, CLOUD)).toBe(
      `must not point at ${host}, which resolves only inside private networks (${suffix} and its subdomains are for local use); use your webhook's public host name`,
    );
  });

  it.each([
    ['https://intranet/hook', 'intranet'],
    ['https://intranet./hook', 'intranet'],
    ['https://metadata/computeMetadata/v1/', 'metadata'],
    ['https://instance-data/latest/meta-data/', 'instance-data'],
  ])(
    'refuses the single-label host of %s in the cloud: search domains would resolve it inside the network',
    (url, host) => {
      // Act & Assess
      expect(webhookUrlProblem(url, CLOUD)).toBe(
        `must not use the single-label host "${host}", which would resolve inside the timer service's network; use a fully qualified name such as hooks.example.com`,
      );
    },
  );

  it.each([
    ['http://hooks.example.com/hook', CLOUD, 'must use https://'],
    ['ftp://hooks.example.com/hook', CLOUD, 'must use https://'],
    ['ftp://hooks.example.com/hook', LOCAL, 'must use http:// or https://'],
    ['not a url', CLOUD, 'must be an absolute URL such as https://example.com/hook'],
    ['/relative/hook', CLOUD, 'must be an absolute URL such as https://example.com/hook'],
    [
      'https://user:secret@hooks.example.com/hook',
      CLOUD,
      'must not contain a user name or password (user:pass@); send credentials in target.headers instead',
    ],
    [
      'https://token@hooks.example.com/hook',
      CLOUD,
      'must not contain a user name or password (user:pass@); send credentials in target.headers instead',
    ],
    [
      'http://user:secret@localhost:3000/hook',
      LOCAL,
      'must not contain a user name or password (user:pass@); send credentials in target.headers instead',
    ],
    [
      'https://hooks.example.com:25/hook',
      CLOUD,
      'must not use port 25, which belongs to a protocol other than HTTP; use 443 or another port your webhook serves HTTP on',
    ],
    [
      'http://localhost:6000/hook',
      LOCAL,
      'must not use port 6000, which belongs to a protocol other than HTTP; use 443 or another port your webhook serves HTTP on',
    ],
  ])('refuses %s: it %s', (url, policy, problem) => {
    // Act & Assess
    expect(webhookUrlProblem(url, policy)).toBe(problem);
  });

  it.each([
    ['https://hooks.example.com/timer?x=1', CLOUD],
    ['https://hooks.example.com:443/hook', CLOUD],
    ['https://hooks.example.com:8443/hook', CLOUD],
    ['https://hooks.example.com:1024/hook', CLOUD],
    ['https://HOOKS.Example.COM./hook', CLOUD],
    ['https://localhost.example.com/hook', CLOUD],
    ['https://93.184.216.34/hook', CLOUD],
    ['https://[2606:4700:4700::1111]/hook', CLOUD],
    ['http://127.0.0.1:8080/hook', LOCAL],
    ['http://localhost:3000/hook', LOCAL],
    ['http://[::1]:3000/hook', LOCAL],
    ['http://10.0.0.5/hook', LOCAL],
    ['https://intranet/hook', LOCAL],
  ])('accepts %s', (url, policy) => {
    // Act & Assess
    expect(webhookUrlProblem(url, policy)).toBeUndefined();
  });

  describe('with a sender allow-list', () => {
    it.each([
      [['hooks.example.com'], 'https://hooks.example.com/hook'],
      [['hooks.example.com'], 'https://HOOKS.EXAMPLE.COM./hook'],
      [['Hooks.Example.com.'], 'https://hooks.example.com/hook'],
      [['other.example.org', 'hooks.example.com'], 'https://hooks.example.com/hook'],
      [['*.example.com'], 'https://a.example.com/hook'],
      [['*.example.com'], 'https://a.b.example.com/hook'],
      [['*.EXAMPLE.com.'], 'https://a.example.com./hook'],
    ])('accepts a host the list %j names: %s', (allowedHosts, url) => {
      // Act & Assess
      expect(webhookUrlProblem(url, { ...CLOUD, allowedHosts })).toBeUndefined();
    });

    it.each([
      [['hooks.example.com'], 'https://evil.example.com/hook', 'evil.example.com'],
      [['hooks.example.com'], 'https://a.hooks.example.com/hook', 'a.hooks.example.com'],
      [['*.example.com'], 'https://example.com/hook', 'example.com'],
      [['*.example.com'], 'https://badexample.com/hook', 'badexample.com'],
      [['*.example.com'], 'https://example.com.evil.org/hook', 'example.com.evil.org'],
    ])('refuses a host the list %j does not name: %s', (allowedHosts, url, host) => {
      // Act & Assess
      expect(webhookUrlProblem(url, { ...CLOUD, allowedHosts })).toBe(
        `must point at one of the sender's allowed hosts (${allowedHosts.join(', ')}); ${host} is not one of them`,
      );
    });

    it('refuses every host when the list is empty', () => {
      // Act & Assess
      expect(webhookUrlProblem('https://hooks.example.com/hook', { ...CLOUD, allowedHosts: [] })).toBe(
        "must point at one of the sender's allowed hosts (none are configured); hooks.example.com is not one of them",
      );
    });

    it('does not let a listed host reach a private address in the cloud', () => {
      // Act & Assess
      expect(webhookUrlProblem('https://localhost/hook', { ...CLOUD, allowedHosts: ['localhost'] })).toMatch(
        /^must not point at localhost/,
      );
      expect(webhookUrlProblem('https://10.0.0.5/hook', { ...CLOUD, allowedHosts: ['10.0.0.5'] })).toMatch(
        /^must not point at 10\.0\.0\.5/,
      );
    });

    it('still applies in local mode, where private addresses are otherwise allowed', () => {
      // Act & Assess
      expect(webhookUrlProblem('http://127.0.0.1:3000/hook', { ...LOCAL, allowedHosts: ['hooks.example.com'] })).toBe(
        "must point at one of the sender's allowed hosts (hooks.example.com); 127.0.0.1 is not one of them",
      );
    });
  });
});
