import { expect } from 'chai';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { isPublicAddress } from '../src/outbound/address-guard.js';
import { OutboundClient, OutboundError } from '../src/outbound/http-client.js';
import { startListener } from './support/loopback.js';
import { Listener } from '../src/http/listener.js';
import { Lifecycle } from '../src/observability/health.js';

const guarded = new OutboundClient({ allowPrivateAddresses: false, connectTimeoutMs: 2000, timeoutMs: 3000 });
const open = new OutboundClient({ allowPrivateAddresses: true, connectTimeoutMs: 2000, timeoutMs: 500 });

async function failure(p: Promise<unknown>): Promise<OutboundError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(OutboundError);
    return err as OutboundError;
  }
  throw new Error('the call succeeded');
}

describe('outbound calls: address guard, redirects, timeouts', () => {
  it('tells public addresses from loopback, private, link-local, metadata and mapped forms', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.100.100.200',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '64:ff9b::a9fe:a9fe',
      '224.0.0.1',
    ]) {
      expect(isPublicAddress(a), a).to.equal(false);
    }
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect(isPublicAddress(a), a).to.equal(true);
  });

  it('refuses a name that resolves to loopback (checked after DNS) and a private literal, without connecting', async () => {
    const listener = await startListener();
    try {
      const port = new URL(listener.url).port;
      expect(
        (await failure(guarded.request(`http://localhost:${port}/notifications`, { method: 'POST', body: '{}' }))).code,
      ).to.equal('outbound_address_refused');
      expect((await failure(guarded.request(`http://127.0.0.1:${port}/`, { method: 'GET' }))).code).to.equal(
        'outbound_address_refused',
      );
      expect((await failure(guarded.request(`http://[::ffff:127.0.0.1]:${port}/`, { method: 'GET' }))).code).to.equal(
        'outbound_address_refused',
      );
      expect(listener.requests).to.equal(0);
      expect((await open.request(`http://localhost:${port}/`, { method: 'GET' })).status).to.equal(200);
    } finally {
      await listener.close();
    }
  });

  it("calls this server's own origin (its base URL), however it resolves; any other loopback origin stays refused", async () => {
    const [own, other] = [await startListener(), await startListener()];
    const ownOrigin = `http://localhost:${new URL(own.url).port}`;
    const client = new OutboundClient({
      allowPrivateAddresses: false,
      ownOrigin,
      connectTimeoutMs: 2000,
      timeoutMs: 3000,
    });
    try {
      expect(await client.refusal(`${ownOrigin}/notifications`)).to.equal(undefined);
      expect((await client.request(`${ownOrigin}/notifications`, { method: 'POST', body: '{}' })).status).to.equal(200);
      expect(
        (await client.requestInOrder(`${ownOrigin}/notifications`, { method: 'POST', body: '{}' }, 'lane', 1)).status,
      ).to.equal(200);
      const otherPort = `http://localhost:${new URL(other.url).port}/notifications`;
      const otherName = `${own.url}/notifications`;
      for (const url of [otherPort, otherName]) {
        expect(await client.refusal(url), url).to.match(/not called/);
        expect((await failure(client.request(url, { method: 'POST', body: '{}' }))).code, url).to.equal(
          'outbound_address_refused',
        );
        expect(
          (await failure(client.requestInOrder(url, { method: 'POST', body: '{}' }, 'lane', 1))).code,
          url,
        ).to.equal('outbound_address_refused');
      }
      expect([own.requests, other.requests]).to.deep.equal([2, 0]);
    } finally {
      await client.close();
      await Promise.all([own.close(), other.close()]);
    }
  });

  it('hands a redirect back instead of following it, and stops a slow answer at the total timeout', async () => {
    const target = await startListener();
    const redirecting = await startListener((_req, res) => res.writeHead(302, { Location: `${target.url}/` }).end());
    const slow = createServer(() => {});
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const res = await open.request(`${redirecting.url}/`, { method: 'GET' });
      expect(res.status).to.equal(302);
      expect(target.requests).to.equal(0);
      const started = Date.now();
      expect(
        (
          await failure(
            open.request(`http://127.0.0.1:${(slow.address() as { port: number }).port}/`, { method: 'GET' }),
          )
        ).code,
      ).to.equal('outbound_timeout');
      expect(Date.now() - started).to.be.lessThan(3000);
    } finally {
      slow.closeAllConnections();
      slow.close();
      await Promise.all([target.close(), redirecting.close()]);
    }
  });

  it('calls made in order on one lane reach the other side in that order, several on one connection at once; the guard, redirects and the total timeout apply as to any call', async () => {
    const arrivals: string[] = [];
    let [outstanding, most] = [0, 0];
    const listener = await startListener((req, res) => {
      arrivals.push(req.url!);
      outstanding += 1;
      most = Math.max(most, outstanding);
      // Answered late, so that later calls are on the connection meanwhile.
      setTimeout(() => {
        outstanding -= 1;
        res.writeHead(req.url === '/n/7' ? 302 : 204, req.url === '/n/7' ? { Location: '/elsewhere' } : {}).end();
      }, 5);
    });
    const slow = createServer(() => {});
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const paths = Array.from({ length: 40 }, (_, i) => `/n/${i}`);
      const answers = await Promise.all(
        paths.map((path) => open.requestInOrder(`${listener.url}${path}`, { method: 'POST', body: '{}' }, 'lane', 8)),
      );
      expect(answers.map((a) => a.status)).to.deep.equal(paths.map((p) => (p === '/n/7' ? 302 : 204)));
      // Decoded when read, after later answers came on the same connection.
      expect(answers[7].headers.location).to.equal('/elsewhere');
      expect(answers[7].body).to.equal('');
      expect(arrivals).to.deep.equal(paths);
      expect(most).to.be.greaterThan(1);
      const port = new URL(listener.url).port;
      expect(
        (await failure(guarded.requestInOrder(`http://localhost:${port}/n`, { method: 'POST', body: '{}' }, 'lane', 8)))
          .code,
      ).to.equal('outbound_address_refused');
      expect(
        (await failure(guarded.requestInOrder(`http://127.0.0.1:${port}/n`, { method: 'POST', body: '{}' }, 'lane', 8)))
          .code,
      ).to.equal('outbound_address_refused');
      expect(arrivals).to.have.length(40);
      const started = Date.now();
      expect(
        (
          await failure(
            open.requestInOrder(
              `http://127.0.0.1:${(slow.address() as { port: number }).port}/`,
              { method: 'POST', body: '{}' },
              'lane',
              8,
            ),
          )
        ).code,
      ).to.equal('outbound_timeout');
      expect(Date.now() - started).to.be.lessThan(3000);
    } finally {
      slow.closeAllConnections();
      slow.close();
      await Promise.all([listener.close(), open.close(), guarded.close()]);
    }
  });

  it("this server's listener handles requests pipelined on one connection one after the other, in the order they arrived", async () => {
    const started: string[] = [];
    let answered = 0;
    const listener = await Listener.open(0, '127.0.0.1', new Lifecycle(), (req, res) => {
      started.push(`${req.url} after ${answered} answered`);
      // The first is slow to answer: the ones behind it must not start meanwhile.
      setTimeout(() => res.writeHead(204).end(() => (answered += 1)), req.url === '/n/0' ? 100 : 1);
    });
    const client = new OutboundClient({ allowPrivateAddresses: true, connectTimeoutMs: 2000, timeoutMs: 3000 });
    try {
      const paths = Array.from({ length: 10 }, (_, i) => `/n/${i}`);
      await Promise.all(
        paths.map((path) => client.requestInOrder(`${listener.url}${path}`, { method: 'POST', body: '{}' }, 'lane', 8)),
      );
      expect(started).to.deep.equal(paths.map((path, i) => `${path} after ${i} answered`));
    } finally {
      await client.close();
      await listener.drain(0);
    }
  });

  it("this server's listener answers a request sent on an idle kept-alive connection while the process was busy past its idle time, and closes it once idle", async () => {
    const listener = await Listener.open(0, '127.0.0.1', new Lifecycle(), (_req, res) => res.writeHead(204).end(), 100);
    try {
      const url = new URL(listener.url);
      const socket = connect(Number(url.port), url.hostname);
      let received = '';
      const errors: string[] = [];
      socket.on('data', (c: Buffer) => (received += c.toString()));
      socket.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
      const closed = once(socket, 'close');
      const answers = () => received.match(/^HTTP\/1\.1 \d+/gm) ?? [];
      socket.write(`GET /first HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
      while (answers().length === 0) await new Promise((r) => setTimeout(r, 5));
      // The next request goes while the connection is idle; then the process is busy until well
      // past the idle time (Node closes 0 to 1 s after keepAliveTimeout, by version), so the
      // idle timer comes due before the request is read.
      await new Promise<void>((resolve) =>
        setImmediate(() => {
          socket.write(`GET /second HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
          for (const until = Date.now() + 1500; Date.now() < until; );
          resolve();
        }),
      );
      await closed;
      expect(errors).to.deep.equal([]);
      expect(answers()).to.deep.equal(['HTTP/1.1 204', 'HTTP/1.1 204']);
    } finally {
      await listener.drain(0);
    }
  });

  it("this server's listener handles nothing pipelined behind an answer that closes the connection", async () => {
    const handled: string[] = [];
    const listener = await Listener.open(0, '127.0.0.1', new Lifecycle(), (req, res) => {
      handled.push(req.url!);
      if (req.url === '/refused') res.writeHead(503, { Connection: 'close' }).end();
      else res.writeHead(204).end();
    });
    try {
      const url = new URL(listener.url);
      const socket = connect(Number(url.port), url.hostname);
      const received: Buffer[] = [];
      socket.on('data', (c: Buffer) => received.push(c));
      const closed = once(socket, 'close');
      const post = (path: string) => `POST ${path} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Length: 2\r\n\r\n{}`;
      socket.write(['/first', '/refused', '/behind', '/last'].map(post).join(''));
      await closed;
      expect(handled).to.deep.equal(['/first', '/refused']);
      const answers = Buffer.concat(received)
        .toString()
        .match(/^HTTP\/1\.1 \d+/gm);
      expect(answers).to.deep.equal(['HTTP/1.1 204', 'HTTP/1.1 503']);
    } finally {
      await listener.drain(0);
    }
  });
});
