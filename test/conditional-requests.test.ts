import { expect } from 'chai';
import { CARGO } from '../src/rdf/vocab.js';
import { delegate, partner, PARTNER_CLIENTS, partnerToken } from './support/access.js';
import { add, change, createObject, str, submit } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { postJsonLd, startTestServer, type TestServer } from './support/server.js';

const STRONG_TAG = /^"[^"\s]+"$/;

describe('conditional requests (RFC 9110 13): ETag, If-None-Match, If-Modified-Since', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer({ decisionPolicy: 'manual', identityProvider: { clients: PARTNER_CLIENTS } });
  });
  after(() => server.close());

  const get = (path: string, headers: Record<string, string> = {}, init: RequestInit = {}) =>
    server.request(path, { ...init, headers });
  const inAMinute = () => new Date(Date.now() + 60_000).toUTCString();
  /** A 304 as RFC 9110 15.4.5 has it: no body, the ETag and Vary a 200 would carry, no representation headers. */
  const expectNotModified = async (res: Response, etag: string) => {
    expect(res.status).to.equal(304);
    expect(await res.text()).to.equal('');
    expect(res.headers.get('etag')).to.equal(etag);
    expect(res.headers.get('vary')).to.equal('Accept');
    for (const name of ['content-type', 'content-length', 'last-modified', 'content-language']) {
      expect(res.headers.get(name), name).to.equal(null);
    }
  };
  /** Accepts the holder's pending change at once (the server runs the manual policy). */
  const changed = async (object: string, revision: number, remark: string) => {
    const request = await submit(server, object, change(object, revision, [add(object, 'remarks', str(remark))]));
    expect((await server.request(`${request}?status=REQUEST_ACCEPTED`, { method: 'PATCH' })).status).to.equal(204);
    return request;
  };

  describe('Logistics Objects', () => {
    it('a strong ETag; If-None-Match with it (strong, weak, in a list, or *): 304 for GET and HEAD', async () => {
      const object = await createObject(server);
      const first = await get(object);
      expect(first.status).to.equal(200);
      const etag = first.headers.get('etag')!;
      expect(etag).to.match(STRONG_TAG);
      expect((await get(object)).headers.get('etag')).to.equal(etag);
      for (const condition of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        await expectNotModified(await get(object, { 'If-None-Match': condition }), etag);
      }
      await expectNotModified(await get(object, { 'If-None-Match': etag }, { method: 'HEAD' }), etag);
      const other = await get(object, { 'If-None-Match': '"other"' });
      expect(other.status).to.equal(200);
      expect(other.headers.get('etag')).to.equal(etag);
    });

    it('a 304 even before the body was ever built; the GET after it gets the body', async () => {
      const object = await createObject(server);
      const etag = (await get(object, {}, { method: 'HEAD' })).headers.get('etag')!;
      await expectNotModified(await get(object, { 'If-None-Match': '*' }), etag);
      const fresh = await createObject(server);
      expect((await get(fresh, { 'If-Modified-Since': inAMinute() })).status).to.equal(304);
      const res = await get(fresh);
      expect(res.status).to.equal(200);
      expect((await res.json()) as Record<string, unknown>).to.have.property('@id', fresh);
    });

    it('one tag per representation: format and version; the tag of another does not match', async () => {
      const object = await createObject(server);
      const tags = await Promise.all(
        ['application/ld+json', 'text/turtle', 'application/n-triples', 'application/ld+json; version=2.1.0'].map(
          async (accept) => (await get(object, { Accept: accept })).headers.get('etag'),
        ),
      );
      expect(new Set(tags).size).to.equal(4);
      expect((await get(object, { Accept: 'application/json' })).headers.get('etag')).to.equal(tags[0]);
      expect((await get(object, { Accept: 'text/turtle', 'If-None-Match': tags[0]! })).status).to.equal(200);
      await expectNotModified(await get(object, { Accept: 'text/turtle', 'If-None-Match': tags[1]! }), tags[1]!);
    });

    it('a new revision changes the tags of the latest and of ?revision=1 (it shows the latest number)', async () => {
      const object = await createObject(server);
      const latest = (await get(object)).headers.get('etag')!;
      const first = (await get(`${object}?revision=1`)).headers.get('etag')!;
      await expectNotModified(await get(`${object}?revision=1`, { 'If-None-Match': first }), first);
      await changed(object, 1, 'Pens');
      const now = await get(object, { 'If-None-Match': latest });
      expect(now.status).to.equal(200);
      expect(now.headers.get('latest-revision')).to.equal('2');
      expect(now.headers.get('etag')).to.not.equal(latest);
      const revisionOne = await get(`${object}?revision=1`, { 'If-None-Match': first });
      expect(revisionOne.status).to.equal(200);
      expect(revisionOne.headers.get('etag')).to.not.equal(first);
    });

    it('If-Modified-Since: 304 from Last-Modified on, 200 before; not if invalid or with If-None-Match', async () => {
      const object = await createObject(server);
      const res = await get(object);
      const lastModified = res.headers.get('last-modified')!;
      const etag = res.headers.get('etag')!;
      const instant = Date.parse(lastModified);
      await expectNotModified(await get(object, { 'If-Modified-Since': lastModified }), etag);
      // The two obsolete forms of HTTP-date (RFC 9110 5.6.7).
      const d = new Date(instant);
      const [day, , month] = lastModified.split(' ');
      const time = d.toISOString().slice(11, 19);
      const long = new Intl.DateTimeFormat('en-US', { weekday: 'long', timeZone: 'UTC' }).format(d);
      const date = String(d.getUTCDate());
      const rfc850 = `${long}, ${date.padStart(2, '0')}-${month}-${String(d.getUTCFullYear()).slice(2)} ${time} GMT`;
      const asctime = `${day.slice(0, 3)} ${month} ${date.padStart(2, ' ')} ${time} ${d.getUTCFullYear()}`;
      const status = async (since: string) => (await get(object, { 'If-Modified-Since': since })).status;
      for (const since of [rfc850, asctime]) expect(await status(since), since).to.equal(304);
      expect(await status(new Date(instant - 1000).toUTCString())).to.equal(200);
      for (const since of ['yesterday', '2999-01-01', `${lastModified} extra`]) {
        expect(await status(since), since).to.equal(200);
      }
      const both = await get(object, { 'If-Modified-Since': lastModified, 'If-None-Match': '"other"' });
      expect(both.status).to.equal(200);
    });

    it('`embedded` and `at` forms: tags of their bytes as the caller is shown them; no If-Modified-Since', async () => {
      const piece = await createObject(server);
      const body = { '@context': { cargo: CARGO }, '@type': 'cargo:Shipment', 'cargo:pieces': { '@id': piece } };
      const created = await postJsonLd(server, '/logistics-objects', body);
      const shipment = created.headers.get('location')!;
      const grant = { permissions: ['GET_LOGISTICS_OBJECT' as const], for: partner('airline'), objects: [shipment] };
      await delegate(server, 'holder', grant);
      const airline = { Authorization: `Bearer ${await partnerToken(server, 'airline')}` };
      const plain = (await get(shipment)).headers.get('etag');
      const forHolder = await get(`${shipment}?embedded=true`);
      const forAirline = await get(`${shipment}?embedded=true`, airline);
      const holderTag = forHolder.headers.get('etag')!;
      expect(holderTag).to.match(STRONG_TAG).and.not.equal(plain);
      expect(await forHolder.text()).to.not.equal(await forAirline.text());
      expect(forAirline.headers.get('etag')).to.not.equal(holderTag);
      await expectNotModified(await get(`${shipment}?embedded=true`, { 'If-None-Match': holderTag }), holderTag);
      expect((await get(`${shipment}?embedded=true`, { ...airline, 'If-None-Match': holderTag })).status).to.equal(200);
      expect((await get(`${shipment}?embedded=true`, { 'If-Modified-Since': inAMinute() })).status).to.equal(200);
      // A linked object's change changes the embedded body, so its tag, not the shipment's revision.
      await changed(piece, 1, 'Pens');
      expect((await get(`${shipment}?embedded=true`, { 'If-None-Match': holderTag })).status).to.equal(200);
      const at = `${shipment}?at=${encodeURIComponent(new Date().toISOString())}`;
      const atTag = (await get(at)).headers.get('etag')!;
      await expectNotModified(await get(at, { 'If-None-Match': atTag }), atTag);
    });

    it('conditions never hide an error: 403 and 404 stay, whatever If-None-Match says', async () => {
      const object = await createObject(server);
      const stranger = { Authorization: `Bearer ${await partnerToken(server, 'stranger')}` };
      expect((await get(object, { ...stranger, 'If-None-Match': '*' })).status).to.equal(403);
      expect((await get(`${object}-unknown`, { 'If-None-Match': '*' })).status).to.equal(404);
      expect((await get(`${object}/logistics-events`, { ...stranger, 'If-None-Match': '*' })).status).to.equal(403);
    });
  });

  describe('action requests', () => {
    it('a tag per status: 304 while it stays, 200 with a new tag once decided; If-Modified-Since too', async () => {
      const object = await createObject(server);
      const request = await submit(server, object, change(object, 1, [add(object, 'remarks', str('Pens'))]));
      const res = await get(request);
      expect(res.status).to.equal(200);
      const etag = res.headers.get('etag')!;
      expect(etag).to.match(STRONG_TAG);
      await expectNotModified(await get(request, { 'If-None-Match': etag }), etag);
      await expectNotModified(await get(request, { 'If-None-Match': etag }, { method: 'HEAD' }), etag);
      await expectNotModified(await get(request, { 'If-Modified-Since': res.headers.get('last-modified')! }), etag);
      expect((await get(request, { Accept: 'text/turtle', 'If-None-Match': etag })).status).to.equal(200);
      expect((await server.request(`${request}?status=REQUEST_ACCEPTED`, { method: 'PATCH' })).status).to.equal(204);
      const decided = await get(request, { 'If-None-Match': etag });
      expect(decided.status).to.equal(200);
      expect(decided.headers.get('etag')).to.match(STRONG_TAG).and.not.equal(etag);
    });
  });

  describe('the event list', () => {
    it('its tag follows the page: a new event changes it, a list the event does not enter keeps it', async () => {
      const object = await createObject(server);
      const list = `${object}/logistics-events`;
      const empty = await get(list);
      const emptyTag = empty.headers.get('etag')!;
      expect(emptyTag).to.match(STRONG_TAG);
      await expectNotModified(await get(list, { 'If-None-Match': emptyTag }), emptyTag);
      expect((await postEvent(server, object, eventJson({ code: 'DEP' }))).status).to.equal(201);
      const one = await get(list, { 'If-None-Match': emptyTag });
      expect(one.status).to.equal(200);
      const oneTag = one.headers.get('etag')!;
      expect(oneTag).to.not.equal(emptyTag);
      const arrivals = `${list}?eventType=ARR`;
      const arrivalsTag = (await get(arrivals)).headers.get('etag')!;
      expect(arrivalsTag).to.not.equal(emptyTag);
      expect((await postEvent(server, object, eventJson({ code: 'DEP' }))).status).to.equal(201);
      await expectNotModified(await get(arrivals, { 'If-None-Match': arrivalsTag }), arrivalsTag);
      expect((await get(list, { 'If-None-Match': oneTag })).status).to.equal(200);
      const turtle = await get(list, { Accept: 'text/turtle' });
      expect(turtle.headers.get('etag')).to.not.equal((await get(list)).headers.get('etag'));
      // A page past the end shows the total: a new event changes it too.
      const beyond = `${list}?skip=10`;
      const beyondTag = (await get(beyond)).headers.get('etag')!;
      expect((await postEvent(server, object, eventJson({ code: 'ARR' }))).status).to.equal(201);
      expect((await get(beyond, { 'If-None-Match': beyondTag })).status).to.equal(200);
    });
  });

  describe('content negotiation over HTTP', () => {
    it('text/* gets Turtle; q=0 excludes JSON-LD whatever */* says', async () => {
      const object = await createObject(server);
      const text = await get(object, { Accept: 'text/*' });
      expect(text.status).to.equal(200);
      expect(text.headers.get('content-type')).to.equal('text/turtle; version=2.3.0');
      const refused = await get(object, { Accept: 'application/ld+json;q=0, */*;q=0.1' });
      expect(refused.status).to.equal(200);
      expect(refused.headers.get('content-type')).to.equal('text/turtle; version=2.3.0');
      expect((await get(object, { Accept: '*/*;q=0' })).status).to.equal(406);
    });
  });
});
