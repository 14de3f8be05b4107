import { expect } from 'chai';
import type { RequestListener } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { createExpressApp } from '../src/http/app.js';
import { withObjectFastPath } from '../src/http/object-fast-path.js';
import { errorAnswer } from '../src/http/error-responses.js';
import { RequestPipeline } from '../src/http/pipeline.js';
import { Listener } from '../src/http/listener.js';
import { Representations } from '../src/http/representations.js';
import { objectHandlers } from '../src/http/routes/logistics-objects.js';
import { Lifecycle } from '../src/observability/health.js';
import { RequestObservation, type FinishedRequest } from '../src/observability/request-log.js';
import { agentOf } from '../src/http/context.js';
import { add, change, createObject, del, piece, str } from './support/changes.js';
import { delegate, partner, PARTNER_CLIENTS, partnerToken } from './support/access.js';
import { startTestServer, type TestServer } from './support/server.js';

/** A request as sent on the wire: header lines in order, repeated names allowed, and the body's bytes as given. */
interface RawRequest {
  method: string;
  target: string;
  headers: [string, string][];
  body?: Buffer;
}

/** The answer's bytes as text, up to the end of its body (by Content-Length; none for HEAD). */
function send(url: string, request: RawRequest): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const lines = [
      `${request.method} ${request.target} HTTP/1.1`,
      `Host: ${hostname}:${port}`,
      ...request.headers.map(([name, value]) => `${name}: ${value}`),
    ];
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (request.body) socket.write(request.body);
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const text = received.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length =
        request.method === 'HEAD' ? 0 : Number(/\r\ncontent-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      if (received.length < end + 4 + length) return;
      socket.destroy();
      resolve(received.subarray(0, end + 4 + length).toString('utf8'));
    });
    socket.on('error', reject);
  });
}

/** The date differs between two answers a second apart; a request id the server made, and the ids of api:Error nodes, always. */
const comparable = (answer: string, madeId: boolean) =>
  answer
    .replace(/\r\nDate: [^\r]+/, '\r\nDate: -')
    .replace(/"internal:[0-9a-f-]{36}"/g, '"internal:(id)"')
    .replace(/\r\nX-Request-Id: [^\r]+/, (line) => (madeId ? '\r\nX-Request-Id: (made)' : line));

/** What the observers (log line, metrics) are told of one request, without its latency. */
type Observed = Omit<FinishedRequest, 'seconds'> & { agent: string | undefined };

describe('Logistics Objects: the fast path answers as the app does', () => {
  let server: TestServer;
  let general: Listener;
  let fast: Listener;
  /** Request targets the fast path handed to the app. */
  let handedOver: string[];
  const observed = { general: [] as Observed[], fast: [] as Observed[] };
  let object: string;
  let path: string;
  let holderToken: string;

  const recorder = (into: Observed[]) =>
    new RequestObservation([
      (res, { seconds: _seconds, ...finished }) => into.push({ ...finished, agent: agentOf(res) }),
    ]);

  before(async () => {
    server = await startTestServer({ identityProvider: { clients: PARTNER_CLIENTS } });
    const services = server.running.services;
    // As createApp wires them, but with observers that record and the app's part counted.
    const representations = new Representations(services.objects, services.config.cache.serializedRevisionBytes);
    const fastPipeline = new RequestPipeline(services, recorder(observed.fast));
    const behindFastPath = createExpressApp(services, representations, fastPipeline);
    const counted: RequestListener = (req, res) => {
      handedOver.push(req.url!);
      behindFastPath(req, res);
    };
    const open = (handler: RequestListener) =>
      Listener.open(0, '127.0.0.1', new Lifecycle(), handler, services.config.keepAliveTimeoutMs);
    general = await open(
      createExpressApp(services, representations, new RequestPipeline(services, recorder(observed.general))),
    );
    fast = await open(
      withObjectFastPath(
        objectHandlers(services, representations),
        fastPipeline,
        errorAnswer(services.logger),
        counted,
      ),
    );
    object = await createObject(server);
    path = new URL(object).pathname;
    holderToken = await server.token();
  });

  after(async () => {
    await fast?.drain(0);
    await general?.drain(0);
    await server?.close();
  });

  beforeEach(() => {
    handedOver = [];
    observed.general.length = 0;
    observed.fast.length = 0;
  });

  const bearer = (token: string): [string, string] => ['Authorization', `Bearer ${token}`];
  const get = (target: string, ...headers: [string, string][]): RawRequest => ({
    method: 'GET',
    target,
    headers: [['X-Request-Id', 'compare-1'], ...headers],
  });

  /** What differs between the two answers and their observations by design, hidden on each side (`fast`, `app`) before they are compared. */
  interface Mask {
    answer: (answer: string, side: 'fast' | 'app') => string;
    observed: (o: Observed, side: 'fast' | 'app') => Observed;
  }

  /** Sends `requests.fast` to the fast path, then `requests.app` to the app alone; expects the status, the same bytes and the same observations, once masked. */
  async function compared(
    requests: Record<'fast' | 'app', RawRequest>,
    status: number,
    mask: Mask,
  ): Promise<{ answer: string; seen: Observed[] }> {
    const fromFast = await send(fast.url, requests.fast);
    const fromApp = await send(general.url, requests.app);
    expect(fromFast.slice(0, 12), `${requests.fast.method} ${requests.fast.target}: ${fromFast}`).to.equal(
      `HTTP/1.1 ${status}`,
    );
    expect(mask.answer(fromFast, 'fast')).to.equal(mask.answer(fromApp, 'app'));
    // Observed once the answers are closed (a request refused before observation starts is not).
    await new Promise((resolve) => setTimeout(resolve, 20));
    const seen = [...observed.fast];
    expect(seen.map((o) => mask.observed(o, 'fast'))).to.deep.equal(
      observed.general.map((o) => mask.observed(o, 'app')),
    );
    observed.fast.length = 0;
    observed.general.length = 0;
    return { answer: fromFast, seen };
  }

  /** Sends `request` to the fast path, then to the app alone: the same bytes and the same observations. */
  const sameAnswer = (request: RawRequest, options: { madeId?: boolean; status: number }) =>
    compared({ fast: request, app: request }, options.status, {
      answer: (answer) => comparable(answer, options.madeId ?? false),
      observed: (o) => (options.madeId ? { ...o, id: '(made)' } : o),
    });

  it('answers a GET of a cached body itself: the same bytes, headers in the same order, the same log and metrics', async () => {
    // The first GET builds the body, the next ones are answered from the cache.
    await sameAnswer(get(path, bearer(holderToken)), { status: 200 });
    expect(handedOver).to.deep.equal([]);
    const { answer, seen } = await sameAnswer(get(path, bearer(holderToken)), { status: 200 });
    expect(seen).to.deep.equal([
      {
        id: 'compare-1',
        method: 'GET',
        route: '/logistics-objects/:id',
        url: path,
        status: 200,
        completed: true,
        agent: server.running.services.holder,
      },
    ]);
    expect(answer).to.match(
      /^HTTP\/1\.1 200 OK\r\nX-Request-Id: compare-1\r\nContent-Type: application\/ld\+json; version=2\.3\.0\r\nContent-Language: en-US\r\nLast-Modified: /,
    );
    expect(answer).to.match(
      /\r\nType: https:\/\/onerecord\.iata\.org\/ns\/cargo#Piece\r\nRevision: 1\r\nLatest-Revision: 1\r\nDate: /,
    );
    expect(observed.general).to.deep.equal([]);
    await sameAnswer({ ...get(path, bearer(holderToken)), method: 'HEAD' }, { status: 200 });
    await sameAnswer(get(path, bearer(holderToken), ['If-None-Match', '*']), { status: 304 });
    expect(handedOver).to.deep.equal([]);
  });

  it('answers conditional GETs 304 itself, as the app does, whether the body was built or not', async () => {
    const fresh = new URL(await createObject(server)).pathname;
    const future = new Date(Date.now() + 60_000).toUTCString();
    const turtle: [string, string] = ['Accept', 'text/turtle'];
    // Nothing built the body yet: a 304 needs none.
    await sameAnswer(get(fresh, bearer(holderToken), ['If-None-Match', '*']), { status: 304 });
    await sameAnswer(
      { ...get(fresh, bearer(holderToken), ['If-Modified-Since', future]), method: 'HEAD' },
      { status: 304 },
    );
    expect(handedOver).to.deep.equal([]);
    const { answer } = await sameAnswer(get(fresh, bearer(holderToken), turtle), { status: 200 });
    const etag = /\r\nETag: ([^\r]+)/.exec(answer)![1];
    const notModified = await sameAnswer(get(fresh, bearer(holderToken), turtle, ['If-None-Match', `"x", W/${etag}`]), {
      status: 304,
    });
    expect(notModified.answer).to.match(
      new RegExp(
        `^HTTP/1\\.1 304 Not Modified\r\nX-Request-Id: compare-1\r\nETag: ${etag}\r\nVary: Accept\r\nDate: [^\r]+\r\n`,
      ),
    );
    expect(notModified.answer).to.not.match(/Content-(Type|Length)|Last-Modified/i);
    expect(notModified.seen.map((o) => o.status)).to.deep.equal([304]);
    // The first 200 built the body, on the fast path too.
    expect(handedOver).to.deep.equal([]);
    // Another tag (If-Modified-Since then does not count): the body, now from the cache.
    await sameAnswer(get(fresh, bearer(holderToken), turtle, ['If-None-Match', '"x"']), { status: 200 });
    await sameAnswer(get(fresh, bearer(holderToken), turtle, ['If-None-Match', '"x"'], ['If-Modified-Since', future]), {
      status: 200,
    });
    expect(handedOver).to.deep.equal([]);
  });

  it('negotiates as the app: Turtle, N-Triples, versions, */*; 406 as the app', async () => {
    for (const accept of [
      'text/turtle',
      'application/n-triples',
      'application/ld+json; version=2.1.0',
      'text/html;q=0.5, */*;q=0.8',
      'application/x-turtle',
    ]) {
      await sameAnswer(get(path, bearer(holderToken), ['Accept', accept]), { status: 200 });
      await sameAnswer(get(path, bearer(holderToken), ['Accept', accept]), { status: 200 });
    }
    // The first GET of Turtle and of N-Triples built their bodies (the version is not in the body;
    // JSON-LD was built before), on the fast path like every other GET.
    expect(handedOver).to.deep.equal([]);
    await sameAnswer(get(path, bearer(holderToken), ['Accept', 'image/png']), { status: 406 });
    expect(handedOver).to.deep.equal([]);
  });

  it("answers every failed check's api:Error as the app: 401, 404, 403, 400", async () => {
    await sameAnswer(get(path), { status: 401 });
    await sameAnswer(get(path, ['Authorization', 'Basic abc']), { status: 401 });
    await sameAnswer(get(path, ['Authorization', 'Bearer not.a.jwt']), { status: 401 });
    await sameAnswer(get(`${path}-unknown`, bearer(holderToken)), { status: 404 });
    await sameAnswer(get(path, bearer(await partnerToken(server, 'stranger'))), { status: 403 });
    await sameAnswer(get(path, bearer(holderToken), bearer(holderToken)), { status: 400 });
    await sameAnswer(get(path, bearer(holderToken), ['X-Request-Id', 'has spaces']), { status: 200, madeId: true });
    expect(handedOver).to.deep.equal([]);
  });

  it('a token not verified before is verified on the way; a bad signature is a 401', async () => {
    const idp = server.running.services.identityProvider!;
    const agent = server.running.services.holder;
    // A fresh token for each server: neither has verified it.
    const fromFast = await send(fast.url, get(path, bearer(await idp.issue(agent))));
    const fromApp = await send(general.url, get(path, bearer(await idp.issue(agent))));
    expect(comparable(fromFast, false)).to.equal(comparable(fromApp, false));
    expect(fromFast).to.match(/^HTTP\/1\.1 200/);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(observed.fast.map(({ id: _id, ...o }) => o)).to.deep.equal(observed.general.map(({ id: _id, ...o }) => o));
    observed.fast.length = 0;
    observed.general.length = 0;
    const forged = (await idp.issue(agent)).replace(/.{4}$/, 'AAAA');
    await sameAnswer(get(path, bearer(forged)), { status: 401 });
    expect(handedOver).to.deep.equal([]);
  });

  it('a delegate reads through its grant, as in the app', async () => {
    await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: partner('airline'),
      objects: [object],
    });
    const token = await partnerToken(server, 'airline');
    await sameAnswer(get(path, bearer(token)), { status: 200 });
    await sameAnswer(get(path, bearer(token)), { status: 200 });
    expect(handedOver).to.deep.equal([]);
  });

  it('leaves queries, other paths and other methods to the app', async () => {
    const now = new Date().toISOString();
    const id = path.slice('/logistics-objects/'.length);
    const cases: [RawRequest, number][] = [
      [get(`${path}?at=${now}`, bearer(holderToken)), 200],
      [get(`${path}?at=${now}`, bearer(holderToken), ['Accept', 'text/turtle']), 200],
      [get(`${path}?revision=1`, bearer(holderToken)), 200],
      [get(`${path}?embedded=true`, bearer(holderToken)), 200],
      [get(`${path}?at=yesterday`, bearer(holderToken)), 400],
      [get(`${path}/`, bearer(holderToken)), 200],
      [get(`/LOGISTICS-OBJECTS/${id}`, bearer(holderToken)), 200],
      [
        get(`/logistics-objects/${id.replace(/.$/, (c) => `%${c.charCodeAt(0).toString(16)}`)}`, bearer(holderToken)),
        200,
      ],
      [get(`${path}%zz`, bearer(holderToken)), 400],
      [get(`${path}/audit-trail`, bearer(holderToken)), 200],
      [{ method: 'DELETE', target: path, headers: [bearer(holderToken)] }, 405],
      [{ method: 'POST', target: path, headers: [bearer(holderToken), ['Content-Length', '0']] }, 405],
    ];
    for (const [request, status] of cases)
      await sameAnswer(request, { status, madeId: !request.headers.some(([name]) => name === 'X-Request-Id') });
    expect(handedOver).to.deep.equal(cases.map(([request]) => request.target));
  });

  it('a moved object: redirected as the app does', async () => {
    const moved = await createObject(server);
    const movedPath = new URL(moved).pathname;
    await sameAnswer(get(movedPath, bearer(holderToken)), { status: 200 });
    await sameAnswer(get(movedPath, bearer(holderToken)), { status: 200 });
    const res = await server.request(`/internal/moves/${movedPath.split('/').pop()}`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ location: 'https://elsewhere.example.com/lo/1' }),
    });
    expect(res.status, await res.text()).to.equal(200);
    handedOver = [];
    await sameAnswer(get(movedPath, bearer(holderToken)), { status: 301 });
    // Objects not moved are still answered.
    await sameAnswer(get(path, bearer(holderToken)), { status: 200 });
    expect(handedOver).to.deep.equal([]);
  });

  /** A write of `body` (JSON-LD unless a Content-Type is given), with its length and the request id compared. */
  const write = (method: string, target: string, body: unknown, ...headers: [string, string][]): RawRequest => {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const type: [string, string][] = headers.some(([name]) => name === 'Content-Type')
      ? []
      : [['Content-Type', 'application/ld+json']];
    return {
      method,
      target,
      headers: [['X-Request-Id', 'compare-1'], ...type, ['Content-Length', String(bytes.length)], ...headers],
      body: bytes,
    };
  };
  const iriOf = (objectPath: string) => new URL(objectPath, object).href;
  /** A Change of an object's remarks from revision 1, as the official examples write one. */
  const remarksChange = (objectPath: string, from = 'Books') =>
    change(iriOf(objectPath), 1, [
      del(iriOf(objectPath), 'remarks', str(from)),
      add(iriOf(objectPath), 'remarks', str('Maps')),
    ]);

  /**
   * Sends a write to the fast path, then the same write to the app alone, each on an object of its
   * own in the same state (`requestFor` is given that object's path: `paths`, none for a POST):
   * the same answer but for the IRIs the server makes (Location) and the objects', the same observations.
   */
  const sameWrite = (
    requestFor: (objectPath: string) => RawRequest,
    status: number,
    paths: [string, string] = ['', ''],
  ) => {
    const objectPath = { fast: paths[0], app: paths[1] };
    return compared({ fast: requestFor(objectPath.fast), app: requestFor(objectPath.app) }, status, {
      answer: (answer, side) => {
        const common = comparable(answer, false).replace(/\r\nLocation: [^\r]+/, '\r\nLocation: (made)');
        // A POST's object: named by the server.
        return objectPath[side]
          ? common.replaceAll(objectPath[side], '(object)')
          : common.replace(/\/logistics-objects\/[0-9a-f-]{36}/g, '/logistics-objects/(made)');
      },
      observed: (o, side) => ({ ...o, url: objectPath[side] ? o.url.replace(objectPath[side], '(object)') : o.url }),
    });
  };

  /** Two new objects in the same state, by path: one for the fast path, one for the app. */
  const twoObjects = async (): Promise<[string, string]> => [
    new URL(await createObject(server)).pathname,
    new URL(await createObject(server)).pathname,
  ];
  const latestRevision = async (objectPath: string) =>
    (await server.request(objectPath)).headers.get('latest-revision');
  /** `token`, verified by the server before the comparison starts. */
  const verified = async (token: string) => {
    await send(general.url, get(path, bearer(token)));
    await new Promise((resolve) => setTimeout(resolve, 20));
    observed.general.length = 0;
    return token;
  };

  it('takes POST and PATCH of objects itself: the same answers, log and metrics as the app, and the writes done', async () => {
    await verified(holderToken);
    const posted = await sameWrite(() => write('POST', '/logistics-objects', piece(), bearer(holderToken)), 201);
    expect(posted.seen).to.deep.equal([
      {
        id: 'compare-1',
        method: 'POST',
        route: '/logistics-objects',
        url: '/logistics-objects',
        status: 201,
        completed: true,
        agent: server.running.services.holder,
      },
    ]);
    const created = /\r\nLocation: ([^\r]+)/.exec(posted.answer)![1];
    expect(await latestRevision(new URL(created).pathname)).to.equal('1');

    const objects = await twoObjects();
    const patched = await sameWrite((p) => write('PATCH', p, remarksChange(p), bearer(holderToken)), 201, objects);
    expect(patched.seen).to.deep.equal([
      {
        id: 'compare-1',
        method: 'PATCH',
        route: '/logistics-objects/:id',
        url: objects[0],
        status: 201,
        completed: true,
        agent: server.running.services.holder,
      },
    ]);
    expect(patched.answer).to.match(
      /^HTTP\/1\.1 201 Created\r\nX-Request-Id: compare-1\r\nLocation: [^\r]+\/action-requests\/[^\r]+\r\nType: https:\/\/onerecord\.iata\.org\/ns\/api#ChangeRequest\r\n/,
    );
    expect(await latestRevision(objects[0])).to.equal('2');
    expect(await latestRevision(objects[1])).to.equal('2');
    // A gzip body is read as the route reads it.
    await sameWrite(
      (p) =>
        write(
          'PATCH',
          p,
          gzipSync(JSON.stringify(change(iriOf(p), 2, [del(iriOf(p), 'remarks', str('Maps'))]))),
          bearer(holderToken),
          ['Content-Encoding', 'gzip'],
        ),
      201,
      objects,
    );
    expect(await latestRevision(objects[0])).to.equal('3');
    expect(handedOver).to.deep.equal([]);
  });

  it("answers a write's errors as the app: 400, 404, 413, 415, 403, a Change that cannot apply, a stale revision", async () => {
    const objects = await twoObjects();
    const stranger = await verified(await partnerToken(server, 'stranger'));
    await verified(holderToken);
    await sameWrite((p) => write('PATCH', p, '{"@type": ', bearer(holderToken)), 400, objects);
    await sameWrite((p) => write('PATCH', `${p}-unknown`, remarksChange(p), bearer(holderToken)), 404, objects);
    await sameWrite(
      (p) => write('PATCH', p, remarksChange(p), bearer(holderToken), ['Content-Type', 'text/plain']),
      415,
      objects,
    );
    await sameWrite(
      (p) => write('PATCH', p, remarksChange(p), bearer(holderToken), ['Content-Encoding', 'gzip']),
      400,
      objects,
    );
    await sameWrite(
      () =>
        write(
          'POST',
          '/logistics-objects',
          Buffer.alloc(server.running.services.config.limits.bodyBytes + 1, ' '),
          bearer(holderToken),
        ),
      413,
    );
    await sameWrite(
      () =>
        write(
          'POST',
          '/logistics-objects',
          { '@type': 'https://onerecord.iata.org/ns/cargo#Piece', 'https://onerecord.iata.org/ns/cargo#coload': 'yes' },
          bearer(holderToken),
        ),
      400,
    );
    await sameWrite(() => write('POST', '/logistics-objects', piece(), bearer(stranger)), 403);
    // Recorded and then FAILED (nothing to delete) or REJECTED (revision 1 is not the latest): 201 with the request either way.
    await sameWrite((p) => write('PATCH', p, remarksChange(p, 'no such remark'), bearer(holderToken)), 201, objects);
    await sameWrite((p) => write('PATCH', p, remarksChange(p), bearer(holderToken)), 201, objects);
    await sameWrite((p) => write('PATCH', p, remarksChange(p), bearer(holderToken)), 201, objects);
    expect(await latestRevision(objects[0])).to.equal('2');
    expect(await latestRevision(objects[1])).to.equal('2');
    expect(handedOver).to.deep.equal([]);
  });

  it('answers writes with no token or a new one, a repeated header, a moved object as the app; leaves it a query', async () => {
    const objects = await twoObjects();
    const idp = server.running.services.identityProvider!;
    const agent = server.running.services.holder;
    const newTokens = [await idp.issue(agent), await idp.issue(agent)];
    const stranger = await verified(await partnerToken(server, 'stranger'));
    await verified(holderToken);
    await sameWrite(() => write('POST', '/logistics-objects', piece()), 401);
    await sameWrite((p) => write('PATCH', p, remarksChange(p), ['Authorization', 'Basic abc']), 401, objects);
    // A token neither has verified: verified on the way, then the body is read.
    await sameWrite((p) => write('PATCH', p, remarksChange(p), bearer(newTokens[objects.indexOf(p)])), 201, objects);
    expect(await latestRevision(objects[0])).to.equal('2');
    await sameWrite(() => write('POST', '/logistics-objects?draft=1', piece(), bearer(holderToken)), 201);
    await sameWrite((p) => write('PATCH', p, remarksChange(p), bearer(holderToken), bearer(holderToken)), 400, objects);
    // Revision 1 is no longer the latest: recorded as REJECTED, 201 with the request.
    await sameWrite((p) => write('PATCH', `${p}/`, remarksChange(p), bearer(holderToken)), 201, objects);
    const moved = await twoObjects();
    for (const p of moved) {
      const res = await server.request(`/internal/moves/${p.split('/').pop()}`, {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ location: `https://elsewhere.example.com${p}` }),
      });
      expect(res.status, await res.text()).to.equal(200);
    }
    await sameWrite((p) => write('PATCH', p, remarksChange(p), bearer(holderToken)), 301, moved);
    // Who may not read a moved object does not learn where it went.
    await sameWrite((p) => write('PATCH', p, remarksChange(p), bearer(stranger)), 403, moved);
    expect(handedOver).to.deep.equal(['/logistics-objects?draft=1', `${objects[0]}/`]);
  });
});
