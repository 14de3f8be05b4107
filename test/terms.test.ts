import { expect } from 'chai';
import { OxigraphIndex } from '../src/store/embedded/oxigraph/oxigraph-index.js';
import { dateTimeLiteral, namedNode, quad, quadToNq } from '../src/rdf/terms.js';

describe('terms: dateTimeLiteral', () => {
  it('writes the lexical form the store keeps, for every millisecond pattern', () => {
    const index = new OxigraphIndex();
    const instants = ['2026-01-02T03:04:05.000Z', '2026-01-02T03:04:05.900Z', '2026-01-02T03:04:05.920Z', '2026-01-02T03:04:05.923Z', '2026-01-02T03:04:05.003Z'];
    for (const instant of instants) {
      const literal = dateTimeLiteral(new Date(instant));
      const g = namedNode(`http://example.com/g/${instant}`);
      index.apply({ delete: '', insert: quadToNq(quad(namedNode('http://example.com/s'), namedNode('http://example.com/p'), literal, g)) });
      const stored = /"([^"]+)"/.exec(index.graphNTriples(g.value))![1];
      expect(literal.value, instant).to.equal(stored);
      expect(new Date(literal.value).toISOString()).to.equal(instant);
    }
  });
});
