import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { acceptsConnections } from '../scripts/virtuoso/free-port.js';
import { startBalancer, type Balancer } from './support/balancer.js';

// The load balancer of test/support/balancer.ts (nginx) over plain HTTP servers, each of which
// answers with its own index: what several server processes behind it rely on.

/** What an upstream saw of a request. */
interface Seen {
  index: number;
  method: string;
  headers: IncomingHttpHeaders;
  bytes: number;
  sha256: string;
}

interface Upstream {
  server: Server;
  address: string;
  /** Requests it read to the end, by path. */
  requests: Map<string, number>;
}

/** An upstream answering with what it saw; on `/drop`, it reads the request and closes the connection without an answer. */
async function startUpstream(index: number): Promise<Upstream> {
  const requests = new Map<string, number>();
  const server = createServer((req, res) => {
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      bytes += chunk.length;
    });
    req.on('end', () => {
      requests.set(req.url!, (requests.get(req.url!) ?? 0) + 1);
      if (req.url === '/drop') {
        req.socket.destroy();
        return;
      }
      const seen: Seen = { index, method: req.method!, headers: req.headers, bytes, sha256: hash.digest('hex') };
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(seen));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, address: `127.0.0.1:${(server.address() as { port: number }).port}`, requests };
}

async function closeUpstream(upstream: Upstream): Promise<void> {
  upstream.server.closeAllConnections();
  await new Promise<void>((resolve) => upstream.server.close(() => resolve()));
}

/** A request through the balancer; node:http, since fetch would not send a Host header of ours. */
function send(
  balancer: Balancer,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: Buffer } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${balancer.url}${path}`, { method, headers: options.headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

async function seen(
  balancer: Balancer,
  method = 'GET',
  path = '/',
  options: { headers?: Record<string, string>; body?: Buffer } = {},
): Promise<Seen> {
  const answer = await send(balancer, method, path, options);
  expect(answer.status, answer.body).to.equal(200);
  return JSON.parse(answer.body) as Seen;
}

describe('the load balancer (nginx)', function () {
  this.timeout(60_000);
  let upstreams: Upstream[];
  let balancer: Balancer;
  let dir: string;

  before(async () => {
    upstreams = await Promise.all([0, 1, 2].map(startUpstream));
    dir = await mkdtemp(join(tmpdir(), 'onerecord-nginx-test-'));
    balancer = await startBalancer({ upstreams: upstreams.map((upstream) => upstream.address), dir });
  });
  after(async () => {
    await balancer?.stop();
    await Promise.all((upstreams ?? []).map((upstream) => upstream.server.listening && closeUpstream(upstream)));
    await rm(dir, { recursive: true, force: true });
  });

  it('runs from its own directory: configuration, pid file, logs', () => {
    for (const file of ['nginx.conf', 'nginx.pid', 'error.log', 'access.log'])
      expect(existsSync(join(dir, file)), file).to.equal(true);
  });

  it('spreads requests round robin: 9 requests, 3 to each upstream', async () => {
    const indexes: number[] = [];
    for (let i = 0; i < 9; i += 1) indexes.push((await seen(balancer)).index);
    expect([0, 1, 2].map((index) => indexes.filter((seenBy) => seenBy === index).length)).to.deep.equal([3, 3, 3]);
  });

  it('passes a 5 MB POST body through intact', async () => {
    const body = randomBytes(5 * 1024 * 1024);
    const answer = await seen(balancer, 'POST', '/body', {
      body,
      headers: { 'Content-Type': 'application/octet-stream' },
    });
    expect(answer.bytes).to.equal(body.length);
    expect(answer.sha256).to.equal(createHash('sha256').update(body).digest('hex'));
  });

  it('passes the Host header and the other headers unchanged', async () => {
    const headers = {
      Host: 'onerecord.example:8443',
      'X-Request-Id': 'abc-123',
      X_Underscored: 'kept',
      Authorization: 'Bearer t0k3n',
    };
    const answer = await seen(balancer, 'GET', '/', { headers });
    expect(answer.headers.host).to.equal('onerecord.example:8443');
    expect(answer.headers['x-request-id']).to.equal('abc-123');
    expect(answer.headers.x_underscored).to.equal('kept');
    expect(answer.headers.authorization).to.equal('Bearer t0k3n');
  });

  it('answers from the other upstreams when one is closed', async () => {
    await closeUpstream(upstreams[1]);
    const indexes = new Set<number>();
    // A refused connection counts as an error: the request goes to the next upstream (any method:
    // nothing was sent), and the closed one is left out for a while.
    for (let i = 0; i < 6; i += 1) indexes.add((await seen(balancer)).index);
    expect([...indexes].sort()).to.deep.equal([0, 2]);
  });

  it('stops: the port is closed', async () => {
    await balancer.stop();
    expect(await acceptsConnections(balancer.port)).to.equal(false);
  });
});

describe('the load balancer (nginx) when an upstream fails a request it was sent', function () {
  this.timeout(60_000);
  let upstreams: Upstream[];
  let balancer: Balancer;

  // Every upstream reads the request to /drop and closes the connection without an answer.
  before(async () => {
    upstreams = await Promise.all([0, 1, 2].map(startUpstream));
    balancer = await startBalancer({ upstreams: upstreams.map((upstream) => upstream.address) });
  });
  after(async () => {
    await balancer?.stop();
    await Promise.all((upstreams ?? []).map(closeUpstream));
  });

  const attempts = () => upstreams.reduce((sum, upstream) => sum + (upstream.requests.get('/drop') ?? 0), 0);

  it('passes a POST to one upstream only: nginx does not send a non-idempotent request again (POST, PATCH), the server may have applied it', async () => {
    expect((await send(balancer, 'POST', '/drop', { body: Buffer.from('{}') })).status).to.equal(502);
    expect(attempts()).to.equal(1);
  });

  it('passes a GET to the next upstream, until none is left', async () => {
    const before = attempts();
    expect((await send(balancer, 'GET', '/drop')).status).to.equal(502);
    // The upstream that failed the POST is left out for a while (max_fails 1, fail_timeout 10 s).
    expect(attempts() - before).to.equal(2);
  });
});
