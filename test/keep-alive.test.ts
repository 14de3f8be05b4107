import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import { DEFAULTS } from '../src/config.js';
import { Listener } from '../src/http/listener.js';
import { Lifecycle } from '../src/observability/health.js';
import { OutboundClient } from '../src/outbound/http-client.js';
import { startTestServer } from './support/server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw connection to `url`, with every byte it received and whether it was closed. */
function rawConnection(url: string): { socket: Socket; received: () => string; closed: () => boolean } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let received = '';
  let closed = false;
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  socket.on('close', () => (closed = true));
  return { socket, received: () => received, closed: () => closed };
}

async function answers(connection: { received: () => string }, count: number): Promise<string[]> {
  for (;;) {
    // Not anchored to a line: an answer follows the body of the one before it directly.
    const found = connection.received().match(/HTTP\/1\.1 \d{3}/g) ?? [];
    if (found.length >= count) return found;
    await sleep(5);
  }
}

describe('kept-alive connections', () => {
  it('the server keeps an idle connection open for keepAliveTimeoutMs and announces it in Keep-Alive', async () => {
    const server = await startTestServer({ keepAliveTimeoutMs: 1000 });
    try {
      const connection = rawConnection(server.url);
      const get = `GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
      connection.socket.write(get);
      await answers(connection, 1);
      expect(connection.received()).to.match(/^Keep-Alive: timeout=1\r$/m);
      await sleep(300);
      connection.socket.write(get);
      expect(await answers(connection, 2)).to.deep.equal(['HTTP/1.1 200', 'HTTP/1.1 200']);
      // Node closes it within a second after its time (Node's own default would be 5 s).
      const closedAt = Date.now();
      await once(connection.socket, 'close');
      expect(Date.now() - closedAt).to.be.lessThan(2500);
    } finally {
      await server.close();
    }
  });

  it('a drain closes the connection of an answer still to come instead of keeping it alive until the grace period is over', async () => {
    const listener = await Listener.open(
      0,
      '127.0.0.1',
      new Lifecycle(),
      (_req, res) => setTimeout(() => res.writeHead(204).end(), 200),
      DEFAULTS.keepAliveTimeoutMs,
    );
    const connection = rawConnection(listener.url);
    connection.socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    await sleep(50);
    const started = Date.now();
    await listener.drain(5000);
    expect(Date.now() - started).to.be.lessThan(2000);
    expect(await answers(connection, 1)).to.deep.equal(['HTTP/1.1 204']);
    expect(connection.received()).to.match(/^Connection: close\r$/m);
  });

  it("by default a connection outlives a load balancer's 60 s idle timeout, and notifications to such a server reuse theirs after a pause", async () => {
    expect(DEFAULTS.keepAliveTimeoutMs).to.be.greaterThan(60_000);
    const sockets = new Set<Socket>();
    const listener = await Listener.open(
      0,
      '127.0.0.1',
      new Lifecycle(),
      (req, res) => {
        sockets.add(req.socket);
        res.writeHead(204).end();
      },
      DEFAULTS.keepAliveTimeoutMs,
    );
    const client = new OutboundClient({ allowPrivateAddresses: true, connectTimeoutMs: 2000, timeoutMs: 3000 });
    try {
      const send = () =>
        client.requestInOrder(`${listener.url}/notifications`, { method: 'POST', body: '{}' }, 'lane', 8);
      expect((await send()).status).to.equal(204);
      // Past what a 5 s announcement would let the client keep (5 s less its 2 s margin).
      await sleep(4000);
      expect((await send()).status).to.equal(204);
      expect(sockets.size).to.equal(1);
    } finally {
      await client.close();
      await listener.drain(0);
    }
  });
});
