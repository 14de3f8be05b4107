import { expect } from 'chai';
import { Parser } from 'n3';
import { API, CARGO, XSD } from '../src/rdf/vocab.js';
import { OTHER_AGENT, startTestServer, type TestServer } from './support/server.js';
import { readExample, rebase } from './support/examples.js';
import { ntLines, jsonLdToQuads } from './support/rdf-compare.js';
import { STATUS_CODE, createObject, errorDetails, eventJson, postEvent } from './support/events.js';
import { add, change, patch, str, submit } from './support/changes.js';

const EXAMPLE_OBJECT = '1a8ded38-1804-467c-a369-81a411416b3c';
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const HTTP_DATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

describe('Logistics Events: create and read', () => {
  let server: TestServer;
  let prefix: string;
  let shipment: string;

  before(async () => {
    server = await startTestServer();
    prefix = `${server.url}/logistics-objects/`;
    shipment = await createObject(server, 'cargo:Shipment', `${prefix}${EXAMPLE_OBJECT}`);
  });
  after(() => server.close());

  const json = async (res: Response) => (await res.json()) as Record<string, Record<string, unknown> & string>;

  it('POST the official example: 201, Location under the object, Type cargo:LogisticsEvent', async () => {
    const res = await postEvent(server, shipment, rebase(readExample('LogisticsEvent.json'), prefix));
    expect(res.status).to.equal(201);
    expect(res.headers.get('location')).to.match(new RegExp(`^${shipment}/logistics-events/${UUID}$`));
    expect(res.headers.get('type')).to.equal(`${CARGO}LogisticsEvent`);
  });

  it('GET returns the event as posted with its headers; Turtle and N-Triples hold the same triples', async () => {
    const location = (
      await postEvent(server, shipment, rebase(readExample('LogisticsEvent.json'), prefix))
    ).headers.get('location')!;
    const res = await server.request(location);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/ld+json; version=2.3.0');
    expect(res.headers.get('content-language')).to.equal('en-US');
    expect(res.headers.get('type')).to.equal(`${CARGO}LogisticsEvent`);
    expect(res.headers.get('last-modified')).to.match(HTTP_DATE);
    const body = await json(res);
    expect(body['@id']).to.equal(location);
    expect(body['@type']).to.equal('cargo:LogisticsEvent');
    expect(body['cargo:eventFor']).to.deep.equal({ '@id': shipment, '@type': 'cargo:Shipment' });
    expect(body['cargo:eventCode']).to.deep.equal({ '@id': `${STATUS_CODE}DEP` });
    expect(body['cargo:eventTimeType']).to.deep.equal({ '@id': `${CARGO}ACTUAL`, '@type': 'cargo:EventTimeType' });
    expect(new Date(body['cargo:eventDate']['@value'] as string).toISOString()).to.equal('2023-04-01T10:38:01.000Z');
    expect(new Date(body['cargo:creationDate']['@value'] as string).toISOString()).to.equal('2023-04-01T10:38:01.000Z');
    expect(body['cargo:eventName']).to.equal('Consignment departed on a specific flight');
    expect(body['cargo:partialEventIndicator']).to.equal(false);
    expect(body['cargo:recordingOrganization']['@id']).to.equal(`${prefix}957e2622-9d31-493b-8b8f-3c805064dbda`);

    const fromJsonLd = ntLines(await jsonLdToQuads(body));
    for (const [accept, format] of [
      ['text/turtle', 'text/turtle'],
      ['application/n-triples', 'application/n-triples'],
    ]) {
      const rdf = await server.request(location, { headers: { Accept: accept } });
      expect(rdf.status).to.equal(200);
      expect(rdf.headers.get('content-type')).to.equal(`${accept}; version=2.3.0`);
      expect(ntLines(new Parser({ format }).parse(await rdf.text()))).to.deep.equal(fromJsonLd);
    }
  });

  it('the server sets creationDate when absent, and eventFor always', async () => {
    const before = Date.now();
    const location = (await postEvent(server, shipment, eventJson())).headers.get('location')!;
    const body = await json(await server.request(location));
    const created = Date.parse(body['cargo:creationDate']['@value'] as string);
    expect(created).to.be.within(before - 1000, Date.now() + 1000);
    expect(body['cargo:eventFor']).to.deep.equal({ '@id': shipment });
  });

  it('accepts Turtle, subclasses of LogisticsEvent, embedded code list elements, and gives embedded nodes internal: ids', async () => {
    const turtle = `@prefix cargo: <${CARGO}> . @prefix xsd: <${XSD}> .
      [] a cargo:StatusUpdateEvent ; cargo:eventDate "2024-01-02T03:04:05+01:00"^^xsd:dateTime ;
         cargo:eventCode [ a cargo:CodeListElement ; cargo:code "RCS" ; cargo:codeListName "StatusCode" ] ;
         cargo:eventTimeType cargo:PLANNED .`;
    const res = await server.request(`${shipment}/logistics-events`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/turtle' },
      body: turtle,
    });
    expect(res.status).to.equal(201);
    const read = await server.request(res.headers.get('location')!);
    expect(read.headers.get('type')).to.equal(`${CARGO}StatusUpdateEvent`);
    const body = await json(read);
    expect(body['@type']).to.equal('cargo:StatusUpdateEvent');
    expect(body['cargo:eventCode']['@id']).to.match(new RegExp(`^internal:${UUID}$`));
    expect(body['cargo:eventCode']['cargo:code']).to.equal('RCS');
    expect(body['cargo:eventTimeType']).to.deep.equal({ '@id': `${CARGO}PLANNED` });
    expect(body['cargo:eventDate']['@value']).to.equal('2024-01-02T03:04:05+01:00');
  });

  it('normalises the string forms of eventTimeType and of dates to the 2.3 form', async () => {
    const location = (
      await postEvent(server, shipment, {
        ...eventJson(),
        'cargo:eventDate': '2024-05-01T10:00:00Z',
        'cargo:eventTimeType': 'cargo:ESTIMATED',
      })
    ).headers.get('location')!;
    const body = await json(await server.request(location));
    expect(body['cargo:eventTimeType']).to.deep.equal({ '@id': `${CARGO}ESTIMATED` });
    expect(body['cargo:eventDate']).to.deep.equal({ '@value': '2024-05-01T10:00:00Z', '@type': 'xsd:dateTime' });
  });

  it('400 for invalid events, naming the property at fault', async () => {
    const cases: [unknown, string][] = [
      [{ ...eventJson(), 'cargo:eventDate': undefined }, `${CARGO}eventDate`],
      [eventJson({ eventDate: '2023-02-30T10:00:00Z' }), `${CARGO}eventDate`],
      [eventJson({ eventDate: 'yesterday' }), `${CARGO}eventDate`],
      [eventJson({ creationDate: '2023-04-01T25:00:00Z' }), `${CARGO}creationDate`],
      [{ ...eventJson(), 'cargo:eventTimeType': { '@id': `${CARGO}SOMETIMES` } }, `${CARGO}eventTimeType`],
      [{ ...eventJson(), 'cargo:eventTimeType': 'whenever' }, `${CARGO}eventTimeType`],
      [{ ...eventJson(), 'cargo:eventCode': 'DEP' }, `${CARGO}eventCode`],
      [{ ...eventJson(), '@type': 'cargo:Piece' }, 'http://www.w3.org/1999/02/22-rdf-syntax-ns#type'],
      [{ ...eventJson(), 'cargo:eventFor': { '@id': `${prefix}some-other-object` } }, `${CARGO}eventFor`],
    ];
    for (const [body, property] of cases) {
      const res = await postEvent(server, shipment, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      const [detail] = await errorDetails(res);
      expect(detail.code).to.equal('400');
      expect(detail.property, JSON.stringify(body)).to.equal(property);
    }
    const two = {
      '@context': { cargo: CARGO },
      '@graph': [eventJson(), eventJson()].map(({ '@context': _, ...e }) => e),
    };
    expect((await postEvent(server, shipment, two)).status).to.equal(400);
    expect((await postEvent(server, shipment, '{not json')).status).to.equal(400);
  });

  it('a client @id under the object is kept (409 when taken); any other @id is 400', async () => {
    const iri = `${shipment}/logistics-events/my-event-1`;
    const res = await postEvent(server, shipment, { ...eventJson(), '@id': iri });
    expect(res.status).to.equal(201);
    expect(res.headers.get('location')).to.equal(iri);
    expect((await postEvent(server, shipment, { ...eventJson(), '@id': iri })).status).to.equal(409);
    expect(
      (await postEvent(server, shipment, { ...eventJson(), '@id': 'https://elsewhere.example/e/1' })).status,
    ).to.equal(400);
  });

  it('404 for an unknown object or event; 401 without a token; 403 for others; 415 for other media types', async () => {
    const unknown = `${prefix}no-such-object`;
    expect((await postEvent(server, unknown, eventJson())).status).to.equal(404);
    expect((await server.request(`${unknown}/logistics-events`)).status).to.equal(404);
    expect((await server.request(`${unknown}/logistics-events/x`)).status).to.equal(404);
    expect((await server.request(`${shipment}/logistics-events/no-such-event`)).status).to.equal(404);

    const location = (await postEvent(server, shipment, eventJson())).headers.get('location')!;
    expect((await server.request(location, { agent: 'none' })).status).to.equal(401);
    expect((await postEvent(server, shipment, eventJson(), 'other')).status).to.equal(403);
    expect((await server.request(location, { agent: 'other' })).status).to.equal(403);
    expect((await server.request(`${shipment}/logistics-events`, { agent: 'other' })).status).to.equal(403);
    const text = await server.request(`${shipment}/logistics-events`, {
      method: 'POST',
      headers: { 'Content-Type': 'text/plain' },
      body: 'DEP',
    });
    expect(text.status).to.equal(415);
  });

  it('events are immutable: no method changes or deletes them (405), and the object never shows them', async () => {
    const location = (await postEvent(server, shipment, eventJson({ code: 'ARR' }))).headers.get('location')!;
    const before = await (await server.request(location)).text();
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      const res = await server.request(location, {
        method,
        headers: { 'Content-Type': 'application/ld+json' },
        body: method === 'DELETE' ? undefined : JSON.stringify(eventJson()),
      });
      expect(res.status, method).to.equal(405);
      expect(res.headers.get('allow')).to.equal('GET, HEAD');
    }
    expect((await server.request(`${shipment}/logistics-events`, { method: 'DELETE' })).status).to.equal(405);
    expect(await (await server.request(location)).text()).to.equal(before);

    for (const query of ['', '?embedded=true']) {
      const object = await server.request(`${shipment}${query}`);
      expect(object.headers.get('revision')).to.equal('1');
      const text = await object.text();
      expect(text).not.to.contain('logistics-events');
      expect(text).not.to.contain('eventFor');
    }
  });

  it('PATCH on the object cannot link events, and an applied change leaves them as they were', async () => {
    const location = (await postEvent(server, shipment, eventJson({ code: 'MAN' }))).headers.get('location')!;
    const listBefore = await (await server.request(`${shipment}/logistics-events?limit=1000`)).text();
    const eventBefore = await (await server.request(location)).text();
    const revision = Number((await server.request(shipment)).headers.get('latest-revision'));
    for (const property of [`${API}hasLogisticsEvent`, `${CARGO}events`]) {
      const res = await patch(
        server,
        shipment,
        change(shipment, revision, [add(shipment, property, { datatype: `${CARGO}LogisticsEvent`, value: location })]),
      );
      expect(res.status, property).to.equal(400);
    }
    await submit(
      server,
      shipment,
      change(shipment, revision, [add(shipment, 'remarks', str('changed while events exist'))]),
    );
    expect((await server.request(shipment)).headers.get('revision')).to.equal(String(revision + 1));
    expect(await (await server.request(`${shipment}/logistics-events?limit=1000`)).text()).to.equal(listBefore);
    expect(await (await server.request(location)).text()).to.equal(eventBefore);
  });

  it('events survive a restart: the index is rebuilt from the store', async () => {
    const location = (
      await postEvent(server, shipment, eventJson({ code: 'DLV', eventDate: '2024-05-01T12:00:00+02:00' }))
    ).headers.get('location')!;
    const queries = [
      '?limit=1000',
      '?eventType=DEP,DLV&sort=ASC-eventDate',
      '?occurred-after=20240501T095959Z&sort=DESC-creationDate',
      `?event-code=${encodeURIComponent(`${STATUS_CODE}RCS`)}`,
    ];
    const read = () =>
      Promise.all(queries.map(async (q) => (await server.request(`${shipment}/logistics-events${q}`)).text()));
    const before = await read();
    expect(before[2]).to.contain(location);
    expect(before[3]).to.contain('"api:hasTotalItems":1,');
    await server.stop();
    await server.restart();
    expect(await read()).to.deep.equal(before);
    expect((await server.request(location)).status).to.equal(200);
    const next = await postEvent(server, shipment, eventJson());
    expect(next.status).to.equal(201);
    const last = (await (
      await server.request(`${shipment}/logistics-events?sort=DESC-creationDate&limit=1`)
    ).json()) as Record<string, { '@id': string }>;
    expect(last['api:hasItem']['@id']).to.equal(next.headers.get('location'));
  });

  it('event permissions are their own check: a grant of GET_LOGISTICS_EVENT reads events, not the object, and does not post', async () => {
    const grant = await server.request('/internal/acl', {
      method: 'POST',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify({
        '@type': 'http://www.w3.org/ns/auth/acl#Authorization',
        'http://www.w3.org/ns/auth/acl#agent': { '@id': OTHER_AGENT },
        'http://www.w3.org/ns/auth/acl#accessTo': { '@id': `${shipment}/logistics-events` },
        'http://www.w3.org/ns/auth/acl#mode': { '@id': 'http://www.w3.org/ns/auth/acl#Read' },
      }),
    });
    expect(grant.status).to.equal(201);
    expect((await server.request(shipment, { agent: 'other' })).status).to.equal(403);
    const page = await server.request(`${shipment}/logistics-events`, { agent: 'other' });
    expect(page.status).to.equal(200);
    const first = ((await page.json()) as Record<string, { '@id': string }[]>)['api:hasItem'][0]['@id'];
    expect((await server.request(first, { agent: 'other' })).status).to.equal(200);
    const posted = await server.request(`${shipment}/logistics-events`, {
      method: 'POST',
      agent: 'other',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify(eventJson()),
    });
    expect(posted.status).to.equal(403);
    expect((await server.request(grant.headers.get('location')!, { method: 'DELETE' })).status).to.equal(204);
    expect((await server.request(`${shipment}/logistics-events`, { agent: 'other' })).status).to.equal(403);
  });
});
