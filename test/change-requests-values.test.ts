import { expect } from 'chai';
import fc from 'fast-check';
import { Parser } from 'n3';
import { canonicalLiterals } from '../src/store/embedded/oxigraph/canonical-literals.js';
import { OxigraphIndex } from '../src/store/embedded/oxigraph/oxigraph-index.js';
import { literal, namedNode, termToNt, type RDF } from '../src/rdf/terms.js';

const XSD = 'http://www.w3.org/2001/XMLSchema#';

const pad = (n: number, width = 2) => String(n).padStart(width, '0');
const digits = (max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: max });
/** Time zones as written, including forms the store rewrites (±00:00) and ones out of range. */
const timeZone = fc.oneof(
  fc.constantFrom('', 'Z', '+00:00', '-00:00', '+14:00', '-14:00', '+15:00'),
  fc
    .tuple(fc.constantFrom('+', '-'), fc.integer({ min: 0, max: 15 }), fc.constantFrom(0, 30, 45, 59, 60))
    .map(([s, h, m]) => `${s}${pad(h)}:${pad(m)}`),
);
const date = fc
  .tuple(
    fc.oneof(
      fc.integer({ min: 0, max: 9999 }).map((y) => pad(y, 4)),
      fc.constantFrom('-0001', '12024', '02024'),
    ),
    fc.integer({ min: 0, max: 13 }),
    fc.integer({ min: 0, max: 32 }),
  )
  .map(([y, m, d]) => `${y}-${pad(m)}-${pad(d)}`);
const dateTime = fc
  .tuple(
    date,
    fc.integer({ min: 0, max: 24 }),
    fc.integer({ min: 0, max: 60 }),
    fc.integer({ min: 0, max: 60 }),
    fc.option(digits(12), { nil: undefined }),
    timeZone,
  )
  .map(
    ([d, h, m, s, fraction, tz]) =>
      `${d}T${pad(h)}:${pad(m)}:${pad(s)}${fraction === undefined ? '' : `.${fraction}`}${tz}`,
  );
/** Numerals as written: canonical ones and their near misses (signs, leading and trailing zeros, exponents, long digit strings). */
const numeral = fc.oneof(
  fc.double({ noNaN: true }).map(String),
  fc.bigInt({ min: -(10n ** 22n), max: 10n ** 22n }).map(String),
  fc
    .tuple(fc.constantFrom('', '-', '+'), digits(20), fc.option(digits(20), { nil: undefined }))
    .map(([sign, whole, fraction]) => `${sign}${whole}${fraction === undefined ? '' : `.${fraction}`}`),
  fc
    .tuple(fc.integer({ min: -99_999, max: 99_999 }), fc.integer({ min: 0, max: 6 }))
    .map(([n, places]) => (n / 100).toFixed(places)),
  fc.constantFrom(
    '-0',
    '0',
    '-0.0',
    '0.0',
    '1e-7',
    '1E21',
    '0.000001',
    '123456789012345678',
    '9007199254740993',
    '0.10000000000000001',
    '0.30000000000000004',
  ),
);

/** Lexical forms clients may write, several per value (`@tag` instead of a datatype: a language-tagged string). */
const lexical: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(
    fc.constant('double'),
    fc.oneof(
      fc.double({ noNaN: true }).map(String),
      fc.integer().map((n) => `${n}.0`),
      fc.integer({ min: -99, max: 99 }).map((n) => `${n}E1`),
      fc.constantFrom('INF', '-INF', 'NaN', '-0', '+1.50'),
    ),
  ),
  fc.tuple(
    fc.constant('float'),
    fc.oneof(fc.float({ noNaN: true }).map(String), fc.constantFrom('1.5', '0.1', '12.50')),
  ),
  fc.tuple(
    fc.constant('decimal'),
    fc.oneof(
      fc.integer().map((n) => `${n}.500`),
      fc.constantFrom('.5', '5.', '+1.0', '-0.50', '0012.50'),
    ),
  ),
  fc.tuple(
    fc.constantFrom('integer', 'int', 'long', 'positiveInteger', 'nonNegativeInteger'),
    fc.oneof(
      fc.nat().map((n) => `00${n}`),
      fc.nat().map((n) => `+${n}`),
    ),
  ),
  fc.tuple(fc.constantFrom('double', 'decimal', 'integer', 'float'), numeral),
  fc.tuple(fc.constant('boolean'), fc.constantFrom('true', 'false', '1', '0', 'TRUE')),
  fc.tuple(
    fc.constant('dateTime'),
    fc.oneof(
      dateTime,
      fc.constantFrom(
        '2024-01-01T10:00:00.500Z',
        '2024-01-01T10:00:00.000Z',
        '2024-01-01T10:00:00+02:00',
        '2024-01-01T10:00:00',
        '2024-01-01T24:00:00Z',
      ),
    ),
  ),
  fc.tuple(
    fc.constant('date'),
    fc.tuple(date, timeZone).map(([d, tz]) => d + tz),
  ),
  fc.tuple(fc.constant('duration'), fc.constantFrom('PT36H', 'P1D', 'PT90M')),
  fc.tuple(fc.constant('string'), fc.string()),
  fc.tuple(fc.constantFrom('@en', '@EN', '@en-GB', '@de-de', '@fr-CA'), fc.string()),
);

const asLiteral = ([type, value]: [string, string]): RDF.Literal =>
  type.startsWith('@') ? literal(value, type.slice(1)) : literal(value, namedNode(`${XSD}${type}`));

describe('canonical literals: the store compares values as it stores them', () => {
  it('a literal asked for equals the literal the store gives back after storing it', () => {
    fc.assert(
      fc.property(fc.array(lexical, { minLength: 1, maxLength: 8 }), (values) => {
        const index = new OxigraphIndex();
        const literals = values.map(asLiteral);
        const graph = 'urn:test:g';
        index.loadTrusted(literals.map((l, i) => `<urn:s> <urn:p${i}> ${termToNt(l)} <${graph}> .\n`).join(''));
        const stored = new Map(
          new Parser({ format: 'application/n-triples' })
            .parse(index.graphNTriples(graph))
            .map((q) => [q.predicate.value, q.object as RDF.Literal]),
        );
        canonicalLiterals(index, literals).forEach((l, i) => {
          expect(termToNt(l), termToNt(literals[i])).to.equal(termToNt(stored.get(`urn:p${i}`)!));
        });
      }),
      { numRuns: 500 },
    );
  });

  it('the usual forms of strings, numbers, booleans and dates are taken as they are, without asking the store', () => {
    const usual = (
      [
        ['string', 'Books'],
        ['@en', 'Books'],
        ['boolean', 'false'],
        ['integer', '-42'],
        ['decimal', '20.5'],
        ['double', '40'],
        ['double', '0.25'],
        ['dateTime', '2026-11-23T01:02:03.45Z'],
        ['dateTime', '2026-11-23T01:02:03+01:00'],
        ['date', '2026-11-23'],
      ] as [string, string][]
    ).map(asLiteral);
    const refusing = { select: () => expect.fail('the store was asked') };
    expect(canonicalLiterals(refusing, usual).map(termToNt)).to.deep.equal(usual.map(termToNt));
  });
});
