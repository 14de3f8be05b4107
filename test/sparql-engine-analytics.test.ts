import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { ConfigOverrides } from '../src/config.js';
import { shippedQueries } from '../src/domain/analytics/query-files.js';
import { MAX_DATASET_GRAPHS } from '../src/store/sparql-engine/engine-dataset.js';
import { expectApiError } from './support/api-error.js';
import { authorization, delegate, grant, partner } from './support/access.js';
import { add, CARGO, change, createObject, patch, piece, str } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { startTestServer, type TestServer } from './support/server.js';
import { leaseEngine, releaseEngine, engineSettings } from './support/virtuoso.js';

// SPARQL analytics on the engine backend (store.backend sparql): what a query may see there, and
// that the shipped queries answer the same as on the embedded backend. Runs whichever backend the
// other tests use (TEST_STORE_BACKEND): these servers name theirs.

/** A server on a Virtuoso of its own, whatever TEST_STORE_BACKEND says. */
async function startEngineServer(overrides: ConfigOverrides = {}): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
  const engine = await leaseEngine(dataDir);
  const sparql = {
    ...engineSettings(engine),
  };
  const server = await startTestServer({ ...overrides, store: { backend: 'sparql', sparql } }, dataDir);
  const close = server.close.bind(server);
  server.close = async () => {
    await close();
    await releaseEngine(dataDir);
    await rm(dataDir, { recursive: true, force: true });
  };
  return server;
}

type Term = { type: string; value: string; datatype?: string; 'xml:lang'?: string };

/** Protocol parameters: a record, or pairs where a name repeats (default-graph-uri, named-graph-uri). */
type Params = Record<string, string> | [string, string][];

async function sparql(
  server: TestServer,
  query: string,
  params: Params = {},
  agent: 'holder' | 'other' = 'holder',
): Promise<Response> {
  return server.request(
    `/sparql?${new URLSearchParams([['query', query], ...(Array.isArray(params) ? params : Object.entries(params))])}`,
    { agent, headers: { Accept: 'application/sparql-results+json' } },
  );
}

async function rows(
  server: TestServer,
  query: string,
  params: Params = {},
  agent: 'holder' | 'other' = 'holder',
): Promise<Record<string, Term>[]> {
  const res = await sparql(server, query, params, agent);
  const text = await res.text();
  expect(res.status, text).to.equal(200);
  return (JSON.parse(text) as { results: { bindings: Record<string, Term>[] } }).results.bindings;
}

describe('SPARQL analytics on the engine: a query sees its dataset only', function () {
  this.timeout(60_000);
  let server: TestServer;
  let hidden: string;

  before(async () => {
    server = await startEngineServer({ sparql: { openToPartners: true } });
    hidden = await createObject(server, { ...piece(), 'cargo:goodsDescription': 'not for partners' });
    expect((await postEvent(server, hidden, eventJson())).status).to.equal(201);
  });
  after(() => server.close());

  it('a partner that names a graph it may not read, or a bookkeeping graph, in FROM, FROM NAMED, GRAPH or the protocol sees nothing of it', async () => {
    expect(await rows(server, `SELECT ?p WHERE { <${hidden}> ?p ?o }`)).to.not.deep.equal([]);
    for (const graph of [
      hidden,
      'urn:onerecord:store:meta',
      'urn:onerecord:store:events',
      'urn:onerecord:store:finished-graphs',
    ]) {
      for (const view of ['latest', 'events', 'audit']) {
        const queries = [
          `SELECT * FROM <${graph}> WHERE { ?s ?p ?o }`,
          `SELECT * FROM NAMED <${graph}> WHERE { GRAPH ?g { ?s ?p ?o } }`,
          `SELECT * WHERE { GRAPH <${graph}> { ?s ?p ?o } }`,
          'SELECT * WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }',
        ];
        for (const query of queries)
          expect(await rows(server, query, { view }, 'other'), `${query} in ${view}`).to.deep.equal([]);
        expect(
          await rows(
            server,
            'SELECT * WHERE { ?s ?p ?o }',
            { view, 'default-graph-uri': graph, 'named-graph-uri': graph },
            'other',
          ),
        ).to.deep.equal([]);
      }
    }
  });

  it("no view shows the store's bookkeeping graphs, to internal actors either (the revisions view: the revision metadata only)", async () => {
    for (const view of ['latest', 'events', 'audit', 'revisions']) {
      const graphs = (await rows(server, 'SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }', { view })).map(
        (r) => r.g.value,
      );
      expect(graphs.filter((g) => g.startsWith('urn:'))).to.deep.equal([]);
      expect(
        await rows(server, 'SELECT * WHERE { GRAPH <urn:onerecord:store:events> { ?s ?p ?o } }', { view }),
      ).to.deep.equal([]);
      expect(
        await rows(server, 'SELECT * FROM <urn:onerecord:store:outbox-positions> WHERE { ?s ?p ?o }', { view }),
      ).to.deep.equal([]);
    }
    const metadata = await rows(
      server,
      `SELECT ?n WHERE { ?g <urn:onerecord:store:revisionOf> <${hidden}> ; <urn:onerecord:store:revisionNumber> ?n }`,
      { view: 'revisions' },
    );
    expect(metadata.map((r) => r.n.value)).to.deep.equal(['1']);
  });

  it("refuses SERVICE and the engine's own functions with 400", async () => {
    await expectApiError(
      await sparql(server, 'SELECT * WHERE { SERVICE <http://127.0.0.1:1/sparql> { ?s ?p ?o } }'),
      400,
      /SERVICE is not available/,
    );
    await expectApiError(
      await sparql(server, 'SELECT (<bif:sys_stat>("st_dbms_ver") AS ?v) {}'),
      400,
      /function <bif:sys_stat> is not available/,
    );
    expect(await rows(server, 'SELECT (<http://www.w3.org/2001/XMLSchema#integer>("7") AS ?v) {}')).to.deep.equal([
      { v: { type: 'literal', value: '7', datatype: 'http://www.w3.org/2001/XMLSchema#integer' } },
    ]);
  });

  it('answers a query past the time budget with 503 sparql_timeout, as the embedded store does', async () => {
    const quick = await startEngineServer({ sparql: { timeBudgetMillis: 1000 } });
    try {
      await createObject(quick, piece(30));
      const slow = 'SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o }';
      const res = await sparql(quick, slow);
      await expectApiError(res, 503, /time budget of 1000 ms/);
      // The engine stopped it: the next query is answered at once.
      expect(await rows(quick, 'SELECT ?s WHERE { ?s ?p ?o } LIMIT 1')).to.have.length(1);
    } finally {
      await quick.close();
    }
  });
});

describe('SPARQL analytics on the engine: the whole view of an internal actor', function () {
  this.timeout(180_000);
  let server: TestServer;
  /** The latest view's graphs: the objects written. */
  const objects: string[] = [];
  let shipment: string;

  before(async () => {
    server = await startEngineServer();
    const weighed = (kg: string, description: string) => {
      const body = piece();
      (body['cargo:grossWeight'] as Record<string, unknown>)['cargo:numericalValue'] = {
        '@type': 'xsd:double',
        '@value': kg,
      };
      return { ...body, 'cargo:goodsDescription': description };
    };
    for (const [kg, description] of [
      ['20', 'A'],
      ['30.5', 'B'],
      ['5', 'C'],
    ])
      objects.push(await createObject(server, weighed(kg, description)));
    shipment = await createObject(server, {
      '@context': { cargo: CARGO },
      '@type': 'cargo:Shipment',
      'cargo:pieces': objects.map((p) => ({ '@id': p })),
    });
    objects.push(shipment);
    expect(
      (await patch(server, shipment, change(shipment, 1, [add(shipment, 'goodsDescription', str('changed'))]))).status,
    ).to.equal(201);
    expect((await postEvent(server, objects[1], eventJson())).status).to.equal(201);
  });
  after(() => server.close());

  const sorted = (bindings: Record<string, Term>[]) =>
    bindings.map((b) => JSON.stringify(Object.entries(b).sort())).sort();

  it('answers as the same graphs listed in FROM and FROM NAMED: paths across objects, OPTIONAL, NOT EXISTS, UNION, sub-selects, blank nodes, SELECT *', async () => {
    const C = `PREFIX cargo: <${CARGO}> `;
    const queries = [
      'SELECT * WHERE { ?s ?p ?o }',
      'SELECT (COUNT(DISTINCT *) AS ?n) WHERE { ?s ?p ?o }',
      `${C}SELECT ?s ?kg WHERE { ?s cargo:pieces/cargo:grossWeight/cargo:numericalValue ?kg }`,
      `${C}SELECT ?piece ?s WHERE { ?piece ^cargo:pieces ?s }`,
      `${C}SELECT ?x ?d WHERE { ?x cargo:goodsDescription|cargo:upid ?d }`,
      `${C}SELECT ?s ?d WHERE { ?s a cargo:Piece OPTIONAL { ?s cargo:goodsDescription ?d } FILTER NOT EXISTS { ?s cargo:goodsDescription "B" } }`,
      `${C}SELECT ?s ?kg WHERE { ?s cargo:grossWeight [ cargo:numericalValue ?kg ] }`,
      `${C}SELECT ?total WHERE { { SELECT (SUM(?kg) AS ?total) WHERE { ?p cargo:grossWeight/cargo:numericalValue ?kg } } }`,
      `${C}SELECT ?g ?s WHERE { { ?s a cargo:Shipment } UNION { GRAPH ?g { ?s a cargo:Piece } } }`,
      `${C}SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } VALUES ?p { cargo:goodsDescription } }`,
      `${C}SELECT ?s WHERE { ?s !cargo:goodsDescription ?o . FILTER EXISTS { ?s cargo:pieces ?p } }`,
      `${C}SELECT ?d WHERE { GRAPH <${objects[0]}> { ?s cargo:goodsDescription ?d } }`,
    ];
    // The holder's organisation is an object of the view too.
    const listed = [...objects, server.running.services.holder].flatMap((g): [string, string][] => [
      ['default-graph-uri', g],
      ['named-graph-uri', g],
    ]);
    for (const query of queries) {
      const whole = await rows(server, query);
      expect(whole.length, query).to.be.greaterThan(0);
      expect(sorted(whole), query).to.deep.equal(sorted(await rows(server, query, listed)));
    }
    // DESCRIBE: the resource's triples in the view, not those of its revisions or the store's bookkeeping.
    const described = await server.request(`/sparql?${new URLSearchParams({ query: `DESCRIBE <${shipment}>` })}`, {
      headers: { Accept: 'application/n-triples' },
    });
    const lines = (await described.text()).trim().split('\n');
    expect(lines.filter((l) => l.includes('goodsDescription'))).to.deep.equal([
      `<${shipment}> <${CARGO}goodsDescription> "changed" .`,
    ]);
  });

  it('refuses a repeated path (*, +, ?) over the whole view with 400, and answers it over named graphs', async () => {
    await expectApiError(
      await sparql(server, `SELECT ?x WHERE { ?s <${CARGO}pieces>+ ?x }`),
      400,
      /property path with \+ over the whole view/,
    );
    expect(await rows(server, `SELECT ?x WHERE { GRAPH ?g { <${shipment}> <${CARGO}pieces>* ?x } }`)).to.not.deep.equal(
      [],
    );
  });

  it("answers a view of more graphs than a query's dataset can list", async () => {
    const count = MAX_DATASET_GRAPHS + 6;
    const pieces = Array.from({ length: count }, (_, i) => ({
      '@type': 'cargo:Piece',
      'cargo:goodsDescription': `many ${i}`,
    }));
    // Two shipments: one body of them all would pass the body's triple limit.
    for (const half of [pieces.slice(0, count / 2), pieces.slice(count / 2)]) {
      const res = await server.request('/logistics-objects', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify({ '@context': { cargo: CARGO }, '@type': 'cargo:Shipment', 'cargo:pieces': half }),
      });
      expect(res.status, await res.text()).to.equal(201);
    }
    const counted = await rows(
      server,
      `SELECT (COUNT(*) AS ?n) WHERE { ?p <${CARGO}goodsDescription> ?d FILTER STRSTARTS(?d, "many ") }`,
    );
    expect(counted[0].n.value).to.equal(String(count));
    // The revisions view too: revision 1 of every object (the holder's organisation's too), and the first shipment's second.
    const revisions = await rows(
      server,
      'SELECT (COUNT(*) AS ?n) WHERE { ?g <urn:onerecord:store:revisionNumber> ?r }',
      { view: 'revisions' },
    );
    expect(revisions[0].n.value).to.equal(String(count + 2 + objects.length + 2));
  });
});

describe('the shipped queries answer the same on both backends', function () {
  this.timeout(120_000);
  const servers: { embedded?: TestServer; engine?: TestServer } = {};
  /** Per server, its IRIs of the objects written, by a name the same on both. */
  const names = new Map<TestServer, Map<string, string>>();

  /** The same data through the API: shipments of weighed pieces, a change, events, delegations and grants. */
  async function populate(server: TestServer): Promise<void> {
    const named = new Map<string, string>();
    const object = async (name: string, body: Record<string, unknown>) => {
      const iri = await createObject(server, body);
      named.set(iri, name);
      return iri;
    };
    const weighed = (kg: number, description: string) => {
      const body = piece();
      (body['cargo:grossWeight'] as Record<string, unknown>)['cargo:numericalValue'] = {
        '@type': 'xsd:double',
        '@value': String(kg),
      };
      return { ...body, 'cargo:goodsDescription': description };
    };
    const [a, b, c] = [
      await object('pieceA', weighed(20, 'A')),
      await object('pieceB', weighed(30.5, 'B')),
      await object('pieceC', weighed(5, 'C')),
    ];
    const shipment = (pieces: string[]) => ({
      '@context': { cargo: CARGO },
      '@type': 'cargo:Shipment',
      'cargo:pieces': pieces.map((p) => ({ '@id': p })),
    });
    const first = await object('first', shipment([a, b]));
    const second = await object('second', shipment([c]));
    expect(
      (await patch(server, first, change(first, 1, [add(first, 'goodsDescription', str('two pieces'))]))).status,
    ).to.equal(201);
    for (const [on, code, day] of [
      [a, 'DEP', '2024-05-01'],
      [a, 'ARR', '2024-05-02'],
      [b, 'DEP', '2024-05-01'],
      [c, 'FOH', '2024-05-02'],
    ]) {
      expect((await postEvent(server, on, eventJson({ code, eventDate: `${day}T10:00:00Z` }))).status).to.equal(201);
    }
    await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT', 'GET_LOGISTICS_EVENT'],
      for: partner('airline'),
      objects: [a, b],
    });
    await delegate(server, 'holder', {
      permissions: ['PATCH_LOGISTICS_OBJECT'],
      for: partner('airline'),
      objects: [first],
    });
    await grant(server, authorization(partner('handler'), [`${c}/logistics-events`], ['Append']));
    await grant(server, authorization(undefined, [second], ['Read']));
    const revoked = await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: partner('trucker'),
      objects: [a],
    });
    expect((await server.request(revoked, { method: 'DELETE' })).status).to.equal(204);
    named.set(server.running.services.holder, 'holder');
    names.set(server, named);
  }

  /**
   * The answer with the server's own IRIs named alike, the times of writes (which differ) left
   * out, and GROUP_CONCAT's parts sorted (SPARQL leaves their order to the engine).
   */
  function comparable(server: TestServer, bindings: Record<string, Term>[]): string[] {
    const named = names.get(server)!;
    return bindings.map((row) => {
      const { lastChange: _written, ...rest } = row;
      if (rest.permissions)
        rest.permissions = { ...rest.permissions, value: rest.permissions.value.split(' ').sort().join(' ') };
      return JSON.stringify(rest, (_key, value: unknown) =>
        typeof value === 'string' ? (named.get(value) ?? value.replaceAll(server.url, 'BASE')) : value,
      );
    });
  }

  before(async () => {
    servers.embedded = await startTestServer({ store: { backend: 'embedded' } });
    servers.engine = await startEngineServer();
    await populate(servers.embedded);
    await populate(servers.engine);
  });
  after(async () => {
    await servers.embedded?.close();
    await servers.engine?.close();
  });

  for (const query of shippedQueries()) {
    it(`${query.name} (${query.view})`, async () => {
      const [embedded, engine] = [servers.embedded!, servers.engine!];
      const onEmbedded = comparable(embedded, await rows(embedded, query.text, { view: query.view }));
      const onEngine = comparable(engine, await rows(engine, query.text, { view: query.view }));
      expect(onEmbedded.length).to.be.greaterThan(0);
      // Objects changed within the same millisecond may come in either order.
      if (query.name === 'changed-last-24h') expect(onEngine.sort()).to.deep.equal(onEmbedded.sort());
      else expect(onEngine).to.deep.equal(onEmbedded);
    });
  }
});
