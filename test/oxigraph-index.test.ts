import { expect } from 'chai';
import { OxigraphIndex } from '../src/store/oxigraph-index.js';

const graphText = (i: number, quads: number) =>
  Array.from({ length: quads }, (_, k) => `<internal:n-${i}-${k}> <http://example.com/p${k % 7}> "value ${k} of ${i}" <http://example.com/g/${i}> .\n`).join('');

describe('OxigraphIndex', () => {
  it('growing WASM memory ahead of need never adds or loses data', () => {
    const index = new OxigraphIndex();
    // About 60 MB of estimated growth: several reservation steps happen along the way.
    for (let i = 0; i < 2000; i++) index.loadTrusted(i % 2 === 0 ? graphText(i, 100) : new TextEncoder().encode(graphText(i, 100)));
    expect(index.size).to.equal(200_000);
    expect(index.graphNTriples('http://example.com/g/1999').split('\n').filter(Boolean)).to.have.length(100);
    expect(index.graphNTriples('http://example.com/g/0')).to.contain('"value 99 of 0"');
  });
});
