import { expect } from 'chai';
import { createExpressApp } from '../src/http/app.js';
import { Representations } from '../src/http/representations.js';
import { RequestObservation } from '../src/observability/request-log.js';
import { RequestPipeline } from '../src/http/pipeline.js';
import { delegationBody } from './support/access.js';
import { add, change, piece, str } from './support/changes.js';
import { eventJson } from './support/events.js';
import { embeddedKey, nowSeconds, sign } from './support/jwt.js';
import { startTestServer, type TestServer } from './support/server.js';

/*
 * The authorisation matrix: every route x method x caller, with the status each must get, from
 * one table. A route of the application without a row fails the test, so a new route cannot
 * ship without saying who may call it.
 */

const org = (name: string) => `https://${name}.example.com/logistics-objects/${name}`;

/** The callers of the matrix. */
const PERSONAS = [
  'internal',
  'creator',
  'getObject',
  'patchObject',
  'postEvent',
  'getEvent',
  'delegateOfDelegate',
  'revokedDelegate',
  'unrelated',
  'noToken',
  'expiredToken',
] as const;
type Persona = (typeof PERSONAS)[number];
const AGENT: Record<Exclude<Persona, 'internal' | 'noToken'>, string> = {
  creator: org('creator'),
  getObject: org('reader'),
  patchObject: org('patcher'),
  postEvent: org('poster'),
  getEvent: org('eventreader'),
  delegateOfDelegate: org('subreader'),
  revokedDelegate: org('revoked'),
  unrelated: org('stranger'),
  expiredToken: org('reader'),
};

/** What the rows need: the object and its event (created by `creator`), and the base URL. */
interface World {
  server: TestServer;
  object: string;
  /** Another object of `creator`, for the routes that move it. */
  spare: string;
  event: string;
  /** A ChangeRequest pending on `object`, asked by `creator`. */
  request: string;
  /** A new pending ChangeRequest asked by `creator` (for rows that change it). */
  freshRequest(): Promise<string>;
  /** A new grant (for rows that withdraw it). */
  freshGrant(): Promise<string>;
}

interface Row {
  method: string;
  /** The route as the application declares it. */
  route: string;
  /** The URL to call (default: the route) and the body to send. */
  url?(w: World): string | Promise<string>;
  body?(w: World): unknown;
  /** Of the body: JSON-LD unless given. */
  contentType?: string;
  /** Expected status per persona; `authenticated` covers every persona with a valid token not listed. */
  expect: Partial<Record<Persona | 'authenticated', number>>;
  /** What else `persona` must find in the answer, or by following it with its own token (`read`). */
  checkAnswer?(persona: Persona, res: Response, read: (url: string) => Promise<Response>): Promise<void>;
}

const API = 'https://onerecord.iata.org/ns/api#';

/** A Subscription of `subscriber` to `object`. */
const subscriptionBody = (subscriber: string, object: string) => ({
  '@context': { api: API },
  '@type': 'api:Subscription',
  'api:hasSubscriber': { '@id': subscriber },
  'api:hasTopicType': { '@id': 'api:LOGISTICS_OBJECT_IDENTIFIER' },
  'api:hasTopic': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI', '@value': object },
  'api:includeSubscriptionEventType': { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
});

/** A Notification about `object`, as a publisher sends it (the same @id each time: stored once). */
const notificationBody = (object: string) => ({
  '@context': { api: API },
  '@id': 'https://publisher.example.com/notifications/matrix',
  '@type': 'api:Notification',
  'api:hasEventType': { '@id': 'api:LOGISTICS_OBJECT_UPDATED' },
  'api:hasLogisticsObject': { '@id': object },
});

/** Those who may read the object: a ChangeRequest of theirs on an outdated revision is rejected at once. */
const OBJECT_READERS: readonly Persona[] = ['internal', 'creator', 'getObject', 'delegateOfDelegate'];

/** The status of the ChangeRequest a PATCH answered with, as its requester reads it. */
async function requestStatus(res: Response, read: (url: string) => Promise<Response>): Promise<string> {
  const body = (await (await read(res.headers.get('location')!)).json()) as {
    'api:hasRequestStatus': { '@id': string };
  };
  return body['api:hasRequestStatus']['@id'].replace(API, '');
}

const MOVE = { location: 'https://elsewhere.example.com/logistics-objects/moved', permanent: false };
const ALL_OBJECT_READERS = { internal: 200, creator: 200, getObject: 200, delegateOfDelegate: 200, authenticated: 403 };
const jsonLd = { 'Content-Type': 'application/ld+json' };

const TABLE: Row[] = [
  { method: 'GET', route: '/', expect: { authenticated: 200 } },
  { method: 'HEAD', route: '/', expect: { authenticated: 200 } },
  // The token endpoint authenticates clients, not bearer tokens: a request without a grant is 400 for everyone.
  { method: 'POST', route: '/idp/token', expect: { authenticated: 400, noToken: 400, expiredToken: 400 } },
  {
    method: 'GET',
    route: '/idp/.well-known/jwks.json',
    expect: { authenticated: 200, noToken: 200, expiredToken: 200 },
  },
  // Probes and the API description are public.
  { method: 'GET', route: '/health/live', expect: { authenticated: 200, noToken: 200, expiredToken: 200 } },
  { method: 'GET', route: '/health/ready', expect: { authenticated: 200, noToken: 200, expiredToken: 200 } },
  { method: 'GET', route: '/openapi.json', expect: { authenticated: 200, noToken: 200, expiredToken: 200 } },
  { method: 'GET', route: '/openapi.yaml', expect: { authenticated: 200, noToken: 200, expiredToken: 200 } },
  { method: 'GET', route: '/openapi', expect: { authenticated: 200, noToken: 200, expiredToken: 200 } },
  // The web console's files hold no data: public. What they show comes from the API, with the signed-in caller's token.
  { method: 'GET', route: '/console', expect: { authenticated: 200, noToken: 200, expiredToken: 200 } },
  {
    method: 'GET',
    route: '/console/assets/:version/:name',
    // A module the page loads when another page is opened (the landing page's are in the page itself).
    url: async (w) =>
      `/${/import\("\.\/(console\/assets\/[^"]+)"\)/.exec(await (await fetch(`${w.server.url}/console`)).text())![1]}`,
    expect: { authenticated: 200, noToken: 200, expiredToken: 200 },
  },
  { method: 'GET', route: '/shapes', expect: { authenticated: 200 } },
  { method: 'POST', route: '/logistics-objects', body: () => piece(), expect: { internal: 201, authenticated: 403 } },
  { method: 'GET', route: '/logistics-objects/:id', url: (w) => w.object, expect: ALL_OBJECT_READERS },
  { method: 'HEAD', route: '/logistics-objects/:id', url: (w) => w.object, expect: ALL_OBJECT_READERS },
  {
    method: 'GET',
    route: '/logistics-objects/:id?at',
    url: (w) => `${w.object}?revision=1`,
    expect: ALL_OBJECT_READERS,
  },
  {
    method: 'GET',
    route: '/logistics-objects/:id?embedded',
    url: (w) => `${w.object}?embedded=true`,
    expect: ALL_OBJECT_READERS,
  },
  {
    method: 'PATCH',
    route: '/logistics-objects/:id',
    url: (w) => w.object,
    body: (w) => change(w.object, 1, [add(w.object, 'goodsDescription', str('matrix'))]),
    expect: { authenticated: 201 },
    // The `manual` policy: pending for everyone.
    checkAnswer: async (persona, res, read) => {
      expect(await requestStatus(res, read), persona).to.equal('REQUEST_PENDING');
    },
  },
  {
    // Anyone may PATCH; a caller who may not read the object must not learn its latest revision by
    // trying: its ChangeRequest stays pending, like one on the latest revision (docs/access-control.md).
    method: 'PATCH',
    route: '/logistics-objects/:id (outdated revision)',
    url: (w) => w.object,
    body: (w) => change(w.object, 2, [add(w.object, 'goodsDescription', str('matrix'))]),
    expect: { authenticated: 201 },
    checkAnswer: async (persona, res, read) => {
      expect(await requestStatus(res, read), persona).to.equal(
        OBJECT_READERS.includes(persona) ? 'REQUEST_REJECTED' : 'REQUEST_PENDING',
      );
    },
  },
  {
    method: 'GET',
    route: '/logistics-objects/:id/audit-trail',
    url: (w) => `${w.object}/audit-trail`,
    expect: ALL_OBJECT_READERS,
  },
  {
    method: 'GET',
    route: '/logistics-objects/:id/logistics-events',
    url: (w) => `${w.object}/logistics-events`,
    expect: { internal: 200, creator: 200, getEvent: 200, authenticated: 403 },
  },
  {
    method: 'POST',
    route: '/logistics-objects/:id/logistics-events',
    url: (w) => `${w.object}/logistics-events`,
    body: () => eventJson(),
    expect: { internal: 201, creator: 201, postEvent: 201, authenticated: 403 },
  },
  {
    method: 'GET',
    route: '/logistics-objects/:id/logistics-events/:eventId',
    url: (w) => w.event,
    expect: { internal: 200, creator: 200, getEvent: 200, authenticated: 403 },
  },
  // Bulk intake reports each event's own status: 201 inside the 207 for those allowed, 403 for the others.
  {
    method: 'POST',
    route: '/logistics-events',
    body: (w) => ({ ...eventJson(), 'cargo:eventFor': { '@id': w.object } }),
    expect: { authenticated: 207 },
    checkAnswer: async (persona, res) => {
      const body = (await res.json()) as { 'api:hasCreationResult': { 'api:hasHTTPStatus': number } };
      const allowed = ['internal', 'creator', 'postEvent'].includes(persona);
      expect(body['api:hasCreationResult']['api:hasHTTPStatus'], persona).to.equal(allowed ? 201 : 403);
    },
  },
  {
    method: 'POST',
    route: '/access-delegations',
    body: (w) => delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: org('someone'), objects: [w.object] }),
    expect: { internal: 201, creator: 201, getObject: 201, delegateOfDelegate: 201, authenticated: 403 },
  },
  { method: 'GET', route: '/action-requests', expect: { internal: 200, authenticated: 403 } },
  {
    method: 'GET',
    route: '/action-requests/:id',
    url: (w) => w.request,
    expect: { internal: 200, creator: 200, authenticated: 403 },
  },
  {
    method: 'HEAD',
    route: '/action-requests/:id',
    url: (w) => w.request,
    expect: { internal: 200, creator: 200, authenticated: 403 },
  },
  {
    method: 'PATCH',
    route: '/action-requests/:id',
    url: async (w) => `${await w.freshRequest()}?status=REQUEST_REJECTED`,
    expect: { internal: 204, authenticated: 403 },
  },
  {
    method: 'DELETE',
    route: '/action-requests/:id',
    url: (w) => w.freshRequest(),
    expect: { internal: 204, creator: 204, authenticated: 403 },
  },
  {
    method: 'POST',
    route: '/internal/acl',
    body: (w) => ({
      '@type': 'http://www.w3.org/ns/auth/acl#Authorization',
      'http://www.w3.org/ns/auth/acl#agent': { '@id': org('someone') },
      'http://www.w3.org/ns/auth/acl#accessTo': { '@id': w.object },
      'http://www.w3.org/ns/auth/acl#mode': { '@id': 'http://www.w3.org/ns/auth/acl#Read' },
    }),
    expect: { internal: 201, authenticated: 403 },
  },
  {
    method: 'GET',
    route: '/internal/acl',
    url: (w) => `/internal/acl?object=${encodeURIComponent(w.object)}`,
    expect: { internal: 200, authenticated: 403 },
  },
  {
    method: 'DELETE',
    route: '/internal/acl',
    url: (w) => `/internal/acl?object=${encodeURIComponent(w.object)}&agent=${encodeURIComponent(org('nobody'))}`,
    expect: { internal: 204, authenticated: 403 },
  },
  {
    method: 'GET',
    route: '/internal/acl/:id',
    url: (w) => w.freshGrant(),
    expect: { internal: 200, authenticated: 403 },
  },
  {
    method: 'DELETE',
    route: '/internal/acl/:id',
    url: (w) => w.freshGrant(),
    expect: { internal: 204, authenticated: 403 },
  },
  {
    method: 'GET',
    route: '/internal/logistics-objects',
    url: () => '/internal/logistics-objects?type=Piece',
    expect: { internal: 200, authenticated: 403 },
  },
  { method: 'GET', route: '/internal/moves', expect: { internal: 200, authenticated: 403 } },
  {
    method: 'PUT',
    route: '/internal/moves/:id',
    url: (w) => w.spare.replace('/logistics-objects/', '/internal/moves/'),
    body: () => MOVE,
    contentType: 'application/json',
    expect: { internal: 200, authenticated: 403 },
  },
  {
    method: 'GET',
    route: '/internal/moves/:id',
    url: (w) => w.spare.replace('/logistics-objects/', '/internal/moves/'),
    expect: { internal: 200, authenticated: 403 },
  },
  {
    method: 'DELETE',
    route: '/internal/moves/:id',
    url: async (w) => {
      const url = w.spare.replace('/logistics-objects/', '/internal/moves/');
      await w.server.request(url, {
        method: 'PUT',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(MOVE),
      });
      return url;
    },
    expect: { internal: 204, authenticated: 403 },
  },
  // SPARQL is for internal actors unless sparql.openToPartners is set (partners then query what they may read: sparql.test.ts).
  {
    method: 'GET',
    route: '/sparql',
    url: () => `/sparql?query=${encodeURIComponent('ASK { ?s ?p ?o }')}`,
    expect: { internal: 200, authenticated: 403 },
  },
  {
    method: 'POST',
    route: '/sparql',
    body: () => 'ASK { ?s ?p ?o }',
    contentType: 'application/sparql-query',
    expect: { internal: 200, authenticated: 403 },
  },
  // Publish and subscribe: the spec's routes need a token only; the operator routes are internal.
  {
    method: 'GET',
    route: '/subscriptions',
    url: (w) =>
      `/subscriptions?${new URLSearchParams({ topicType: `${API}LOGISTICS_OBJECT_IDENTIFIER`, topic: w.object })}`,
    expect: { authenticated: 200 },
  },
  // Only the subscribing Organization (here the creator) or an internal actor may subscribe.
  {
    method: 'POST',
    route: '/subscriptions',
    body: (w) => subscriptionBody(AGENT.creator, w.object),
    expect: { internal: 201, creator: 201, authenticated: 403 },
  },
  { method: 'POST', route: '/notifications', body: (w) => notificationBody(w.object), expect: { authenticated: 204 } },
  { method: 'GET', route: '/internal/notifications', expect: { internal: 200, authenticated: 403 } },
  { method: 'GET', route: '/internal/notifications/receipts', expect: { internal: 200, authenticated: 403 } },
  { method: 'GET', route: '/internal/outbox/queues', expect: { internal: 200, authenticated: 403 } },
  { method: 'GET', route: '/internal/outbox/dead-letters', expect: { internal: 200, authenticated: 403 } },
  { method: 'POST', route: '/internal/outbox/dead-letters/replay', expect: { internal: 200, authenticated: 403 } },
  // The publisher is this server itself: its own base URL, which outbound calls reach although it is on loopback.
  {
    method: 'POST',
    route: '/internal/remote-subscriptions',
    body: (w) => ({ topic: w.object }),
    contentType: 'application/json',
    expect: { internal: 201, authenticated: 403 },
  },
  { method: 'GET', route: '/internal/remote-subscriptions', expect: { internal: 200, authenticated: 403 } },
  {
    method: 'GET',
    route: '/internal/access',
    url: (w) => `/internal/access?object=${encodeURIComponent(w.object)}&agent=${encodeURIComponent(AGENT.getObject)}`,
    expect: { internal: 200, authenticated: 403 },
  },
];

function expected(row: Row, persona: Persona): number {
  const own = row.expect[persona];
  if (own !== undefined) return own;
  if (persona === 'noToken' || persona === 'expiredToken') return 401;
  return row.expect.authenticated!;
}

/**
 * Every "METHOD path" the application declares (HEAD comes with GET; `all` handlers only answer
 * 405). The fast path before it answers only GETs of the app's own object route.
 */
function declaredRoutes(server: TestServer): Set<string> {
  const out = new Set<string>();
  type Handler = { stack?: Layer[]; gated?: Handler[] };
  type Layer = {
    rawPath?: string;
    handle: Handler;
    route?: { path: string; methods: Record<string, boolean> };
  };
  // Into routers, the routers they mount, and the routers a gated middleware (router-gate.ts) holds.
  const walk = (handler: Handler, prefix: string): void => {
    for (const inner of handler.gated ?? []) walk(inner, prefix);
    for (const layer of handler.stack ?? []) {
      if (!layer.route) {
        walk(layer.handle, layer.rawPath && layer.rawPath !== '/' ? prefix + layer.rawPath : prefix);
        continue;
      }
      for (const method of Object.keys(layer.route.methods))
        if (method !== '_all') out.add(`${method.toUpperCase()} ${prefix}${layer.route.path}`);
    }
  };
  const { services } = server.running;
  const app = createExpressApp(
    services,
    new Representations(services.objects, 1),
    new RequestPipeline(services, new RequestObservation([])),
  ) as unknown as { router: Handler };
  walk(app.router, '');
  return out;
}

describe('authorisation matrix: every route x method x caller', () => {
  let server: TestServer;
  let world: World;
  const tokens = new Map<Persona, string | undefined>();

  const call = async (
    persona: Persona,
    method: string,
    url: string,
    body?: unknown,
    contentType = jsonLd['Content-Type'],
  ) => {
    const headers: Record<string, string> = body === undefined ? {} : { 'Content-Type': contentType };
    const token = tokens.get(persona);
    if (token) headers.Authorization = `Bearer ${token}`;
    return server.request(url, {
      method,
      headers,
      agent: 'none',
      body: body === undefined || typeof body === 'string' ? body : JSON.stringify(body),
    });
  };
  const ok = async (res: Response | Promise<Response>, status: number) => {
    const r = await res;
    expect(r.status, await r.clone().text()).to.equal(status);
    return r;
  };

  before(async () => {
    // The creator is an internal actor while it creates the object, then an ordinary partner.
    const first = await startTestServer({ internalAgents: [AGENT.creator], decisionPolicy: 'manual' });
    const key = await embeddedKey(first.dataDir);
    const tokenFor = (agent: string, exp = nowSeconds() + 600) =>
      sign(key, { iss: key.issuer, exp, logistics_agent_uri: agent });
    const creatorToken = await tokenFor(AGENT.creator);
    const created = await ok(
      first.request('/logistics-objects', {
        method: 'POST',
        agent: 'none',
        headers: { ...jsonLd, Authorization: `Bearer ${creatorToken}` },
        body: JSON.stringify(piece()),
      }),
      201,
    );
    const object = created.headers.get('location')!;
    const spare = (
      await ok(
        first.request('/logistics-objects', {
          method: 'POST',
          agent: 'none',
          headers: { ...jsonLd, Authorization: `Bearer ${creatorToken}` },
          body: JSON.stringify(piece()),
        }),
        201,
      )
    ).headers.get('location')!;
    await first.stop();
    // Same data, same port and base URL, without the creator among the internal actors.
    server = await startTestServer(
      { decisionPolicy: 'manual', port: Number(new URL(first.url).port), baseUrl: first.url },
      first.dataDir,
    );

    tokens.set('internal', await server.token('holder'));
    tokens.set('noToken', undefined);
    for (const [persona, agent] of Object.entries(AGENT))
      tokens.set(
        persona as Persona,
        await tokenFor(agent, persona === 'expiredToken' ? nowSeconds() - 120 : undefined),
      );

    const posted = await ok(call('creator', 'POST', `${object}/logistics-events`, eventJson()), 201);
    const delegateTo = async (persona: Persona, permissions: string[], asker: Persona = 'internal') => {
      const res = await ok(
        call(
          asker,
          'POST',
          '/access-delegations',
          delegationBody({ permissions, for: AGENT[persona as keyof typeof AGENT], objects: [object] }),
        ),
        201,
      );
      const request = res.headers.get('location')!;
      await ok(call('internal', 'PATCH', `${request}?status=REQUEST_ACCEPTED`), 204);
      return request;
    };
    await delegateTo('getObject', ['GET_LOGISTICS_OBJECT']);
    await delegateTo('patchObject', ['PATCH_LOGISTICS_OBJECT']);
    await delegateTo('postEvent', ['POST_LOGISTICS_EVENT']);
    await delegateTo('getEvent', ['GET_LOGISTICS_EVENT']);
    await delegateTo('delegateOfDelegate', ['GET_LOGISTICS_OBJECT'], 'getObject');
    const revoked = await delegateTo('revokedDelegate', [
      'GET_LOGISTICS_OBJECT',
      'PATCH_LOGISTICS_OBJECT',
      'POST_LOGISTICS_EVENT',
      'GET_LOGISTICS_EVENT',
    ]);
    await ok(call('internal', 'DELETE', revoked), 204);

    const freshRequest = async () => {
      const res = await ok(
        call('creator', 'PATCH', object, change(object, 1, [add(object, 'goodsDescription', str('pending'))])),
        201,
      );
      return res.headers.get('location')!;
    };
    const freshGrant = async () => {
      const res = await ok(
        call(
          'internal',
          'POST',
          '/internal/acl',
          TABLE.find((r) => r.route === '/internal/acl' && r.method === 'POST')!.body!({ object } as World),
        ),
        201,
      );
      return res.headers.get('location')!;
    };
    world = {
      server,
      object,
      spare,
      event: posted.headers.get('location')!,
      request: await freshRequest(),
      freshRequest,
      freshGrant,
    };
  });
  after(() => server.close());

  it('every route the application declares has a row (a new route must say who may call it)', () => {
    const rows = new Set(TABLE.map((r) => `${r.method} ${r.route}`));
    const missing = [...declaredRoutes(server)].filter((route) => !rows.has(route));
    expect(missing, 'routes without a row in the authorisation matrix').to.deep.equal([]);
  });

  for (const row of TABLE) {
    it(`${row.method} ${row.route}`, async () => {
      const outcomes: string[] = [];
      const wanted: string[] = [];
      for (const persona of PERSONAS) {
        const url = row.url ? await row.url(world) : row.route;
        const res = await call(persona, row.method, url, row.body?.(world), row.contentType);
        outcomes.push(`${persona} ${res.status}`);
        wanted.push(`${persona} ${expected(row, persona)}`);
        if (row.checkAnswer && res.status === expected(row, persona) && res.status < 400)
          await row.checkAnswer(persona, res, (u) => call(persona, 'GET', u));
      }
      expect(outcomes).to.deep.equal(wanted);
    });
  }
});
