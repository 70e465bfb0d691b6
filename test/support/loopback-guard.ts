import { lookup as systemLookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction, Socket, type TcpSocketConnectOpts } from 'node:net';

import { vi } from 'vitest';

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

const isLoopback = (ip: string) => loopback.check(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4');

/** The options object of a Socket#connect call, which net.connect passes as a normalised [options, listener] array. */
function connectOptions(args: unknown[]): Partial<TcpSocketConnectOpts> | undefined {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  return typeof first === 'object' && first !== null ? (first as Partial<TcpSocketConnectOpts>) : undefined;
}

/**
 * Until restored, fails every socket connect to an address outside loopback, whether the host is
 * an IP literal or a name some lookup resolves. Tests of the egress checks feed the code public and
 * private addresses; should that code be wrong, this guard fails the test instead of letting
 * traffic leave the machine.
 */
export function allowLoopbackConnectsOnly() {
  const connect = Socket.prototype.connect;
  return vi.spyOn(Socket.prototype, 'connect').mockImplementation(function loopbackOnly(
    this: Socket,
    ...args: unknown[]
  ) {
    const options = connectOptions(args);
    const host = options?.host;
    if (host && isIP(host) && !isLoopback(host)) throw new Error(`loopback guard: a test tried to connect to ${host}`);
    if (options && host && !isIP(host)) {
      const lookup: LookupFunction = options.lookup ?? systemLookup;
      options.lookup = (hostname, lookupOptions, callback) =>
        lookup(hostname, lookupOptions, (error, address, family) => {
          const addresses = typeof address === 'string' ? [address] : address.map((each) => each.address);
          const outside = addresses.find((each) => each && !isLoopback(each));
          if (!error && outside) callback(new Error(`loopback guard: a test tried to connect to ${outside}`), '');
          else callback(error, address, family);
        });
    }
    return connect.apply(this, args as Parameters<Socket['connect']>);
  });
}
