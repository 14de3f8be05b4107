import { expect } from 'chai';
import { MAX_BULK_EVENTS } from '../src/domain/events/logistics-events.js';
import { CARGO } from '../src/rdf/vocab.js';
import { postJsonLd, startTestServer, type TestServer } from './support/server.js';
import { readExample, rebase } from './support/examples.js';
import { createObject, errorDetails, eventJson, items } from './support/events.js';

type Json = Record<string, unknown>;
/** hasCreationResult as a list, whatever its compaction. */
const results = (body: Json) => {
  const raw = body['api:hasCreationResult'] as Json | Json[];
  return Array.isArray(raw) ? raw : [raw];
};
const idOf = (value: unknown) => (value as { '@id': string })['@id'];

describe('Logistics Events: bulk intake (POST /logistics-events)', () => {
  let server: TestServer;
  let prefix: string;

  before(async () => {
    server = await startTestServer();
    prefix = `${server.url}/logistics-objects/`;
  });
  after(() => server.close());

  const bulk = (body: unknown, agent: 'holder' | 'other' = 'holder') =>
    postJsonLd(server, '/logistics-events', body, agent);
  const eventsOf = async (object: string) =>
    items((await (await server.request(`${object}/logistics-events`)).json()) as Json);

  it('one event for several objects (official example 1): 207, one event per object, each for that object only', async () => {
    const objects = [
      '78fee8e2-772b-4fff-bede-cfda67900d3b',
      'f166f1fa-ea2d-4c01-b1d3-cde8bb973757',
      '22f07756-9d67-4622-adab-c62d1ebde115',
    ];
    for (const [i, id] of objects.entries())
      await createObject(server, i === 0 ? 'cargo:Shipment' : 'cargo:Piece', `${prefix}${id}`);
    const res = await bulk(rebase(readExample('MultipleEvents_example1.json'), prefix));
    expect(res.status).to.equal(207);
    expect(res.headers.get('content-type')).to.equal('application/ld+json; version=2.3.0');
    const body = (await res.json()) as Json;
    expect(body['@type']).to.equal('api:MultiStatusResponse');
    expect([body['api:hasTotalItems'], body['api:hasTotalCreated'], body['api:hasTotalFailed']]).to.deep.equal([
      3, 3, 0,
    ]);
    for (const [i, result] of results(body).entries()) {
      const object = `${prefix}${objects[i]}`;
      expect(result['@type']).to.equal('api:EventCreationResult');
      expect(result['api:hasHTTPStatus']).to.equal(201);
      expect(idOf(result['api:hasLogisticsObject'])).to.equal(object);
      const event = idOf(result['api:hasLogisticsEvent']);
      expect(event.startsWith(`${object}/logistics-events/`)).to.equal(true);
      const stored = (await (await server.request(event)).json()) as Json;
      expect(idOf(stored['cargo:eventFor'])).to.equal(object);
      expect(stored['cargo:eventName']).to.equal('Consignment departed on a specific flight');
      expect((await eventsOf(object)).map((e) => e['@id'])).to.deep.equal([event]);
    }
  });

  it('failures are reported per object (404 unknown, 403 not permitted) without stopping the others', async () => {
    await createObject(server, 'cargo:Shipment', `${prefix}d7369434-18ea-4b3a-a2bd-44e43fc66d56`);
    const res = await bulk(rebase(readExample('MultipleEvents_example2.json'), prefix));
    expect(res.status).to.equal(207);
    const body = (await res.json()) as Json;
    expect([body['api:hasTotalItems'], body['api:hasTotalCreated'], body['api:hasTotalFailed']]).to.deep.equal([
      3, 1, 2,
    ]);
    const [created, missing, unknown] = results(body);
    expect(created['api:hasHTTPStatus']).to.equal(201);
    expect(missing['api:hasHTTPStatus']).to.equal(404);
    expect(idOf(missing['api:hasLogisticsObject'])).to.equal(`${prefix}piece-not-found`);
    expect((missing['api:hasError'] as Json)['@type']).to.equal('api:Error');
    expect(missing).not.to.have.property('api:hasLogisticsEvent');
    expect(unknown['api:hasHTTPStatus']).to.equal(404);

    const asOther = (await (
      await bulk(rebase(readExample('MultipleEvents_example2.json'), prefix), 'other')
    ).json()) as Json;
    expect(results(asOther).map((r) => r['api:hasHTTPStatus'])).to.deep.equal([403, 404, 404]);
    expect(asOther['api:hasTotalCreated']).to.equal(0);
  });

  it('several events in one body, each checked on its own; hasCreationResult is an object for one result', async () => {
    const a = await createObject(server);
    const b = await createObject(server);
    const { '@context': _, ...valid } = eventJson({ code: 'ARR' });
    const { '@context': __, 'cargo:eventDate': ___, ...undated } = eventJson({ code: 'DEP' });
    const res = await bulk({
      '@context': { cargo: CARGO },
      '@graph': [
        { ...valid, 'cargo:eventFor': { '@id': a } },
        { ...undated, 'cargo:eventFor': [{ '@id': a }, { '@id': b }] },
        { ...valid, 'cargo:eventFor': { '@id': b } },
      ],
    });
    expect(res.status).to.equal(207);
    const outcome = results((await res.json()) as Json).map((r) => [
      idOf(r['api:hasLogisticsObject']),
      r['api:hasHTTPStatus'],
    ]);
    expect(outcome).to.deep.equal([
      [a, 201],
      [a, 400],
      [b, 400],
      [b, 201],
    ]);
    expect(await eventsOf(a)).to.have.length(1);

    const single = (await (await bulk({ ...eventJson(), 'cargo:eventFor': { '@id': a } })).json()) as Json;
    expect(single['api:hasCreationResult']).to.be.an('object').that.has.property('api:hasHTTPStatus', 201);
  });

  it('a client @id: kept for the object it lies under, 400 for other objects, 409 once taken', async () => {
    const a = await createObject(server);
    const b = await createObject(server);
    const event = {
      ...eventJson(),
      '@id': `${a}/logistics-events/retry-1`,
      'cargo:eventFor': [{ '@id': a }, { '@id': b }],
    };
    const first = results((await (await bulk(event)).json()) as Json);
    expect(first.map((r) => r['api:hasHTTPStatus'])).to.deep.equal([201, 400]);
    expect(idOf(first[0]['api:hasLogisticsEvent'])).to.equal(`${a}/logistics-events/retry-1`);
    const again = results((await (await bulk(event)).json()) as Json);
    expect(again.map((r) => r['api:hasHTTPStatus'])).to.deep.equal([409, 400]);
  });

  it('only a body that cannot be read as events fails as a whole', async () => {
    const noTarget = await bulk(readExample('MultipleEvents_example3.json'));
    expect(noTarget.status).to.equal(400);
    expect((await errorDetails(noTarget))[0].property).to.equal(`${CARGO}eventFor`);
    expect((await bulk({ '@context': { cargo: CARGO }, '@type': 'cargo:Piece' })).status).to.equal(400);
    expect((await bulk('[{"@id": ')).status).to.equal(400);
    expect(
      (
        await server.request('/logistics-events', {
          method: 'POST',
          headers: { 'Content-Type': 'text/csv' },
          body: 'a,b',
        })
      ).status,
    ).to.equal(415);
    expect((await server.request('/logistics-events', { method: 'GET' })).status).to.equal(405);
    const tooMany = {
      ...eventJson(),
      'cargo:eventFor': Array.from({ length: MAX_BULK_EVENTS + 1 }, (_, i) => ({ '@id': `${prefix}object-${i}` })),
    };
    expect((await bulk(tooMany)).status).to.equal(413);
  });
});
