import { expect } from 'chai';
import type { CommitRecord } from '../src/store/commit-record.js';
import { OxigraphIndex } from '../src/store/embedded/oxigraph/oxigraph-index.js';
import { replayBatches } from '../src/store/embedded/journal/replay-batches.js';

const XSD = 'http://www.w3.org/2001/XMLSchema#';
const line = (object: string, subject = 's', graph = '<http://e.com/g>') =>
  `<http://e.com/${subject}> <http://e.com/p> ${object}${graph ? ` ${graph}` : ''} .\n`;
const int = (lexical: string) => `"${lexical}"^^<${XSD}integer>`;

/** What the store holds after `records`, applied one by one (as live writes do) or in replay batches. */
function stored(records: CommitRecord[], batched: boolean, before = ''): string {
  const index = new OxigraphIndex();
  if (before) index.loadTrusted(before);
  if (batched) for (const batch of replayBatches(records)) index.apply(batch);
  else for (const record of records) index.apply(record);
  return index.nQuads().split('\n').sort().join('\n');
}

/** The store after applying `records` as one naive batch: every insertion, then every deletion. */
function naive(records: CommitRecord[], before = ''): string {
  return stored(
    [{ insert: records.map((r) => r.insert).join(''), delete: records.map((r) => r.delete).join('') }],
    false,
    before,
  );
}

describe('replay batches: records folded into one load and one deletion only where that gives the same store', () => {
  // Each: a record deletes a quad that a later one inserts again, written so that the texts differ
  // (or not), so that one naive batch (all insertions, then all deletions) would leave it absent.
  const cases: [string, string, string][] = [
    ['the same line', line('"x"'), line('"x"')],
    ['the same integer in another lexical form', line(int('1')), line(int('01'))],
    ['a typed string and a simple literal', line(`"x"^^<${XSD}string>`), line('"x"')],
    ['language tags in other cases', line('"a"@en-US'), line('"a"@en-us')],
    ['an escaped and a plain character', line('"\\u0041"'), line('"A"')],
    ['an escaped IRI', line('<http://e.com/\\u0041>'), line('<http://e.com/A>')],
    ['the default graph, same line', line('<http://e.com/o>', 's', ''), line('<http://e.com/o>', 's', '')],
  ];
  for (const [what, deleted, inserted] of cases) {
    it(`a later record inserting what an earlier one deleted ends the batch: ${what}`, () => {
      const records = [
        { insert: '', delete: deleted },
        { insert: inserted, delete: '' },
      ];
      const before = deleted;
      const oneByOne = stored(records, false, before);
      expect(oneByOne, 'present one by one').to.not.equal('');
      expect(naive(records, before), 'a naive batch loses it').to.not.equal(oneByOne);
      expect(replayBatches(records)).to.have.length(2);
      expect(stored(records, true, before)).to.equal(oneByOne);
    });
  }

  it('records that only replace values, and delete later what an earlier one inserted, make one batch', () => {
    const records: CommitRecord[] = [];
    for (let n = 1; n <= 20; n++) {
      for (const subject of ['a', 'b']) {
        records.push({
          // As a revision's metadata: typed values, on a subject of each revision.
          delete:
            n === 1
              ? ''
              : line(`"revision ${n - 1}"`, subject) + line(int(String(n - 1)), `${subject}?revision=${n - 1}`),
          insert:
            line(`"revision ${n}"`, subject) +
            line(int(String(n)), `${subject}?revision=${n}`) +
            `#A ${line('"archived"', subject)}`,
        });
      }
    }
    const batches = replayBatches(records);
    expect(batches).to.have.length(1);
    // What a later record deletes again is not loaded at all.
    expect(batches[0].insert).to.not.contain('"revision 3"');
    expect(stored(records, true, line('"revision 0"', 'a'))).to.equal(
      stored(records, false, line('"revision 0"', 'a')),
    );
  });

  it('a record whose insertions do not end in a newline does not run into the next one', () => {
    const records = [
      { insert: line('"a"').slice(0, -1), delete: '' },
      { insert: new TextEncoder().encode(line('"b"', 't')), delete: '' },
    ] as unknown as CommitRecord[];
    expect(stored(records, true)).to.equal(stored(records, false));
  });

  it('random records over values that alias: batches always leave the store as applying them one by one', () => {
    const objects = [
      int('1'),
      int('01'),
      int('+1'),
      int('2'),
      `"1"^^<${XSD}decimal>`,
      '"1"',
      '"1"@en',
      '"1"@EN',
      '"\\u0031"',
      '<http://e.com/1>',
      '<http://e.com/\\u0031>',
    ];
    const lines = [
      ...objects.map((o) => line(o)),
      ...objects.slice(0, 4).map((o) => line(o, 't')),
      line('"1"', 's', ''),
    ];
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const pick = () => {
      const set = new Set<string>();
      for (let k = random(3); k > 0; k--) set.add(lines[random(lines.length)]);
      return [...set];
    };
    for (let run = 0; run < 300; run++) {
      const records: CommitRecord[] = Array.from({ length: 2 + random(6) }, () => {
        const insert = pick();
        return {
          insert: insert.join(''),
          delete: pick()
            .filter((l) => !insert.includes(l))
            .join(''),
        };
      });
      const before = pick().join('');
      expect(stored(records, true, before), JSON.stringify({ records, before })).to.equal(
        stored(records, false, before),
      );
    }
  });
});
