import { expect } from 'chai';
import { literal, namedNode, quad, type Quad } from '../src/rdf/terms.js';
import { QueryReplica, type QueryJob, type ReplicaCommit } from '../src/store/query-replica.js';
import { ReplicaStore, scopedToView } from '../src/store/replica-store.js';
import type { View } from '../src/store/replica-layout.js';
import { store as bookkeeping } from '../src/rdf/vocab.js';

const BASE = 'http://replica.test/logistics-objects/';
const P = 'http://replica.test/p';
const rev = (object: string, n: number) => `${BASE}${object}?revision=${n}`;

/** A commit writing revision `n` of `object` with `values` (plus a triple every object shares) and its metadata. */
function revision(object: string, n: number, values: string[]): ReplicaCommit {
  const g = `<${rev(object, n)}>`;
  const lines = values.map((v) => `<${BASE}${object}> <${P}> "${v}" ${g} .\n`);
  lines.push(`<http://replica.test/code#KGM> <${P}> "KGM" ${g} .\n`);
  lines.push(`${g} <urn:onerecord:store:revisionNumber> "${n}"^^<http://www.w3.org/2001/XMLSchema#integer> <${bookkeeping.metaGraph}> .\n`);
  return { insert: lines.join(''), delete: '' };
}

const event = (object: string, id: string): ReplicaCommit => ({ insert: `<${BASE}${object}/logistics-events/${id}> <${P}> "event ${id}" <${BASE}${object}/logistics-events/${id}> .\n`, delete: '' });
const grantGraph = 'http://replica.test/internal/acl/g1';
const grantLine = `<${grantGraph}> <${P}> "granted" <${grantGraph}> .\n`;

function select(replica: ReplicaStore, view: View, text: string, dataset?: QueryJob['dataset']): string[] {
  const { body } = replica.run({ kind: 'query', view, form: 'SELECT', text, format: 'csv', maxRows: 1000, dataset });
  return body.split('\r\n').slice(1).filter(Boolean).sort();
}

describe('SPARQL replica store: one store for every view', () => {
  it('latest shows each object\'s newest revision, whatever order revisions arrive in and however they are batched', () => {
    for (const batches of [
      [[revision('a', 1, ['a1']), revision('a', 2, ['a2'])], [revision('b', 1, ['b1'])], [revision('a', 3, ['a3'])]],
      [[revision('a', 1, ['a1']), revision('a', 2, ['a2']), revision('b', 1, ['b1']), revision('a', 3, ['a3'])]],
      // A copy of the store taken while commits went on, then those commits again.
      [[revision('a', 3, ['a3']), revision('a', 1, ['a1']), revision('b', 1, ['b1'])], [revision('a', 2, ['a2']), revision('a', 3, ['a3'])]],
    ]) {
      const replica = new ReplicaStore();
      for (const batch of batches) replica.applyCommits(batch);
      expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['KGM', 'a3', 'b1']);
      expect(select(replica, 'latest', `SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }`)).to.deep.equal([rev('a', 3), rev('b', 1)]);
      expect(select(replica, 'revisions', `SELECT ?g ?v WHERE { GRAPH ?g { <${BASE}a> <${P}> ?v } }`).length).to.equal(3);
      expect(select(replica, 'revisions', `SELECT ?n WHERE { ?g <urn:onerecord:store:revisionNumber> ?n }`)).to.deep.equal(['1', '1', '2', '3']);
    }
  });

  it('a triple two latest revisions share stays in the latest view until neither holds it', () => {
    const replica = new ReplicaStore();
    replica.applyCommits([revision('a', 1, ['a1']), revision('b', 1, ['b1'])]);
    // Revision 2 of a no longer holds the shared triple; b's latest still does.
    replica.applyCommits([{ insert: `<${BASE}a> <${P}> "a2" <${rev('a', 2)}> .\n`, delete: '' }]);
    expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['KGM', 'a2', 'b1']);
    replica.applyCommits([{ insert: `<${BASE}b> <${P}> "b2" <${rev('b', 2)}> .\n`, delete: '' }]);
    expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['a2', 'b2']);
  });

  it('events, audit and their deletions; bookkeeping graphs stay out', () => {
    const replica = new ReplicaStore();
    replica.applyCommits([
      revision('a', 1, ['a1']),
      event('a', 'e1'),
      { insert: grantLine + `<urn:x> <${P}> "bookkeeping" <${bookkeeping.eventsGraph}> .\n`, delete: '' },
    ]);
    expect(select(replica, 'events', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['KGM', 'a1', 'event e1']);
    expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['KGM', 'a1']);
    expect(select(replica, 'audit', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['granted']);
    expect(select(replica, 'events', `SELECT ?g WHERE { GRAPH ?g { ?s <${P}> "event e1" } }`)).to.deep.equal([`${BASE}a/logistics-events/e1`]);
    // Deleted, then written again in a later commit of the same batch: present.
    replica.applyCommits([{ insert: '', delete: grantLine }]);
    expect(select(replica, 'audit', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal([]);
    replica.applyCommits([{ insert: grantLine, delete: '' }, { insert: '', delete: grantLine }, { insert: grantLine, delete: '' }]);
    expect(select(replica, 'audit', `SELECT ?v WHERE { GRAPH ?g { ?s <${P}> ?v } }`)).to.deep.equal(['granted']);
    expect(select(replica, 'audit', `SELECT ?v WHERE { ?s <${P}> ?v }`)).to.deep.equal(['granted']);
    // Nothing of the replica's own graphs, nor of the store's bookkeeping, in any view.
    for (const view of ['latest', 'events', 'revisions', 'audit'] as const) {
      const graphs = select(replica, view, 'SELECT DISTINCT ?g WHERE { GRAPH ?g { } }');
      expect(graphs.filter((g) => g.startsWith('urn:')), view).to.deep.equal([]);
    }
  });

  it('a revision that writes a literal in another lexical form of the same value keeps it in the latest view', () => {
    const replica = new ReplicaStore();
    const weight = (n: number, value: string): ReplicaCommit => ({ insert: `<${BASE}a> <${P}> "${value}"^^<http://www.w3.org/2001/XMLSchema#double> <${rev('a', n)}> .\n`, delete: '' });
    replica.applyCommits([weight(1, '5.0'), weight(2, '5')]);
    expect(select(replica, 'latest', `SELECT ?v WHERE { <${BASE}a> <${P}> ?v }`)).to.deep.equal(['5']);
    replica.applyCommits([weight(3, '6')]);
    expect(select(replica, 'latest', `SELECT ?v WHERE { <${BASE}a> <${P}> ?v }`)).to.deep.equal(['6']);
  });

  it('an explicit dataset sees only the graphs of its view', () => {
    const replica = new ReplicaStore();
    replica.applyCommits([revision('a', 1, ['a1']), revision('a', 2, ['a2'])]);
    const dataset = (graphs: string[]) => ({ default: graphs, named: graphs });
    expect(select(replica, 'latest', `SELECT ?v WHERE { ?s <${P}> ?v }`, dataset([rev('a', 1)]))).to.deep.equal([]);
    expect(select(replica, 'revisions', `SELECT ?v WHERE { <${BASE}a> <${P}> ?v }`, dataset([rev('a', 1)]))).to.deep.equal(['a1']);
    expect(select(replica, 'latest', `SELECT ?g ?v WHERE { GRAPH ?g { <${BASE}a> <${P}> ?v } }`, dataset([rev('a', 1), rev('a', 2)]))).to.deep.equal([`${rev('a', 2)},a2`]);
  });

  it('scopes every GRAPH pattern, also nested ones, and leaves other queries as they are', () => {
    const plain = 'SELECT * WHERE { ?s ?p ?o }';
    expect(scopedToView(plain, 'latest')).to.equal(plain);
    const nested = scopedToView('SELECT * WHERE { OPTIONAL { GRAPH ?g { ?s ?p ?o } } FILTER NOT EXISTS { GRAPH <urn:g> { ?s ?p 1 } } }', 'events');
    expect(nested.match(/urn:onerecord:replica:view:events/g)).to.have.length(2);
  });
});

describe('SPARQL query replica: fed from the after-commit stream, bounded wait for freshness', function () {
  this.timeout(60_000);
  let replica: QueryReplica;
  let patient: QueryReplica;
  const source = { listGraphs: () => [], graphNTriples: () => '' };
  const graph = (object: string) => `${BASE}${object}?revision=1`;
  /** A commit creating `object` with `triples` triples. */
  const created = (object: string, triples = 1) => ({
    insert: [] as Quad[],
    delete: [] as Quad[],
    graphs: [{ graph: graph(object), triples: Array.from({ length: triples }, (_, i) => quad(namedNode(`${BASE}${object}`), namedNode(`${P}${i}`), literal(`value ${i}`))) }],
  });
  const count = async (of = replica) => {
    const result = await of.run({ query: replica.parse(`SELECT (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s ?p ?o }`), view: 'latest', format: 'csv' });
    return { objects: Number(result.body.split('\r\n')[1]), lag: result.lag };
  };

  before(async () => {
    replica = new QueryReplica(source, { timeBudgetMs: 30_000, maxRows: 1000, freshnessWaitMs: 50, log: () => {} });
    // Waits far longer than any machine takes: its answers must show every commit before them.
    patient = new QueryReplica(source, { timeBudgetMs: 30_000, maxRows: 1000, freshnessWaitMs: 60_000, log: () => {} });
    for (const loading of [replica, patient]) expect((await count(loading)).objects).to.equal(0);
  });
  after(() => Promise.all([replica.close(), patient.close()]));

  it('a query sees every commit published before it, in one batch or several', async () => {
    for (let i = 0; i < 300; i++) for (const of of [replica, patient]) of.onCommitted(created(`burst-${i}`, 5));
    expect(await count(patient)).to.deep.equal({ objects: 300, lag: { commits: 0, millis: 0 } });
    // The one that waits 50 ms at most: whatever it shows, it says how many commits it does not.
    const result = await count(replica);
    expect(result.objects + result.lag.commits).to.equal(300);
  });

  it('a query waits at most freshnessWaitMs for the replica, then answers from what it holds and says how far behind', async () => {
    // A commit the worker takes a long while to load (far longer than the 50 ms wait), then a small one queued behind it.
    replica.onCommitted(created('large', 300_000));
    replica.onCommitted(created('small'));
    const asked = Date.now();
    const behind = await count();
    expect(behind.objects, 'the 300 before, the large commit, not the small one').to.equal(301);
    expect(behind.lag.commits).to.equal(1);
    expect(behind.lag.millis).to.be.at.least(Date.now() - asked - 1000).and.at.most(Date.now() - asked + 1000);
    const caughtUp = await count();
    expect(caughtUp).to.deep.equal({ objects: 302, lag: { commits: 0, millis: 0 } });
  });
});

describe('SPARQL query replica: a backlog past its bound', function () {
  this.timeout(60_000);

  it('replaces the worker by one that copies the store, and answers from that copy', async () => {
    const stored = `${BASE}copied?revision=1`;
    const source = { listGraphs: () => [stored], graphNTriples: () => `<${BASE}copied> <${P}> "from the store" .\n` };
    const logged: string[] = [];
    const replica = new QueryReplica(source, { timeBudgetMs: 30_000, maxRows: 1000, freshnessWaitMs: 60_000, maxBacklogChars: 100_000, log: (m) => logged.push(m) });
    try {
      const value = (object: string, triples: number) => ({
        insert: [] as Quad[],
        delete: [] as Quad[],
        graphs: [{ graph: `${BASE}${object}?revision=1`, triples: Array.from({ length: triples }, (_, i) => quad(namedNode(`${BASE}${object}`), namedNode(`${P}${i}`), literal(`value ${i}`))) }],
      });
      // The first goes to the worker (it is still copying the store); the next ones wait and pass the bound.
      for (let i = 0; i < 20; i++) replica.onCommitted(value(`behind-${i}`, 100));
      expect(logged.join('\n')).to.match(/commits behind; a new one copies the store/);
      const result = await replica.run({ query: replica.parse(`SELECT ?v WHERE { <${BASE}copied> <${P}> ?v }`), view: 'latest', format: 'csv' });
      expect(result.body.split('\r\n')[1]).to.equal('from the store');
      expect(result.lag.commits).to.equal(0);
    } finally {
      await replica.close();
    }
  });
});
