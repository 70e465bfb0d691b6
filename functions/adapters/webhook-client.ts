/**
 * The webhook POST, on node:http rather than global fetch so the address is checked where it
 * is used: the agents resolve names with a lookup that refuses the connection if any address
 * is forbidden, so the address checked is the address connected to, and a name that answers
 * with a public address when a task is submitted and a private one later (DNS rebinding)
 * gains nothing.
 */
import { type LookupAddress, promises as dns } from 'node:dns';
import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

import { systemTimer } from '../core/kernel/timers.js';
import { type AddressPolicy, forbiddenAddressReason, webhookUrlProblem } from '../core/targets/egress.js';

/** Every address a host name resolves to. */
export type Resolve = (hostname: string) => Promise<readonly LookupAddress[]>;

export const systemResolve: Resolve = (hostname) => dns.lookup(hostname, { all: true });

/** Enough of a body to tell a receiver's "ok" from a page of HTML; the rest is never read. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

export interface WebhookClientOptions {
  /** What may be connected to; fixed per client, so every pooled connection was checked under it. */
  readonly policy: AddressPolicy;
  /** How long resolving the name and connecting may take. */
  readonly connectTimeoutMs: number;
  /** How long a call may take in all: connect, send, and the answer with its (capped) body. */
  readonly totalTimeoutMs: number;
  /**
   * Bytes of the response body read before the connection is dropped.
   * @default DEFAULT_MAX_RESPONSE_BYTES
   */
  readonly maxResponseBytes?: number;
  /**
   * Resolves host names; tests answer with addresses of their choosing.
   * @default dns.lookup with `all: true`
   */
  readonly resolve?: Resolve;
}

export interface WebhookRequest {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The sender's allowed hosts, if it has a list (see EgressPolicy.allowedHosts). */
  readonly allowedHosts?: readonly string[];
}

/** An answer (any status: redirects are not followed) or why there was none. */
export type WebhookOutcome =
  | { readonly answered: true; readonly status: number; readonly headers: IncomingHttpHeaders }
  | { readonly answered: false; readonly error: string };

/** A lookup that hands Node only addresses the policy allows, and refuses the connection otherwise. */
function checkedLookup(resolve: Resolve, policy: AddressPolicy): LookupFunction {
  return function lookupAllowedAddresses(hostname, options, callback) {
    resolve(hostname).then(
      (addresses) => {
        const refused = policy.allowPrivateAddresses
          ? undefined
          : addresses
              .map(({ address }) => ({ address, reason: forbiddenAddressReason(address) }))
              .find(({ reason }) => reason !== undefined);
        const [first] = addresses;
        if (refused) {
          callback(new Error(`connect to ${hostname} (${refused.address}) refused: ${refused.reason}`), '');
        } else if (!first) {
          callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
        } else if (options.all) {
          callback(null, [...addresses]);
        } else {
          callback(null, first.address, first.family);
        }
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}

/** Node reports a connection that failed on every address as an AggregateError without a message of its own. */
const describeNetworkError = (error: Error) =>
  error instanceof AggregateError ? error.errors.map((each: Error) => each.message).join('; ') : error.message;

/** POSTs webhooks over keep-alive connections, one pool per protocol, checking every address it connects to. */
export class WebhookClient {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly maxResponseBytes: number;

  constructor(private readonly options: WebhookClientOptions) {
    // The agents own the lookup, so no socket in their pools bypassed it; a client with another policy has its own.
    const agentOptions = { keepAlive: true, lookup: checkedLookup(options.resolve ?? systemResolve, options.policy) };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  }

  /** Never rejects for the target's failures: a refusal, a timeout or a network error is an outcome. */
  post(url: string, request: WebhookRequest): Promise<WebhookOutcome> {
    // Node skips the lookup for IP literals, so they (and everything else about the URL) are checked here.
    const problem = webhookUrlProblem(url, { ...this.options.policy, allowedHosts: request.allowedHosts });
    if (problem) return Promise.resolve({ answered: false, error: `webhook URL ${problem}` });
    return this.send(new URL(url), request);
  }

  /**
   * One POST. A keep-alive connection the receiver closed as idle just as the request went out
   * fails with ECONNRESET before the receiver read anything (Node's servers close idle sockets
   * after 5 s); that request is sent again, as Node's docs advise, instead of failing an attempt
   * that never reached the receiver. Connections pooled together go idle together, so the next
   * pooled one may be closing too: it is resent while the failure was on a reused connection,
   * which ends at the latest on a fresh one (the scale model saw a call fail twice this way).
   */
  private send(target: URL, request: WebhookRequest): Promise<WebhookOutcome> {
    const secure = target.protocol === 'https:';
    const { connectTimeoutMs, totalTimeoutMs } = this.options;
    return new Promise((resolve) => {
      const outgoing = (secure ? https : http).request(target, {
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
      });
      let answer: WebhookOutcome | undefined;
      let settled = false;
      const settle = (outcome: WebhookOutcome, dropConnection: boolean) => {
        if (settled) return;
        settled = true;
        stopConnectTimer();
        stopTotalTimer();
        resolve(outcome);
        if (dropConnection) outgoing.destroy();
      };
      // Stall-tolerant timers (see systemTimer): a reply already waiting when the process stalls is read, not timed out.
      const stopConnectTimer = systemTimer(connectTimeoutMs, () =>
        settle({ answered: false, error: `connect timeout after ${connectTimeoutMs} ms` }, true),
      );
      // Once the status is in, running out of time only cuts the body short.
      const stopTotalTimer = systemTimer(totalTimeoutMs, () =>
        settle(answer ?? { answered: false, error: `no answer within ${totalTimeoutMs} ms` }, true),
      );
      outgoing.once('socket', (socket) => {
        if (socket.connecting) socket.once('connect', stopConnectTimer);
        else stopConnectTimer();
      });
      outgoing.on('error', (error: NodeJS.ErrnoException) => {
        if (!settled && outgoing.reusedSocket && error.code === 'ECONNRESET') {
          settled = true;
          stopConnectTimer();
          stopTotalTimer();
          resolve(this.send(target, request));
          return;
        }
        settle({ answered: false, error: describeNetworkError(error) }, false);
      });
      outgoing.on('response', (response) => {
        const answered: WebhookOutcome = {
          answered: true,
          status: response.statusCode ?? 0,
          headers: response.headers,
        };
        answer = answered;
        let bodyBytes = 0;
        // The body is only read so the connection can serve the next call; past the cap, a new connection is cheaper.
        response.on('data', (chunk: Buffer) => {
          bodyBytes += chunk.length;
          if (bodyBytes > this.maxResponseBytes) settle(answered, true);
        });
        response.on('close', () => settle(answered, false));
      });
      outgoing.end(request.body);
    });
  }
}
