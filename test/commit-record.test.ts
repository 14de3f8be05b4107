import { expect } from 'chai';
import { partLines, startsComment, type CommitBytes, type CommitRecord } from '../src/store/commit-record.js';
import { quadToNq, namedNode, quad, literal } from '../src/rdf/terms.js';
import { asArchiveLines, finishedGraphsIn } from '../src/store/schema/finished-graphs.js';
import { revisionQuads, revisionWritesIn } from '../src/store/schema/revisions.js';

const EX = 'http://example.com/';
const OBJECT = `${EX}logistics-objects/1`;
const REQUEST = `${EX}action-requests/1`;

/** A record as a change writes it: revision 2's metadata and changed lines, a finished request's graph as archive lines. */
function changeRecord(): CommitRecord {
  const o = namedNode(OBJECT);
  const r = namedNode(REQUEST);
  const revision = {
    object: OBJECT,
    number: 2,
    graph: `${OBJECT}?revision=2`,
    createdAt: new Date('2026-11-25T10:00:00.5Z'),
    createdBy: `${EX}holder`,
    mostSpecificType: `${EX}Piece`,
  };
  const inGraph = [
    quad(o, namedNode(`${EX}remarks`), literal('new 🚚 "é"'), o),
    quad(o, namedNode(`${EX}upid`), literal('U-2'), o),
  ];
  const archived = [quad(r, namedNode(`${EX}p`), literal('ä\\n'), r), quad(r, namedNode(`${EX}q`), o, r)];
  return {
    delete: quadToNq(quad(o, namedNode(`${EX}remarks`), literal('old ☃'), o)),
    insert:
      [...revisionQuads(revision), ...inGraph].map(quadToNq).join('') + asArchiveLines(archived.map(quadToNq)).join(''),
  };
}

const asBytes = (record: CommitRecord): CommitBytes => ({
  delete: Buffer.from(record.delete),
  insert: Buffer.from(record.insert),
});

describe('commit records: reading a stored part line by line', () => {
  it('partLines gives the same lines for a part as bytes and as text, whatever its characters and ends', () => {
    for (const text of ['', '\n', 'a\n', '#A x\n<a> é\n\n🚚 y', '<s> <p> "☃" .\n#c\n<t> <p> "x" .\n']) {
      for (const keep of [(c: number) => !startsComment(c), startsComment]) {
        expect(partLines(Buffer.from(text), keep), JSON.stringify(text)).to.deep.equal(partLines(text, keep));
      }
    }
    expect(partLines('<a>\n#A b\n\n<c>', (c) => !startsComment(c))).to.deep.equal(['<a>', '<c>']);
  });

  it('a stored record yields the same revisions and finished graphs as its text', () => {
    const record = changeRecord();
    const [fromText] = revisionWritesIn(record);
    const [fromBytes] = revisionWritesIn(asBytes(record));
    expect({ record: fromBytes.record, del: fromBytes.del, ins: fromBytes.ins }).to.deep.equal({
      record: fromText.record,
      del: fromText.del,
      ins: fromText.ins,
    });
    expect(fromBytes.ins.split('\n')).to.have.length(3);
    expect(fromBytes.del).to.include('old ☃');
    expect(finishedGraphsIn(asBytes(record))).to.deep.equal(finishedGraphsIn(record));
    expect(finishedGraphsIn(record).map((f) => f.graph)).to.deep.equal([REQUEST]);
  });
});
