import { expect } from 'chai';
import fc from 'fast-check';
import { ERROR_TITLES, HttpError, type ErrorDetail } from '../src/errors.js';
import { errorDocument } from '../src/http/error-responses.js';
import { withContext } from '../src/rdf/jsonld-writer.js';
import { namedNode, quad, literal } from '../src/rdf/terms.js';
import { api, rdf } from '../src/rdf/vocab.js';
import { expectApiError, expectFramedApiError } from './support/api-error.js';
import { add, change, createObject, readJson, str, submit } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { startTestServer, type TestServer } from './support/server.js';

type Json = Record<string, unknown>;
const STATUSES = Object.keys(ERROR_TITLES).map(Number);

const detailArb: fc.Arbitrary<ErrorDetail> = fc.record(
  { message: fc.string({ unit: 'binary', maxLength: 80 }), property: fc.webUrl(), resource: fc.webUrl() },
  { requiredKeys: ['message'] },
);
const errorArb = fc
  .tuple(
    fc.constantFrom(...STATUSES),
    fc.array(detailArb, { minLength: 1, maxLength: 4 }),
    fc.option(fc.string({ minLength: 1, maxLength: 40 }), { nil: undefined }),
  )
  .map(([status, details, title]) => new HttpError(status, 'random_cause', details, title));

describe('api:Error: identified nodes a strict client can frame', () => {
  it('any error cause gives an answer body that frames with @id, api:Error, hasTitle and identified api:ErrorDetails', async () => {
    await fc.assert(
      fc.asyncProperty(errorArb, async (error) => {
        const body = JSON.parse(withContext(errorDocument(error))) as Json;
        expect(body['api:hasErrorDetail']).to.be.an('array').with.length(error.details.length);
        const framed = await expectFramedApiError(body, error.status, { title: error.title });
        const messages = ([framed[`${api.hasErrorDetail}`]].flat() as Json[]).map((d) => d[api.hasMessage]);
        expect(messages).to.have.members(error.details.map((d) => d.message));
      }),
      { numRuns: 150 },
    );
  });

  describe('over HTTP: every route and every error status it can produce', () => {
    let server: TestServer;
    let object: string;
    let acceptedRequest: string;
    let event: string;
    before(async () => {
      server = await startTestServer({ limits: { bodyBytes: 4096 } } as never);
      object = await createObject(server);
      acceptedRequest = await submit(server, object, change(object, 1, [add(object, 'goodsDescription', str('Pens'))]));
      const posted = await postEvent(server, object, eventJson());
      expect(posted.status).to.equal(201);
      event = posted.headers.get('location')!;
    });
    after(() => server.close());

    const path = (iri: string) => iri.slice(server.url.length);
    const idOf = (iri: string) => iri.slice(iri.lastIndexOf('/') + 1);
    const idArb = fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/);
    const badTokenArb = fc.oneof(
      fc.constant(undefined),
      fc.stringMatching(/^[A-Za-z0-9._~+/-]{0,300}$/),
      fc.tuple(idArb, idArb, idArb).map((p) => p.join('.')),
    );
    const unsupportedTypeArb = fc.constantFrom(
      'text/plain',
      'application/xml',
      'image/png',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
    );
    const unacceptableArb = fc.constantFrom('image/png', 'application/xml', 'text/html', 'application/pdf');
    const junkQueryArb = fc.stringMatching(/^[A-Za-z_.:-]{1,20}$/).filter((v) => !/^(true|false)$/.test(v));
    const junkJsonArb = fc.oneof(
      fc.json(),
      fc.constant('{"@type": 42}'),
      fc.string({ maxLength: 30 }).map((s) => `{${s}`),
    );

    interface Call {
      method: string;
      url: string;
      agent?: 'holder' | 'other' | 'none';
      headers?: Record<string, string>;
      body?: string;
    }
    interface Cause {
      route: string;
      status: number;
      call: fc.Arbitrary<Call>;
    }
    const json = { 'Content-Type': 'application/ld+json' };
    const routes = (): { route: string; method: string; url: () => string; body?: () => string }[] => [
      { route: 'GET /', method: 'GET', url: () => '/' },
      { route: 'POST /logistics-objects', method: 'POST', url: () => '/logistics-objects', body: () => '{}' },
      { route: 'GET /logistics-objects/{id}', method: 'GET', url: () => path(object) },
      { route: 'PATCH /logistics-objects/{id}', method: 'PATCH', url: () => path(object), body: () => '{}' },
      { route: 'GET …/audit-trail', method: 'GET', url: () => `${path(object)}/audit-trail` },
      { route: 'GET …/logistics-events', method: 'GET', url: () => `${path(object)}/logistics-events` },
      {
        route: 'POST …/logistics-events',
        method: 'POST',
        url: () => `${path(object)}/logistics-events`,
        body: () => '{}',
      },
      { route: 'GET …/logistics-events/{eventId}', method: 'GET', url: () => path(event) },
      { route: 'POST /logistics-events', method: 'POST', url: () => '/logistics-events', body: () => '{}' },
      { route: 'GET /action-requests', method: 'GET', url: () => '/action-requests' },
      { route: 'GET /action-requests/{id}', method: 'GET', url: () => path(acceptedRequest) },
      {
        route: 'PATCH /action-requests/{id}',
        method: 'PATCH',
        url: () => `${path(acceptedRequest)}?status=REQUEST_ACCEPTED`,
      },
      { route: 'DELETE /action-requests/{id}', method: 'DELETE', url: () => path(acceptedRequest) },
      { route: 'GET /internal/moves', method: 'GET', url: () => '/internal/moves' },
      {
        route: 'PUT /internal/moves/{id}',
        method: 'PUT',
        url: () => `/internal/moves/${idOf(object)}`,
        body: () => JSON.stringify({ location: 'https://elsewhere.example.com/lo/1' }),
      },
      { route: 'DELETE /internal/moves/{id}', method: 'DELETE', url: () => `/internal/moves/${idOf(object)}` },
    ];
    const causes = (): Cause[] => [
      // 401 on every route: no token, or a token that is not a valid signed JWT.
      ...routes().map((r) => ({
        route: r.route,
        status: 401,
        call: badTokenArb.map(
          (token): Call => ({
            method: r.method,
            url: r.url(),
            agent: 'none',
            headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
            body: r.body?.(),
          }),
        ),
      })),
      // 403: an authenticated caller without permission.
      ...[
        'POST /logistics-objects',
        'GET /logistics-objects/{id}',
        'GET …/audit-trail',
        'GET …/logistics-events',
        'POST …/logistics-events',
        'GET …/logistics-events/{eventId}',
        'GET /action-requests',
        'GET /action-requests/{id}',
        'PATCH /action-requests/{id}',
        'DELETE /action-requests/{id}',
        'GET /internal/moves',
        'PUT /internal/moves/{id}',
        'DELETE /internal/moves/{id}',
      ]
        .map((name) => routes().find((r) => r.route === name)!)
        .map((r) => ({
          route: r.route,
          status: 403,
          call: fc.constant<Call>({
            method: r.method,
            url: r.url(),
            agent: 'other',
            headers: r.body ? (r.route.includes('internal') ? { 'Content-Type': 'application/json' } : json) : {},
            body: r.method === 'POST' && r.route.includes('events') ? JSON.stringify(eventJson()) : r.body?.(),
          }),
        })),
      // 404: unknown ids.
      {
        route: 'GET /logistics-objects/{id}',
        status: 404,
        call: idArb.map((id): Call => ({ method: 'GET', url: `/logistics-objects/${id}-missing` })),
      },
      {
        route: 'PATCH /logistics-objects/{id}',
        status: 404,
        call: idArb.map(
          (id): Call => ({ method: 'PATCH', url: `/logistics-objects/${id}-missing`, headers: json, body: '{}' }),
        ),
      },
      {
        route: 'GET …/audit-trail',
        status: 404,
        call: idArb.map((id): Call => ({ method: 'GET', url: `/logistics-objects/${id}-missing/audit-trail` })),
      },
      {
        route: 'GET …/logistics-events',
        status: 404,
        call: idArb.map((id): Call => ({ method: 'GET', url: `/logistics-objects/${id}-missing/logistics-events` })),
      },
      {
        route: 'POST …/logistics-events',
        status: 404,
        call: idArb.map(
          (id): Call => ({
            method: 'POST',
            url: `/logistics-objects/${id}-missing/logistics-events`,
            headers: json,
            body: JSON.stringify(eventJson()),
          }),
        ),
      },
      {
        route: 'GET …/logistics-events/{eventId}',
        status: 404,
        call: idArb.map((id): Call => ({ method: 'GET', url: `${path(object)}/logistics-events/${id}-missing` })),
      },
      {
        route: 'GET /action-requests/{id}',
        status: 404,
        call: idArb.map((id): Call => ({ method: 'GET', url: `/action-requests/${id}-missing` })),
      },
      {
        route: 'PATCH /action-requests/{id}',
        status: 404,
        call: idArb.map(
          (id): Call => ({ method: 'PATCH', url: `/action-requests/${id}-missing?status=REQUEST_ACCEPTED` }),
        ),
      },
      {
        route: 'DELETE /action-requests/{id}',
        status: 404,
        call: idArb.map((id): Call => ({ method: 'DELETE', url: `/action-requests/${id}-missing` })),
      },
      {
        route: 'PUT /internal/moves/{id}',
        status: 404,
        call: idArb.map(
          (id): Call => ({
            method: 'PUT',
            url: `/internal/moves/${id}-missing`,
            headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ location: 'https://elsewhere.example.com/lo/1' }),
          }),
        ),
      },
      {
        route: 'DELETE /internal/moves/{id}',
        status: 404,
        call: idArb.map((id): Call => ({ method: 'DELETE', url: `/internal/moves/${id}` })),
      },
      { route: 'unknown path', status: 404, call: idArb.map((id): Call => ({ method: 'GET', url: `/no-such-${id}` })) },
      // 400: invalid bodies and query parameters.
      {
        route: 'POST /logistics-objects',
        status: 400,
        call: junkJsonArb.map((body): Call => ({ method: 'POST', url: '/logistics-objects', headers: json, body })),
      },
      {
        route: 'PATCH /logistics-objects/{id}',
        status: 400,
        call: junkJsonArb.map((body): Call => ({ method: 'PATCH', url: path(object), headers: json, body })),
      },
      {
        route: 'POST …/logistics-events',
        status: 400,
        call: junkJsonArb.map(
          (body): Call => ({ method: 'POST', url: `${path(object)}/logistics-events`, headers: json, body }),
        ),
      },
      {
        route: 'POST /logistics-events',
        status: 400,
        call: junkJsonArb.map((body): Call => ({ method: 'POST', url: '/logistics-events', headers: json, body })),
      },
      {
        route: 'GET /logistics-objects/{id}',
        status: 400,
        call: fc
          .tuple(fc.constantFrom('at', 'revision', 'embedded'), junkQueryArb)
          .map(([p, v]): Call => ({ method: 'GET', url: `${path(object)}?${p}=${encodeURIComponent(v)}` })),
      },
      {
        route: 'GET …/audit-trail',
        status: 400,
        call: fc
          .tuple(fc.constantFrom('updated-from', 'updated-to', 'status'), junkQueryArb)
          .map(([p, v]): Call => ({ method: 'GET', url: `${path(object)}/audit-trail?${p}=${encodeURIComponent(v)}` })),
      },
      {
        route: 'GET …/logistics-events',
        status: 400,
        call: fc.tuple(fc.constantFrom('created-after', 'occurred-before', 'sort', 'limit', 'skip'), junkQueryArb).map(
          ([p, v]): Call => ({
            method: 'GET',
            url: `${path(object)}/logistics-events?${p}=${encodeURIComponent(v)}`,
          }),
        ),
      },
      {
        route: 'GET /action-requests',
        status: 400,
        call: fc
          .tuple(fc.constantFrom('status', 'type'), junkQueryArb)
          .map(([p, v]): Call => ({ method: 'GET', url: `/action-requests?${p}=${encodeURIComponent(v)}` })),
      },
      {
        route: 'PUT /internal/moves/{id}',
        status: 400,
        call: fc
          .oneof(
            junkJsonArb,
            fc.string({ maxLength: 30 }).map((location) => JSON.stringify({ location })),
          )
          .map(
            (body): Call => ({
              method: 'PUT',
              url: `/internal/moves/${idOf(object)}`,
              headers: { 'Content-Type': 'application/json' },
              body,
            }),
          ),
      },
      {
        route: 'PATCH /action-requests/{id}',
        status: 400,
        call: junkQueryArb.map(
          (v): Call => ({ method: 'PATCH', url: `${path(acceptedRequest)}?status=${encodeURIComponent(v)}` }),
        ),
      },
      // 405: methods a path does not have.
      ...[
        ['/logistics-objects/{id}', () => path(object), ['PUT', 'DELETE', 'POST']],
        ['…/audit-trail', () => `${path(object)}/audit-trail`, ['PUT', 'DELETE', 'POST', 'PATCH']],
        ['…/logistics-events', () => `${path(object)}/logistics-events`, ['PUT', 'DELETE', 'PATCH']],
        ['…/logistics-events/{eventId}', () => path(event), ['PUT', 'DELETE', 'POST', 'PATCH']],
        ['/action-requests', () => '/action-requests', ['PUT', 'DELETE', 'POST', 'PATCH']],
        ['/action-requests/{id}', () => path(acceptedRequest), ['PUT', 'POST']],
        ['/internal/moves', () => '/internal/moves', ['PUT', 'DELETE', 'POST', 'PATCH']],
        ['/internal/moves/{id}', () => `/internal/moves/${idOf(object)}`, ['POST', 'PATCH']],
      ].map(([name, url, methods]) => ({
        route: `other methods on ${name as string}`,
        status: 405,
        call: fc
          .constantFrom(...(methods as string[]))
          .map((method): Call => ({ method, url: (url as () => string)() })),
      })),
      // 406: no offered format fits Accept.
      ...[
        'GET /',
        'GET /logistics-objects/{id}',
        'GET …/audit-trail',
        'GET …/logistics-events',
        'GET …/logistics-events/{eventId}',
        'GET /action-requests/{id}',
      ]
        .map((name) => routes().find((r) => r.route === name)!)
        .map((r) => ({
          route: r.route,
          status: 406,
          call: unacceptableArb.map((accept): Call => ({ method: 'GET', url: r.url(), headers: { Accept: accept } })),
        })),
      // 409: an id already taken.
      {
        route: 'POST /logistics-objects',
        status: 409,
        call: fc.constant<Call>({
          method: 'POST',
          url: '/logistics-objects',
          headers: json,
          body: JSON.stringify({ '@id': object, '@type': 'https://onerecord.iata.org/ns/cargo#Piece' }),
        }),
      },
      // 413: a body over the configured limit.
      {
        route: 'POST /logistics-objects',
        status: 413,
        call: fc.integer({ min: 5000, max: 20000 }).map(
          (n): Call => ({
            method: 'POST',
            url: '/logistics-objects',
            headers: json,
            body: `{"x":"${'a'.repeat(n)}"}`,
          }),
        ),
      },
      // 415: unsupported request content types.
      ...[
        'POST /logistics-objects',
        'PATCH /logistics-objects/{id}',
        'POST …/logistics-events',
        'POST /logistics-events',
        'PUT /internal/moves/{id}',
      ]
        .map((name) => routes().find((r) => r.route === name)!)
        .map((r) => ({
          route: r.route,
          status: 415,
          call: unsupportedTypeArb.map(
            (type): Call => ({ method: r.method, url: r.url(), headers: { 'Content-Type': type }, body: 'x' }),
          ),
        })),
      // 422: decisions and revocations out of a final state.
      {
        route: 'PATCH /action-requests/{id}',
        status: 422,
        call: fc
          .constant('REQUEST_REJECTED')
          .map((s): Call => ({ method: 'PATCH', url: `${path(acceptedRequest)}?status=${s}` })),
      },
      {
        route: 'DELETE /action-requests/{id}',
        status: 422,
        call: fc.constant<Call>({ method: 'DELETE', url: path(acceptedRequest) }),
      },
    ];

    it('covers every route of the spec with 401 and each other status it documents', () => {
      const covered = new Set(causes().map((c) => `${c.route} ${c.status}`));
      for (const r of routes()) expect(covered.has(`${r.route} 401`), r.route).to.equal(true);
      for (const status of [400, 403, 404, 405, 406, 409, 413, 415, 422])
        expect(
          [...covered].some((c) => c.endsWith(` ${status}`)),
          String(status),
        ).to.equal(true);
    });

    it('every cause answers an api:Error with ids that frames (random inputs per cause)', async () => {
      for (const cause of causes()) {
        await fc.assert(
          fc.asyncProperty(cause.call, async (call) => {
            const res = await server.request(call.url, {
              method: call.method,
              headers: call.headers,
              body: call.body,
              agent: call.agent,
            });
            await expectApiError(res, cause.status).catch((e: Error) => {
              throw new Error(`${cause.route} -> ${cause.status} (${call.method} ${call.url}): ${e.message}`);
            });
          }),
          { numRuns: 4 },
        );
      }
    });

    it('errors stored on a ChangeRequest are identified under the request, details with internal: ids', async () => {
      const outdated = await submit(server, object, change(object, 1, [add(object, 'goodsDescription', str('Ink'))]));
      const body = await readJson(server, outdated);
      const error = body['api:hasError'] as Json;
      const id = new RegExp(`^${outdated.replace(/[.?]/g, '\\$&')}/errors/[0-9a-f-]{36}$`);
      await expectFramedApiError({ '@context': body['@context'], ...error }, 409, {
        id,
        title: 'Conflict with Logistics Object revision number',
      });
    });

    it('errors stored with the older class api:ErrorDetails are served as api:ErrorDetail', async () => {
      const request = await submit(server, object, change(object, 1, [add(object, 'goodsDescription', str('Chalk'))]));
      const g = namedNode(request);
      const error = namedNode(`${request}/errors/legacy`);
      const detail = namedNode('internal:legacy-detail');
      await server.running.store.commit(
        server.running.store.begin({
          insert: [
            quad(g, namedNode(api.hasError), error, g),
            quad(error, namedNode(rdf.type), namedNode(api.Error), g),
            quad(error, namedNode(api.hasTitle), literal('Identifier conflict'), g),
            quad(error, namedNode(api.hasErrorDetail), detail, g),
            quad(detail, namedNode(rdf.type), namedNode(api.ErrorDetails), g),
            quad(detail, namedNode(api.hasCode), literal('409'), g),
            quad(detail, namedNode(api.hasMessage), literal('written before API 2.3'), g),
          ],
        }),
      );
      const body = await readJson(server, request);
      const legacy = ([body['api:hasError']].flat() as Json[]).find((e) => e['@id'] === error.value)!;
      expect((legacy['api:hasErrorDetail'] as Json)['@type']).to.equal('api:ErrorDetail');
    });
  });
});
