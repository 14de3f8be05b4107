import { expect } from 'chai';
import fc from 'fast-check';
import { DataFactory, Writer } from 'n3';
import { OxigraphIndex } from '../src/store/embedded/oxigraph/oxigraph-index.js';
import { dateTimeLiteral, detachedQuad, literal, namedNode, quad, quadToNq, termToNt } from '../src/rdf/terms.js';

describe('terms: dateTimeLiteral', () => {
  it('writes the lexical form the store keeps, for every millisecond pattern', () => {
    const index = new OxigraphIndex();
    const instants = [
      '2026-01-02T03:04:05.000Z',
      '2026-01-02T03:04:05.900Z',
      '2026-01-02T03:04:05.920Z',
      '2026-01-02T03:04:05.923Z',
      '2026-01-02T03:04:05.003Z',
    ];
    for (const instant of instants) {
      const literal = dateTimeLiteral(new Date(instant));
      const g = namedNode(`http://example.com/g/${instant}`);
      index.apply({
        delete: '',
        insert: quadToNq(quad(namedNode('http://example.com/s'), namedNode('http://example.com/p'), literal, g)),
      });
      const stored = /"([^"]+)"/.exec(index.graphNTriples(g.value))![1];
      expect(literal.value, instant).to.equal(stored);
      expect(new Date(literal.value).toISOString()).to.equal(instant);
    }
  });
});

const n3Literal = DataFactory.literal;
const parts = (t: ReturnType<typeof literal>) => ({
  termType: t.termType,
  value: t.value,
  language: t.language,
  datatype: t.datatype.value,
  datatypeTermType: t.datatype.termType,
});
const written = (t: ReturnType<typeof literal>) =>
  new Writer({ format: 'N-Triples' }).quadToString(namedNode('http://a/s'), namedNode('http://a/p'), t);

describe('literal: the same terms as n3 makes, with their parts kept as fields', () => {
  const value = fc.string({ unit: 'binary', maxLength: 20 });
  const language = fc.constantFrom('en', 'EN-gb', 'de-CH', 'x-private1');
  const datatype = fc.constantFrom(
    'http://www.w3.org/2001/XMLSchema#string',
    'http://www.w3.org/2001/XMLSchema#dateTime',
    'https://example.com/type#t',
  );

  it("a language-tagged string, a typed literal, a plain string: equal to n3's either way, the same parts, id and written form (fast-check)", () => {
    fc.assert(
      fc.property(
        value,
        fc.oneof(
          language,
          datatype.map((iri) => namedNode(iri)),
          fc.constant(undefined),
        ),
        (v, tag) => {
          const ours = literal(v, tag);
          const theirs = n3Literal(v, tag);
          expect(ours.equals(theirs) && theirs.equals(ours)).to.equal(true);
          expect(parts(ours)).to.deep.equal(parts(theirs));
          expect((ours as unknown as { id: string }).id).to.equal((theirs as unknown as { id: string }).id);
          expect(termToNt(ours)).to.equal(termToNt(theirs));
          expect(written(ours)).to.equal(written(theirs));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('literals of one datatype share its NamedNode; numbers and a base direction are made by n3', () => {
    const xsdDate = namedNode('http://www.w3.org/2001/XMLSchema#date');
    expect(literal('2026-01-01', xsdDate).datatype).to.equal(literal('2026-01-02', xsdDate).datatype);
    expect(literal(5).equals(n3Literal(5))).to.equal(true);
    expect(literal('abc', 'en--ltr').equals(n3Literal('abc', 'en--ltr'))).to.equal(true);
    expect(
      quad(namedNode('http://a/s'), namedNode('http://a/p'), literal('x', 'en')).equals(
        quad(namedNode('http://a/s'), namedNode('http://a/p'), n3Literal('x', 'en')),
      ),
    ).to.equal(true);
  });
});

describe('detachedQuad: the same quad, its strings copies of their own', () => {
  it('equals the quad it copies: IRIs, a language-tagged string, a typed literal, a blank node, its graph', () => {
    const text = '<https://example.com/a> "héllo"@en "12.5"^^<http://www.w3.org/2001/XMLSchema#decimal>';
    const a = namedNode(text.slice(1, 22));
    const quads = [
      quad(a, namedNode('https://example.com/p'), literal(text.slice(25, 30), 'en'), namedNode('urn:g')),
      quad(
        a,
        namedNode('https://example.com/q'),
        literal('12.5', namedNode('http://www.w3.org/2001/XMLSchema#decimal')),
      ),
      quad(DataFactory.blankNode('b1'), namedNode('https://example.com/r'), namedNode('https://example.com/o')),
    ];
    for (const q of quads) {
      const copy = detachedQuad(q);
      expect(copy.equals(q), `${q.subject.value} ${q.object.value}`).to.equal(true);
      expect([copy.object.termType, copy.object.value]).to.deep.equal([q.object.termType, q.object.value]);
    }
  });
});
