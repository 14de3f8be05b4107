// The start's large reads (engine-layout.ts) and the CSV reader under them (sparql-client.ts), without an engine.
import { expect } from 'chai';
import { readCreatedAndLatestRevisions, type CsvReader } from '../src/store/sparql-engine/engine-layout.js';
import { CsvRows } from '../src/store/sparql-engine/sparql-client.js';

/** The rows `text` parses to when it arrives in pieces of `size` characters. */
function rowsOf(text: string, size: number): string[][] {
  const rows: string[][] = [];
  const csv = new CsvRows();
  for (let at = 0; at < text.length; at += size) csv.push(text.slice(at, at + size), (values) => rows.push(values));
  csv.end('', (values) => rows.push(values));
  return rows;
}

describe('CSV answers read as they arrive', () => {
  const text =
    '"g","n","label"\r\n"http://x/a,b",1,"say ""hi""\nsecond line"\r\n"http://x/c",,plain\r\nhttp://x/d,2,"last"';
  const expected = [
    ['g', 'n', 'label'],
    ['http://x/a,b', '1', 'say "hi"\nsecond line'],
    ['http://x/c', '', 'plain'],
    ['http://x/d', '2', 'last'],
  ];

  it('gives every row, whatever the pieces it comes in (quotes, commas and line breaks in quoted fields)', () => {
    for (const size of [1, 2, 3, 5, 7, 16, text.length])
      expect(rowsOf(text, size), `pieces of ${size}`).to.deep.equal(expected);
  });

  it('refuses text that does not parse rather than drop a row', () => {
    expect(() => rowsOf('"a","b"\r\n"open', 4)).to.throw(/does not parse/);
  });
});

describe('revisions read at start', () => {
  const base = 'http://x/logistics-objects/';
  type Row = Record<'g' | 'o' | 'n' | 'at' | 'by' | 'type', string>;
  const row = (id: string, n: number): Row => ({
    g: `${base}${id}?revision=${n}`,
    o: `${base}${id}`,
    n: String(n),
    at: '2026-11-25T10:00:00Z',
    by: `${base}holder`,
    type: 'https://onerecord.iata.org/ns/cargo#Piece',
  });
  const stored = [row('a', 1), row('a', 2), row('a', 3), row('b', 1), row('c', 1), row('c', 2)];

  /** An engine holding `stored` whose answers stop after `maxRows` rows, as Virtuoso's ResultSetMaxRows cuts them (at least a page's: 10,000 by default). */
  function engine(maxRows: number): CsvReader & { queries: string[] } {
    const queries: string[] = [];
    return {
      queries,
      async selectCsv(query, variables, onRow) {
        queries.push(query);
        if (query.startsWith('SELECT (COUNT(*)')) {
          onRow([String(stored.length)]);
          return 1;
        }
        expect(query.startsWith(`SELECT ${variables.map((v) => `?${v}`).join(' ')} WHERE`), query).to.equal(true);
        const after = /STR\(\?g\) > "([^"]*)"/.exec(query)?.[1];
        const limit = Number(/LIMIT (\d+)/.exec(query)?.[1] ?? Infinity);
        const rows = (query.includes('ORDER BY') ? [...stored].sort((x, y) => (x.g < y.g ? -1 : 1)) : stored).filter(
          (r) => after === undefined || r.g > after,
        );
        const answered = rows.slice(0, Number.isFinite(limit) ? limit : maxRows);
        for (const r of answered) onRow(variables.map((v) => r[v as keyof Row]));
        return answered.length;
      },
    };
  }

  const summary = (records: Awaited<ReturnType<typeof readCreatedAndLatestRevisions>>) =>
    records.map((r) => `${r.object.slice(base.length)}@${r.number}`).sort();

  it('reads revision 1 and the latest of every object in one answer, counted first', async () => {
    const reader = engine(Infinity);
    expect(summary(await readCreatedAndLatestRevisions(reader))).to.deep.equal(['a@1', 'a@3', 'b@1', 'c@1', 'c@2']);
    expect(reader.queries).to.have.length(2);
    // The graph's name follows from the object and the number: not read.
    expect(reader.queries[1]).not.to.match(/^SELECT[^{]*\?g/);
  });

  it('reads again in ordered pages when the engine cut the answer short of the count (its row limit)', async () => {
    const reader = engine(2);
    const records = await readCreatedAndLatestRevisions(reader);
    expect(summary(records)).to.deep.equal(['a@1', 'a@3', 'b@1', 'c@1', 'c@2']);
    expect(records.find((r) => r.object === `${base}a` && r.number === 3)).to.deep.include({
      graph: `${base}a?revision=3`,
      createdBy: `${base}holder`,
      mostSpecificType: 'https://onerecord.iata.org/ns/cargo#Piece',
    });
    expect(reader.queries.filter((q) => q.includes('ORDER BY'))).to.have.length(1);
  });
});
