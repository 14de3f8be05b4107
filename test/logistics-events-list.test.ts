import { expect } from 'chai';
import { Parser } from 'n3';
import { CARGO } from '../src/rdf/vocab.js';
import { postJsonLd, startTestServer, type TestServer } from './support/server.js';
import { readExample } from './support/examples.js';
import { jsonLdToQuads, ntLines } from './support/rdf-compare.js';
import { STATUS_CODE, createObject, errorDetails, eventJson, items, postEvent } from './support/events.js';

/** code, eventDate day (January 2024), creationDate day (February 2024). */
const EVENTS: [string, number, number][] = [
  ['DEP', 1, 1],
  ['ARR', 3, 2],
  ['DEP', 2, 3],
  ['RCS', 5, 4],
  ['MAN', 4, 5],
];
const day = (month: number, d: number) => `2024-0${month}-0${d}T00:00:00Z`;

/**
 * Warm: the events as the cache kept them when posted. Cold: a cache of one event and a restart after posting, so
 * every list reads the events' metadata from the store (history not in memory).
 */
for (const cold of [false, true])
  describe(`Logistics Events: list, filters and paging${cold ? ' (cold: read from the store)' : ''}`, () => {
    let server: TestServer;
    let shipment: string;
    /** Event IRIs in posting order: ids[0] is event 1 of EVENTS. */
    const ids: string[] = [];

    before(async () => {
      server = await startTestServer(cold ? { cache: { events: 1 } } : {});
      shipment = await createObject(server);
      for (const [code, occurred, created] of EVENTS) {
        const fields = { code, eventDate: day(1, occurred), creationDate: day(2, created) };
        // RCS comes as an embedded CodeListElement, the others as code-list IRIs.
        const body =
          code === 'RCS'
            ? {
                ...eventJson(fields),
                'cargo:eventCode': {
                  '@type': 'cargo:CodeListElement',
                  'cargo:code': 'RCS',
                  'cargo:codeListName': 'StatusCode',
                },
              }
            : eventJson(fields);
        const res = await postEvent(server, shipment, body);
        expect(res.status).to.equal(201);
        ids.push(res.headers.get('location')!);
      }
      if (cold) {
        await server.stop();
        await server.restart();
      }
    });
    after(() => server.close());

    const list = async (query = '') => {
      const res = await server.request(`${shipment}/logistics-events${query}`);
      expect(res.status, query).to.equal(200);
      return (await res.json()) as Record<string, unknown>;
    };
    /** The 1-based numbers (in EVENTS) of the events a list answers with, in order. */
    const numbers = async (query: string) =>
      items(await list(query)).map((item) => ids.indexOf(item['@id'] as string) + 1);

    it('an object without events: a Collection with hasTotalItems 0 and no hasItem, like the official example', async () => {
      const empty = await createObject(server);
      const res = await server.request(`${empty}/logistics-events`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('type')).to.equal('https://onerecord.iata.org/ns/api#Collection');
      expect(res.headers.get('content-type')).to.equal('application/ld+json; version=2.3.0');
      expect(res.headers.get('content-language')).to.equal('en-US');
      const body = (await res.json()) as Record<string, unknown>;
      const example = JSON.parse(readExample('LogisticsEvents_empty_list.json')) as Record<string, unknown>;
      expect(Object.keys(body).sort()).to.deep.equal(Object.keys(example).sort());
      expect(body['@id']).to.equal(`${empty}/logistics-events`);
      expect(body['@type']).to.equal('api:Collection');
      expect(body['api:hasTotalItems']).to.equal(0);
    });

    it('lists every event in arrival order; @id is the request URL; hasItem is an array for several, an object for one', async () => {
      const all = await list();
      expect(all['@id']).to.equal(`${shipment}/logistics-events`);
      expect(all['api:hasTotalItems']).to.equal(5);
      expect(all['api:hasItem']).to.be.an('array');
      expect(await numbers('')).to.deep.equal([1, 2, 3, 4, 5]);
      const one = await list('?eventType=MAN');
      expect(one['@id']).to.equal(`${shipment}/logistics-events?eventType=MAN`);
      expect(one['api:hasTotalItems']).to.equal(1);
      expect((one['api:hasItem'] as Record<string, unknown>)['@id']).to.equal(ids[4]);
      const head = await server.request(`${shipment}/logistics-events?eventType=MAN`, { method: 'HEAD' });
      expect(head.status).to.equal(200);
      expect(head.headers.get('type')).to.equal('https://onerecord.iata.org/ns/api#Collection');
      expect(await head.text()).to.equal('');
    });

    it('filters by event code: short code or code-list IRI, in both parameter spellings, several at once', async () => {
      const iri = (code: string) => encodeURIComponent(`${STATUS_CODE}${code}`);
      expect(await numbers('?eventType=DEP')).to.deep.equal([1, 3]);
      expect(await numbers(`?event-code=${iri('DEP')}`)).to.deep.equal([1, 3]);
      expect(await numbers(`?event-code=${encodeURIComponent(`${STATUS_CODE.slice(0, -1)}/DEP`)}`)).to.deep.equal([
        1, 3,
      ]);
      expect(await numbers('?eventType=DEP,ARR')).to.deep.equal([1, 2, 3]);
      expect(await numbers('?eventType=DEP&eventType=MAN')).to.deep.equal([1, 3, 5]);
      // An embedded CodeListElement answers to its code and to {list}#{code}.
      expect(await numbers('?eventType=RCS')).to.deep.equal([4]);
      expect(await numbers(`?event-code=${iri('RCS')}`)).to.deep.equal([4]);
      expect(await numbers('?eventType=NFD')).to.deep.equal([]);
    });

    it('filters by creation and occurrence time (bounds exclusive), compact or RFC 3339, hyphen or underscore', async () => {
      expect(await numbers('?created-after=20240202T000000Z')).to.deep.equal([3, 4, 5]);
      expect(await numbers(`?created_before=${encodeURIComponent(day(2, 3))}`)).to.deep.equal([1, 2]);
      expect(await numbers('?occurred-after=20240102T000000Z&occurred_before=20240105T000000Z')).to.deep.equal([2, 5]);
      expect(await numbers('?eventType=DEP&occurred-after=20240101T000000Z')).to.deep.equal([3]);
    });

    it('sorts by creation or event date, either way', async () => {
      expect(await numbers('?sort=ASC-eventDate')).to.deep.equal([1, 3, 2, 5, 4]);
      expect(await numbers('?sort=DESC-eventDate')).to.deep.equal([4, 5, 2, 3, 1]);
      expect(await numbers('?sort=ASC-creationDate')).to.deep.equal([1, 2, 3, 4, 5]);
      expect(await numbers('?sort=DESC-creationDate')).to.deep.equal([5, 4, 3, 2, 1]);
    });

    it('pages with limit and skip; hasTotalItems counts every match', async () => {
      const page = await list('?limit=2');
      expect(page['api:hasTotalItems']).to.equal(5);
      expect(await numbers('?limit=2')).to.deep.equal([1, 2]);
      expect(await numbers('?skip=2&limit=2')).to.deep.equal([3, 4]);
      expect(await numbers('?skip=4')).to.deep.equal([5]);
      expect(await numbers('?sort=DESC-eventDate&skip=1&limit=2')).to.deep.equal([5, 2]);
      const beyond = await list('?skip=10');
      expect(beyond['api:hasTotalItems']).to.equal(5);
      expect(beyond).not.to.have.property('api:hasItem');
      expect((await list('?eventType=DEP&limit=0'))['api:hasTotalItems']).to.equal(2);
    });

    it('400 for invalid filter values, naming the parameter', async () => {
      const cases: [string, string][] = [
        ['limit=-1', 'limit'],
        ['limit=ten', 'limit'],
        ['limit=1001', 'limit'],
        ['limit=1&limit=2', 'limit'],
        ['skip=-3', 'skip'],
        ['sort=newest', 'sort'],
        ['created-after=yesterday', 'created-after'],
        ['occurred_before=2024-13-01T00:00:00Z', 'occurred_before'],
        ['eventType=', 'eventType'],
        ['event-code=,', 'event-code'],
        ['eventType=DEP&event-code=ARR', 'event-code'],
        ['created-after=20240101T000000Z&created_after=20240101T000000Z', 'created_after'],
      ];
      for (const [query, parameter] of cases) {
        const res = await server.request(`${shipment}/logistics-events?${query}`);
        expect(res.status, query).to.equal(400);
        const [detail] = await errorDetails(res);
        expect(detail.property, query).to.equal(parameter);
      }
    });

    it('serves the list as Turtle and N-Triples with the same triples as JSON-LD', async () => {
      const fromJsonLd = ntLines(await jsonLdToQuads(await list('?eventType=DEP,RCS')));
      expect(fromJsonLd.some((line) => line.includes(`<${CARGO}code> "RCS"`))).to.equal(true);
      for (const accept of ['text/turtle', 'application/n-triples']) {
        const res = await server.request(`${shipment}/logistics-events?eventType=DEP,RCS`, {
          headers: { Accept: accept },
        });
        expect(res.headers.get('content-type')).to.equal(`${accept}; version=2.3.0`);
        expect(ntLines(new Parser({ format: accept }).parse(await res.text()))).to.deep.equal(fromJsonLd);
      }
    });

    it('lists an event posted after a restart after those posted before it', async () => {
      const later = await createObject(server);
      const before = await postEvent(server, later, eventJson({ code: 'DEP' }));
      expect(before.status).to.equal(201);
      await server.stop();
      await server.restart();
      const after = await postEvent(server, later, eventJson({ code: 'DEP' }));
      expect(after.status).to.equal(201);
      const listed = items(
        (await (await server.request(`${later}/logistics-events`)).json()) as Record<string, unknown>,
      );
      expect(listed.map((item) => item['@id'])).to.deep.equal([
        before.headers.get('location'),
        after.headers.get('location'),
      ]);
    });

    it('reads from the store only the graphs of the events on the page', async () => {
      const busy = await createObject(server);
      const event = ({ '@context': _, ...rest }: Record<string, unknown>) => ({
        ...rest,
        'cargo:eventFor': { '@id': busy },
      });
      const graph = Array.from({ length: 300 }, (_, i) => event(eventJson({ code: i % 2 === 0 ? 'DEP' : 'ARR' })));
      const bulk = await postJsonLd(server, '/logistics-events', { '@context': { cargo: CARGO }, '@graph': graph });
      expect(bulk.status).to.equal(207);

      // What reads a graph, whichever the backend.
      const store = server.running.store;
      const read = store.graphTriples.bind(store);
      let graphsRead = 0;
      store.graphTriples = (g: string) => {
        graphsRead += 1;
        return read(g);
      };
      try {
        // Asked of the process whose store is watched (with several behind a balancer, the first).
        const page = await (
          await server.request(
            `${server.running.url}${new URL(busy).pathname}/logistics-events?eventType=DEP&sort=DESC-creationDate&limit=5`,
          )
        ).json();
        expect((page as Record<string, unknown>)['api:hasTotalItems']).to.equal(150);
        expect(items(page as Record<string, unknown>)).to.have.length(5);
        expect(graphsRead).to.be.within(1, 5);
      } finally {
        store.graphTriples = read;
      }
    });
  });
