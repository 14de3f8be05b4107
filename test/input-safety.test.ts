import { expect } from 'chai';
import { DEFAULTS, type Limits } from '../src/config.js';
import { HttpError } from '../src/errors.js';
import { parseBody, type BodyFormat } from '../src/rdf/parse.js';
import { expectApiError } from './support/api-error.js';
import { startListener, type LoopbackListener } from './support/loopback.js';
import { startTestServer, type TestServer } from './support/server.js';

const CARGO = 'https://onerecord.iata.org/ns/cargo#';
const CONTEXT = { cargo: CARGO };
const piece = (extra: Record<string, unknown> = {}) => ({
  '@context': CONTEXT,
  '@type': 'cargo:Piece',
  'cargo:goodsDescription': 'safety',
  ...extra,
});

/** `depth` JSON objects nested in one another (the Piece itself is the first). */
function nestedPiece(depth: number): Record<string, unknown> {
  let node: Record<string, unknown> = { 'cargo:code': 'KGM' };
  for (let i = 2; i < depth; i++) node = { 'cargo:next': node };
  return piece({ 'cargo:grossWeight': node });
}

/** A Piece with `count` triples: its type, its description and count - 2 distinct shipping marks. */
const pieceWithTriples = (count: number) =>
  piece({ 'cargo:shippingMarks': Array.from({ length: count - 2 }, (_, i) => `d${i}`) });

/** A Piece linking to an IRI of exactly `length` characters. */
function pieceLinkingIriOfLength(length: number): Record<string, unknown> {
  const prefix = 'https://partner.example/';
  return piece({ 'cargo:externalReferences': { '@id': prefix + 'a'.repeat(length - prefix.length) } });
}

/** A JSON body of exactly `bytes` bytes. */
function bodyOfBytes(bytes: number): string {
  const empty = JSON.stringify(piece({ 'cargo:goodsDescription': '' }));
  return JSON.stringify(piece({ 'cargo:goodsDescription': 'x'.repeat(bytes - empty.length) }));
}

describe('Request body safety', () => {
  let server: TestServer;
  let listener: LoopbackListener;
  before(async () => {
    server = await startTestServer();
    // Serves a perfectly good context: were anything fetched, the request could succeed.
    listener = await startListener((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/ld+json' }).end(JSON.stringify({ '@context': CONTEXT }));
    });
  });
  after(async () => {
    await server.close();
    await listener.close();
  });

  const post = (body: unknown, contentType = 'application/ld+json') =>
    server.request('/logistics-objects', {
      method: 'POST',
      headers: { 'Content-Type': contentType },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  /** Runs `act` and checks that neither the store nor the object index changed. */
  const expectNothingStored = async (act: () => Promise<void>) => {
    const quads = server.running.embedded!.index.size;
    const objects = server.running.services.objects.index.size;
    await act();
    expect(server.running.embedded!.index.size, 'quads in the store').to.equal(quads);
    expect(server.running.services.objects.index.size, 'objects in the index').to.equal(objects);
  };
  const expectRefused = (body: unknown, status: number, message?: RegExp, contentType?: string) =>
    expectNothingStored(async () => {
      await expectApiError(await post(body, contentType), status, message);
    });
  const expectCreated = async (body: unknown, contentType?: string): Promise<string> => {
    const res = await post(body, contentType);
    expect(res.status, await res.clone().text()).to.equal(201);
    return res.headers.get('location')!;
  };

  describe('JSON-LD processing never fetches anything', () => {
    const remoteBodies = (url: string): [string, unknown][] => [
      ['a remote @context', { ...piece(), '@context': `${url}/context.jsonld` }],
      ['a remote @context in an array', { ...piece(), '@context': [CONTEXT, `${url}/context.jsonld`] }],
      ['a relative @context', { ...piece(), '@context': 'context.jsonld' }],
      [
        'a property-scoped remote context',
        {
          ...piece(),
          '@context': { ...CONTEXT, weight: { '@id': 'cargo:grossWeight', '@context': `${url}/scoped` } },
          weight: { 'cargo:unit': 'KGM' },
        },
      ],
      [
        'a type-scoped remote context',
        { ...piece(), '@context': { ...CONTEXT, 'cargo:Piece': { '@context': `${url}/typed` } } },
      ],
      [
        'an @context inside a node',
        piece({ 'cargo:grossWeight': { '@context': `${url}/inner`, 'cargo:unit': 'KGM' } }),
      ],
      ['@import', { ...piece(), '@context': { '@import': `${url}/import`, ...CONTEXT } }],
    ];

    for (const [what] of remoteBodies('http://127.0.0.1')) {
      it(`${what}: 400, and the loopback listener named in it gets no request`, async () => {
        const [, body] = remoteBodies(listener.url).find(([w]) => w === what)!;
        await expectRefused(body, 400, /remote|@import|context/);
        expect(listener.requests).to.equal(0);
      });
    }
  });

  describe('prototype pollution', () => {
    let prototypeKeys: string[];
    beforeEach(() => {
      prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort();
    });
    afterEach(async () => {
      expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
      expect(Object.getOwnPropertyNames(Object.prototype).sort()).to.deep.equal(prototypeKeys);
      expect((await server.request('/')).status, 'the next request still works').to.equal(200);
    });

    for (const id of ['__proto__', 'constructor', 'prototype', 'hasOwnProperty']) {
      it(`@id "${id}" resolves against our base: an ordinary object, readable afterwards`, async () => {
        const location = await expectCreated(piece({ '@id': id, 'cargo:polluted': 'yes' }));
        expect(location).to.equal(`${server.url}/logistics-objects/${id}`);
        const read = await server.request(location);
        expect(read.status).to.equal(200);
        expect(((await read.json()) as Record<string, unknown>)['cargo:polluted']).to.equal('yes');
      });
    }

    it('"@base": null with @id "__proto__" (a relative IRI with no base) is 400', () =>
      expectRefused(
        { ...piece({ '@id': '__proto__', 'cargo:polluted': 'yes' }), '@context': [CONTEXT, { '@base': null }] },
        400,
        /Relative @id/,
      ));

    it('"__proto__" as a JSON key, a term, a blank node label or an embedded @id does not pollute', async () => {
      await expectRefused(
        '{"@context": {"cargo": "https://onerecord.iata.org/ns/cargo#"}, "@type": "cargo:Piece", "__proto__": {"polluted": "yes"}}',
        400,
        /__proto__/,
      );
      await expectRefused(
        '{"@context": {"cargo": "https://onerecord.iata.org/ns/cargo#"}, "@type": "cargo:Piece", "cargo:grossWeight": {"__proto__": {"@id": "urn:x"}}}',
        400,
        /__proto__/,
      );
      await post(
        '{"@context": {"cargo": "https://onerecord.iata.org/ns/cargo#", "__proto__": "cargo:polluted"}, "@type": "cargo:Piece", "__proto__": "yes"}',
      );
      await expectCreated(piece({ '@id': '_:__proto__' }));
      await post(piece({ 'cargo:grossWeight': { '@id': '__proto__', 'cargo:polluted': 'yes' } }));
      await post(piece({ 'cargo:grossWeight': { '@id': '_:constructor', 'cargo:polluted': 'yes' } }));
    });
  });

  describe('limits (defaults)', () => {
    it(`a body over ${DEFAULTS.limits.bodyBytes} bytes is 413; one of exactly that size is accepted; the same sent in chunks, without a Content-Length`, async () => {
      await expectRefused(bodyOfBytes(DEFAULTS.limits.bodyBytes + 1), 413);
      await expectCreated(bodyOfBytes(DEFAULTS.limits.bodyBytes));
      // A stream has no length known up front: the body is counted as it arrives.
      const streamed = (text: string) =>
        server.request('/logistics-objects', {
          method: 'POST',
          headers: { 'Content-Type': 'application/ld+json' },
          body: new Blob([text]).stream(),
          duplex: 'half',
        } as RequestInit);
      await expectNothingStored(async () => {
        await expectApiError(await streamed(bodyOfBytes(DEFAULTS.limits.bodyBytes + 1)), 413);
      });
      const res = await streamed(bodyOfBytes(DEFAULTS.limits.bodyBytes));
      expect(res.status, await res.clone().text()).to.equal(201);
    });

    it(`more than ${DEFAULTS.limits.triples} triples is 400; exactly that many is accepted`, async () => {
      await expectRefused(pieceWithTriples(DEFAULTS.limits.triples + 1), 400, /more than 10000 triples/);
      await expectCreated(pieceWithTriples(DEFAULTS.limits.triples));
    });

    it('a body near the size limit with 100,000 values of one property is refused before the costly part', async () => {
      // jsonld.js turns values into triples in time quadratic in the values of one property
      // (about two minutes for this body); the count is checked before that step.
      const started = Date.now();
      await expectRefused(
        piece({ 'cargo:goodsDescription': Array.from({ length: 100_000 }, (_, i) => i.toString(36)) }),
        400,
        /triples/,
      );
      expect(Date.now() - started).to.be.below(5000);
    });

    it('triples are counted after expansion: a small list that expands past the limit is 400', async () => {
      const list = { '@list': Array.from({ length: DEFAULTS.limits.triples / 2 + 1 }, (_, i) => i) };
      await expectRefused(piece({ 'cargo:goodsDescription': list }), 400, /triples/);
    });

    it(`JSON nested deeper than ${DEFAULTS.limits.depth} levels is 400; exactly that deep is accepted`, async () => {
      await expectRefused(nestedPiece(DEFAULTS.limits.depth + 1), 400, /deeper than 32/);
      await expectCreated(nestedPiece(DEFAULTS.limits.depth));
    });

    it(`an IRI longer than ${DEFAULTS.limits.iriLength} characters is 400; one of exactly that length is accepted`, async () => {
      await expectRefused(pieceLinkingIriOfLength(DEFAULTS.limits.iriLength + 1), 400, /longer than 2048/);
      await expectCreated(pieceLinkingIriOfLength(DEFAULTS.limits.iriLength));
    });

    it('the limits apply to datatype IRIs and to Turtle bodies too', async () => {
      const longIri = `https://example.org/${'d'.repeat(DEFAULTS.limits.iriLength)}`;
      await expectRefused(piece({ 'cargo:goodsDescription': { '@value': 'x', '@type': longIri } }), 400, /longer than/);
      await expectRefused(
        `<urn:x> a <${CARGO}Piece> ; <${CARGO}goodsDescription> "x"^^<${longIri}> .`,
        400,
        /longer than/,
        'text/turtle',
      );
      await expectRefused(
        `<urn:x> a <${CARGO}Piece> ; <${CARGO}externalReferences> <${longIri}> .`,
        400,
        /longer than/,
        'text/turtle',
      );
    });
  });

  describe('limits are configurable', () => {
    const limits: Limits = { ...DEFAULTS.limits, bodyBytes: 2048, triples: 8, depth: 4, iriLength: 64 };
    let small: TestServer;
    before(async () => {
      small = await startTestServer({ limits });
    });
    after(() => small.close());
    const postSmall = (body: unknown) =>
      small.request('/logistics-objects', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json' },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });

    it('each limit refuses one past it and accepts the limit itself', async () => {
      const cases: [string, unknown, unknown, number][] = [
        ['body bytes', bodyOfBytes(limits.bodyBytes + 1), bodyOfBytes(limits.bodyBytes), 413],
        ['triples', pieceWithTriples(limits.triples + 1), pieceWithTriples(limits.triples), 400],
        ['depth', nestedPiece(limits.depth + 1), nestedPiece(limits.depth), 400],
        ['IRI length', pieceLinkingIriOfLength(limits.iriLength + 1), pieceLinkingIriOfLength(limits.iriLength), 400],
      ];
      for (const [what, over, at, status] of cases) {
        const before = small.running.embedded!.index.size;
        expect((await postSmall(over)).status, `${what}: one past the limit`).to.equal(status);
        expect(small.running.embedded!.index.size).to.equal(before);
        expect((await postSmall(at)).status, `${what}: at the limit`).to.equal(201);
      }
    });
  });

  describe('content types', () => {
    for (const type of [
      'text/plain',
      'application/xml',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/n-triples',
    ]) {
      it(`${type}: 415`, () => expectRefused(piece(), 415, undefined, type));
    }

    it('no Content-Type: 415', () =>
      expectNothingStored(async () => {
        const res = await server.request('/logistics-objects', {
          method: 'POST',
          body: new Uint8Array(Buffer.from(JSON.stringify(piece()))),
        });
        await expectApiError(res, 415);
      }));

    it('application/ld+json with parameters, and application/json, are JSON-LD', async () => {
      await expectCreated(piece(), 'application/ld+json; charset=utf-8; version=2.3.0');
      await expectCreated(piece(), 'application/json');
    });

    it('Turtle bodies are accepted (text/turtle and application/x-turtle)', async () => {
      const turtle = `@prefix cargo: <${CARGO}> .\n[] a cargo:Piece ; cargo:goodsDescription "from Turtle"@en ; cargo:grossWeight [ a cargo:Value ; cargo:unit <https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode#KGM> ] .`;
      for (const type of ['text/turtle', 'application/x-turtle; charset=utf-8']) {
        const read = (await (await server.request(await expectCreated(turtle, type))).json()) as Record<
          string,
          Record<string, string>
        >;
        expect(read['cargo:goodsDescription']).to.deep.equal({ '@value': 'from Turtle', '@language': 'en' });
        expect(read['cargo:grossWeight']['@id']).to.match(/^internal:/);
      }
    });

    it('a UTF-8 byte order mark in front of JSON is accepted', () => expectCreated(`\uFEFF${JSON.stringify(piece())}`));
  });

  describe('invalid bodies: 400, nothing stored', () => {
    const cases: [string, unknown, RegExp, string?][] = [
      ['invalid JSON', '{"@type": ', /not valid JSON/],
      ['an empty body', '', /empty/],
      ['a JSON scalar', '42', /object or an array/],
      ['JSON null', 'null', /object or an array/],
      ['an @id that is a number', { ...piece(), '@id': 5 }, /not valid JSON-LD/],
      ['an unknown JSON-LD version', { ...piece(), '@context': { ...CONTEXT, '@version': 2 } }, /not valid JSON-LD/],
      ['a term that maps to nothing', { ...piece(), colour: 'red' }, /not valid JSON-LD/],
      [
        'a type that is not a Logistics Object',
        { ...piece(), '@type': 'cargo:Value' },
        /not a subclass of cargo:LogisticsObject/,
      ],
      [
        'an API type',
        { ...piece(), '@context': { ...CONTEXT, api: 'https://onerecord.iata.org/ns/api#' }, '@type': 'api:Change' },
        /not a subclass/,
      ],
      ['a class the ontology does not have', { ...piece(), '@type': 'cargo:NoSuchClass' }, /not a subclass/],
      ['no type', { '@context': CONTEXT, 'cargo:goodsDescription': 'untyped' }, /no @type/],
      [
        'a prefix used without @context',
        { '@type': 'cargo:Piece', 'cargo:goodsDescription': 'x' },
        /prefix cargo: without defining it/,
      ],
      ['a named graph', { '@context': CONTEXT, '@id': 'urn:graph', '@graph': [piece()] }, /named graphs/],
      ['two top-level objects', [piece(), piece()], /exactly one/],
      [
        'an @id outside this server',
        piece({ '@id': 'https://elsewhere.example/logistics-objects/x' }),
        /only objects of this server/,
      ],
      ['invalid Turtle', '@prefix cargo: <x> .\n[] a cargo:Piece', /not valid Turtle/, 'text/turtle'],
    ];
    for (const [what, body, message, type] of cases) it(what, () => expectRefused(body, 400, message, type));

    it('a @graph holding one object is accepted', () =>
      expectCreated({
        '@context': CONTEXT,
        '@graph': [{ '@type': 'cargo:Piece', 'cargo:goodsDescription': 'in a graph' }],
      }));
  });

  describe('identifiers', () => {
    it("an @id that already exists is 409 (also the data holder's)", async () => {
      const location = await expectCreated(piece({ '@id': 'taken-id' }));
      await expectRefused(piece({ '@id': location }), 409);
      await expectRefused(piece({ '@id': server.running.services.holder }), 409);
    });

    it('a nested node with the @id of an existing object and properties is 400, typed or not', async () => {
      const existing = await expectCreated(piece());
      await expectRefused(
        piece({
          'cargo:containedPieces': { '@id': existing, '@type': 'cargo:Piece', 'cargo:goodsDescription': 'changed' },
        }),
        400,
        /PATCH/,
      );
      await expectRefused(
        piece({ 'cargo:containedPieces': { '@id': existing, 'cargo:goodsDescription': 'changed' } }),
        400,
        /PATCH/,
      );
      // A link, with or without its type, is fine.
      await expectCreated(piece({ 'cargo:containedPieces': { '@id': existing } }));
      await expectCreated(piece({ 'cargo:containedPieces': { '@id': existing, '@type': 'cargo:Piece' } }));
    });
  });

  describe('error codes of the parser (what the HTTP answers above come from)', () => {
    const base = 'https://server.example/logistics-objects/';
    const small: Limits = { ...DEFAULTS.limits, bodyBytes: 1024, triples: 3, depth: 3, iriLength: 60 };
    const codeOf = async (body: unknown, format: BodyFormat = 'jsonld', limits: Limits = small): Promise<string> => {
      try {
        await parseBody(Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), format, { base, limits });
      } catch (err) {
        expect(err).to.be.instanceOf(HttpError);
        return (err as HttpError).code;
      }
      return 'accepted';
    };

    it('gives each refusal its own code', async () => {
      expect(await codeOf({ '@context': 'https://remote.example/ctx', '@type': 'x' })).to.equal('remote_context');
      expect(await codeOf({ '@context': { '@import': 'https://remote.example/ctx' } })).to.equal('remote_context');
      expect(await codeOf({ a: { b: { c: {} } } })).to.equal('too_deep');
      expect(await codeOf({ '@context': CONTEXT, '@type': 'cargo:Piece', 'cargo:n': [1, 2, 3] })).to.equal(
        'too_many_triples',
      );
      expect(await codeOf({ '@context': CONTEXT, '@type': `cargo:${'P'.repeat(60)}` })).to.equal('iri_too_long');
      expect(await codeOf('{"@context": {}, "a": {"__proto__": {}}}')).to.equal('forbidden_key');
      expect(await codeOf({ '@type': 'cargo:Piece' })).to.equal('undefined_prefix');
      expect(await codeOf({ '@type': 'xsd:Piece' })).to.equal('undefined_prefix');
      expect(await codeOf('{')).to.equal('invalid_json');
      expect(await codeOf('"text"')).to.equal('invalid_jsonld');
      expect(await codeOf({ '@id': 7 })).to.equal('invalid_jsonld');
      expect(
        await codeOf({ '@context': CONTEXT, '@id': 'urn:g', '@graph': [{ '@id': 'urn:s', '@type': 'cargo:Piece' }] }),
      ).to.equal('named_graph');
      expect(await codeOf('')).to.equal('empty_body');
      expect(await codeOf('<urn:s> <urn:p> .', 'turtle')).to.equal('invalid_turtle');
      expect(await codeOf('<urn:s> a <urn:Piece> .', 'turtle')).to.equal('accepted');
    });
  });
});
