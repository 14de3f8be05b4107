import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { expect } from 'chai';
import { toHttpError } from '../src/http/error-responses.js';
import { QueryReplica } from '../src/store/embedded/replica/query-replica.js';
import type { ReplicaSource } from '../src/store/embedded/replica/replica-copy.js';
import type { QueryJob } from '../src/store/embedded/replica/messages.js';
import { HANDOVER_AT } from '../src/store/embedded/replica/replica-growth.js';
import { ReplicaStore, type ReplicaRecord } from '../src/store/embedded/replica/replica-store.js';
import { scopedToView } from '../src/store/embedded/replica/view-scoping.js';
import type { View } from '../src/store/query-service.js';
import { nextGrowthPoint } from '../src/store/embedded/oxigraph/table-growth.js';
import { store as bookkeeping } from '../src/rdf/vocab.js';
import { ARCHIVE_LINE } from '../src/store/schema/finished-graphs.js';

const BASE = 'http://replica.test/logistics-objects/';
const P = 'http://replica.test/p';
const META = `<${bookkeeping.metaGraph}>`;
const rev = (object: string, n: number) => `${BASE}${object}?revision=${n}`;
const KGM = (object: string) => `<http://replica.test/code#KGM> <${P}> "KGM" <${BASE}${object}> .\n`;
const valueLine = (object: string, v: string) => `<${BASE}${object}> <${P}> "${v}" <${BASE}${object}> .\n`;
const metaLines = (object: string, n: number) =>
  `<${rev(object, n)}> <urn:onerecord:store:revisionOf> <${BASE}${object}> ${META} .\n` +
  `<${rev(object, n)}> <urn:onerecord:store:revisionNumber> "${n}"^^<http://www.w3.org/2001/XMLSchema#integer> ${META} .\n`;

/** The journal record of revision 1 of `object`: its values (plus a triple every object shares) in its latest graph, and its metadata. */
const created = (object: string, values: string[]): ReplicaRecord => ({
  insert: values.map((v) => valueLine(object, v)).join('') + KGM(object) + metaLines(object, 1),
  delete: '',
});
/** The journal record of revision `n` of `object`, a change: `removed` values out, `added` in, the metadata of revision n - 1 out unless it is the first. */
const changed = (object: string, n: number, removed: string[], added: string[]): ReplicaRecord => ({
  insert: added.map((v) => valueLine(object, v)).join('') + metaLines(object, n),
  delete: removed.map((v) => valueLine(object, v)).join('') + (n > 2 ? metaLines(object, n - 1) : ''),
});

const event = (object: string, id: string): ReplicaRecord => ({
  insert: `<${BASE}${object}/logistics-events/${id}> <${P}> "event ${id}" <${BASE}${object}/logistics-events/${id}> .\n`,
  delete: '',
});
const grantGraph = 'http://replica.test/internal/acl/g1';
const grantLine = `<${grantGraph}> <${P}> "granted" <${grantGraph}> .\n`;

function select(replica: ReplicaStore, view: View, text: string, dataset?: QueryJob['dataset']): string[] {
  const { body } = replica.run({ kind: 'query', view, form: 'SELECT', text, format: 'csv', maxRows: 1000, dataset });
  return body.split('\r\n').slice(1).filter(Boolean).sort();
}

/** A revision whole, as the archive's copy brings it: its graph and its metadata. */
const revision = (object: string, n: number, values: string[]) =>
  [
    ...values.map((v) => `<${BASE}${object}> <${P}> "${v}" <${rev(object, n)}> .\n`),
    `<http://replica.test/code#KGM> <${P}> "KGM" <${rev(object, n)}> .\n`,
  ].join('') + metaLines(object, n);
const history = (replica: ReplicaStore) =>
  select(
    replica,
    'revisions',
    `SELECT ?g ?n (COUNT(?v) AS ?values) WHERE { ?g <urn:onerecord:store:revisionNumber> ?n . OPTIONAL { GRAPH ?g { ?s <${P}> ?v } } } GROUP BY ?g ?n`,
  );

describe('SPARQL replica store: one store for every view, fed with journal records', () => {
  it('latest shows each object as its changes leave it, however records are batched; the revisions view each revision whole', () => {
    const records = [
      created('a', ['a1']),
      changed('a', 2, ['a1'], ['a2']),
      created('b', ['b1']),
      changed('a', 3, ['a2'], ['a3', 'x']),
    ];
    for (const batches of [records.map((r) => [r]), [records], [records.slice(0, 1), records.slice(1)]]) {
      const replica = new ReplicaStore(1_000_000);
      for (const batch of batches) replica.applyRecords(batch);
      expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['KGM', 'a3', 'b1', 'x']);
      // The latest graph of an object is named after it, as in the hot store.
      expect(select(replica, 'latest', `SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }`)).to.deep.equal([
        `${BASE}a`,
        `${BASE}b`,
      ]);
      expect(
        select(replica, 'revisions', `SELECT ?v WHERE { GRAPH <${rev('a', 2)}> { <${BASE}a> <${P}> ?v } }`),
      ).to.deep.equal(['a2']);
      expect(select(replica, 'revisions', `SELECT ?v WHERE { GRAPH <${rev('a', 3)}> { ?s <${P}> ?v } }`)).to.deep.equal(
        ['KGM', 'a3', 'x'],
      );
      expect(
        select(replica, 'revisions', `SELECT ?n WHERE { ?g <urn:onerecord:store:revisionNumber> ?n }`),
      ).to.deep.equal(['1', '1', '2', '3']);
      expect(select(replica, 'revisions', `SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }`)).to.deep.equal([
        rev('a', 1),
        rev('a', 2),
        rev('a', 3),
        rev('b', 1),
      ]);
    }
  });

  it('a triple two latest graphs share stays in the latest view until neither holds it', () => {
    const replica = new ReplicaStore(1_000_000);
    replica.applyRecords([created('a', ['a1']), created('b', ['b1'])]);
    replica.applyRecords([{ insert: metaLines('a', 2), delete: KGM('a') }]);
    expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['KGM', 'a1', 'b1']);
    replica.applyRecords([{ insert: metaLines('b', 2), delete: KGM('b') }]);
    expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['a1', 'b1']);
  });

  it('an event written as archive lines (as the embedded store writes events) stays in the events view', () => {
    // A history window of one quad: a finished request's lines leave it, an event's do not.
    const replica = new ReplicaStore(1);
    const archived = (record: ReplicaRecord) => ({ ...record, insert: `${ARCHIVE_LINE}${record.insert}` });
    const request = `${BASE}a/action-requests/r1`;
    replica.applyRecords([
      created('a', ['a1']),
      archived(event('a', 'e1')),
      archived(event('a', 'e2')),
      archived({ insert: `<${request}> <${P}> "decided" <${request}> .\n`, delete: '' }),
      archived({ insert: `<urn:x> <${P}> "bookkeeping" <${bookkeeping.eventsGraph}> .\n`, delete: '' }),
    ]);
    expect(select(replica, 'events', `SELECT ?v WHERE { GRAPH ?g { ?s <${P}> ?v } }`)).to.deep.equal([
      'KGM',
      'a1',
      'event e1',
      'event e2',
    ]);
  });

  it('events, audit and their deletions; bookkeeping graphs stay out', () => {
    const replica = new ReplicaStore(1_000_000);
    replica.applyRecords([
      created('a', ['a1']),
      event('a', 'e1'),
      { insert: `${grantLine}<urn:x> <${P}> "bookkeeping" <${bookkeeping.eventsGraph}> .\n`, delete: '' },
    ]);
    expect(select(replica, 'events', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['KGM', 'a1', 'event e1']);
    expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['KGM', 'a1']);
    expect(select(replica, 'audit', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['granted']);
    expect(select(replica, 'events', `SELECT ?g WHERE { GRAPH ?g { ?s <${P}> "event e1" } }`)).to.deep.equal([
      `${BASE}a/logistics-events/e1`,
    ]);
    replica.applyRecords([{ insert: '', delete: grantLine }]);
    expect(select(replica, 'audit', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal([]);
    // Deleted, then written again in a later record of the same batch: present.
    replica.applyRecords([
      { insert: grantLine, delete: '' },
      { insert: '', delete: grantLine },
      { insert: grantLine, delete: '' },
    ]);
    expect(select(replica, 'audit', `SELECT ?v WHERE { GRAPH ?g { ?s <${P}> ?v } }`)).to.deep.equal(['granted']);
    expect(select(replica, 'audit', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['granted']);
    // Nothing of the replica's own graphs, nor of the store's bookkeeping, in any view.
    for (const view of ['latest', 'events', 'revisions', 'audit'] as const) {
      const graphs = select(replica, view, 'SELECT DISTINCT ?g WHERE { GRAPH ?g { } }');
      expect(
        graphs.filter((g) => g.startsWith('urn:')),
        view,
      ).to.deep.equal([]);
    }
  });

  it('a triple two events share stays in the events view until neither holds it', () => {
    const replica = new ReplicaStore(1_000_000);
    const e = (id: string) => `${BASE}a/logistics-events/${id}`;
    const shared = (graph: string) => `<urn:x:shared> <${P}> "shared" <${graph}> .\n`;
    replica.applyRecords([created('a', ['a1']), { insert: shared(e('e1')) + shared(e('e2')), delete: '' }]);
    const query = `SELECT ?v WHERE { <urn:x:shared> <${P}> ?v }`;
    expect(select(replica, 'events', query)).to.deep.equal(['shared']);
    replica.applyRecords([{ insert: '', delete: shared(e('e1')) }]);
    expect(select(replica, 'events', query)).to.deep.equal(['shared']);
    replica.applyRecords([{ insert: '', delete: shared(e('e2')) }]);
    expect(select(replica, 'events', query)).to.deep.equal([]);
  });

  it('a triple finished requests share stays in the audit view while the history window keeps one of them, whether they leave it one at a time or together', () => {
    const request = (id: string) => `http://replica.test/action-requests/${id}`;
    const shared = (id: string) => `#A <urn:x:shared> <${P}> "shared" <${request(id)}> .\n`;
    const own = (id: string, quads: number) =>
      Array.from({ length: quads }, (_, i) => `#A <${request(id)}> <${P}> "${id} ${i}" <${request(id)}> .\n`).join('');
    const finished = (id: string, extra = 1): ReplicaRecord => ({ insert: shared(id) + own(id, extra), delete: '' });
    const query = `SELECT ?v WHERE { <urn:x:shared> <${P}> ?v }`;
    const graphs = (replica: ReplicaStore) =>
      select(replica, 'audit', 'SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }');
    // One at a time: each request is 2 quads, the window 4.
    const replica = new ReplicaStore(4);
    replica.applyRecords([finished('r1'), finished('r2')]);
    expect(select(replica, 'audit', query)).to.deep.equal(['shared']);
    replica.applyRecords([{ insert: own('r3', 2), delete: '' }]);
    expect(graphs(replica)).to.deep.equal([request('r2'), request('r3')]);
    expect(select(replica, 'audit', query)).to.deep.equal(['shared']);
    replica.applyRecords([{ insert: own('r4', 2), delete: '' }]);
    expect(graphs(replica)).to.deep.equal([request('r3'), request('r4')]);
    expect(select(replica, 'audit', query)).to.deep.equal([]);
    expect(select(replica, 'audit', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal([
      'r3 0',
      'r3 1',
      'r4 0',
      'r4 1',
    ]);
    // Together: one request of 4 quads makes both leave.
    const together = new ReplicaStore(4);
    together.applyRecords([finished('r1'), finished('r2')]);
    together.applyRecords([{ insert: own('r3', 4), delete: '' }]);
    expect(graphs(together)).to.deep.equal([request('r3')]);
    expect(select(together, 'audit', query)).to.deep.equal([]);
  });

  it('a change deleting a literal written in another lexical form of the same value deletes it', () => {
    const replica = new ReplicaStore(1_000_000);
    const weight = (value: string) =>
      `<${BASE}a> <${P}> "${value}"^^<http://www.w3.org/2001/XMLSchema#double> <${BASE}a> .\n`;
    replica.applyRecords([
      { insert: weight('5.0') + metaLines('a', 1), delete: '' },
      { insert: weight('6') + metaLines('a', 2), delete: weight('5') },
    ]);
    expect(select(replica, 'latest', `SELECT ?v WHERE { <${BASE}a> <${P}> ?v }`)).to.deep.equal(['6']);
  });

  it('an object changed many times: each revision in the revisions view whole, with literals Oxigraph writes in other escapes, however records are batched, also after a deletion in another lexical form', () => {
    const values = Array.from({ length: 40 }, (_, i) =>
      i % 3 === 0 ? `tab\there ${i}` : i % 3 === 1 ? `caf\u00e9 \u{1F69A} ${i}` : `plain ${i}`,
    );
    const weight = (value: string) =>
      `<${BASE}a> <${P}w> "${value}"^^<http://www.w3.org/2001/XMLSchema#double> <${BASE}a> .\n`;
    const records: ReplicaRecord[] = [created('a', [values[0]])];
    for (let n = 2; n <= values.length; n++) records.push(changed('a', n, [values[n - 2]], [values[n - 1]]));
    // Revision 20 adds a weight, 21 deletes it written in another lexical form (the kept triples do not hold that line).
    records[19] = { ...records[19], insert: records[19].insert + weight('5.0') };
    records[20] = { ...records[20], delete: records[20].delete + weight('5') };
    for (const batches of [
      records.map((r) => [r]),
      [records],
      [records.slice(0, 7), records.slice(7, 25), records.slice(25)],
    ]) {
      const replica = new ReplicaStore(1_000_000);
      for (const batch of batches) replica.applyRecords(batch);
      for (let n = 1; n <= values.length; n++) {
        const expected = [values[n - 1], 'KGM', ...(n === 20 ? ['5'] : [])].sort();
        expect(
          select(replica, 'revisions', `SELECT ?v WHERE { GRAPH <${rev('a', n)}> { ?s ?p ?v } }`),
          `revision ${n}`,
        ).to.deep.equal(expected);
      }
    }
  });

  it('the history window keeps the newest revisions before the latest and decided requests up to its bound; the latest view keeps everything', () => {
    // Each revision of a: 2 triples and 2 metadata quads; the request: 1 quad. The latest revision is outside the bound: it is the object's graph.
    const replica = new ReplicaStore(10);
    const request = 'http://replica.test/action-requests/r1';
    const requestLine = `<${request}> <${P}> "decided" <${request}> .\n`;
    replica.applyRecords([created('a', ['v1']), { insert: requestLine, delete: '' }]);
    expect(select(replica, 'audit', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['decided']);
    expect(history(replica)).to.deep.equal([`${rev('a', 1)},1,2`]);
    // Decided: the hot store lets it go, its record carries its final content for the archive (and the window).
    replica.applyRecords([
      { insert: `#A ${requestLine}`, delete: requestLine },
      changed('a', 2, ['v1'], ['v2']),
      changed('a', 3, ['v2'], ['v3']),
    ]);
    expect(history(replica)).to.deep.equal([`${rev('a', 1)},1,2`, `${rev('a', 2)},2,2`, `${rev('a', 3)},3,2`]);
    expect(select(replica, 'audit', `SELECT ?g ?v WHERE { GRAPH ?g { ?s <${P}> ?v } }`)).to.deep.equal([
      `${request},decided`,
    ]);
    expect(select(replica, 'audit', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['decided']);
    replica.applyRecords([changed('a', 4, ['v3'], ['v4'])]);
    expect(history(replica)).to.deep.equal([`${rev('a', 2)},2,2`, `${rev('a', 3)},3,2`, `${rev('a', 4)},4,2`]);
    expect(select(replica, 'audit', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal([]);
    expect(select(replica, 'audit', `SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } }`)).to.deep.equal([]);
    expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['KGM', 'v4']);
  });

  it("the revisions view names the latest revision as the others: by variable, by name, in a dataset; SELECT * shows only the query's variables", () => {
    const replica = new ReplicaStore(1_000_000);
    replica.applyRecords([created('a', ['a1']), changed('a', 2, ['a1'], ['a2'])]);
    expect(select(replica, 'revisions', `SELECT ?g ?v WHERE { GRAPH ?g { <${BASE}a> <${P}> ?v } }`)).to.deep.equal([
      `${rev('a', 1)},a1`,
      `${rev('a', 2)},a2`,
    ]);
    expect(
      select(replica, 'revisions', `SELECT ?v WHERE { GRAPH <${rev('a', 2)}> { <${BASE}a> <${P}> ?v } }`),
    ).to.deep.equal(['a2']);
    // The object's own name is not a graph of the revisions view.
    expect(select(replica, 'revisions', `SELECT ?v WHERE { GRAPH <${BASE}a> { ?s ?p ?v } }`)).to.deep.equal([]);
    const { body } = replica.run({
      kind: 'query',
      view: 'revisions',
      form: 'SELECT',
      text: `SELECT * WHERE { GRAPH ?g { <${BASE}a> <${P}> ?v } }`,
      format: 'csv',
      maxRows: 10,
    });
    expect(body.split('\r\n')[0].split(',').sort()).to.deep.equal(['g', 'v']);
    const dataset = (graphs: string[]) => ({ default: graphs, named: graphs });
    expect(
      select(replica, 'revisions', `SELECT ?v WHERE { <${BASE}a> <${P}> ?v }`, dataset([rev('a', 2)])),
    ).to.deep.equal(['a2']);
    expect(
      select(replica, 'revisions', `SELECT ?g ?v WHERE { GRAPH ?g { <${BASE}a> <${P}> ?v } }`, dataset([rev('a', 2)])),
    ).to.deep.equal([`${rev('a', 2)},a2`]);
    expect(
      select(replica, 'revisions', `SELECT ?g ?v WHERE { GRAPH ?g { <${BASE}a> <${P}> ?v } }`, dataset([rev('a', 1)])),
    ).to.deep.equal([`${rev('a', 1)},a1`]);
  });

  it('a window of 0 quads keeps no history: the latest view as ever, the revisions view empty', () => {
    const replica = new ReplicaStore(0);
    replica.applyRecords([created('a', ['v1']), changed('a', 2, ['v1'], ['v2'])]);
    expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['KGM', 'v2']);
    expect(history(replica)).to.deep.equal([]);
    expect(select(replica, 'revisions', `SELECT ?g WHERE { GRAPH ?g { ?s ?p ?o } }`)).to.deep.equal([]);
  });

  it('a copy (metadata, hot graphs, then history newest first) answers as the records that wrote it', () => {
    const fed = new ReplicaStore(1_000_000);
    fed.applyRecords([created('a', ['a1']), changed('a', 2, ['a1'], ['a2']), created('b', ['b1'])]);
    const copied = new ReplicaStore(1_000_000);
    copied.copyMeta(metaLines('a', 1) + metaLines('a', 2) + metaLines('b', 1));
    copied.copyHot(valueLine('a', 'a2') + KGM('a') + valueLine('b', 'b1') + KGM('b'));
    // The archive's history: only what is before each object's latest revision is taken.
    copied.copyHistory([revision('a', 2, ['a2']), revision('a', 1, ['a1']), revision('b', 1, ['b1'])]);
    copied.copied();
    for (const view of ['latest', 'revisions'] as const) {
      const query = `SELECT ?g ?s ?v WHERE { { ?s <${P}> ?v } UNION { GRAPH ?g { ?s <${P}> ?v } } }`;
      expect(select(copied, view, query), view).to.deep.equal(select(fed, view, query));
    }
    expect(history(copied)).to.deep.equal(history(fed));
    // Then fed as the other: the same again.
    for (const replica of [fed, copied])
      replica.applyRecords([changed('a', 3, ['a2'], ['a3']), changed('b', 2, ['b1'], ['b2'])]);
    expect(history(copied)).to.deep.equal(history(fed));
  });

  it('commits made while a copy runs: an object copied after them holds their result, its earlier revisions come from the archive, whole as they were', () => {
    const fed = new ReplicaStore(1_000_000);
    const records = [
      created('a', ['a1']),
      changed('a', 2, ['a1'], ['a2']),
      changed('a', 3, ['a2'], ['a3']),
      changed('a', 4, ['a3'], ['a4']),
    ];
    fed.applyRecords(records);
    const copied = new ReplicaStore(1_000_000);
    // The copy began at revision 1; revisions 2 and 3 were written before the object's graph was copied, 4 after.
    copied.copyMeta(metaLines('a', 1));
    copied.applyRecords([records[1]]);
    copied.applyRecords([records[2]]);
    copied.copyHot(valueLine('a', 'a3') + KGM('a'));
    copied.applyRecords([records[3]]);
    // The archive, read last, holds every revision: what the replica holds already is not taken again.
    copied.copyHistory([revision('a', 3, ['a3']), revision('a', 2, ['a2']), revision('a', 1, ['a1'])]);
    copied.copied();
    expect(history(copied)).to.deep.equal(history(fed));
    for (const n of [1, 2, 3, 4]) {
      const query = `SELECT ?v WHERE { GRAPH <${rev('a', n)}> { ?s <${P}> ?v } }`;
      expect(select(copied, 'revisions', query), `revision ${n}`)
        .to.deep.equal(select(fed, 'revisions', query))
        .and.to.include(`a${n}`);
    }
  });

  it('an explicit dataset sees only the graphs of its view', () => {
    const replica = new ReplicaStore(1_000_000);
    replica.applyRecords([created('a', ['a1']), changed('a', 2, ['a1'], ['a2'])]);
    const dataset = (graphs: string[]) => ({ default: graphs, named: graphs });
    expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`, dataset([rev('a', 1)]))).to.deep.equal([]);
    expect(
      select(replica, 'revisions', `SELECT ?v WHERE { <${BASE}a> <${P}> ?v }`, dataset([rev('a', 1)])),
    ).to.deep.equal(['a1']);
    expect(
      select(replica, 'revisions', `SELECT ?v WHERE { <${BASE}a> <${P}> ?v }`, dataset([`${BASE}a`])),
    ).to.deep.equal([]);
    expect(
      select(
        replica,
        'latest',
        `SELECT ?g ?v WHERE { GRAPH ?g { <${BASE}a> <${P}> ?v } }`,
        dataset([rev('a', 1), `${BASE}a`]),
      ),
    ).to.deep.equal([`${BASE}a,a2`]);
  });

  it('scopes every GRAPH pattern, also nested ones, and leaves other queries as they are', () => {
    const plain = 'SELECT * WHERE { ?s ?p ?o }';
    expect(scopedToView(plain, 'latest')).to.equal(plain);
    const nested = scopedToView(
      'SELECT * WHERE { OPTIONAL { GRAPH ?g { ?s ?p ?o } } FILTER NOT EXISTS { GRAPH <urn:g> { ?s ?p 1 } } }',
      'events',
    );
    expect(nested.match(/urn:onerecord:replica:view:events/g)).to.have.length(2);
  });
});

/** A record as the journal hands it over: its two parts are views of one buffer (the deletions, then the insertions). */
const bytes = (record: ReplicaRecord) => {
  const payload = Buffer.from(record.delete + record.insert);
  const split = Buffer.byteLength(record.delete);
  return { delete: payload.subarray(0, split), insert: payload.subarray(split) };
};
const noHistory = (hotGraphs: string[] = []) => ({
  meta: '',
  hotGraphs: () => hotGraphs,
  history: [][Symbol.iterator](),
});
/** The journal record creating `object` with `triples` triples. */
const createdWith = (object: string, triples: number) =>
  bytes({
    insert:
      Array.from(
        { length: triples },
        (_, i) => `<${BASE}${object}> <${P}${i}> "value ${i}" <${BASE}${object}> .\n`,
      ).join('') + metaLines(object, 1),
    delete: '',
  });
const options = { timeBudgetMs: 30_000, maxRows: 1000, historyMaxQuads: 1_000_000, log: () => {} };

describe('SPARQL query replica: fed from the after-commit stream, bounded wait for freshness', function () {
  this.timeout(60_000);
  let replica: QueryReplica;
  let patient: QueryReplica;
  /** How long after its commit the patient replica had applied each commit. */
  const visible: number[] = [];
  const logged: string[] = [];
  const source: ReplicaSource = { copy: () => noHistory(), graphNTriples: () => '' };
  const count = async (of = replica) => {
    const result = await of.run({
      query: replica.parse(`SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s ?p ?o }`),
      view: 'latest',
      format: 'csv',
    });
    return { objects: Number(result.body.split('\r\n')[1]), lag: result.lag };
  };

  before(async () => {
    replica = new QueryReplica(source, { ...options, freshnessWaitMs: 50 });
    // Waits far longer than any machine takes: its answers must show every commit before them.
    patient = new QueryReplica(source, {
      ...options,
      freshnessWaitMs: 60_000,
      observeVisible: (seconds) => visible.push(seconds),
      log: (message) => logged.push(message),
    });
    for (const loading of [replica, patient]) expect((await count(loading)).objects).to.equal(0);
  });
  after(() => Promise.all([replica.close(), patient.close()]));

  it('a query sees every commit published before it, in one batch or several', async () => {
    for (let i = 0; i < 300; i++) for (const of of [replica, patient]) of.onCommitted(createdWith(`burst-${i}`, 5));
    expect(await count(patient)).to.deep.equal({ objects: 300, lag: { commits: 0, millis: 0 } });
    // Each commit's time to visible is told once, when the worker reports it applied.
    expect(visible).to.have.length(300);
    for (const seconds of visible) expect(seconds).to.be.at.least(0).and.below(60);
    expect(logged, 'every batch reached the worker: none was copied again').to.deep.equal([]);
    // The one that waits 50 ms at most: whatever it shows, it says how many commits it does not.
    const result = await count(replica);
    expect(result.objects + result.lag.commits).to.equal(300);
  });

  it('a query waits at most freshnessWaitMs for the replica, then answers from what it holds and says how far behind', async () => {
    // A commit the worker takes a long while to load (far longer than the 50 ms wait), then more small ones queued behind it than one batch holds.
    replica.onCommitted(createdWith('large', 100_000));
    for (let i = 0; i < 300; i++) replica.onCommitted(createdWith(`small-${i}`, 1));
    const asked = Date.now();
    const behind = await count();
    expect(behind.objects, 'the 300 before, the large commit, not the small ones').to.equal(301);
    expect(behind.lag.commits).to.equal(300);
    expect(behind.lag.millis)
      .to.be.at.least(Date.now() - asked - 1000)
      .and.at.most(Date.now() - asked + 1000);
    const caughtUp = await count();
    expect(caughtUp).to.deep.equal({ objects: 601, lag: { commits: 0, millis: 0 } });
  });

  it('a query behind no more than one batch has it sent at once, and runs after it without waiting for the worker to say so', async () => {
    const eager = new QueryReplica(source, { ...options, freshnessWaitMs: 0 });
    try {
      await count(eager);
      // The large one is being applied; the small one would wait for it to be sent as the next batch.
      eager.onCommitted(createdWith('large', 100_000));
      eager.onCommitted(createdWith('small', 1));
      expect(await count(eager)).to.deep.equal({ objects: 2, lag: { commits: 0, millis: 0 } });
    } finally {
      await eager.close();
    }
  });
});

/** The nice value of each thread of this process (Linux). */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      // Fields after the command's closing parenthesis: state is the 3rd field of the line, nice the 19th.
      const fields = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
      nices.set(Number(tid), Number(fields[16]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return nices;
}

/** Whether this process may raise a thread's CPU priority back (CAP_SYS_NICE, or an RLIMIT_NICE that allows nice 0). */
function mayRaisePriority(): boolean {
  const effective = BigInt(`0x${/^CapEff:\s*([0-9a-f]+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]}`);
  const CAP_SYS_NICE = 23n;
  const niceLimit = /^Max nice priority\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return ((effective >> CAP_SYS_NICE) & 1n) === 1n || Number(niceLimit?.[1] ?? 0) >= 20;
}

describe('SPARQL query replica: CPU priority of its worker thread', function () {
  this.timeout(60_000);

  it("applies writes at the server's priority and runs queries at the lowest, back to the server's for the writes after", async () => {
    const before = threadNices();
    const own = before.get(Number(readlinkSync('/proc/thread-self').split('/').pop()))!;
    const logged: string[] = [];
    let applied = 0;
    const replica = new QueryReplica(
      { copy: () => noHistory(), graphNTriples: () => '' },
      { ...options, freshnessWaitMs: 60_000, observeVisible: () => applied++, log: (m) => logged.push(m) },
    );
    /** The threads started since the replica was made (its worker's among them), by nice value. */
    const newThreads = () => [...threadNices()].filter(([tid]) => !before.has(tid));
    const appliedAll = async (count: number) => {
      for (let tries = 0; applied < count; tries++) {
        expect(tries, 'commits applied within 30 s').to.be.below(3000);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    try {
      replica.onCommitted(createdWith('first', 5));
      await appliedAll(1);
      expect(
        newThreads()
          .map(([, nice]) => nice)
          .filter((nice) => nice !== own),
        'while applying writes',
      ).to.deep.equal([]);
      await replica.run({ query: replica.parse('ASK { ?s ?p ?o }'), view: 'latest', format: 'json' });
      const lowered = newThreads().filter(([, nice]) => nice === 19);
      expect(lowered, 'after a query: its worker thread at the lowest priority').to.have.length(1);
      replica.onCommitted(createdWith('second', 5));
      await appliedAll(2);
      const worker = lowered[0][0];
      if (mayRaisePriority()) {
        expect(threadNices().get(worker), 'applying writes again').to.equal(own);
        expect(logged).to.deep.equal([]);
      } else {
        expect(threadNices().get(worker), 'may not raise it back').to.equal(19);
        expect(logged.join('\n')).to.match(/may not raise its CPU priority again after a query/);
      }
    } finally {
      await replica.close();
    }
  });
});

describe('SPARQL query replica: copies of the store', function () {
  this.timeout(60_000);
  const copiedGraph = `${BASE}copied`;
  const hotSource = (history: () => Iterator<string> = () => [][Symbol.iterator]()): ReplicaSource => ({
    // The latest revision is 5001: the archive's history is what came before.
    copy: () => ({
      meta: `<${copiedGraph}?revision=5001> <urn:onerecord:store:revisionOf> <${copiedGraph}> ${META} .\n`,
      hotGraphs: () => [copiedGraph],
      history: history(),
    }),
    graphNTriples: () => `<${copiedGraph}> <${P}> "from the store" .\n`,
  });

  it('a backlog past its bound replaces the worker by one that copies the store, and answers from that copy', async () => {
    const logged: string[] = [];
    const replica = new QueryReplica(hotSource(), {
      ...options,
      freshnessWaitMs: 60_000,
      maxBacklogBytes: 100_000,
      log: (m) => logged.push(m),
    });
    try {
      const query = {
        query: replica.parse(`SELECT ?v WHERE { <${copiedGraph}> <${P}> ?v }`),
        view: 'latest' as const,
        format: 'csv' as const,
      };
      await replica.run(query);
      // The first goes to the worker; the next ones wait for it to be done with it, and pass the bound.
      for (let i = 0; i < 20; i++) replica.onCommitted(createdWith(`behind-${i}`, 100));
      expect(logged.join('\n')).to.match(/commits behind; a new one copies the store/);
      const result = await replica.run(query);
      expect(result.body.split('\r\n')[1]).to.equal('from the store');
      expect(result.lag.commits).to.equal(0);
    } finally {
      await replica.close();
    }
  });

  it('commits made while the copy runs reach the worker between its parts: an object whose graph is read after two of its revisions keeps each revision whole', async () => {
    const object = `${BASE}raced`;
    let latest = 1;
    let replica: QueryReplica | undefined;
    const source: ReplicaSource = {
      // The archive is read after the graphs: it holds what was written meanwhile.
      copy: () => ({
        meta: metaLines('raced', 1),
        hotGraphs: () => [object],
        history: (function* () {
          for (let n = latest; n >= 1; n--) yield revision('raced', n, [`raced ${n}`]);
        })(),
      }),
      graphNTriples: () => {
        // Revisions 2 and 3 are committed after the copy began, before the object's graph is read.
        for (; latest < 3; latest++)
          replica!.onCommitted(bytes(changed('raced', latest + 1, [`raced ${latest}`], [`raced ${latest + 1}`])));
        return `<${object}> <${P}> "raced 3" .\n<http://replica.test/code#KGM> <${P}> "KGM" .\n`;
      },
    };
    replica = new QueryReplica(source, { ...options, freshnessWaitMs: 60_000 });
    try {
      for (const n of [1, 2, 3]) {
        const result = await replica.run({
          query: replica.parse(`SELECT ?v WHERE { GRAPH <${rev('raced', n)}> { ?s <${P}> ?v } } ORDER BY ?v`),
          view: 'revisions',
          format: 'csv',
        });
        expect(result.body.split('\r\n').slice(1).filter(Boolean), `revision ${n}`).to.deep.equal([
          'KGM',
          `raced ${n}`,
        ]);
      }
    } finally {
      await replica.close();
    }
  });

  it('a replica whose memory cannot take what it is fed stops there: queries are refused with 503 saying why, and it is not copied again', async () => {
    const logged: string[] = [];
    // The whole 4 GiB kept free for queries: the copy's first part does not fit.
    const replica = new QueryReplica(hotSource(), {
      ...options,
      freshnessWaitMs: 60_000,
      queryReserveBytes: 2 ** 32,
      log: (m) => logged.push(m),
    });
    try {
      let error: { status?: number; message?: string } | undefined;
      for (let tries = 0; error?.status !== 503 || !/memory is full/.test(error.message ?? ''); tries++) {
        expect(tries, 'refused for want of memory within 30 s').to.be.below(600);
        if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 50));
        error = await replica
          .run({ query: replica.parse('ASK { ?s ?p ?o }'), view: 'latest', format: 'json' })
          .then(() => undefined, toHttpError);
      }
      expect(error.message).to.match(
        /restarts with a smaller sparql.historyMaxQuads, a larger sparql.memoryLimitBytes or less data$/,
      );
      replica.onCommitted(createdWith('after-full', 3));
      expect(logged.filter((m) => /memory is full/.test(m))).to.have.length(1);
    } finally {
      await replica.close();
    }
  });

  it('a replica whose memory fills with deleted quads is copied into fresh memory by a new worker, which answers; one whose data alone passes its limit stops', async () => {
    const logged: string[] = [];
    let applied = 0;
    // 100 MB: the memory grows in steps of 64 MB, the second passes it. No reserve: the limit is the data's alone.
    const limited = {
      ...options,
      historyMaxQuads: 0,
      freshnessWaitMs: 60_000,
      queryReserveBytes: 0,
      memoryLimitBytes: 100 * 2 ** 20,
      observeVisible: () => applied++,
      log: (m: string) => logged.push(m),
    };
    /** Fed no faster than it applies (a backlog past its bound would have it copied again for that reason). */
    const paced = async (fed: number) => {
      for (let waits = 0; applied < fed - 10 && waits < 1000 && !logged.some((m) => /memory is full/.test(m)); waits++)
        await new Promise((resolve) => setTimeout(resolve, 5));
    };
    const replica = new QueryReplica(hotSource(), limited);
    const fresh = /much of it taken by deleted quads: a new query replica copies the store into fresh memory/;
    const query = {
      query: replica.parse(`SELECT ?v WHERE { <${copiedGraph}> <${P}> ?v }`),
      view: 'latest' as const,
      format: 'csv' as const,
    };
    try {
      expect((await replica.run(query)).body.split('\r\n')[1]).to.equal('from the store');
      // One object of 100 values of 1 KB, each change replacing all of them: the replica's memory fills with deleted quads.
      const values = (n: number) => Array.from({ length: 100 }, (_, i) => `${n} ${i} ${'x'.repeat(1000)}`);
      replica.onCommitted(bytes(created('churned', values(1))));
      for (let n = 2; !logged.some((m) => fresh.test(m)); n++) {
        expect(n, 'full within 2,000 changes').to.be.below(2000);
        replica.onCommitted(bytes(changed('churned', n, values(n - 1), values(n))));
        await paced(n);
      }
      expect(logged.join('\n')).not.to.match(/commits behind/);
      const result = await replica.run(query);
      expect(result.body.split('\r\n')[1], 'the copy of the store, in a new worker').to.equal('from the store');
      expect(result.lag.commits).to.equal(0);
    } finally {
      await replica.close();
    }
    // Data that does not fit without any deletion: not copied again (it would fill up again); queries are refused.
    logged.length = 0;
    applied = 0;
    const overfull = new QueryReplica(hotSource(), limited);
    try {
      expect((await overfull.run(query)).body.split('\r\n')[1]).to.equal('from the store');
      for (let n = 1; !logged.some((m) => /memory is full/.test(m)); n++) {
        expect(n, 'full within 2,000 objects').to.be.below(2000);
        overfull.onCommitted(
          bytes(
            created(
              `kept-${n}`,
              Array.from({ length: 100 }, (_, i) => `${i} ${'x'.repeat(1000)}`),
            ),
          ),
        );
        await paced(n);
      }
      expect(logged.join('\n')).not.to.match(fresh);
      const error = await overfull.run(query).then(() => undefined, toHttpError);
      expect(error?.status).to.equal(503);
      expect(error?.message).to.match(/of the 100 MB it may take/);
    } finally {
      await overfull.close();
    }
  });

  it('copies the store in a turn after the one it starts in (a starting server serves first); a commit made in between is in the copy, once', async () => {
    const graphs = new Map<string, string>();
    let meta = '';
    let copies = 0;
    const source: ReplicaSource = {
      copy: () => {
        copies++;
        return { meta, hotGraphs: () => [...graphs.keys()], history: [][Symbol.iterator]() };
      },
      graphNTriples: (graph) => graphs.get(graph) ?? '',
    };
    const replica = new QueryReplica(source, { ...options, freshnessWaitMs: 60_000 });
    try {
      expect(copies, 'nothing copied in the turn the replica started in').to.equal(0);
      // A commit in that turn: the store holds it before the after-commit stream tells the replica.
      graphs.set(`${BASE}early`, `<${BASE}early> <${P}> "early" .\n`);
      meta = metaLines('early', 1);
      replica.onCommitted(bytes({ insert: valueLine('early', 'early') + metaLines('early', 1), delete: '' }));
      const result = await replica.run({
        query: replica.parse(`SELECT ?g ?v WHERE { GRAPH ?g { ?s <${P}> ?v } }`),
        view: 'latest',
        format: 'csv',
      });
      expect(result.body.split('\r\n').slice(1).filter(Boolean)).to.deep.equal([`${BASE}early,early`]);
      expect(copies).to.equal(1);
    } finally {
      await replica.close();
    }
  });

  it('a query during a long copy is answered 503 after copyWaitMs, not held until the copy ends; the history copied stops at its bound', async () => {
    let read = 0;
    const history = function* () {
      for (let n = 5000; n >= 1; n--) {
        read++;
        yield Array.from(
          { length: 50 },
          (_, i) => `<${copiedGraph}> <${P}${i}> "revision ${n}" <${copiedGraph}?revision=${n}> .\n`,
        ).join('') + metaLines('copied', n);
      }
    };
    const replica = new QueryReplica(hotSource(history), {
      ...options,
      historyMaxQuads: 52 * 1000,
      freshnessWaitMs: 50,
      copyWaitMs: 50,
    });
    try {
      const query = {
        query: replica.parse(`SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { ?g <urn:onerecord:store:revisionNumber> ?r }`),
        view: 'revisions' as const,
        format: 'csv' as const,
      };
      const error = await replica.run(query).then(() => undefined, toHttpError);
      expect(error?.status).to.equal(503);
      let answer: string | undefined;
      for (let tries = 0; answer === undefined && tries < 600; tries++) {
        answer = await replica.run(query).then(
          (r) => r.body.split('\r\n')[1],
          () => undefined,
        );
        if (answer === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(Number(answer)).to.equal(1000);
      expect(read, 'the archive is read no further than the bound').to.equal(1000);
    } finally {
      await replica.close();
    }
  });
});

describe('SPARQL query replica: handed over before its tables grow', function () {
  this.timeout(60_000);

  it('the tables grow at 7/8 of a power of two quads loaded, as measured on Oxigraph', () => {
    expect([0, 13, 14, 917_503, 917_504, 3_669_999, 3_670_016].map(nextGrowthPoint)).to.deep.equal([
      14, 14, 28, 917_504, 1_835_008, 3_670_016, 7_340_032,
    ]);
  });

  it('a replica near a long growth point says so; a copy past half of its next one grows its tables past it, with quads no view shows', () => {
    const records = Array.from({ length: 60 }, (_, i) =>
      created(
        `g${i}`,
        Array.from({ length: 20 }, (_, v) => `g${i}-${v}`),
      ),
    );
    const fed = new ReplicaStore(1_000_000, undefined, undefined, 1000);
    const ahead: (number | undefined)[] = [];
    for (const record of records) {
      fed.applyRecords([record]);
      ahead.push(fed.growthAhead());
    }
    // 60 records of 47 quads each: 21 triples in their graph and in the union, two of metadata, the link to the latest revision, two memberships (latest and events views).
    expect(fed.loadedQuads).to.equal(60 * 47);
    const point = nextGrowthPoint(fed.loadedQuads);
    expect(point).to.equal(3584);
    expect(ahead.filter((p) => p === point)).to.have.length(60 - Math.ceil((HANDOVER_AT * point) / 47) + 1);

    // Grown a sixteenth past the point, counting the quads it holds: the 60 objects share one triple in the union.
    const past = Math.ceil(point * (1 + 1 / 16));
    const padded = new ReplicaStore(1_000_000, undefined, undefined, 1000);
    padded.applyRecords(records);
    padded.copied();
    const held = padded.size;
    expect(held).to.equal(60 * 47 - 59);
    const quads = padded.growPastNextPoint()?.quads;
    expect(quads).to.equal(past + 1 - held);
    expect(padded.loadedQuads).to.equal(60 * 47 + quads!);
    expect(padded.size, 'the quads it holds, no more').to.equal(held);
    expect(padded.growthAhead(), 'a whole half of the next point ahead').to.equal(undefined);
    // What each view shows is what the replica without those quads shows.
    for (const view of ['latest', 'events', 'revisions', 'audit'] as const) {
      for (const text of ['SELECT ?s ?p ?o WHERE { ?s ?p ?o }', 'SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }'])
        expect(select(padded, view, text), `${view}: ${text}`).to.deep.equal(select(fed, view, text));
    }
    // A successor grows its tables past the point the replica it takes over from was near, however small its copy.
    const successor = new ReplicaStore(1_000_000, undefined, undefined, 1000);
    successor.applyRecords(records.slice(0, 4));
    expect(successor.growPastNextPoint(point)).to.deep.equal({ point, quads: past + 1 - (4 * 47 - 3), grown: true });
    // A copy whose memory could not take the quads that grow its tables does not ask for another copy for that point (it would not fit either).
    class ShortOfRoom extends ReplicaStore {
      override canTake(): boolean {
        return false;
      }
    }
    const short = new ShortOfRoom(1_000_000, undefined, undefined, 1000);
    short.applyRecords(records);
    expect(short.growthAhead()).to.equal(point);
    expect(short.growPastNextPoint()).to.deep.equal({ point, quads: past + 1 - held, grown: false });
    expect(short.growthAhead()).to.equal(undefined);
    // Below the long growth points, nothing is said nor grown.
    const small = new ReplicaStore(1_000_000);
    small.applyRecords(records);
    expect(small.growthAhead()).to.equal(undefined);
    expect(small.growPastNextPoint()).to.equal(undefined);
  });

  it('a copy fed commits while it came in grows its tables past the point for certain, though a part of it read after them held their quads again', () => {
    const records = Array.from({ length: 60 }, (_, i) =>
      created(
        `g${i}`,
        Array.from({ length: 20 }, (_, v) => `g${i}-${v}`),
      ),
    );
    const point = 7168;
    const successor = new ReplicaStore(1_000_000, undefined, undefined, 1000);
    successor.applyRecords(records);
    // The objects' graphs, read from the hot store after those commits: the same quads once more.
    const graphLines = records.flatMap((r) =>
      r.insert.split('\n').filter((line) => line && !line.endsWith(`${META} .`)),
    );
    successor.copyHot(graphLines.map((line) => `${line}\n`).join(''));
    successor.copied();
    expect(successor.loadedQuads, 'counted with the quads loaded twice, still below the point').to.be.below(point);
    const grown = successor.growPastNextPoint(point);
    expect(grown?.grown).to.equal(true);
    // Oxigraph holds a quad loaded twice once: the quads held and the padding dropped take its tables past the point.
    expect(successor.size + grown!.quads).to.be.above(point);
  });

  it('near each long growth point, a successor copies the store while the replica answers, then takes over: no query refused, every commit visible', async () => {
    // The hot store: each object's triples, as the commits wrote them.
    const hot = new Map<string, string>();
    const source: ReplicaSource = {
      copy: () => ({
        meta: [...hot.keys()].map((graph) => metaLines(graph.slice(BASE.length), 1)).join(''),
        hotGraphs: () => [...hot.keys()],
        history: [][Symbol.iterator](),
      }),
      graphNTriples: (graph) => hot.get(graph) ?? '',
    };
    const logged: string[] = [];
    const replica = new QueryReplica(source, {
      ...options,
      freshnessWaitMs: 60_000,
      longGrowthFrom: 1000,
      log: (m) => logged.push(m),
    });
    const count = async () =>
      Number(
        (
          await replica.run({
            query: replica.parse('SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s ?p ?o }'),
            view: 'latest',
            format: 'csv',
          })
        ).body.split('\r\n')[1],
      );
    try {
      let objects = 0;
      const tookOver = () => logged.filter((m) => m.includes('took over')).length;
      for (let round = 0; round < 600 && tookOver() < 3; round++) {
        for (let i = 0; i < 5; i++, objects++) {
          const object = `handed-${objects}`;
          hot.set(
            `${BASE}${object}`,
            Array.from({ length: 20 }, (_, v) => `<${BASE}${object}> <${P}${v}> "value ${v}" .\n`).join(''),
          );
          replica.onCommitted(createdWith(object, 20));
        }
        expect(await count(), `round ${round}`).to.equal(objects);
      }
      expect(tookOver()).to.equal(3);
      // Each handover for a larger growth point than the one before (the one that took over last may have begun the next already).
      const points = logged
        .flatMap((m) => /near (\d+), where its tables grow; a successor copies the store/.exec(m)?.[1] ?? [])
        .map(Number);
      expect(points.length).to.be.within(3, 4);
      expect(points).to.deep.equal([...points].sort((a, b) => a - b));
      expect(new Set(points).size).to.equal(points.length);
      expect(logged.join('\n')).not.to.match(/given up|reload/);
      // The successor serves from now on, and takes the writes.
      for (let i = 0; i < 20; i++, objects++) replica.onCommitted(createdWith(`after-${i}`, 20));
      expect(await count()).to.equal(objects);
    } finally {
      await replica.close();
    }
  });
});
