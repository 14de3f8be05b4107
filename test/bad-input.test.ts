import { expect } from 'chai';
import fc from 'fast-check';
import jsonld from 'jsonld';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { DEFAULTS } from '../src/config.js';
import { jsonLdJsNumberLiteral, numberLiteral } from '../src/rdf/json-numbers.js';
import { parseBody } from '../src/rdf/parse.js';
import { isWellTyped } from '../src/rdf/xsd-lexical.js';
import { expectApiError } from './support/api-error.js';
import { API, CARGO, XSD, add, change, cls, createObject, patch, piece, str, submit } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { postJsonLd, startTestServer, storedQuads, type TestServer } from './support/server.js';
import { writeRoutes } from './support/write-routes.js';

const INTEGER = `${XSD}integer`;
const DOUBLE = `${XSD}double`;

/** A 400 for a query parameter: api:Error titled for query parameters, with a message matching `message`. */
async function expectQueryError(res: Response, message: RegExp): Promise<void> {
  const text = await res.text();
  expect(res.status, text).to.equal(400);
  const body = JSON.parse(text) as Record<string, unknown>;
  expect(body['@type']).to.equal('api:Error');
  expect(body['api:hasTitle']).to.equal('Invalid query parameter request');
  expect(text).to.match(message);
}

/** The property an api:Error names, from its first detail. */
async function errorProperty(res: Response): Promise<string | undefined> {
  const body = (await res.json()) as Record<string, unknown>;
  const detail = [body['api:hasErrorDetail']].flat()[0] as Record<string, { '@value': string }>;
  return detail['api:hasProperty']?.['@value'];
}

describe('Bad input gets a clear 4xx, never a 500, and nothing is stored altered', () => {
  let server: TestServer;
  let object: string;
  before(async () => {
    server = await startTestServer();
    object = await createObject(server);
  });
  after(() => server.close());

  const send = (path: string, init: RequestInit & { agent?: 'holder' | 'other' } = {}) => server.request(path, init);
  const expectNothingStored = async (act: () => Promise<void>) => {
    const quads = await storedQuads(server);
    await act();
    expect(await storedQuads(server), 'quads in the store').to.equal(quads);
  };

  describe('paths, headers and query strings', () => {
    const badSegments = ['%zz', '%ff%fe', '%C0%AE', '%', 'a%2', '%E0%A4%A'];
    for (const segment of badSegments) {
      it(`malformed percent-encoding ${JSON.stringify(segment)} in a path segment: 400 on every route`, async () => {
        for (const [method, path] of [
          ['GET', `/logistics-objects/${segment}`],
          ['PATCH', `/logistics-objects/${segment}`],
          ['GET', `/logistics-objects/${segment}/logistics-events`],
          ['POST', `/logistics-objects/${segment}/logistics-events`],
          ['GET', `/logistics-objects/x/logistics-events/${segment}`],
          ['GET', `/logistics-objects/${segment}/audit-trail`],
          ['GET', `/action-requests/${segment}`],
          ['DELETE', `/action-requests/${segment}`],
        ]) {
          const res = await send(path, {
            method,
            headers: { 'Content-Type': 'application/ld+json' },
            body: method === 'GET' || method === 'DELETE' ? undefined : '{}',
          });
          await expectApiError(res, 400, /percent-encoding/);
        }
      });
    }

    it('two Authorization headers: 400, whichever is valid; one is read as usual', async () => {
      const token = await server.token();
      const get = (headers: string[]) =>
        new Promise<Response>((resolve, reject) => {
          const url = new URL(`${server.url}/`);
          // Headers as a raw list: repeated names go out as they are. (A list gets no Host header of its own.)
          const req = httpRequest(
            { host: url.hostname, port: url.port, path: '/', method: 'GET', headers: ['Host', url.host, ...headers] },
            (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () =>
                resolve(
                  new Response(Buffer.concat(chunks).toString('utf8'), {
                    status: res.statusCode,
                    headers: res.headers as Record<string, string>,
                  }),
                ),
              );
            },
          );
          req.on('error', reject);
          req.end();
        });
      expect((await get(['Authorization', `Bearer ${token}`])).status).to.equal(200);
      await expectApiError(
        await get(['Authorization', `Bearer ${token}`, 'Authorization', 'Bearer forged']),
        400,
        /authorization header is given more than once/,
      );
      await expectApiError(
        await get(['Authorization', 'Bearer forged', 'Authorization', `Bearer ${token}`]),
        400,
        /more than once/,
      );
    });

    it('a repeated query parameter is 400, not "first one wins"', async () => {
      await expectQueryError(await send(`${object}?revision=1&revision=2`), /more than once/);
      await expectQueryError(
        await send(`/action-requests?status=REQUEST_PENDING&status=REQUEST_ACCEPTED`),
        /more than once/,
      );
      await expectQueryError(
        await send(`${object}/audit-trail?status=REQUEST_PENDING&status=REQUEST_ACCEPTED`),
        /more than once/,
      );
    });
  });

  describe('body encodings and charsets', () => {
    const body = JSON.stringify(piece());

    it('Content-Encoding gzip on a body that is not gzip: 400; an unknown encoding: 415; real gzip is read', async () => {
      await expectNothingStored(async () => {
        await expectApiError(
          await send('/logistics-objects', {
            method: 'POST',
            headers: { 'Content-Type': 'application/ld+json', 'Content-Encoding': 'gzip' },
            body,
          }),
          400,
          /Content-Encoding/,
        );
        await expectApiError(
          await send('/logistics-objects', {
            method: 'POST',
            headers: { 'Content-Type': 'application/ld+json', 'Content-Encoding': 'x-unknown' },
            body,
          }),
          415,
          /Content-Encoding/,
        );
        await expectApiError(
          await send(object, {
            method: 'PATCH',
            headers: { 'Content-Type': 'application/ld+json', 'Content-Encoding': 'deflate' },
            body,
          }),
          400,
          /Content-Encoding/,
        );
        const query = (type: string, encoding: string) => ({
          method: 'POST',
          headers: { 'Content-Type': type, 'Content-Encoding': encoding },
          body: 'ASK {}',
        });
        await expectApiError(await send('/sparql', query('application/sparql-query', 'gzip')), 400, /Content-Encoding/);
        await expectApiError(
          await send('/sparql', query('application/x-www-form-urlencoded', 'x-unknown')),
          415,
          /Content-Encoding/,
        );
      });
      const res = await send('/logistics-objects', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json', 'Content-Encoding': 'gzip' },
        body: new Uint8Array(gzipSync(body)),
      });
      expect(res.status).to.equal(201);
    });

    it('a write without any body (neither Content-Length nor Transfer-Encoding) is a 4xx, never a 500, on every route that reads one', async () => {
      const { hostname, port } = new URL(server.url);
      const token = await server.token();
      const raw = (method: string, path: string) =>
        new Promise<string>((resolve, reject) => {
          const socket = connect(Number(port), hostname);
          let received = '';
          socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
          socket.on('end', () => resolve(received));
          socket.on('error', reject);
          socket.write(
            `${method} ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/ld+json\r\nConnection: close\r\n\r\n`,
          );
        });
      const objectPath = new URL(object).pathname;
      await expectNothingStored(async () => {
        for (const [method, path] of writeRoutes(objectPath))
          expect(await raw(method, path), `${method} ${path}`).to.match(/^HTTP\/1\.1 4\d\d /);
      });
      expect(await raw('POST', '/logistics-objects'))
        .to.match(/^HTTP\/1\.1 400 /)
        .and.include('the request body is empty');
    });

    it('the token endpoint answers a form whose Content-Encoding does not match with 400 or 415, never 500', async () => {
      const form = 'grant_type=client_credentials&client_id=x&client_secret=y';
      const token = (encoding: string) =>
        send('/idp/token', {
          method: 'POST',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': encoding },
          body: form,
        });
      await expectApiError(await token('gzip'), 400, /Content-Encoding/);
      await expectApiError(await token('deflate'), 400, /Content-Encoding/);
      await expectApiError(await token('x-unknown'), 415, /Content-Encoding/);
      const latin1 = await send('/idp/token', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=latin1' },
        body: form,
      });
      await expectApiError(latin1, 415, /charset/);
    });

    it('a charset other than UTF-8 is 415 for JSON-LD and Turtle; UTF-8 in any spelling is read', async () => {
      const turtle = `<${server.url}/logistics-objects/cs> a <${CARGO}Piece> .`;
      await expectNothingStored(async () => {
        for (const [type, text] of [
          ['application/ld+json; charset=iso-8859-1', body],
          ['application/json;charset=utf-16', body],
          ['text/turtle; charset=windows-1252', turtle],
          ['application/ld+json; charset="latin1"', body],
        ]) {
          await expectApiError(
            await send('/logistics-objects', { method: 'POST', headers: { 'Content-Type': type }, body: text }),
            415,
            /charset/,
          );
        }
      });
      for (const type of [
        'application/ld+json; charset=UTF-8',
        'application/ld+json; charset="utf-8"',
        'application/ld+json;charset=utf8',
      ]) {
        expect(
          (await send('/logistics-objects', { method: 'POST', headers: { 'Content-Type': type }, body })).status,
          type,
        ).to.equal(201);
      }
    });

    it('bytes that are not UTF-8 are 400, not replaced', async () => {
      const bytes = Buffer.concat([
        Buffer.from(body.slice(0, -1)),
        Buffer.from(', "cargo:shippingMarks": "caf'),
        Buffer.from([0xe9]),
        Buffer.from('"}'),
      ]);
      await expectNothingStored(async () => {
        await expectApiError(
          await send('/logistics-objects', {
            method: 'POST',
            headers: { 'Content-Type': 'application/ld+json' },
            body: new Uint8Array(bytes),
          }),
          400,
          /UTF-8/,
        );
      });
    });

    it('an escaped lone UTF-16 surrogate is 400 in JSON-LD (either reader) and Turtle, not stored as U+FFFD; a pair is read', async () => {
      const post = (type: string, text: string) =>
        send('/logistics-objects', { method: 'POST', headers: { 'Content-Type': type }, body: text });
      // Written by hand: the escapes must reach the server as they are. An @list sends the document to jsonld.js.
      const jsonLd = (value: string, viaJsonLdJs = false) =>
        `{"@context": {"cargo": "${CARGO}"}, "@type": "cargo:Piece", "cargo:goodsDescription": "${value}"${viaJsonLdJs ? ', "cargo:shippingMarks": {"@list": []}' : ''}}`;
      await expectNothingStored(async () => {
        for (const value of ['caf\\ud800', '\\udc00', '\\udc00\\ud83d', 'x\\ud83d']) {
          for (const viaJsonLdJs of [false, true])
            await expectApiError(await post('application/ld+json', jsonLd(value, viaJsonLdJs)), 400, /surrogate/);
        }
        await expectApiError(
          await post(
            'application/ld+json',
            `{"@id": "${server.url}/logistics-objects/a\\ud800", "@type": "${CARGO}Piece"}`,
          ),
          400,
          /surrogate/,
        );
        await expectApiError(
          await post('text/turtle', `[] a <${CARGO}Piece> ; <${CARGO}goodsDescription> "caf\\uD800" .`),
          400,
          /Turtle/,
        );
      });
      const res = await post('application/ld+json', jsonLd('smile \\ud83d\\ude00'));
      expect(res.status, await res.clone().text()).to.equal(201);
      const read = (await (await send(res.headers.get('location')!)).json()) as Record<string, unknown>;
      expect(read['cargo:goodsDescription']).to.equal('smile \u{1F600}');
    });
  });

  describe('numbers are stored as JSON-LD reads them', () => {
    const ex = 'http://example.org/';
    const literalOf = async (value: number, viaJsonLdJs: boolean) => {
      // An @list is outside the fast reader's subset: the whole document then goes to jsonld.js.
      const document = { '@context': { ex }, 'ex:n': value, ...(viaJsonLdJs ? { 'ex:l': { '@list': [] } } : {}) };
      const quads = await parseBody(Buffer.from(JSON.stringify(document)), 'jsonld', {
        base: `${ex}base/`,
        limits: DEFAULTS.limits,
      });
      const o = quads.find((q) => q.predicate.value === `${ex}n`)!.object;
      return { lexical: o.value, datatype: o.termType === 'Literal' ? o.datatype.value : '' };
    };
    const rawJsonLdJs = async (value: number) => {
      const [q] = (await jsonld.toRDF({ [`${ex}n`]: value } as jsonld.JsonLdDocument, {})) as unknown as {
        object: { value: string; datatype: { value: string } };
      }[];
      return { lexical: q.object.value, datatype: q.object.datatype.value };
    };
    const numbers = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.double({ noNaN: true, min: -1e-300, max: 1e-300 }), // subnormals and tiny exponents
      fc.integer().map((n) => n * 10 ** 15),
      fc.constantFrom(
        1e-7,
        4.9e-324,
        5e-324,
        2.2250738585072014e-308,
        0.30000000000000004,
        1e21,
        1e20,
        -0,
        2 ** 53 + 2,
        9.95,
        1.7976931348623157e308,
      ),
    );

    it("property: both readers give JSON-LD's literal, which reads back as the same number; jsonld.js's differs only where it loses the value", async () => {
      await fc.assert(
        fc.asyncProperty(numbers, async (value) => {
          const wanted = numberLiteral(value);
          expect(await literalOf(value, false), 'fast reader').to.deep.equal(wanted);
          expect(await literalOf(value, true), 'jsonld.js path').to.deep.equal(wanted);
          expect(wanted.datatype).to.equal(Number.isInteger(value) && Math.abs(value) < 1e21 ? INTEGER : DOUBLE);
          expect(Number(wanted.lexical)).to.equal(value === 0 ? 0 : value); // -0 is written as 0
          if (wanted.datatype === DOUBLE) expect(wanted.lexical).to.match(/^-?\d\.\d+E-?\d+$/);
          const given = await rawJsonLdJs(value);
          expect(given).to.deep.equal(jsonLdJsNumberLiteral(value));
          // jsonld.js keeps the value (same datatype, same number) except where it misreads a
          // fraction written with an exponent as an integer, or rounds to 16 significant digits.
          const keepsValue = Number(given.lexical) === Number(wanted.lexical) && given.datatype === wanted.datatype;
          const writesDouble = String(value).includes('.') || Math.abs(value) >= 1e21;
          const misread = !Number.isInteger(value) && !writesDouble;
          const rounded = writesDouble && Number(value.toExponential(15)) !== value;
          expect(keepsValue, `jsonld.js writes ${given.lexical}^^${given.datatype}`).to.equal(!misread && !rounded);
        }),
        { numRuns: 1000 },
      );
    });

    it('1e-7 and 4.9e-324 are stored as the doubles they are, not as 0', async () => {
      // Two values on one untyped node: a typed cargo:Value holds at most one numericalValue (data model).
      const location = await createObject(server, {
        ...piece(),
        'cargo:grossWeight': { 'cargo:numericalValue': [1e-7, 4.9e-324] },
      });
      const nt = await (await send(location, { headers: { Accept: 'application/n-triples' } })).text();
      const values = [...nt.matchAll(/numericalValue> "([^"]+)"\^\^<([^>]+)>/g)].map(([, lexical, datatype]) => [
        Number(lexical),
        datatype,
      ]);
      expect(values).to.have.deep.members([
        [1e-7, DOUBLE],
        [4.9e-324, DOUBLE],
      ]);
    });

    it('"INF" and "-INF" typed xsd:double are kept from JSON-LD (both readers) as from Turtle', async () => {
      const inf = [
        { '@value': 'INF', '@type': 'xsd:double' },
        { '@value': '-INF', '@type': 'xsd:double' },
      ];
      const bodies: [string, string][] = [
        ['application/ld+json', JSON.stringify({ ...piece(), 'cargo:grossWeight': { 'cargo:numericalValue': inf } })],
        [
          'application/ld+json',
          JSON.stringify({
            ...piece(),
            'cargo:grossWeight': { 'cargo:numericalValue': inf },
            'https://example.org/ns#marks': { '@list': ['m'] },
          }),
        ],
        [
          'text/turtle',
          `@prefix cargo: <${CARGO}> . @prefix xsd: <${XSD}> . [] a cargo:Piece ; cargo:grossWeight [ cargo:numericalValue "INF"^^xsd:double, "-INF"^^xsd:double ] .`,
        ],
      ];
      for (const [type, text] of bodies) {
        const res = await send('/logistics-objects', { method: 'POST', headers: { 'Content-Type': type }, body: text });
        expect(res.status, await res.clone().text()).to.equal(201);
        const nt = await (
          await send(res.headers.get('location')!, { headers: { Accept: 'application/n-triples' } })
        ).text();
        const values = [...nt.matchAll(/numericalValue> "([^"]+)"\^\^<([^>]+)>/g)].map(([, lexical]) => lexical).sort();
        expect(values, type).to.deep.equal(['-INF', 'INF']);
      }
    });
  });

  describe('ill-typed literals are refused, naming the property', () => {
    const illTyped: [string, string, string][] = [
      ['abc', 'integer', 'cargo:goodsDescription'],
      ['maybe', 'boolean', 'cargo:coload'],
      ['2024-02-30T00:00:00Z', 'dateTime', 'cargo:shippingMarks'],
      ['-5', 'positiveInteger', 'cargo:slac'],
    ];

    for (const [lexical, type, property] of illTyped) {
      it(`"${lexical}"^^xsd:${type}: 400 on create (JSON-LD and Turtle), in a Change and in an event`, async () => {
        const iri = `${CARGO}${property.slice('cargo:'.length)}`;
        await expectNothingStored(async () => {
          let res = await postJsonLd(server, '/logistics-objects', {
            ...piece(),
            [property]: { '@value': lexical, '@type': `xsd:${type}` },
          });
          await expectApiError(res.clone(), 400, /is not a valid/);
          expect(await errorProperty(res)).to.equal(iri);

          res = await send('/logistics-objects', {
            method: 'POST',
            headers: { 'Content-Type': 'text/turtle' },
            body: `[] a <${CARGO}Piece> ; <${iri}> "${lexical}"^^<${XSD}${type}> .`,
          });
          await expectApiError(res.clone(), 400, /is not a valid/);
          expect(await errorProperty(res)).to.equal(iri);

          res = await patch(
            server,
            object,
            change(object, 1, [add(object, iri, { datatype: `${XSD}${type}`, value: lexical })]),
          );
          await expectApiError(res.clone(), 400, /is not a valid/);
          expect(await errorProperty(res)).to.equal(iri);

          res = await postEvent(
            server,
            object,
            eventJson({ [property]: { '@value': lexical, '@type': `${XSD}${type}` } }),
          );
          await expectApiError(res.clone(), 400, /is not a valid/);
          expect(await errorProperty(res)).to.equal(iri);
        });
      });
    }

    it('the lexical forms of the XSD datatypes, with their value constraints', () => {
      const valid: [string, string][] = [
        ['0', 'integer'],
        ['-007', 'integer'],
        ['+1', 'positiveInteger'],
        ['0', 'nonNegativeInteger'],
        ['-1', 'negativeInteger'],
        ['127', 'byte'],
        ['-128', 'byte'],
        ['255', 'unsignedByte'],
        ['2147483647', 'int'],
        ['9223372036854775807', 'long'],
        ['18446744073709551615', 'unsignedLong'],
        ['true', 'boolean'],
        ['0', 'boolean'],
        ['1.5', 'decimal'],
        ['.5', 'decimal'],
        ['-1.', 'decimal'],
        ['INF', 'double'],
        ['-INF', 'double'],
        ['NaN', 'double'],
        ['1.5e-7', 'double'],
        ['1E21', 'float'],
        ['2024-02-29T00:00:00Z', 'dateTime'],
        ['2000-02-29T23:59:59.999+14:00', 'dateTime'],
        ['2024-12-31T24:00:00', 'dateTime'],
        ['-0044-03-15T12:00:00Z', 'dateTime'],
        ['2024-04-30', 'date'],
        ['12:00:00Z', 'time'],
        ['P1Y2M3DT4H5M6.7S', 'duration'],
        ['-PT1S', 'duration'],
        ['--02-29', 'gMonthDay'],
        ['2024', 'gYear'],
        ['0FB8', 'hexBinary'],
        ['any text', 'string'],
        ['2024-02-29T00:00:00Z', 'dateTimeStamp'],
      ];
      const invalid: [string, string][] = [
        ['abc', 'integer'],
        ['1.0', 'integer'],
        [' 1', 'integer'],
        ['', 'integer'],
        ['-5', 'positiveInteger'],
        ['0', 'positiveInteger'],
        ['1', 'negativeInteger'],
        ['128', 'byte'],
        ['256', 'unsignedByte'],
        ['-1', 'unsignedInt'],
        ['2147483648', 'int'],
        ['9223372036854775808', 'long'],
        ['maybe', 'boolean'],
        ['TRUE', 'boolean'],
        ['1e5', 'decimal'],
        ['1.25E1', 'decimal'],
        ['Infinity', 'double'],
        ['1.5f', 'float'],
        ['2024-02-30T00:00:00Z', 'dateTime'],
        ['2023-02-29T00:00:00Z', 'dateTime'],
        ['1900-02-29T00:00:00Z', 'dateTime'],
        ['2024-04-31T00:00:00Z', 'dateTime'],
        ['2024-13-01T00:00:00Z', 'dateTime'],
        ['2024-01-01T25:00:00Z', 'dateTime'],
        ['2024-01-01T24:00:01Z', 'dateTime'],
        ['2024-01-01T00:00:00+15:00', 'dateTime'],
        ['2024-01-01', 'dateTime'],
        ['2024-02-30', 'date'],
        ['24:30:00', 'time'],
        ['P', 'duration'],
        ['P1S', 'duration'],
        ['PT', 'duration'],
        ['--02-30', 'gMonthDay'],
        ['0FB', 'hexBinary'],
        ['2024-02-29T00:00:00', 'dateTimeStamp'],
      ];
      for (const [lexical, type] of valid)
        expect(isWellTyped(lexical, `${XSD}${type}`), `"${lexical}"^^xsd:${type}`).to.equal(true);
      for (const [lexical, type] of invalid)
        expect(isWellTyped(lexical, `${XSD}${type}`), `"${lexical}"^^xsd:${type}`).to.equal(false);
      expect(isWellTyped('anything', 'https://example.org/own-datatype')).to.equal(true);
    });
  });

  describe('server-generated ids stay server-generated', () => {
    it('a create whose nested node carries a client-chosen internal: id is 400, even one that exists under another object', async () => {
      const existing = (await (await send(object, { headers: { Accept: 'application/ld+json' } })).json()) as Record<
        string,
        { '@id': string }
      >;
      const taken = existing['cargo:grossWeight']['@id'];
      expect(taken).to.match(/^internal:/);
      await expectNothingStored(async () => {
        for (const id of [taken, 'internal:chosen-by-client']) {
          const res = await postJsonLd(server, '/logistics-objects', {
            ...piece(),
            'cargo:grossWeight': { '@id': id, '@type': 'cargo:Value', 'cargo:unit': 'LBR' },
          });
          await expectApiError(res, 400, /internal: ids are given by the server/);
          await expectApiError(
            await postJsonLd(server, '/logistics-objects', { ...piece(), 'cargo:grossWeight': { '@id': id } }),
            400,
            /internal:/,
          );
        }
      });
    });
  });

  describe('strict where the spec is strict', () => {
    it('a Change without @type api:Change, or typed api:ChangeRequest, is 400', async () => {
      const body = change(object, 1, [add(object, 'goodsDescription', str('x'))]);
      await expectNothingStored(async () => {
        const { '@type': _, ...untyped } = body;
        await expectApiError(await patch(server, object, untyped), 400, /api:Change/);
        await expectApiError(await patch(server, object, { ...body, '@type': 'api:ChangeRequest' }), 400, /api:Change/);
      });
    });

    it('a hasDatatype that is neither an XSD datatype nor a class of the ontologies is 400', async () => {
      await expectNothingStored(async () => {
        for (const datatype of [`${XSD}integr`, 'https://example.org/NotAClass', `${CARGO}NoSuchClass`]) {
          const res = await patch(
            server,
            object,
            change(object, 1, [add(object, 'goodsDescription', { datatype, value: 'https://example.org/x' })]),
          );
          await expectApiError(res.clone(), 400, /hasDatatype/);
          expect(await errorProperty(res)).to.equal(`${API}hasDatatype`);
        }
      });
      // Classes of the ontologies are accepted: an embedded Value, a code list value.
      await submit(
        server,
        object,
        change(object, 1, [add(object, 'volumetricWeight', cls('Value', '_:v')), add('_:v', 'unit', str('KGM'))]),
      );
    });

    it('PATCH /action-requests/{id}?status=REQUEST_REVOKED is refused: revocation is DELETE', async () => {
      const managed = await startTestServer({ decisionPolicy: 'manual' });
      try {
        const target = await createObject(managed);
        const request = await submit(
          managed,
          target,
          change(target, 1, [add(target, 'goodsDescription', str('x'))]),
          'other',
        );
        const res = await managed.request(`${request}?status=REQUEST_REVOKED`, { method: 'PATCH' });
        await expectQueryError(res, /DELETE/);
        const read = (await (await managed.request(request)).json()) as Record<string, { '@id': string }>;
        expect(read['api:hasRequestStatus']['@id']).to.equal(`${API}REQUEST_PENDING`);
      } finally {
        await managed.close();
      }
    });

    it('impossible dates in at= and in event and audit-trail filters are 400', async () => {
      for (const path of [
        `${object}?at=20240230T000000Z`,
        `${object}?at=2023-02-29T00:00:00Z`,
        `${object}/logistics-events?created-after=2024-04-31T00:00:00Z`,
        `${object}/logistics-events?occurred_before=2024-02-30T10:00:00Z`,
        `${object}/audit-trail?updated-from=2024-02-30T00:00:00Z`,
      ]) {
        await expectQueryError(await send(path), /RFC 3339|YYYYMMDD/);
      }
      expect((await send(`${object}?at=20240229T000000Z`)).status).to.be.oneOf([200, 404]);
    });
  });
});
