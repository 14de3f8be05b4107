import { expect } from 'chai';
import jsonld from 'jsonld';
import { revisionGraph } from '../src/store/schema/revisions.js';
import { namedNode, quad, xsdLiteral, type Quad } from '../src/rdf/terms.js';
import { CARGO, OUTPUT_CONTEXT, api, xsd } from '../src/rdf/vocab.js';
import { add, change, createObject, str, submit } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { canonicalForm, doubleValuesAsJsonLdReadsThem, jsonLdToQuads, refuseRemote } from './support/rdf-compare.js';
import { postJsonLd, startTestServer, type TestServer } from './support/server.js';

type Json = Record<string, unknown>;

/**
 * Every JSON-LD answer of every route, read by jsonld.js as a client would: the body as sent, its
 * compaction with the server's context and its framing with `{}` must all give the same triples,
 * and those must be the triples the server stored (plus what it states about them, such as revision numbers).
 */
describe('JSON-LD round trip of every route: compact and frame give back the stored triples', () => {
  let server: TestServer;
  let piece: string;
  let shipment: string;
  let accepted: string;
  let rejected: string;
  let event: string;
  before(async () => {
    server = await startTestServer();
    piece = await createObject(server);
    const res = await postJsonLd(server, '/logistics-objects', {
      '@context': { cargo: CARGO },
      '@type': 'cargo:Shipment',
      'cargo:goodsDescription': 'Books',
      'cargo:pieces': { '@id': piece },
      'cargo:totalGrossWeight': {
        '@type': 'cargo:Value',
        'cargo:unit': { '@id': 'https://onerecord.iata.org/ns/code-lists/MeasurementUnitCode#KGM' },
        'cargo:numericalValue': 12.5,
      },
    });
    shipment = res.headers.get('location')!;
    accepted = await submit(server, shipment, change(shipment, 1, [add(shipment, 'remarks', str('Pens'))]));
    rejected = await submit(server, shipment, change(shipment, 1, [add(shipment, 'remarks', str('Ink'))]));
    const posted = await postEvent(server, shipment, eventJson());
    event = posted.headers.get('location')!;
    await postEvent(server, shipment, eventJson({ code: 'ARR', eventDate: '2024-05-02T10:00:00Z' }));
  });
  after(() => server.close());

  const store = () => server.running.store;
  const services = () => server.running.services;
  const storedGraph = (graph: string): Promise<Quad[]> => store().graphTriples(graph);
  const storedGraphs = async (graphs: string[]): Promise<Quad[]> => (await Promise.all(graphs.map(storedGraph))).flat();
  /** A revision as stored, with the revision numbers the server states about it. */
  const storedRevision = async (iri: string, n: number): Promise<Quad[]> => {
    const latest = services().objects.index.latest(services().objects.index.get(iri)!).number;
    const s = namedNode(iri);
    return [
      ...(await storedGraph(revisionGraph(iri, n))),
      quad(s, namedNode(api.hasRevision), xsdLiteral(n, xsd.integer)),
      quad(s, namedNode(api.hasLatestRevision), xsdLiteral(latest, xsd.integer)),
    ];
  };
  const storedRequest = async (iri: string): Promise<Quad[]> =>
    services().actionRequests.representation(await services().actionRequests.get(iri));
  const storedRequests = async (iris: string[]): Promise<Quad[]> => (await Promise.all(iris.map(storedRequest))).flat();
  const header = (url: string, total: number, type: string, items: string[]): Quad[] => {
    const s = namedNode(url);
    return [
      quad(s, namedNode(`http://www.w3.org/1999/02/22-rdf-syntax-ns#type`), namedNode(type)),
      quad(s, namedNode(api.hasTotalItems), xsdLiteral(total, xsd.integer)),
      ...items.map((i) => quad(s, namedNode(api.hasItem), namedNode(i))),
    ];
  };

  interface Answer {
    name: string;
    method?: string;
    url: () => string;
    status: number;
    body?: () => string;
    /** The triples the answer must carry, from the store; undefined for answers about nothing stored (errors, server information). */
    stored?: () => Promise<Quad[]>;
  }
  const answers: Answer[] = [
    { name: 'GET /', url: () => '/', status: 200 },
    { name: 'GET object', url: () => shipment, status: 200, stored: () => storedRevision(shipment, 2) },
    {
      name: 'GET object?revision=1',
      url: () => `${shipment}?revision=1`,
      status: 200,
      stored: () => storedRevision(shipment, 1),
    },
    {
      name: 'GET object?embedded=true',
      url: () => `${shipment}?embedded=true`,
      status: 200,
      stored: async () => [...(await storedRevision(shipment, 2)), ...(await storedRevision(piece, 1))],
    },
    {
      name: 'GET audit trail',
      url: () => `${shipment}/audit-trail`,
      status: 200,
      stored: async () => {
        const s = namedNode(`${shipment}/audit-trail`);
        return [
          quad(s, namedNode(`http://www.w3.org/1999/02/22-rdf-syntax-ns#type`), namedNode(api.AuditTrail)),
          quad(s, namedNode(api.hasLatestRevision), xsdLiteral(2, xsd.positiveInteger)),
          ...[api.hasActionRequest, api.hasChangeRequest].flatMap((p) =>
            [accepted, rejected].map((r) => quad(s, namedNode(p), namedNode(r))),
          ),
          ...(await storedRequest(accepted)),
          ...(await storedRequest(rejected)),
        ];
      },
    },
    {
      name: 'GET events list',
      url: () => `${shipment}/logistics-events`,
      status: 200,
      stored: async () => {
        const page = await services().events.index.select(shipment, { skip: 0, limit: 1000 });
        const events = page.events.map((e) => e.iri);
        return [
          ...header(`${shipment}/logistics-events`, events.length, api.Collection, events),
          ...(await storedGraphs(events)),
        ];
      },
    },
    { name: 'GET event', url: () => event, status: 200, stored: () => storedGraph(event) },
    { name: 'GET accepted ChangeRequest', url: () => accepted, status: 200, stored: () => storedRequest(accepted) },
    {
      name: 'GET rejected ChangeRequest (with its error)',
      url: () => rejected,
      status: 200,
      stored: () => storedRequest(rejected),
    },
    {
      name: 'GET /action-requests',
      url: () => '/action-requests',
      status: 200,
      stored: async () => {
        const all = [accepted, rejected];
        return [
          ...header(`${server.url}/action-requests`, all.length, api.Collection, all),
          ...(await storedRequests(all)),
        ];
      },
    },
    {
      name: 'POST /logistics-events (207)',
      method: 'POST',
      url: () => '/logistics-events',
      status: 207,
      body: () =>
        JSON.stringify([
          { ...eventJson(), 'cargo:eventFor': { '@id': shipment } },
          { ...eventJson(), 'cargo:eventFor': { '@id': `${shipment}-missing` } },
        ]),
    },
    { name: 'an error answer (404)', url: () => `${shipment}-missing`, status: 404 },
    { name: 'an error answer (400, query)', url: () => `${shipment}?at=yesterday`, status: 400 },
  ];

  for (const answer of answers) {
    it(`${answer.name}: body, compacted and framed give the same triples${answer.stored ? ', those stored' : ''}`, async () => {
      const res = await server.request(answer.url(), {
        method: answer.method ?? 'GET',
        headers: answer.body ? { 'Content-Type': 'application/ld+json' } : {},
        body: answer.body?.(),
      });
      const text = await res.text();
      expect(res.status, text).to.equal(answer.status);
      const body = JSON.parse(text) as Json;
      const options = { documentLoader: refuseRemote };
      const compacted = await jsonld.compact(
        body as jsonld.JsonLdDocument,
        OUTPUT_CONTEXT,
        options as jsonld.Options.Compact,
      );
      const framed = await jsonld.frame(body as jsonld.JsonLdDocument, {}, options as jsonld.Options.Frame);
      const asSent = await canonicalForm(await jsonLdToQuads(body));
      expect(asSent.length).to.be.greaterThan(0);
      expect(await canonicalForm(await jsonLdToQuads(compacted)), 'compacted').to.equal(asSent);
      expect(await canonicalForm(await jsonLdToQuads(framed)), 'framed').to.equal(asSent);
      // jsonld.js writes every xsd:double in its canonical form: doubles compare by value.
      if (answer.stored)
        expect(asSent, 'stored').to.equal(await canonicalForm(doubleValuesAsJsonLdReadsThem(await answer.stored())));
    });
  }
});
