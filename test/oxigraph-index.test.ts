import { expect } from 'chai';
import { emptiedGraphLines, emptiedGraphsIn } from '../src/store/embedded/emptied-graphs.js';
import { quadsEnd, OxigraphIndex } from '../src/store/embedded/oxigraph/oxigraph-index.js';

const graphText = (i: number, quads: number) =>
  Array.from(
    { length: quads },
    (_, k) =>
      `<internal:n-${i}-${k}> <http://example.com/p${k % 7}> "value ${k} of ${i}" <http://example.com/g/${i}> .\n`,
  ).join('');

describe('OxigraphIndex', () => {
  it('growing WASM memory ahead of need never adds or loses data', () => {
    const index = new OxigraphIndex();
    // About 60 MB of estimated growth: several reservation steps happen along the way.
    for (let i = 0; i < 2000; i++)
      index.loadTrusted(i % 2 === 0 ? graphText(i, 100) : new TextEncoder().encode(graphText(i, 100)));
    expect(index.size).to.equal(200_000);
    expect(index.graphNTriples('http://example.com/g/1999').split('\n').filter(Boolean)).to.have.length(100);
    expect(index.graphNTriples('http://example.com/g/0')).to.contain('"value 99 of 0"');
  });
});

describe('emptied graphs: a record names the graphs it empties, and their names are dropped', () => {
  const graph = (i: number) => `http://example.com/g/${i}`;

  it('reads back the graphs named, from text and bytes, after quads and archive lines; none from other records', () => {
    const quads = graphText(1, 2);
    const archived = '#A <http://e.com/s> <http://e.com/p> "archived" <urn:onerecord:store:notification:1> .\n';
    const record = { delete: '', insert: quads + archived + emptiedGraphLines([graph(2), graph(3)]) };
    const bytes = { delete: new Uint8Array(), insert: new TextEncoder().encode(record.insert) };
    for (const read of [record, bytes]) expect(emptiedGraphsIn(read)).to.deep.equal([graph(2), graph(3)]);
    for (const insert of ['', quads, quads + archived, emptiedGraphLines([])])
      expect(emptiedGraphsIn({ delete: '', insert })).to.deep.equal([]);
    // Comments to Oxigraph: loading the record loads its quads alone.
    const index = new OxigraphIndex();
    index.apply(record);
    expect(index.size).to.equal(2);
  });

  it("drops the names of graphs that hold no quad, and leaves those written to again (as a replay's batch may)", () => {
    const index = new OxigraphIndex();
    index.loadTrusted(graphText(1, 2) + graphText(2, 2) + graphText(3, 1));
    index.apply({ insert: '', delete: graphText(1, 2) + graphText(2, 2) });
    index.apply({ insert: graphText(2, 1), delete: '' });
    expect(index.listGraphs().sort()).to.deep.equal([graph(1), graph(2), graph(3)]);
    index.dropEmptyGraphs([graph(1), graph(2), graph(4)]);
    expect(index.listGraphs().sort()).to.deep.equal([graph(2), graph(3)]);
    expect(index.size).to.equal(2);
  });
});

describe('quadsEnd: only the part of a record holding quads is loaded', () => {
  it('ends after the last quad line, as text and as bytes: a record of comments alone loads nothing, and the part loaded holds every quad', () => {
    const data = '<http://e.com/s> <http://e.com/p> "#not a comment" <http://e.com/g> .\n';
    const other = '<http://e.com/s> <http://e.com/p> "other" <http://e.com/g> .\n';
    const comment = '#A <http://e.com/s> <http://e.com/p> "archived" <urn:onerecord:store:notification:1> .\n';
    const texts = [
      '',
      '\n',
      comment,
      comment + comment,
      `${comment}\n${comment}`,
      comment.slice(0, -1),
      data,
      comment + data,
      data + comment,
      `${comment}\n${data}`,
      data.slice(0, -1),
      `${comment}${data.slice(0, -1)}`,
      `${data}${comment}${other}${comment}\n`,
      `${data}\n${comment}${other.slice(0, -1)}`,
    ];
    for (const text of texts) {
      const whole = new OxigraphIndex();
      whole.loadTrusted(text);
      const applied = new OxigraphIndex();
      applied.apply({ delete: '', insert: text });
      expect(applied.graphNTriples('http://e.com/g'), JSON.stringify(text)).to.equal(
        whole.graphNTriples('http://e.com/g'),
      );
      for (const form of [text, new TextEncoder().encode(text)]) {
        const end = quadsEnd(form);
        expect(end > 0, JSON.stringify(text)).to.equal(whole.size > 0);
        expect(
          text
            .slice(end)
            .split('\n')
            .every((line) => line === '' || line.startsWith('#')),
          JSON.stringify(text),
        ).to.equal(true);
      }
    }
  });
});

describe('OxigraphIndex.apply: deletions as one SPARQL DELETE DATA', () => {
  const lines = [
    '<http://e.com/s> <http://e.com/p> "plain" <http://e.com/g> .',
    '<http://e.com/s> <http://e.com/p> "quote \\" backslash \\\\ newline \\n return \\r, and a > and a < inside" <http://e.com/g> .',
    '<http://e.com/s> <http://e.com/p> "hallo"@de-AT <http://e.com/g> .',
    '<http://e.com/s> <http://e.com/p> "20.5"^^<http://www.w3.org/2001/XMLSchema#double> <http://e.com/g> .',
    '<http://e.com/s> <http://e.com/p> "ends with a backslash \\\\" <http://e.com/g> .',
    '<http://e.com/s> <http://e.com/p> "" <http://e.com/g> .',
    '<http://e.com/s> <http://e.com/p> <http://e.com/o> <http://e.com/g> .',
    '<http://e.com/s> <http://e.com/p> <http://e.com/o> <http://e.com/other> .',
    '<http://e.com/s> <http://e.com/p> "in the default graph" .',
    '<http://e.com/s> <http://e.com/p> <http://e.com/o> .',
  ].map((line) => `${line}\n`);
  const kept = '<http://e.com/s> <http://e.com/p> "kept" <http://e.com/g> .\n';

  it('deletes exactly the lines given, whatever their literals hold, in named graphs and the default graph', () => {
    for (const asBytes of [false, true]) {
      for (let drop = 0; drop < lines.length; drop++) {
        const index = new OxigraphIndex();
        index.loadTrusted(lines.join('') + kept);
        const deleted = lines.filter((_, i) => i % lines.length === drop || i % 3 === drop % 3).join('');
        index.apply(
          asBytes
            ? { delete: new TextEncoder().encode(deleted), insert: new Uint8Array() }
            : { delete: deleted, insert: '' },
        );
        const left = new Set(
          index
            .nQuads()
            .split('\n')
            .filter(Boolean)
            .map((l) => `${l}\n`),
        );
        const expected = new OxigraphIndex();
        expected.loadTrusted(lines.filter((l) => !deleted.includes(l)).join('') + kept);
        expect([...left].sort()).to.deep.equal(
          expected
            .nQuads()
            .split('\n')
            .filter(Boolean)
            .map((l) => `${l}\n`)
            .sort(),
        );
      }
    }
  });

  it('a deletion Oxigraph refuses (an IRI only a lenient load takes) fails the record, as deleting it quad by quad did', () => {
    const index = new OxigraphIndex();
    const odd = '<http://e.com/{odd}> <http://e.com/p> "x" <http://e.com/g> .\n';
    index.loadTrusted(odd + kept);
    expect(() => index.apply({ delete: odd + kept, insert: '' })).to.throw();
    expect(index.size).to.equal(2);
  });
});
