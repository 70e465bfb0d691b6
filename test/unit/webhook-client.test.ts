import { once } from 'node:events';
import http, { createServer } from 'node:http';
import https from 'node:https';
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net';
import { Worker } from 'node:worker_threads';

import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

import { type Resolve, WebhookClient, type WebhookClientOptions } from '../../functions/adapters/webhook-client.js';
import { type AddressPolicy, forbiddenAddressReason, webhookUrlProblem } from '../../functions/core/targets/egress.js';
import { allowLoopbackConnectsOnly } from '../support/loopback-guard.js';
import { eventually, startWebhookReceiver } from '../support/webhook-receiver.js';

/** Local mode: the receivers here listen on loopback over http. */
const LOCAL: AddressPolicy = { allowHttp: true, allowPrivateAddresses: true };
/** The cloud's address rules with http allowed, so a refusal here comes from the address, not the scheme. */
const PUBLIC_ONLY: AddressPolicy = { allowHttp: true, allowPrivateAddresses: false };
const CLOUD: AddressPolicy = { allowHttp: false, allowPrivateAddresses: false };

const BODY = JSON.stringify({ id: 'task-1' });
const REQUEST = { headers: { 'content-type': 'application/json' }, body: BODY };

/** A resolver answering from a table, and counting its calls. */
function resolverOf(answers: Record<string, readonly string[]>) {
  const calls: string[] = [];
  const resolve: Resolve = async (hostname) => {
    calls.push(hostname);
    const addresses = answers[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, calls };
}

const clientWith = (options: Partial<WebhookClientOptions> & { policy: AddressPolicy }) =>
  new WebhookClient({ connectTimeoutMs: 2000, totalTimeoutMs: 5000, ...options });

let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let guard: ReturnType<typeof allowLoopbackConnectsOnly>;

beforeAll(async () => {
  guard = allowLoopbackConnectsOnly();
  receiver = await startWebhookReceiver({
    '/ok': () => 204,
    '/slow': () => ({ status: 204, delayMs: 1000 }),
    '/drop': () => ({ dropConnection: true }),
    '/moved': () => ({ status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } }),
  });
});

afterAll(async () => {
  await receiver.close();
  guard.mockRestore();
});

afterEach(() => {
  receiver.receipts.length = 0;
});

/** Fails the test if the client builds any request at all: what a refusal of the URL itself must look like. */
function forbidRequests() {
  const refuse = () => {
    throw new Error('the client made a request');
  };
  return [vi.spyOn(http, 'request').mockImplementation(refuse), vi.spyOn(https, 'request').mockImplementation(refuse)];
}

describe('Class: WebhookClient', () => {
  describe('Method: post, where it connects', () => {
    it('connects to the address the resolver gave for the name, and returns the status and headers', async () => {
      // Prepare
      const { resolve, calls } = resolverOf({ 'hooks.test': ['127.0.0.1'] });
      const connectionsBefore = receiver.connections();

      // Act
      const outcome = await clientWith({ policy: LOCAL, resolve }).post(
        `http://hooks.test:${receiver.port}/ok`,
        REQUEST,
      );

      // Assess
      expect(outcome).toMatchObject({ answered: true, status: 204, headers: { connection: 'keep-alive' } });
      expect(calls).toEqual(['hooks.test']);
      expect(receiver.connections()).toBe(connectionsBefore + 1);
      expect(receiver.receipts.map((receipt) => [receipt.headers.host, receipt.rawBody])).toEqual([
        [`hooks.test:${receiver.port}`, BODY],
      ]);
    });

    it.each([
      ['a name resolving to loopback', ['127.0.0.1'], '127.0.0.1', 'is a loopback address (127.0.0.0/8)'],
      ['a name resolving to a private address', ['10.0.0.5'], '10.0.0.5', 'is a private address (10.0.0.0/8)'],
      [
        'a name resolving to the metadata address',
        ['169.254.169.254'],
        '169.254.169.254',
        'is the cloud instance metadata address (169.254.169.254/32)',
      ],
      [
        'a name resolving to IPv4-mapped loopback',
        ['::ffff:127.0.0.1'],
        '::ffff:127.0.0.1',
        'maps to 127.0.0.1 (IPv4-mapped, ::ffff:0:0/96), which is a loopback address (127.0.0.0/8)',
      ],
      [
        'a name resolving to one public and one private address',
        ['93.184.216.34', '10.0.0.5'],
        '10.0.0.5',
        'is a private address (10.0.0.0/8)',
      ],
      [
        'a name resolving to one private and one public address',
        ['127.0.0.1', '2606:4700:4700::1111'],
        '127.0.0.1',
        'is a loopback address (127.0.0.0/8)',
      ],
    ])('refuses %s at connect time, before connecting', async (_, addresses, refused, reason) => {
      // Prepare
      const { resolve } = resolverOf({ 'hooks.test': addresses });
      const connectionsBefore = receiver.connections();

      // Act
      const outcome = await clientWith({ policy: PUBLIC_ONLY, resolve }).post(
        `http://hooks.test:${receiver.port}/ok`,
        REQUEST,
      );

      // Assess
      expect(outcome).toEqual({ answered: false, error: `connect to hooks.test (${refused}) refused: ${reason}` });
      expect(receiver.connections()).toBe(connectionsBefore);
    });

    it('refuses a name that answered public at submit and private at connect time (DNS rebinding)', async () => {
      // Prepare
      const answers = [['93.184.216.34'], ['127.0.0.1']];
      const resolve: Resolve = async () => (answers.shift() ?? []).map((address) => ({ address, family: 4 }));
      const url = `http://rebind.test:${receiver.port}/ok`;
      const atSubmit = await resolve('rebind.test');
      const connectionsBefore = receiver.connections();

      // Act
      const outcome = await clientWith({ policy: PUBLIC_ONLY, resolve }).post(url, REQUEST);

      // Assess
      expect(webhookUrlProblem(url, PUBLIC_ONLY)).toBeUndefined();
      expect(atSubmit.map(({ address }) => forbiddenAddressReason(address))).toEqual([undefined]);
      expect(outcome).toEqual({
        answered: false,
        error: 'connect to rebind.test (127.0.0.1) refused: is a loopback address (127.0.0.0/8)',
      });
      expect(receiver.connections()).toBe(connectionsBefore);
    });

    it('checks https connections with the same lookup', async () => {
      // Prepare
      const { resolve, calls } = resolverOf({ 'hooks.test': ['127.0.0.1'] });
      const connectionsBefore = receiver.connections();

      // Act
      const outcome = await clientWith({ policy: CLOUD, resolve }).post(
        `https://hooks.test:${receiver.port}/ok`,
        REQUEST,
      );

      // Assess
      expect(outcome).toEqual({
        answered: false,
        error: 'connect to hooks.test (127.0.0.1) refused: is a loopback address (127.0.0.0/8)',
      });
      expect(calls).toEqual(['hooks.test']);
      expect(receiver.connections()).toBe(connectionsBefore);
    });

    it.each([
      ['http://127.0.0.1:PORT/ok', 'must not point at 127.0.0.1, which is a loopback address (127.0.0.0/8)'],
      ['http://2130706433:PORT/ok', 'must not point at 127.0.0.1, which is a loopback address (127.0.0.0/8)'],
      ['http://0177.0.0.1:PORT/ok', 'must not point at 127.0.0.1, which is a loopback address (127.0.0.0/8)'],
      ['http://0x7f.1:PORT/ok', 'must not point at 127.0.0.1, which is a loopback address (127.0.0.0/8)'],
      ['http://[::1]:PORT/ok', 'must not point at ::1, which is the loopback address (::1/128)'],
      ['http://[::ffff:127.0.0.1]:PORT/ok', 'must not point at ::ffff:7f00:1, which maps to 127.0.0.1'],
      ['http://169.254.169.254/latest/meta-data/', 'must not point at 169.254.169.254, which is the cloud instance'],
      ['http://2852039166/latest/meta-data/', 'must not point at 169.254.169.254, which is the cloud instance'],
      [
        'http://0xa9.0xfe.0xa9.0xfe/latest/meta-data/',
        'must not point at 169.254.169.254, which is the cloud instance',
      ],
      [
        'http://[::ffff:a9fe:a9fe]/latest/meta-data/',
        'must not point at ::ffff:a9fe:a9fe, which maps to 169.254.169.254',
      ],
      [
        'http://[fd00:ec2::254]/latest/meta-data/',
        'must not point at fd00:ec2::254, which is the AWS instance metadata',
      ],
      ['http://localhost:PORT/ok', 'must not point at localhost, which resolves only inside private networks'],
      ['http://localhost.:PORT/ok', 'must not point at localhost, which resolves only inside private networks'],
      ['http://metadata.google.internal/computeMetadata/v1/', 'must not point at metadata.google.internal'],
    ])('refuses %s before making any request: Node skips the lookup for IP literals', async (template, problem) => {
      // Prepare
      const spies = forbidRequests();
      const { resolve, calls } = resolverOf({});

      // Act
      const outcome = await clientWith({ policy: PUBLIC_ONLY, resolve }).post(
        template.replace('PORT', String(receiver.port)),
        REQUEST,
      );
      for (const spy of spies) spy.mockRestore();

      // Assess
      expect(outcome).toEqual({ answered: false, error: expect.stringContaining(`webhook URL ${problem}`) });
      expect(calls).toEqual([]);
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    });

    it('does not lend a connection made under one policy to a client with another', async () => {
      // Prepare
      const { resolve } = resolverOf({ 'hooks.test': ['127.0.0.1'] });
      const url = `http://hooks.test:${receiver.port}/ok`;
      const local = await clientWith({ policy: LOCAL, resolve }).post(url, REQUEST);
      const connectionsBefore = receiver.connections();

      // Act
      const outcome = await clientWith({ policy: PUBLIC_ONLY, resolve }).post(url, REQUEST);

      // Assess
      expect(local).toMatchObject({ answered: true, status: 204 });
      expect(outcome).toEqual({
        answered: false,
        error: 'connect to hooks.test (127.0.0.1) refused: is a loopback address (127.0.0.0/8)',
      });
      expect(receiver.connections()).toBe(connectionsBefore);
      expect(receiver.receipts).toHaveLength(1);
    });

    it("applies each call's allowed hosts, even to a host it holds an open connection to", async () => {
      // Prepare
      const { resolve } = resolverOf({ 'hooks.test': ['127.0.0.1'] });
      const client = clientWith({ policy: LOCAL, resolve });
      const url = `http://hooks.test:${receiver.port}/ok`;

      // Act
      const allowed = await client.post(url, { ...REQUEST, allowedHosts: ['*.test'] });
      const refused = await client.post(url, { ...REQUEST, allowedHosts: ['hooks.example.com'] });

      // Assess
      expect(allowed).toMatchObject({ answered: true, status: 204 });
      expect(refused).toEqual({
        answered: false,
        error:
          "webhook URL must point at one of the sender's allowed hosts (hooks.example.com); hooks.test is not one of them",
      });
      expect(receiver.receipts).toHaveLength(1);
    });
  });

  describe('Method: post, how it answers', () => {
    it('reuses one keep-alive connection for calls in a row', async () => {
      // Prepare
      const client = clientWith({ policy: LOCAL });
      const connectionsBefore = receiver.connections();

      // Act
      const first = await client.post(receiver.url('/ok'), REQUEST);
      const second = await client.post(receiver.url('/ok'), REQUEST);

      // Assess
      expect([first, second]).toMatchObject([{ status: 204 }, { status: 204 }]);
      expect(receiver.receipts).toHaveLength(2);
      expect(receiver.connections()).toBe(connectionsBefore + 1);
    });

    /**
     * A receiver that answers each connection's first request and resets the connection when a
     * second arrives on it, as a server closing an idle socket does when the client's next
     * request crosses the close.
     */
    async function resettingReceiver() {
      const connections: Socket[] = [];
      const server = createTcpServer((socket) => {
        connections.push(socket);
        let requests = 0;
        socket.on('data', () => {
          requests += 1;
          if (requests === 1) socket.write('HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n');
          else socket.resetAndDestroy();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
        connections,
        close: () => server.close(),
      };
    }

    it('sends a call again on a fresh connection when the receiver reset the idle one it reused', async () => {
      // Prepare
      const receiving = await resettingReceiver();
      const client = clientWith({ policy: LOCAL });

      // Act
      const first = await client.post(receiving.url, REQUEST);
      const second = await client.post(receiving.url, REQUEST);

      // Assess
      expect([first, second]).toMatchObject([
        { answered: true, status: 204 },
        { answered: true, status: 204 },
      ]);
      expect(receiving.connections).toHaveLength(2);
      receiving.close();
    });

    it('keeps sending it again while the pooled connections it reuses were all reset, until a fresh one answers', async () => {
      // Prepare: two calls at once leave two idle connections in the pool.
      const receiving = await resettingReceiver();
      const client = clientWith({ policy: LOCAL });
      await Promise.all([client.post(receiving.url, REQUEST), client.post(receiving.url, REQUEST)]);

      // Act
      const outcome = await client.post(receiving.url, REQUEST);

      // Assess: both pooled connections were reset, and the third, fresh one answered.
      expect(outcome).toMatchObject({ answered: true, status: 204 });
      expect(receiving.connections).toHaveLength(3);
      receiving.close();
    });

    it('returns a redirect as it is, without following it', async () => {
      // Act
      const outcome = await clientWith({ policy: LOCAL }).post(receiver.url('/moved'), REQUEST);

      // Assess
      expect(outcome).toMatchObject({
        answered: true,
        status: 302,
        headers: { location: 'http://169.254.169.254/latest/meta-data/' },
      });
      expect(receiver.receipts.map((receipt) => receipt.path)).toEqual(['/moved']);
    });

    it('gives up when the name cannot be resolved and connected in time', async () => {
      // Prepare
      const resolve: Resolve = () => new Promise(() => undefined);

      // Act
      const outcome = await clientWith({ policy: LOCAL, resolve, connectTimeoutMs: 100 }).post(
        'http://never.test/ok',
        REQUEST,
      );

      // Assess
      expect(outcome).toEqual({ answered: false, error: 'connect timeout after 100 ms' });
    });

    it('gives up when the answer does not come in time', async () => {
      // Act
      const outcome = await clientWith({ policy: LOCAL, totalTimeoutMs: 200 }).post(receiver.url('/slow'), REQUEST);

      // Assess
      expect(outcome).toEqual({ answered: false, error: 'no answer within 200 ms' });
      expect(receiver.receipts).toHaveLength(1);
    });

    it('reports a refused connection, a dropped one and an unknown name', async () => {
      // Prepare
      const closedPort = await freePort();
      const { resolve } = resolverOf({ 'two.test': ['127.0.0.1', '127.0.0.2'] });
      const client = clientWith({ policy: LOCAL, resolve });

      // Act
      const refused = await client.post(`http://127.0.0.1:${closedPort}/ok`, REQUEST);
      const refusedTwice = await client.post(`http://two.test:${closedPort}/ok`, REQUEST);
      const dropped = await client.post(receiver.url('/drop'), REQUEST);
      const unknown = await client.post('http://unknown.test/ok', REQUEST);

      // Assess
      expect(refused).toEqual({ answered: false, error: `connect ECONNREFUSED 127.0.0.1:${closedPort}` });
      expect(refusedTwice).toEqual({
        answered: false,
        error: `connect ECONNREFUSED 127.0.0.1:${closedPort}; connect ECONNREFUSED 127.0.0.2:${closedPort}`,
      });
      expect(dropped).toEqual({ answered: false, error: 'socket hang up' });
      expect(unknown).toEqual({ answered: false, error: 'getaddrinfo ENOTFOUND unknown.test' });
    });
  });

  describe('Method: post, with a body that never ends', () => {
    let endless: Awaited<ReturnType<typeof startEndlessBodyServer>>;

    beforeAll(async () => {
      endless = await startEndlessBodyServer();
    });

    afterAll(async () => {
      await endless.close();
    });

    it('stops reading past the cap and drops the connection, still reporting the 2xx', async () => {
      // Prepare
      const client = clientWith({ policy: LOCAL, maxResponseBytes: 64 * 1024, totalTimeoutMs: 60_000 });

      // Act
      const outcome = await client.post(endless.url, REQUEST);

      // Assess
      expect(outcome).toMatchObject({ answered: true, status: 200 });
      await eventually('the server saw the connection close', () => endless.closed() === 1, 100, 10);
    });

    it('counts a 2xx whose body outlasts the total timeout as answered', async () => {
      // Prepare
      const client = clientWith({ policy: LOCAL, maxResponseBytes: Number.MAX_SAFE_INTEGER, totalTimeoutMs: 300 });

      // Act
      const outcome = await client.post(endless.url, REQUEST);

      // Assess
      expect(outcome).toMatchObject({ answered: true, status: 200 });
      await eventually('the server saw the connection close', () => endless.closed() === 2, 100, 10);
    });
  });
});

describe('Class: WebhookClient, through a stall of its process', () => {
  it('reads the answers that came in while the event loop was blocked past both timeouts, instead of timing the calls out', async () => {
    // Prepare: calls in flight to a receiver that answers at once, on a thread of its own.
    const remote = await receiverOnAnotherThread();
    const client = clientWith({ policy: LOCAL, connectTimeoutMs: 300, totalTimeoutMs: 1000 });
    const calls = Array.from({ length: 5 }, () => client.post(remote.url, REQUEST));

    // Act: this thread blocks for longer than the total timeout, as a long GC or a starved CPU would.
    const blockedUntilMs = Date.now() + 1500;
    while (Date.now() < blockedUntilMs) {
      // Busy: no timer, socket or promise callback runs here.
    }
    const outcomes = await Promise.all(calls);
    await remote.close();

    // Assess: each reply waiting in its socket is read; none is reported missing.
    expect(outcomes).toEqual(Array.from({ length: 5 }, () => expect.objectContaining({ answered: true, status: 204 })));
  });
});

/** A loopback server answering 200 with a body it writes until the client hangs up. */
async function startEndlessBodyServer() {
  let closed = 0;
  const chunk = Buffer.alloc(16 * 1024, 'x');
  const server = createServer((request, response) => {
    request.resume();
    response.writeHead(200, { 'content-type': 'text/plain' });
    const pump = () => {
      while (!response.destroyed && response.write(chunk));
    };
    response.on('drain', pump);
    response.on('close', () => {
      closed += 1;
    });
    pump();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    /** Responses whose connection has closed. */
    closed: () => closed,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/**
 * A receiver on its own thread, answering 204 at once: it goes on answering while the test's
 * thread is blocked, as a remote receiver would while a callback's process stalls.
 */
async function receiverOnAnotherThread() {
  const worker = new Worker(
    `const { createServer } = require('node:http');
     const { parentPort } = require('node:worker_threads');
     const server = createServer((request, response) => {
       request.resume();
       request.on('end', () => response.writeHead(204).end());
     });
     server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
    { eval: true },
  );
  const [port] = (await once(worker, 'message')) as [number];
  return { url: `http://127.0.0.1:${port}/`, close: () => worker.terminate() };
}

/** A loopback port nothing listens on. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}
