import { expect } from 'chai';
import fc from 'fast-check';
import { Parser } from 'n3';
import { readStoreNTriples } from '../src/rdf/ntriples.js';
import { literal, namedNode, quad, quadToNq, termToNt, tripleToNt, type Quad } from '../src/rdf/terms.js';
import { OxigraphIndex } from '../src/store/embedded/oxigraph/oxigraph-index.js';

const reference = (text: string): Quad[] => new Parser({ format: 'application/n-triples' }).parse(text);

/** Terms compared field by field (`equals` alone would not show which part differs); n3 names blank nodes afresh with each parser. */
const value = (t: Quad['subject'] | Quad['object']) => (t.termType === 'BlankNode' ? '_' : t.value);
const shape = (q: Quad) => [
  q.subject.termType,
  value(q.subject),
  q.predicate.value,
  q.object.termType,
  value(q.object),
  q.object.termType === 'Literal' ? [q.object.language, q.object.datatype.value] : [],
  q.graph.termType,
];

function expectSame(text: string, separator: ' ' | '\t' = ' '): void {
  const fast = readStoreNTriples(text, separator);
  const slow = reference(text);
  expect(fast.map(shape)).to.deep.equal(slow.map(shape));
  fast.forEach((q, i) => {
    expect(q.equals(slow[i]) || text.includes('_:'), `${i}`).to.equal(true);
  });
}

const iri = fc.webUrl({ withFragments: true, withQueryParameters: true }).filter((u) => !/[<>"{}|^`\\ ]/.test(u));
const text = fc.string({ unit: 'binary', maxLength: 30 });
const term = fc.oneof(
  iri.map((i) => namedNode(i)),
  text.map((v) => literal(v)),
  fc.tuple(text, fc.constantFrom('en', 'de-CH', 'x-private1')).map(([v, lang]) => literal(v, lang)),
  fc
    .tuple(
      text,
      fc.constantFrom(
        'http://www.w3.org/2001/XMLSchema#double',
        'http://www.w3.org/2001/XMLSchema#string',
        'https://example.com/type#t',
      ),
    )
    .map(([v, dt]) => literal(v, namedNode(dt))),
);
const triple = fc.tuple(iri, iri, term).map(([s, p, o]) => quad(namedNode(s), namedNode(p), o));

describe('readStoreNTriples: N-Triples as the store writes them', () => {
  it('reads what we write exactly as n3 does (fast-check)', () => {
    fc.assert(
      fc.property(fc.array(triple, { maxLength: 12 }), (triples) => expectSame(triples.map(tripleToNt).join(''))),
      { numRuns: 300 },
    );
  });

  it("reads Oxigraph's dumps exactly as n3 does (fast-check)", () => {
    fc.assert(
      fc.property(fc.array(triple, { maxLength: 12 }), (triples) => {
        const index = new OxigraphIndex();
        const graph = 'https://example.com/graph';
        index.apply({
          delete: '',
          insert: triples.map((t) => quadToNq(quad(t.subject, t.predicate, t.object, namedNode(graph)))).join(''),
        });
        expectSame(index.graphNTriples(graph));
      }),
      { numRuns: 100 },
    );
  });

  it('escapes, language tags and datatypes', () => {
    expectSame(
      [
        '<http://a/s> <http://a/p> "tab\\there \\"quoted\\" back\\\\slash \\u00e9\\U0001F600 \\n\\r" .',
        '<http://a/s> <http://a/p> "chat"@fr-BE .',
        '<http://a/s> <http://a/p> "1.5E0"^^<http://www.w3.org/2001/XMLSchema#double> .',
        '<http://a/s> <http://a/p> "" .',
        '<http://a/s> <http://a/p> <http://a/o> .',
        '',
      ].join('\n'),
    );
  });

  it("reads a SPARQL engine's N-Triples, terms separated by a tab (Virtuoso), exactly as n3 does (fast-check)", () => {
    fc.assert(
      fc.property(fc.array(triple, { maxLength: 12 }), (triples) =>
        expectSame(
          triples.map((t) => `${[t.subject, t.predicate, t.object].map(termToNt).join('\t')} .\n`).join(''),
          '\t',
        ),
      ),
      { numRuns: 300 },
    );
  });

  it('leaves text in any other form to n3 (blank nodes, comments, other spacing)', () => {
    for (const other of [
      '_:b <http://a/p> "x" .\n',
      '<http://a/s> <http://a/p> _:o .\n',
      '# comment\n<http://a/s> <http://a/p> "x" .\n',
      '<http://a/s>  <http://a/p> "x" .\n',
      '<http://a/s> <http://a/p> "x"\t.\n',
    ]) {
      expectSame(other);
    }
  });
});
