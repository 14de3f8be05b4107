import { expect } from 'chai';
import fc from 'fast-check';
import { Parser } from 'n3';
import { canonicalLiterals } from '../src/store/canonical-literals.js';
import { OxigraphIndex } from '../src/store/oxigraph-index.js';
import { literal, namedNode, termToNt, type RDF } from '../src/rdf/terms.js';

const XSD = 'http://www.w3.org/2001/XMLSchema#';

/** Lexical forms clients may write, several per value. */
const lexical: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(fc.constant('double'), fc.oneof(fc.double({ noNaN: true }).map(String), fc.integer().map((n) => `${n}.0`), fc.integer({ min: -99, max: 99 }).map((n) => `${n}E1`), fc.constantFrom('INF', '-INF', 'NaN', '-0', '+1.50'))),
  fc.tuple(fc.constant('float'), fc.oneof(fc.float({ noNaN: true }).map(String), fc.constantFrom('1.5', '0.1', '12.50'))),
  fc.tuple(fc.constant('decimal'), fc.oneof(fc.integer().map((n) => `${n}.500`), fc.constantFrom('.5', '5.', '+1.0', '-0.50', '0012.50'))),
  fc.tuple(fc.constantFrom('integer', 'int', 'long', 'positiveInteger', 'nonNegativeInteger'), fc.oneof(fc.nat().map((n) => `00${n}`), fc.nat().map((n) => `+${n}`))),
  fc.tuple(fc.constant('boolean'), fc.constantFrom('true', 'false', '1', '0')),
  fc.tuple(fc.constant('dateTime'), fc.constantFrom('2024-01-01T10:00:00.500Z', '2024-01-01T10:00:00.000Z', '2024-01-01T10:00:00+02:00', '2024-01-01T10:00:00')),
  fc.tuple(fc.constant('duration'), fc.constantFrom('PT36H', 'P1D', 'PT90M')),
  fc.tuple(fc.constant('string'), fc.string()),
);

describe('canonical literals: the store compares values as it stores them', () => {
  it('a literal asked for equals the literal the store gives back after storing it', () => {
    fc.assert(
      fc.property(fc.array(lexical, { minLength: 1, maxLength: 8 }), (values) => {
        const index = new OxigraphIndex();
        const literals = values.map(([type, value]) => literal(value, namedNode(`${XSD}${type}`)));
        const graph = 'urn:test:g';
        index.loadTrusted(literals.map((l, i) => `<urn:s> <urn:p${i}> ${termToNt(l)} <${graph}> .\n`).join(''));
        const stored = new Map(new Parser({ format: 'application/n-triples' }).parse(index.graphNTriples(graph)).map((q) => [q.predicate.value, q.object as RDF.Literal]));
        canonicalLiterals(index, literals).forEach((l, i) => expect(termToNt(l), termToNt(literals[i])).to.equal(termToNt(stored.get(`urn:p${i}`)!)));
      }),
      { numRuns: 200 },
    );
  });
});
