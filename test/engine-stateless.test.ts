// A server process on the engine backend holds no Logistics Object it was not asked for: it starts without reading
// them and reads each from the engine (ObjectCatalog) when asked; an engine of the layout before is brought up to
// date at start. Engine suite only (TEST_STORE_BACKEND=sparql: test/engine.mocharc.json).
import { expect } from 'chai';
import type { Quad } from '../src/rdf/terms.js';
import { termToNt, tripleToNt } from '../src/rdf/terms.js';
import { EngineObjectCatalog } from '../src/store/sparql-engine/engine-object-catalog.js';
import { readEngineNTriples } from '../src/store/sparql-engine/engine-literals.js';
import { SparqlClient } from '../src/store/sparql-engine/sparql-client.js';
import { fromRevisionSubjects } from '../src/store/schema/revision-subjects.js';
import { add, CARGO, change, createObject, errorCodes, patch, readJson, statusOf, str } from './support/changes.js';
import { startTestServer, type TestServer } from './support/server.js';
import { engineClientOptions, leaseEngine } from './support/virtuoso.js';

const META = '<urn:onerecord:store:meta>';
const LATEST_REVISION = '<urn:onerecord:store:latestRevision>';
const LAYOUT_VERSION = '<urn:onerecord:store:layoutVersion>';
const LISTED = 6000;

describe('engine backend: a process keeps only the objects it is asked for', () => {
  let server: TestServer;
  let objects: string[];
  const held = () => server.running.services.objects.index.size;
  const listed = async () =>
    ((await readJson(server, '/internal/logistics-objects')).objects as { iri: string; revision: number }[]).map(
      (o) => `${o.iri} ${o.revision}`,
    );

  before(async () => {
    // The default budget: what is held is what was asked for, not what the cache can take.
    server = await startTestServer({ cache: { objectBytes: 64 * 1024 * 1024 } });
    objects = [];
    for (let i = 0; i < 5; i++) objects.push(await createObject(server));
    const changed = await patch(server, objects[0], change(objects[0], 1, [add(objects[0], 'remarks', str('one'))]));
    expect(changed.status).to.equal(201);
  });

  after(() => server.close());

  /** A client of the engine the server writes to, to change its data behind the server's back. */
  const engineClient = async () => {
    const engine = await leaseEngine(server.dataDir);
    return new SparqlClient(engineClientOptions(engine, 30_000));
  };

  it('starts holding none of them (the data holder only, which the start checks), then reads each when asked', async () => {
    const before = await listed();
    await server.stop();
    await server.restart();
    expect(held()).to.equal(1);
    expect(await listed()).to.deep.equal(before);
    expect(held()).to.equal(1);
    // A cold GET is one request to the engine: the object's record and its latest revision's triples together.
    const store = server.running.store;
    const [select, graphTriples] = [store.select.bind(store), store.graphTriples.bind(store)];
    const reads: string[] = [];
    store.select = (query: string) => {
      reads.push(query);
      return select(query);
    };
    store.graphTriples = (graph: string) => {
      reads.push(graph);
      return graphTriples(graph);
    };
    const read = await server.request(objects[0]).finally(() => Object.assign(store, { select, graphTriples }));
    expect(read.status).to.equal(200);
    expect(read.headers.get('revision')).to.equal('2');
    expect(reads).to.deep.equal([]);
    expect(held()).to.equal(2);
    const body = await read.text();
    expect(body).to.include('one');
    expect(await (await server.request(objects[0])).text()).to.equal(body);
    const next = await patch(server, objects[1], change(objects[1], 1, [add(objects[1], 'remarks', str('two'))]));
    expect(next.status, await next.clone().text()).to.equal(201);
    expect((await server.request(objects[1])).headers.get('revision')).to.equal('2');
    // Cold, a change built on an outdated revision is refused as it is when the object is held.
    await server.stop();
    await server.restart();
    const outdated = await patch(server, objects[1], change(objects[1], 1, [add(objects[1], 'remarks', str('late'))]));
    expect(outdated.status).to.equal(201);
    const request = await readJson(server, outdated.headers.get('location')!);
    expect(await statusOf(server, outdated.headers.get('location')!)).to.equal('REQUEST_REJECTED');
    expect(errorCodes(request)).to.deep.equal(['409']);
  });

  it('reads objects asked cold at once in queries they share, each answer divided to its own object', async () => {
    const client = await engineClient();
    const constructs: string[] = [];
    const catalog = new EngineObjectCatalog({
      select: (query) => client.select(query),
      construct: async (query) => {
        constructs.push(query);
        return readEngineNTriples(await client.construct(query));
      },
      update: (text) => client.update(text),
    });
    const sorted = (triples: Quad[] | undefined) =>
      triples?.map((t) => `${termToNt(t.subject)} ${termToNt(t.predicate)} ${termToNt(t.object)}`).sort();
    const answerOf = async (iri: string) => {
      const answer = await catalog.objectWithLatest(iri);
      return answer && { object: answer.object, triples: sorted(answer.triples) };
    };
    const alone = [];
    for (const object of objects) alone.push(await answerOf(object));
    expect(constructs).to.have.length(objects.length);
    expect(alone.every((answer) => answer?.triples && answer.triples.length > 0)).to.equal(true);
    constructs.length = 0;
    // Two go to the engine at once; the three asked meanwhile go together when the first comes back.
    expect(await Promise.all(objects.map(answerOf))).to.deep.equal(alone);
    expect(constructs).to.have.length(3);
    // A subject found in two of the graphs read together: neither can be divided, so both are left to a read of their
    // own graph (the server's path when an answer has no triples); the third is answered as before.
    const shared = `<${server.url}/shared-node>`;
    const [third, fourth] = [alone[2]!.object.latest.graph, alone[3]!.object.latest.graph];
    const sharedTriples = `GRAPH <${third}> { ${shared} <${CARGO}remarks> "third" } GRAPH <${fourth}> { ${shared} <${CARGO}remarks> "fourth" }`;
    await client.update(`INSERT DATA { ${sharedTriples} }`);
    try {
      const together = await Promise.all(objects.map((object) => catalog.objectWithLatest(object)));
      expect(together.map((answer) => answer?.triples !== undefined)).to.deep.equal([true, true, false, false, true]);
      expect(together.map((answer) => answer?.object)).to.deep.equal(alone.map((answer) => answer?.object));
      await server.stop();
      await server.restart();
      const cold = await Promise.all(objects.map(async (object) => (await server.request(object)).text()));
      const warm = await Promise.all(objects.map(async (object) => (await server.request(object)).text()));
      expect(cold).to.deep.equal(warm);
      expect([cold[2].includes('third'), cold[2].includes('fourth')]).to.deep.equal([true, false]);
      expect([cold[3].includes('third'), cold[3].includes('fourth')]).to.deep.equal([false, true]);
    } finally {
      await client.update(`DELETE DATA { ${sharedTriples} }`);
    }
  });

  it("brings an engine of the layouts before up to date at start: each object's mark of its latest revision", async () => {
    const before = await listed();
    const client = await engineClient();
    await client.update(
      `DELETE WHERE { GRAPH ${META} { ?o ${LATEST_REVISION} ?g } }; ` +
        `DELETE WHERE { GRAPH ${META} { ?o <urn:onerecord:store:objectRecord> ?r } }; ` +
        `DELETE WHERE { GRAPH ${META} { ${META} ${LAYOUT_VERSION} ?v } }`,
    );
    const marks = await client.select(`SELECT ?o WHERE { GRAPH ${META} { ?o ${LATEST_REVISION} ?g } }`);
    expect(marks.results.bindings).to.deep.equal([]);
    await server.stop();
    await server.restart();
    expect(await listed()).to.deep.equal(before);
    // Recorded once done: the next start does not run it again.
    const version = await client.select(`SELECT ?v WHERE { GRAPH ${META} { ${META} ${LAYOUT_VERSION} ?v } }`);
    expect(version.results.bindings.map((b) => b.v.value)).to.deep.equal(['3']);
    // Read cold, each object is found through its record again, with its latest revision.
    for (const object of objects)
      expect((await server.request(object)).headers.get('revision')).to.equal(
        object === objects[0] || object === objects[1] ? '2' : '1',
      );
    const types = (await readJson(server, '/internal/logistics-objects')).types as Record<string, number>;
    expect(types[`${CARGO}Piece`]).to.equal(5);
    // From layout 2, only the version is written: the marks are not looked for again (one taken away stays away).
    await client.update(
      `DELETE WHERE { GRAPH ${META} { <${objects[4]}> ${LATEST_REVISION} ?g } }; ` +
        `DELETE WHERE { GRAPH ${META} { ${META} ${LAYOUT_VERSION} ?v } }; ` +
        `INSERT DATA { GRAPH ${META} { ${META} ${LAYOUT_VERSION} 2 } }`,
    );
    await server.stop();
    await server.restart();
    const upgraded = await client.select(`SELECT ?v WHERE { GRAPH ${META} { ${META} ${LAYOUT_VERSION} ?v } }`);
    expect(upgraded.results.bindings.map((b) => b.v.value)).to.deep.equal(['3']);
    const mark = await client.select(`SELECT ?g WHERE { GRAPH ${META} { <${objects[4]}> ${LATEST_REVISION} ?g } }`);
    expect(mark.results.bindings).to.deep.equal([]);
    await client.update(
      `INSERT DATA { GRAPH ${META} { <${objects[4]}> ${LATEST_REVISION} <${objects[4]}?revision=1> } }`,
    );
  });

  it('keeps each revision with embedded nodes of its own, read back as written; one of the layout before as it is', async () => {
    const client = await engineClient();
    const subjectsOf = async (graph: string) =>
      (await client.select(`SELECT DISTINCT ?s WHERE { GRAPH <${graph}> { ?s ?p ?o } }`)).results.bindings.map(
        (b) => b.s.value,
      );
    const second = `${objects[0]}?revision=2`;
    const embedded = (subjects: string[]) => subjects.filter((s) => s !== objects[0] && s !== objects[2]);
    /** Whether the graph of revision `n` has embedded nodes, each with the revision's suffix. */
    const ownNodes = async (graph: string, n: number) => {
      const nodes = embedded(await subjectsOf(graph));
      return nodes.length > 0 && nodes.every((s) => s.startsWith('internal:') && s.endsWith(`?revision=${n}`));
    };
    expect(await subjectsOf(second)).to.include(objects[0]);
    expect(await ownNodes(second, 2)).to.equal(true);
    const first = `${objects[2]}?revision=1`;
    const reads = async () =>
      Promise.all([objects[0], second, objects[2], first].map(async (iri) => (await server.request(iri)).json()));
    await server.stop();
    await server.restart();
    const cold = await reads();
    expect(cold[0]['cargo:remarks']).to.include('one');
    // The graph as an engine of the layout before holds it: the embedded nodes as the domain wrote them (read back in
    // another order: the bodies are compared as JSON).
    const triples = readEngineNTriples(
      await client.construct(`CONSTRUCT { ?s ?p ?o } WHERE { GRAPH <${first}> { ?s ?p ?o } }`),
    );
    const asWritten = fromRevisionSubjects(triples, first);
    const lines = (quads: Quad[]) => quads.map(tripleToNt).join('');
    await client.update(
      `DELETE DATA { GRAPH <${first}> { ${lines(triples)} } } ; INSERT DATA { GRAPH <${first}> { ${lines(asWritten)} } }`,
    );
    expect(embedded(await subjectsOf(first)).some((s) => s.endsWith('?revision=1'))).to.equal(false);
    await server.stop();
    await server.restart();
    expect(await reads()).to.deep.equal(cold);
    // A change on it writes its next revision in this layout.
    const next = await patch(server, objects[2], change(objects[2], 1, [add(objects[2], 'remarks', str('three'))]));
    expect(next.status, await next.clone().text()).to.equal(201);
    expect(await ownNodes(`${objects[2]}?revision=2`, 2)).to.equal(true);
    const firstAgain = await (await server.request(`${objects[2]}?revision=1`)).json();
    expect({ ...firstAgain, 'api:hasLatestRevision': 1 }).to.deep.equal(cold[3]);
  });

  it('lists thousands of objects: its head read at start of listing, pages past it from the engine', async () => {
    const client = await engineClient();
    // The metadata a revision of the engine's layout has, of objects a second apart (none has data: lists only), more
    // than the list's head holds and more than one query may name (Virtuoso refuses a few thousand IRIs in one VALUES).
    const s = 'urn:onerecord:store:';
    const holder = `${server.url}/logistics-objects/data-holder`;
    const iri = (n: number) => `${server.url}/logistics-objects/listed-${String(n).padStart(4, '0')}`;
    const at = (n: number) => new Date(Date.UTC(2020, 0, 1) + n * 1000).toISOString();
    const quads = Array.from({ length: LISTED }, (_, n) => {
      const g = `<${iri(n)}?revision=1>`;
      return `<${iri(n)}> <${s}latestRevision> ${g} ; <${s}objectRecord> "1 ${at(n)} ${holder} ${CARGO}Piece" .
        ${g} <${s}revisionOf> <${iri(n)}> ; <${s}revisionNumber> 1 ; <${s}createdBy> <${holder}> ;
        <${s}createdAt> "${at(n)}"^^<http://www.w3.org/2001/XMLSchema#dateTime> ; <${s}mostSpecificType> <${CARGO}Piece> .`;
    });
    const earlier = (await readJson(server, '/internal/logistics-objects')).total as number;
    for (let i = 0; i < LISTED; i += 1000)
      await client.update(`INSERT DATA { GRAPH ${META} { ${quads.slice(i, i + 1000).join('\n')} } }`);
    await server.stop();
    await server.restart();
    const page = async (skip: number) => {
      const list = await readJson(server, `/internal/logistics-objects?limit=3&skip=${skip}`);
      return { total: list.total, iris: (list.objects as { iri: string; creator: string }[]).map((o) => o.iri) };
    };
    // Newest first: those made through the API, then the listed ones from the latest.
    const total = earlier + LISTED;
    expect(await page(earlier)).to.deep.equal({ total, iris: [iri(LISTED - 1), iri(LISTED - 2), iri(LISTED - 3)] });
    expect(await page(total - 3)).to.deep.equal({ total, iris: [iri(2), iri(1), iri(0)] });
    const created = await createObject(server);
    expect(await page(0)).to.deep.include({ total: total + 1 });
    expect((await page(0)).iris[0]).to.equal(created);
  });
});
