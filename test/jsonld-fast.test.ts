import { expect } from 'chai';
import fc from 'fast-check';
import { readdirSync } from 'node:fs';
import { BENCH_PIECE } from '../scripts/bench/fixtures.js';
import { DEFAULTS } from '../src/config.js';
import { HttpError } from '../src/errors.js';
import { fastJsonLdToQuads } from '../src/rdf/jsonld-fast.js';
import { jsonLdToQuads } from '../src/rdf/jsonld-reference.js';
import type { Quad } from '../src/rdf/terms.js';
import { add, bool, change, cls, dbl, del, piece, str } from './support/changes.js';
import { EXAMPLES_DIR, readExample } from './support/examples.js';
import { eventJson } from './support/events.js';

/** The base parse.ts gives jsonld.js; the fast path never resolves against it (relative IRIs fall back). */
const BASE = 'https://server.example/logistics-objects/';
const NO_TRIPLE_LIMIT = { ...DEFAULTS.limits, triples: Number.MAX_SAFE_INTEGER };

/** One quad as comparable text: term types, values, datatype and language, blank node labels included. */
const quadLine = ({ subject: s, predicate: p, object: o }: Quad) =>
  [
    s.termType,
    s.value,
    p.value,
    o.termType,
    o.value,
    o.termType === 'Literal' ? `${o.datatype.value} ${o.language}` : '',
  ].join(' | ');

/** What parse.ts makes of a document with jsonld.js (safe mode): its quads, or the error. */
async function reference(
  document: unknown,
  triples = NO_TRIPLE_LIMIT.triples,
): Promise<{ lines: string[] } | { error: HttpError }> {
  try {
    return {
      lines: (await jsonLdToQuads(document, { base: BASE, limits: { ...NO_TRIPLE_LIMIT, triples } })).map(quadLine),
    };
  } catch (error) {
    expect(error).to.be.instanceOf(HttpError);
    return { error: error as HttpError };
  }
}

/**
 * The fast path's answer: undefined, or exactly jsonld.js's quads (same order, same blank node
 * labels, so order-dependent code downstream cannot tell the paths apart), and the statement
 * count jsonld.js's path holds against the triple limit.
 */
async function expectAgreement(
  document: unknown,
  what: string,
): Promise<'accepted' | 'refused by jsonld.js' | 'left to jsonld.js'> {
  const expected = await reference(document);
  const fast = fastJsonLdToQuads(document);
  if ('error' in expected) {
    expect(
      fast,
      `${what}: jsonld.js refuses it (${expected.error.message}), the fast path must not accept it`,
    ).to.equal(undefined);
    return 'refused by jsonld.js';
  }
  if (!fast) return 'left to jsonld.js';
  expect(fast.quads.map(quadLine), what).to.deep.equal(expected.lines);
  expect(
    await reference(document, fast.statements),
    `${what}: within a limit of ${fast.statements} statements`,
  ).to.have.property('lines');
  const below = await reference(document, fast.statements - 1);
  expect('error' in below && below.error.code, `${what}: over a limit of ${fast.statements - 1} statements`).to.equal(
    'too_many_triples',
  );
  return 'accepted';
}

const OBJECT = 'https://1r.example.com/logistics-objects/1a8ded38-1804-467c-a369-81a411416b7c';
const EX = { ex: 'http://example.org/' };

describe('Fast JSON-LD to RDF path (jsonld.js is the reference)', () => {
  describe('known bodies', () => {
    const examples = readdirSync(EXAMPLES_DIR)
      .filter((n) => n.endsWith('.json'))
      .sort();

    it('every official example: the same quads as jsonld.js, or a fallback', async () => {
      expect(examples).to.have.length(57);
      let accepted = 0;
      for (const name of examples)
        if ((await expectAgreement(JSON.parse(readExample(name)), name)) === 'accepted') accepted++;
      // Those left: relative @type (resolved against the base), and @ids jsonld.js refuses.
      expect(accepted).to.be.at.least(50);
    });

    const common: [string, unknown][] = [
      ...examples
        .filter((n) =>
          /^(Change_example\d|Piece|LogisticsEvent|LogisticsEvent_with_id|Shipment_with_Piece|Company|Sensor\.(compacted|expanded))\.json$/.test(
            n,
          ),
        )
        .map((n): [string, unknown] => [n, JSON.parse(readExample(n))]),
      ['the bench Piece', BENCH_PIECE],
      ['the test Piece', piece(3)],
      [
        'a test Change',
        change(OBJECT, 2, [
          del(OBJECT, 'goodsDescription', str('old')),
          add(OBJECT, 'coload', bool(true)),
          add(OBJECT, 'grossWeight', cls('Value', '_:w')),
          add(OBJECT, 'x', dbl('1.5')),
        ]),
      ],
      ['a test event', eventJson({ code: 'ARR', creationDate: '2024-05-01T09:00:00Z', 'cargo:eventName': 'arrived' })],
      // Merges, repeats and orders where a hand-written path could part from jsonld.js.
      [
        'a node described in two places',
        {
          '@context': EX,
          '@id': 'ex:s',
          'ex:z': { '@id': 'ex:o', 'ex:q': 1, 'ex:a': { 'ex:m': 'x' } },
          'ex:y': { '@id': 'ex:o', 'ex:p': 2, 'ex:q': [1, 3] },
          'ex:x': { '@id': 'ex:s', 'ex:b': true },
        },
      ],
      [
        'a blank node label used twice',
        {
          '@context': EX,
          'ex:a': { '@id': '_:n', 'ex:v': 1 },
          'ex:b': [{ '@id': '_:n' }, { 'ex:w': 2 }, { '@id': '_:m', 'ex:v': { '@id': '_:n' } }],
        },
      ],
      [
        'two keys for one property',
        {
          '@context': { ...EX, p: 'ex:p', q: { '@id': 'ex:p', '@type': '@id' } },
          q: 'ex:o',
          p: 'text',
          'ex:p': ['text', 2],
          'http://example.org/p': { '@value': 'text' },
        },
      ],
      [
        'repeats jsonld.js keeps and drops',
        {
          '@context': EX,
          'ex:p': [
            1,
            1,
            { '@value': 1 },
            { '@value': '1', '@type': 'http://www.w3.org/2001/XMLSchema#integer' },
            'a',
            { '@value': 'a', '@language': 'EN' },
            { '@value': 'a', '@language': 'en' },
          ],
        },
      ],
      [
        'numbers jsonld.js writes its own way',
        {
          '@context': EX,
          'ex:n': [1.1, -0, 2 ** 53 + 2, 1e21, 1e-7, 9.95, -1.5e300],
          'ex:d': { '@value': '20.0', '@type': 'http://www.w3.org/2001/XMLSchema#double' },
        },
      ],
      [
        'a @graph of events',
        {
          '@context': { cargo: 'https://onerecord.iata.org/ns/cargo#' },
          '@graph': [eventJson(), eventJson({ code: 'DEP' })].map(({ '@context': _, ...e }) => e),
        },
      ],
    ];
    for (const [what, document] of common) {
      it(`${what}: taken by the fast path, with jsonld.js's quads`, async () => {
        expect(fastJsonLdToQuads(document), 'accepted').to.not.equal(undefined);
        expect(await expectAgreement(document, what)).to.equal('accepted');
      });
    }

    it('leaves jsonld.js what it does not handle', () => {
      const context = EX;
      const outside: [string, unknown][] = [
        ['a relative @id', { '@context': context, '@id': 'local', 'ex:p': 1 }],
        ['a relative @type', { '@context': context, '@type': 'Thing' }],
        ['@base', { '@context': { ...context, '@base': 'http://example.org/' }, 'ex:p': 1 }],
        ['a list', { '@context': context, 'ex:p': { '@list': [1, 2] } }],
        ['a keyword alias', { '@context': { ...context, id: '@id' }, id: 'ex:s', 'ex:p': 1 }],
        [
          'a container',
          { '@context': { ...context, p: { '@id': 'ex:p', '@container': '@language' } }, p: { en: 'x' } },
        ],
        ['a scoped context', { '@context': { ...context, p: { '@id': 'ex:p', '@context': {} } }, p: { 'ex:q': 1 } }],
        ['@reverse', { '@context': context, '@reverse': { 'ex:p': { '@id': 'ex:o' } } }],
        ['a term without IRI', { '@context': context, colour: 'red', 'ex:p': 1 }],
        ['a null @value', { '@context': context, 'ex:p': { '@value': null } }],
        ['an invalid language', { '@context': context, 'ex:p': { '@value': 'x', '@language': 'not a tag' } }],
        ['a lone @id at the top', { '@context': context, '@id': 'ex:s' }],
        ['a named graph', { '@context': context, '@id': 'ex:g', '@graph': [{ 'ex:p': 1 }] }],
      ];
      for (const [what, document] of outside) expect(fastJsonLdToQuads(document), what).to.equal(undefined);
    });

    it('a document jsonld.js refuses for a warning of one context in an array does not get a later document with the other context refused', async () => {
      // Found by the property test below: jsonld.js's shared context cache filed the warning under the
      // first context too, when the refused document was the first to use it (a vocabulary no other test uses).
      const vocab = { '@vocab': 'urn:test:context-cache:' };
      const refused = { '@context': [vocab, { flag: '@foo' }], flag: 'x' };
      const valid = { '@context': vocab, '@id': '_:b', '@type': ['Thing'] };
      expect(await reference(refused)).to.have.property('error');
      expect(await reference(valid)).to.have.property('lines');
    });
  });

  describe('random documents in and around the subset', () => {
    /** Mostly what the subset holds, sometimes what it does not (or what jsonld.js refuses). */
    const mostly = <T, U>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<U>, badWeight = 1) =>
      fc.oneof(
        { weight: 40, arbitrary: good as fc.Arbitrary<T | U> },
        { weight: badWeight, arbitrary: bad as fc.Arbitrary<T | U> },
      );
    const PREFIX_IRIS = [
      'http://example.org/ns#',
      'https://onerecord.iata.org/ns/cargo#',
      'http://www.w3.org/2001/XMLSchema#',
      'http://ex.org/path/',
      'urn:x:',
    ];
    const PREFIXES = ['ex', 'cargo', 'xsd', 'p1', 'u'];
    const TERMS = ['name', 'weight', 'link', 'when', 'ex:typed', 'kind', 'Thing', 'flag'];
    const GOOD_IRIS = ['http://example.org/a', 'ex:b', 'ex:p', 'cargo:ACTUAL', 'urn:x:1', 'p1:c', 'xsd:date'];
    const BAD_IRIS = [
      'undefinedprefix:x',
      'http:relative-looking',
      'ex:a b',
      ' http://space.example/',
      'relative',
      '',
      '#frag',
      '@id',
      '@foo',
      'Thing',
      'kind',
      'http://example.org/noDelim',
    ];
    const BLANKS = ['_:a', '_:b', '_:', '_:a b'];
    const GOOD_DATATYPES = [
      'xsd:double',
      'xsd:integer',
      'xsd:string',
      'xsd:boolean',
      'ex:custom',
      'http://example.org/dt',
      'http://www.w3.org/1999/02/22-rdf-syntax-ns#langString',
    ];
    const BAD_DATATYPES = ['_:dt', 'relative', '@id', '@json', 'Thing', '@none'];
    const LANGUAGES = ['en', 'EN-us', 'de-CH-1901'];
    const BAD_LANGUAGES = ['x y', '', 'en_US', 5];
    const GOOD_KEYS = [
      ...TERMS,
      'ex:p',
      'ex:q',
      'http://example.org/ns#p',
      'cargo:goodsDescription',
      'http://example.org/full',
      'xsd:',
    ];
    const BAD_KEYS = ['undefinedprefix:x', 'relative', '_:bp', 'ex:a b', '@unknown', '@index', '@language', ''];

    const iri = mostly(fc.constantFrom(...GOOD_IRIS), fc.constantFrom(...BAD_IRIS), 3);
    const iriOrBlank = fc.oneof({ weight: 4, arbitrary: iri }, { weight: 1, arbitrary: fc.constantFrom(...BLANKS) });
    const datatype = mostly(fc.constantFrom(...GOOD_DATATYPES), fc.constantFrom(...BAD_DATATYPES));
    const language = mostly(fc.constantFrom(...LANGUAGES), fc.constantFrom(...BAD_LANGUAGES, null));

    const coercion = fc.oneof(fc.constantFrom('@id', '@vocab'), datatype);
    /** Terms with a colon take their IRI from their prefix; the others name one. */
    const termDefinition = (term: string) =>
      mostly(
        term.includes(':')
          ? (fc.record({ '@type': coercion }) as fc.Arbitrary<unknown>)
          : fc.oneof(
              fc.constantFrom(...GOOD_IRIS, ...PREFIX_IRIS),
              fc.record(
                { '@id': fc.constantFrom(...GOOD_IRIS, ...PREFIX_IRIS), '@type': coercion },
                { requiredKeys: ['@id'] },
              ),
              fc.record({ '@id': fc.constantFrom(...GOOD_IRIS), '@language': fc.oneof(language, fc.constant(null)) }),
            ),
        fc.oneof(
          fc.constantFrom(...BAD_IRIS, ...BLANKS),
          fc.constantFrom(
            null,
            5,
            { '@type': '@id' },
            { '@id': 'ex:l', '@container': '@list' },
            { '@reverse': 'ex:r' },
            { '@id': 'ex:x', '@protected': true },
            { '@id': 'ex:x', '@prefix': true },
            { '@id': null },
            { '@id': 'ex:x', '@context': {} },
          ),
        ),
        4,
      );
    const terms = fc
      .subarray(TERMS, { maxLength: 4 })
      .chain((names) =>
        fc.tuple(...names.map((name) => termDefinition(name).map((definition) => [name, definition] as const))),
      )
      .map((entries) => Object.fromEntries(entries));

    /** Present three times in four. */
    const optional = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { freq: 4, nil: undefined });
    /** Present once in thirty. */
    const rarely = <T>(arbitrary: fc.Arbitrary<T>) =>
      fc.oneof({ weight: 29, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
    const context = fc
      .record({
        prefixes: fc.dictionary(
          fc.constantFrom(...PREFIXES),
          mostly(
            fc.constantFrom(...PREFIX_IRIS),
            fc.constantFrom('ex:sub/', 'relative/', '@type', 'cargo', 'http://example.org/noDelim'),
          ),
        ),
        terms,
        vocab: optional(
          mostly(fc.constantFrom('http://vocab.example/#', 'ex:'), fc.constantFrom('relative#', '', null, '_:')),
        ),
        language: optional(fc.oneof(language, fc.constant(null))),
        version: rarely(mostly(fc.constant(1.1), fc.constant(1.0))),
        base: rarely(fc.constantFrom('http://base.example/', null)),
      })
      .map(({ prefixes, terms, vocab, language: lang, version, base }) => ({
        ...prefixes,
        ...terms,
        ...(vocab === undefined ? {} : { '@vocab': vocab }),
        ...(lang === undefined ? {} : { '@language': lang }),
        ...(version === undefined ? {} : { '@version': version }),
        ...(base === undefined ? {} : { '@base': base }),
      }));

    const number = fc.oneof(
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.constantFrom(-0, 2 ** 53 + 2, 1e21, 1e-7, 5, -1.5, 123456789012345680000),
    );
    // Small pools make duplicates, which jsonld.js removes by its own rules (1 and "1"^^xsd:integer stay two).
    const scalar = fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.constantFrom('a', '1', 'true', '1.5'),
      iriOrBlank,
      number,
      fc.integer({ min: 0, max: 2 }),
      fc.boolean(),
    );
    const valueObject = fc
      .record({
        value: mostly(scalar, fc.constantFrom(null, [1], { a: 1 })),
        type: fc.option(datatype, { freq: 2, nil: undefined }),
        language: fc.option(language, { freq: 3, nil: undefined }),
      })
      .map(({ value, type, language: lang }) => ({
        '@value': type === undefined && lang !== undefined && typeof value !== 'string' ? String(value) : value,
        ...(type === undefined ? {} : { '@type': type }),
        ...(lang === undefined || (type !== undefined && typeof lang === 'string' && lang.length % 2 === 0)
          ? {}
          : { '@language': lang }),
      }));
    const types = fc.oneof(
      mostly(
        fc.constantFrom('ex:Type', 'http://example.org/T', 'cargo:Piece', 'Thing', 'kind'),
        fc.constantFrom('_:t', 'relative', '@id', 7),
      ),
      fc.array(fc.constantFrom('ex:Type', 'ex:Other', 'ex:Type', 'Thing'), { maxLength: 3 }),
    );
    const key = mostly(fc.constantFrom(...GOOD_KEYS), fc.constantFrom(...BAD_KEYS));

    const { node } = fc.letrec<{ node: Record<string, unknown>; value: unknown }>((tie) => ({
      node: fc
        .record({
          context: rarely(fc.oneof(context, fc.array(context, { maxLength: 2 }))),
          id: optional(mostly(iriOrBlank, fc.constantFrom(7, null))),
          type: optional(types),
          properties: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
          extra: rarely(
            fc.constantFrom(
              { '@list': [1] },
              { '@reverse': {} },
              { '@graph': [] },
              { '@included': [] },
              { '@value': 'x' },
              { '@nest': {} },
            ),
          ),
        })
        .map(({ context: c, id, type, properties, extra }) => ({
          ...(c === undefined ? {} : { '@context': c }),
          ...(id === undefined ? {} : { '@id': id }),
          ...(type === undefined ? {} : { '@type': type }),
          ...properties,
          ...(extra ?? {}),
        })),
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        { weight: 6, arbitrary: scalar },
        { weight: 1, arbitrary: fc.constant(null) },
        { weight: 2, arbitrary: valueObject },
        { weight: 2, arbitrary: iriOrBlank.map((id) => ({ '@id': id })) },
        { weight: 2, arbitrary: tie('node') },
        {
          weight: 2,
          arbitrary: fc.array(fc.oneof(scalar, valueObject, tie('node'), fc.constant(null)), { maxLength: 3 }),
        },
        {
          weight: 1,
          arbitrary: fc.constantFrom({ '@list': [1, 'a'] }, [[1]], { '@set': [1] }, { '@value': 'x', '@index': 'i' }),
        },
      ),
    }));
    const withTopContext = fc.tuple(context, node).map(([c, n]) => ({ '@context': c, ...n }));
    const document = fc.oneof(
      { weight: 6, arbitrary: withTopContext },
      { weight: 1, arbitrary: node },
      { weight: 1, arbitrary: fc.array(withTopContext, { maxLength: 3 }) },
      {
        weight: 1,
        arbitrary: fc.record({
          '@context': context,
          '@graph': fc.array(fc.oneof({ weight: 6, arbitrary: node }, { weight: 1, arbitrary: fc.constant(null) }), {
            maxLength: 3,
          }),
        }),
      },
    );

    it('accepts only what jsonld.js accepts, and then gives exactly its quads (2,000 documents)', async function () {
      this.timeout(60_000);
      const seen: Record<string, number> = { accepted: 0, 'refused by jsonld.js': 0, 'left to jsonld.js': 0 };
      await fc.assert(
        fc.asyncProperty(document, async (doc) => {
          const text = JSON.stringify(doc);
          seen[await expectAgreement(doc, text)]++;
          expect(JSON.stringify(doc), 'the document is left as it was').to.equal(text);
        }),
        { numRuns: 2000 },
      );
      // The generator must exercise all three outcomes, the accepted one often.
      expect(seen.accepted, JSON.stringify(seen)).to.be.above(300);
      expect(seen['refused by jsonld.js'], JSON.stringify(seen)).to.be.above(300);
      expect(seen['left to jsonld.js'], JSON.stringify(seen)).to.be.above(50);
    });
  });
});
