import { expect } from 'chai';
import { expectApiError } from './support/api-error.js';
import { add, change, createObject, dbl, del, patch, piece } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { METRICS_TOKEN, metricSample, scrapeMetrics } from './support/metrics.js';
import { startTestServer, type TestServer } from './support/server.js';
import { PARTNER_CLIENTS, as, authorization, delegate, grant, partner, type PartnerName } from './support/access.js';

const CARGO = 'https://onerecord.iata.org/ns/cargo#';
const PREFIX = `PREFIX cargo: <${CARGO}>\n`;

interface SparqlJson {
  head: { vars: string[] };
  results: { bindings: Record<string, { type: string; value: string }[] | { type: string; value: string }>[] };
}

function sparqlGet(
  server: TestServer,
  query: string,
  params: Record<string, string | string[]> = {},
  init: RequestInit & { agent?: 'holder' | 'other' } = {},
): Promise<Response> {
  const search = new URLSearchParams({ query });
  for (const [name, value] of Object.entries(params)) for (const v of [value].flat()) search.append(name, v);
  return server.request(`/sparql?${search}`, init);
}

async function select(
  server: TestServer,
  query: string,
  params: Record<string, string | string[]> = {},
  agent: 'holder' | 'other' = 'holder',
): Promise<Record<string, string>[]> {
  const res = await sparqlGet(server, query, params, { agent, headers: { Accept: 'application/sparql-results+json' } });
  const text = await res.text();
  expect(res.status, text).to.equal(200);
  expect(res.headers.get('content-type')).to.match(/^application\/sparql-results\+json/);
  return rowsOf(text);
}

/** The rows of a SPARQL JSON answer, each variable to its value. */
function rowsOf(text: string): Record<string, string>[] {
  const body = JSON.parse(text) as { results: { bindings: Record<string, { value: string }>[] } };
  return body.results.bindings.map((b) => Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v.value])));
}

/** A 400 on the query parameter: api:Error with that title and `message` in a detail. */
async function expectQueryError(res: Response, message: RegExp): Promise<void> {
  const text = await res.text();
  expect(res.status, text).to.equal(400);
  expect(res.headers.get('content-type')).to.match(/^application\/ld\+json/);
  const body = JSON.parse(text) as Record<string, unknown>;
  expect(body['@type']).to.equal('api:Error');
  expect(body['api:hasTitle']).to.equal('Invalid query parameter request');
  expect(JSON.stringify(body['api:hasErrorDetail'])).to.match(message);
}

const descriptions = (rows: Record<string, string>[]) => rows.map((r) => r.d).sort();

describe('SPARQL endpoint', function () {
  this.timeout(60_000);
  let server: TestServer;
  let first: string;
  let second: string;

  before(async () => {
    server = await startTestServer();
    first = await createObject(server, { ...piece(), 'cargo:goodsDescription': 'first' });
    second = await createObject(server, { ...piece(), 'cargo:goodsDescription': 'second' });
  });
  after(() => server.close());

  describe('protocol', () => {
    it('answers a SELECT in the query string over the latest revisions, as SPARQL JSON by default', async () => {
      const res = await sparqlGet(server, `${PREFIX}SELECT ?s ?d WHERE { ?s cargo:goodsDescription ?d } ORDER BY ?d`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/sparql-results\+json/);
      const body = (await res.json()) as SparqlJson;
      expect(body.head.vars).to.deep.equal(['s', 'd']);
      expect(body.results.bindings.map((b) => (b.s as { value: string }).value)).to.deep.equal([first, second]);
    });

    it('takes the query as a form field and as an application/sparql-query body', async () => {
      const query = `${PREFIX}SELECT ?d WHERE { ?s cargo:goodsDescription ?d }`;
      const form = await server.request('/sparql', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'text/csv' },
        body: new URLSearchParams({ query }),
      });
      expect(form.status).to.equal(200);
      expect((await form.text()).split('\r\n').filter(Boolean).sort()).to.deep.equal(['d', 'first', 'second']);
      const direct = await server.request('/sparql', {
        method: 'POST',
        headers: { 'Content-Type': 'application/sparql-query', Accept: 'text/tab-separated-values' },
        body: query,
      });
      expect(direct.status).to.equal(200);
      expect(direct.headers.get('content-type')).to.match(/^text\/tab-separated-values/);
      expect((await direct.text()).split('\n').filter(Boolean).sort()).to.deep.equal(['"first"', '"second"', '?d']);
    });

    it('answers SELECT as SPARQL XML and ASK as JSON and XML', async () => {
      const xml = await sparqlGet(
        server,
        `${PREFIX}SELECT ?d WHERE { <${first}> cargo:goodsDescription ?d }`,
        {},
        { headers: { Accept: 'application/sparql-results+xml' } },
      );
      expect(xml.headers.get('content-type')).to.match(/^application\/sparql-results\+xml/);
      expect(await xml.text()).to.contain('<binding name="d"><literal>first</literal></binding>');
      const ask = await sparqlGet(server, `${PREFIX}ASK { <${first}> cargo:goodsDescription "first" }`);
      expect(await ask.json()).to.deep.include({ boolean: true });
      const askXml = await sparqlGet(
        server,
        `ASK { <${first}> ?p "nothing" }`,
        {},
        { headers: { Accept: 'application/sparql-results+xml' } },
      );
      expect(await askXml.text()).to.contain('<boolean>false</boolean>');
    });

    it('answers CONSTRUCT and DESCRIBE as Turtle, N-Triples or JSON-LD; 406 for a results format', async () => {
      const construct = `${PREFIX}CONSTRUCT { ?s cargo:goodsDescription ?d } WHERE { ?s cargo:goodsDescription ?d }`;
      const turtle = await sparqlGet(server, construct, {}, { headers: { Accept: 'text/turtle' } });
      expect(turtle.headers.get('content-type')).to.match(/^text\/turtle/);
      expect(await turtle.text()).to.contain(`<${first}>`);
      const nt = await sparqlGet(server, construct, {}, { headers: { Accept: 'application/n-triples' } });
      expect((await nt.text()).trim().split('\n').sort()).to.deep.equal(
        [`<${first}> <${CARGO}goodsDescription> "first" .`, `<${second}> <${CARGO}goodsDescription> "second" .`].sort(),
      );
      const jsonld = await sparqlGet(server, `DESCRIBE <${first}>`, {}, { headers: { Accept: 'application/ld+json' } });
      expect(jsonld.headers.get('content-type')).to.match(/^application\/ld\+json/);
      const nodes = (await jsonld.json()) as { '@id': string }[];
      expect(nodes.map((n) => n['@id'])).to.include(first);
      await expectApiError(await sparqlGet(server, construct, {}, { headers: { Accept: 'text/csv' } }), 406);
    });

    it('refuses updates with 400, classified by parsing, whatever the way they come', async () => {
      const update = `INSERT DATA { <${first}> <${CARGO}goodsDescription> "forged" }`;
      await expectQueryError(await sparqlGet(server, update), /read-only/);
      await expectQueryError(
        await server.request('/sparql', {
          method: 'POST',
          headers: { 'Content-Type': 'application/sparql-update' },
          body: update,
        }),
        /read-only/,
      );
      await expectQueryError(
        await server.request('/sparql', {
          method: 'POST',
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ update }),
        }),
        /read-only/,
      );
      // A query whose text merely mentions an update keyword is a query.
      expect(await select(server, `SELECT ?x WHERE { BIND("INSERT DATA" AS ?x) }`)).to.deep.equal([
        { x: 'INSERT DATA' },
      ]);
      expect(await select(server, `${PREFIX}SELECT ?d WHERE { <${first}> cargo:goodsDescription ?d }`)).to.deep.equal([
        { d: 'first' },
      ]);
    });

    it("answers a syntax error with 400 and the parser's message and position", async () => {
      await expectQueryError(await sparqlGet(server, 'SELECT * WHERE {\n  ?s ?p \n}'), /line 2, column 6.*Expecting/s);
      await expectQueryError(await sparqlGet(server, ''), /query/);
      await expectApiError(
        await server.request('/sparql', {
          method: 'POST',
          headers: { 'Content-Type': 'text/plain' },
          body: 'SELECT * {}',
        }),
        415,
      );
      await expectApiError(await server.request('/sparql', { method: 'PUT' }), 405);
    });

    it("selects graphs with default-graph-uri and named-graph-uri (over the query's FROM)", async () => {
      // The latest view names each object's graph after the object.
      const graph = first;
      expect(
        descriptions(
          await select(server, `${PREFIX}SELECT ?d WHERE { ?s cargo:goodsDescription ?d }`, {
            'default-graph-uri': graph,
          }),
        ),
      ).to.deep.equal(['first']);
      expect(
        descriptions(
          await select(server, `${PREFIX}SELECT ?d FROM <${second}> WHERE { ?s cargo:goodsDescription ?d }`),
        ),
      ).to.deep.equal(['second']);
      expect(
        descriptions(
          await select(server, `${PREFIX}SELECT ?d FROM <${second}> WHERE { ?s cargo:goodsDescription ?d }`, {
            'default-graph-uri': graph,
          }),
        ),
      ).to.deep.equal(['first']);
      const named = await select(server, `${PREFIX}SELECT ?g ?d WHERE { GRAPH ?g { ?s cargo:goodsDescription ?d } }`, {
        'named-graph-uri': [graph],
      });
      expect(named).to.deep.equal([{ g: graph, d: 'first' }]);
    });
  });

  describe('views', () => {
    let shipment: string;
    before(async () => {
      shipment = await createObject(server, {
        '@context': { cargo: CARGO },
        '@type': 'cargo:Shipment',
        'cargo:goodsDescription': 'shipment v1',
      });
      const res = await patch(
        server,
        shipment,
        change(shipment, 1, [
          del(shipment, 'goodsDescription', {
            datatype: 'http://www.w3.org/2001/XMLSchema#string',
            value: 'shipment v1',
          }),
          add(shipment, 'goodsDescription', {
            datatype: 'http://www.w3.org/2001/XMLSchema#string',
            value: 'shipment v2',
          }),
        ]),
      );
      expect(res.status, await res.text()).to.equal(201);
      expect((await postEvent(server, shipment, eventJson({ code: 'DEP' }))).status).to.equal(201);
    });

    it('latest (default): only the latest revision of each object, in a graph named after the object', async () => {
      expect(
        await select(server, `${PREFIX}SELECT ?d WHERE { <${shipment}> cargo:goodsDescription ?d }`),
      ).to.deep.equal([{ d: 'shipment v2' }]);
      const graphs = await select(server, `${PREFIX}SELECT ?g WHERE { GRAPH ?g { <${shipment}> ?p ?o } }`);
      expect([...new Set(graphs.map((r) => r.g))]).to.deep.equal([shipment]);
    });

    it('revisions: one named graph per revision, number and time in the default graph', async () => {
      const rows = await select(
        server,
        `${PREFIX}PREFIX store: <urn:onerecord:store:>
         SELECT ?n ?at ?d WHERE { ?g store:revisionOf <${shipment}> ; store:revisionNumber ?n ; store:createdAt ?at . GRAPH ?g { <${shipment}> cargo:goodsDescription ?d } } ORDER BY ?n`,
        { view: 'revisions' },
      );
      expect(rows.map((r) => [r.n, r.d])).to.deep.equal([
        ['1', 'shipment v1'],
        ['2', 'shipment v2'],
      ]);
      expect(new Date(rows[1].at).getTime()).to.be.at.least(new Date(rows[0].at).getTime());
    });

    it('events: the Logistics Events; audit: the action requests', async () => {
      const events = await select(
        server,
        `${PREFIX}SELECT ?code WHERE { ?e cargo:eventFor <${shipment}> ; cargo:eventCode ?code }`,
        { view: 'events' },
      );
      expect(events.map((r) => r.code)).to.deep.equal(['https://onerecord.iata.org/ns/code-lists/StatusCode#DEP']);
      const audit = await select(
        server,
        `PREFIX api: <https://onerecord.iata.org/ns/api#> SELECT ?r WHERE { ?r a api:ChangeRequest }`,
        { view: 'audit' },
      );
      expect(audit).to.have.length(1);
      await expectQueryError(await sparqlGet(server, 'SELECT * {}', { view: 'everything' }), /view/);
    });
  });

  describe('freshness', () => {
    it('a write is visible to SPARQL within 1 s of its acknowledgement', async () => {
      const object = await createObject(server, { ...piece(), 'cargo:goodsDescription': 'fresh' });
      const acknowledged = Date.now();
      let seen = false;
      while (!seen && Date.now() - acknowledged < 1000)
        seen =
          (
            await select(
              server,
              `ASK { <${object}> ?p ?o }`.replace('ASK', 'SELECT ?p WHERE').replace('}', '} LIMIT 1'),
            )
          ).length > 0;
      expect(seen, 'visible within 1 s').to.equal(true);
      expect((await sparqlGet(server, 'ASK {}')).headers.get('sparql-replica-lag')).to.equal('0');
    });

    it('a literal that looks like a graph name reaches the replica intact', async () => {
      const tricky = 'ends like a quad <http://example.com/g> .\n\ttab and "quotes" <x> .';
      const object = await createObject(server, { ...piece(), 'cargo:goodsDescription': tricky });
      expect(await select(server, `${PREFIX}SELECT ?d WHERE { <${object}> cargo:goodsDescription ?d }`)).to.deep.equal([
        { d: tricky },
      ]);
    });

    it('a restarted server loads the replica from its store, and its history window from the archive', async () => {
      const seen = async () => ({
        revisions: await select(
          server,
          `SELECT ?g ?n (COUNT(?o) AS ?triples) WHERE { ?g <urn:onerecord:store:revisionNumber> ?n . GRAPH ?g { ?s ?p ?o } } GROUP BY ?g ?n ORDER BY ?g`,
          { view: 'revisions' },
        ),
        requests: await select(
          server,
          `SELECT ?r (COUNT(?o) AS ?triples) WHERE { GRAPH ?r { ?s ?p ?o } } GROUP BY ?r ORDER BY ?r`,
          { view: 'audit' },
        ),
        events: await select(server, `SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }`, { view: 'events' }),
      });
      const before = await seen();
      expect(before.revisions.length).to.be.greaterThan(2);
      expect(before.requests.length).to.be.greaterThan(0);
      await server.stop();
      await server.restart();
      expect(
        descriptions(await select(server, `${PREFIX}SELECT ?d WHERE { <${first}> cargo:goodsDescription ?d }`)),
      ).to.deep.equal(['first']);
      expect(await seen()).to.deep.equal(before);
    });
  });

  describe('access', () => {
    it('refuses callers other than internal actors by default', async () => {
      await expectApiError(await sparqlGet(server, 'SELECT * {}', {}, { agent: 'other' }), 403, /internal actors/);
      await expectApiError(await server.request('/sparql?query=ASK%7B%7D', { agent: 'none' }), 401);
    });
  });
});

describe('SPARQL endpoint limits', function () {
  this.timeout(60_000);

  /** How many SPARQL queries of `view` ended with `outcome`, and their total seconds, from the server's metrics. */
  async function queriesMeasured(
    server: TestServer,
    view: string,
    outcome: string,
  ): Promise<{ count: number; seconds: number }> {
    const text = await scrapeMetrics(`${server.url}/metrics`);
    const labels = `view="${view}",outcome="${outcome}"`;
    return {
      count: metricSample(text, 'onerecord_sparql_query_duration_seconds_count', labels),
      seconds: metricSample(text, 'onerecord_sparql_query_duration_seconds_sum', labels),
    };
  }

  it('stops a query past its time budget with 503, replaces the worker and keeps answering', async () => {
    // The budget leaves room for ordinary queries on a busy machine; the cross product of five patterns takes far longer.
    const server = await startTestServer({ sparql: { timeBudgetMillis: 2000 }, metrics: { token: METRICS_TOKEN } });
    try {
      const object = await createObject(server, piece(30));
      const slow = 'SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l . ?m ?n2 ?o }';
      await expectApiError(await sparqlGet(server, slow), 503, /time budget of 2000 ms/);
      // Writes while the new worker loads the store reach it too, once each.
      const written = await Promise.all(Array.from({ length: 20 }, () => createObject(server, piece())));
      expect(await select(server, `SELECT ?p WHERE { <${object}> ?p ?o } LIMIT 1`)).to.have.length(1);
      const pieces = await select(server, `SELECT ?s WHERE { ?s a <${CARGO}Piece> }`);
      expect(pieces.map((r) => r.s).sort()).to.deep.equal([object, ...written].sort());
      // The query-time histogram tells the stopped query from the answered ones.
      const stopped = await queriesMeasured(server, 'latest', 'timed_out');
      expect(stopped.count).to.equal(1);
      expect(stopped.seconds).to.be.at.least(2);
      expect((await queriesMeasured(server, 'latest', 'answered')).count).to.equal(2);
    } finally {
      await server.close();
    }
  });

  it('a query sent after acknowledged writes shows them all and says so in SPARQL-Replica-Lag', async () => {
    // A wait no machine needs, however loaded: the answer must hold every write acknowledged before it.
    const server = await startTestServer({ sparql: { freshnessWaitMillis: 60_000 } });
    try {
      const written = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          createObject(server, { ...piece(), 'cargo:goodsDescription': `burst ${i}` }),
        ),
      );
      const res = await sparqlGet(
        server,
        `${PREFIX}SELECT ?s WHERE { ?s cargo:goodsDescription ?d }`,
        {},
        { headers: { Accept: 'application/sparql-results+json' } },
      );
      expect(res.headers.get('sparql-replica-lag')).to.equal('0');
      expect(
        rowsOf(await res.text())
          .map((r) => r.s)
          .sort(),
      ).to.deep.equal(written.sort());
    } finally {
      await server.close();
    }
  });

  it('cuts answers at the row cap and says so in a header', async () => {
    const server = await startTestServer({ sparql: { maxRows: 3 }, metrics: { token: METRICS_TOKEN } });
    try {
      for (let i = 0; i < 5; i++) await createObject(server, piece());
      const res = await sparqlGet(server, `SELECT ?s WHERE { ?s a <${CARGO}Piece> }`);
      expect(res.headers.get('sparql-results-truncated')).to.equal('true; max-rows=3');
      expect(((await res.json()) as SparqlJson).results.bindings).to.have.length(3);
      const construct = await sparqlGet(
        server,
        `CONSTRUCT { ?s a <${CARGO}Piece> } WHERE { ?s a <${CARGO}Piece> }`,
        {},
        { headers: { Accept: 'application/n-triples' } },
      );
      expect(construct.headers.get('sparql-results-truncated')).to.equal('true; max-rows=3');
      expect((await construct.text()).trim().split('\n')).to.have.length(3);
      const small = await sparqlGet(server, `SELECT ?s WHERE { ?s a <${CARGO}Piece> } LIMIT 2`);
      expect(small.headers.get('sparql-results-truncated')).to.equal(null);
      expect((await queriesMeasured(server, 'latest', 'truncated')).count).to.equal(2);
      expect((await queriesMeasured(server, 'latest', 'answered')).count).to.equal(1);
    } finally {
      await server.close();
    }
  });

  it('lets partners query, when enabled, over what they may read only', async () => {
    const server = await startTestServer({ sparql: { openToPartners: true } });
    try {
      const object = await createObject(server, piece());
      const res = await patch(server, object, change(object, 1, [add(object, 'goodsDescription', dbl('1'))]), 'other');
      expect(res.status, await res.text()).to.equal(201);
      expect(await select(server, 'SELECT * WHERE { ?s ?p ?o }', {}, 'other')).to.deep.equal([]);
      expect(
        await select(server, `SELECT * WHERE { ?s ?p ?o }`, { 'default-graph-uri': object }, 'other'),
      ).to.deep.equal([]);
      expect((await select(server, `SELECT ?s WHERE { ?s ?p ?o }`, {})).length).to.be.greaterThan(0);
      const own = await select(
        server,
        `PREFIX api: <https://onerecord.iata.org/ns/api#> SELECT ?r WHERE { ?r a api:ChangeRequest }`,
        { view: 'audit' },
        'other',
      );
      expect(own).to.have.length(1);
      await expectApiError(await sparqlGet(server, 'SELECT * {}', { view: 'revisions' }, { agent: 'other' }), 403);
    } finally {
      await server.close();
    }
  });
});

describe('SPARQL for partners: what their grants let them read, as GET decides', function () {
  this.timeout(60_000);
  let server: TestServer;
  let objects: string[];
  let events: string[];

  /** The rows of a SELECT as `who`, via POST with an application/sparql-query body. */
  async function selectAs(
    who: PartnerName | 'holder',
    query: string,
    view = 'latest',
  ): Promise<Record<string, string>[]> {
    const res = await as(server, who, `/sparql?view=${view}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/sparql-query', Accept: 'application/sparql-results+json' },
      body: query,
    });
    const text = await res.text();
    expect(res.status, text).to.equal(200);
    return rowsOf(text);
  }

  /** What GET lets `who` read among `urls`. */
  async function readable(who: PartnerName, urls: string[]): Promise<string[]> {
    const out = [];
    for (const url of urls) if ((await as(server, who, url)).status === 200) out.push(url);
    return out.sort();
  }

  /** The objects and events a SPARQL query shows `who` (subjects of the object graphs; events by eventFor). */
  async function visible(who: PartnerName): Promise<{ objects: string[]; events: string[] }> {
    const seenObjects = await selectAs(
      who,
      `${PREFIX}SELECT DISTINCT ?o WHERE { ?o a ?type FILTER (STRSTARTS(STR(?o), "${server.url}/logistics-objects/")) }`,
    );
    const seenEvents = await selectAs(who, `${PREFIX}SELECT DISTINCT ?e WHERE { ?e cargo:eventFor ?o }`, 'events');
    return {
      objects: seenObjects
        .map((r) => r.o)
        .filter((o) => objects.includes(o))
        .sort(),
      events: seenEvents.map((r) => r.e).sort(),
    };
  }

  before(async () => {
    server = await startTestServer({
      sparql: { openToPartners: true },
      identityProvider: { clients: PARTNER_CLIENTS },
    });
    objects = [];
    events = [];
    for (const name of ['A', 'B', 'C'])
      objects.push(await createObject(server, { ...piece(), 'cargo:goodsDescription': name }));
    for (const object of objects.slice(0, 2)) {
      const res = await postEvent(server, object, eventJson());
      expect(res.status, await res.text()).to.equal(201);
      events.push(res.headers.get('location')!);
    }
  });
  after(() => server.close());

  it('each partner sees exactly the objects and events GET answers it, and a withdrawn grant takes them away at once', async () => {
    const [a, b, c] = objects;
    const airline = await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: partner('airline'),
      objects: [a],
    });
    await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_EVENT'],
      for: partner('handler'),
      objects: [a, b],
    });
    // The airline passes its read of A on to the broker: a trust chain.
    await delegate(server, 'airline', { permissions: ['GET_LOGISTICS_OBJECT'], for: partner('broker'), objects: [a] });
    await grant(server, authorization(partner('trucker'), [b, c], ['Read']));

    const expected: Record<PartnerName, { objects: string[]; events: string[] }> = {
      airline: { objects: [a], events: [] },
      handler: { objects: [], events: [...events].sort() },
      broker: { objects: [a], events: [] },
      trucker: { objects: [b, c].sort(), events: [] },
      stranger: { objects: [], events: [] },
    };
    for (const who of Object.keys(expected) as PartnerName[]) {
      const get = { objects: await readable(who, objects), events: await readable(who, events) };
      expect(get, `GET for ${who}`).to.deep.equal(expected[who]);
      expect(await visible(who), `SPARQL for ${who}`).to.deep.equal(get);
    }
    // What it sees of A is A's latest revision, every triple of it.
    expect(await selectAs('airline', `SELECT ?p ?o WHERE { <${a}> ?p ?o }`)).to.deep.equal(
      await selectAs('holder', `SELECT ?p ?o WHERE { <${a}> ?p ?o }`),
    );

    // Revoking the airline's delegation withdraws the broker's grant derived from it too.
    expect((await server.request(airline, { method: 'DELETE' })).status).to.equal(204);
    for (const who of ['airline', 'broker'] as const) {
      expect(await readable(who, objects)).to.deep.equal([]);
      expect(await visible(who), `SPARQL for ${who} after the revocation`).to.deep.equal({ objects: [], events: [] });
    }
  });

  it('a graph named in the request that the partner may not read is empty', async () => {
    const [, , c] = objects;
    const latest = await selectAs('holder', `SELECT DISTINCT ?g WHERE { GRAPH ?g { <${c}> ?p ?o } }`);
    expect(latest).to.have.length(1);
    const res = await as(
      server,
      'stranger',
      `/sparql?${new URLSearchParams({ query: 'SELECT * WHERE { ?s ?p ?o }', 'default-graph-uri': latest[0].g, 'named-graph-uri': latest[0].g })}`,
      { headers: { Accept: 'application/sparql-results+json' } },
    );
    expect(res.status).to.equal(200);
    expect(((await res.json()) as { results: { bindings: unknown[] } }).results.bindings).to.deep.equal([]);
  });

  it('the audit view shows a partner its own action requests only, never the grants', async () => {
    const mine = await selectAs(
      'airline',
      'PREFIX api: <https://onerecord.iata.org/ns/api#> SELECT DISTINCT ?r WHERE { ?r api:isRequestedBy ?who }',
      'audit',
    );
    expect(mine.map((r) => r.r)).to.have.length(1); // the delegation it passed on to the broker
    expect(
      await selectAs(
        'airline',
        'PREFIX acl: <http://www.w3.org/ns/auth/acl#> SELECT ?g WHERE { ?g a acl:Authorization }',
        'audit',
      ),
    ).to.deep.equal([]);
    expect(
      (
        await selectAs(
          'holder',
          'PREFIX acl: <http://www.w3.org/ns/auth/acl#> SELECT DISTINCT ?g WHERE { ?g a acl:Authorization }',
          'audit',
        )
      ).length,
    ).to.be.greaterThan(0);
  });
});
