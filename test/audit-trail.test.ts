import { expect } from 'chai';
import { Parser } from 'n3';
import { jsonLdToQuads, ntLines } from './support/rdf-compare.js';
import { startTestServer, type TestServer } from './support/server.js';
import { API, add, asList, bool, change, createObject, del, readJson, str, submit } from './support/changes.js';

type Json = Record<string, unknown>;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('GET /logistics-objects/{id}/audit-trail', () => {
  let server: TestServer;
  let object: string;
  const requests: Record<string, string> = {};
  let midway: string;

  before(async () => {
    server = await startTestServer({ decisionPolicy: 'auto' });
    object = await createObject(server);
    const goods = (value: string) => [add(object, 'remarks', str(value))];
    // Pauses keep every request in its own millisecond, so the expected order is the submission order.
    requests.revoked = await submit(server, object, change(object, 1, goods('A')), 'other');
    expect((await server.request(requests.revoked, { method: 'DELETE', agent: 'other' })).status).to.equal(204);
    await pause(2);
    requests.failed = await submit(server, object, change(object, 1, [del(object, 'coload', bool(true))]));
    await pause(2);
    requests.accepted = await submit(server, object, change(object, 1, goods('B')));
    await pause(5);
    midway = new Date().toISOString();
    await pause(5);
    requests.rejected = await submit(server, object, change(object, 1, goods('C')));
    await pause(2);
    requests.pending = await submit(server, object, change(object, 2, goods('D')), 'other');
  });
  after(() => server.close());

  const trail = (query = '') => readJson(server, `${object}/audit-trail${query}`);
  const ids = async (query: string) =>
    asList((await trail(query))['api:hasActionRequest'] as Json[]).map((r) => r['@id']);

  it('lists every ChangeRequest, whatever its status, with its Change, and hasLatestRevision', async () => {
    const body = await trail();
    expect(body['@id']).to.equal(`${object}/audit-trail`);
    expect(body['@type']).to.equal('api:AuditTrail');
    expect(body['api:hasLatestRevision']).to.deep.equal({ '@value': '2', '@type': 'xsd:positiveInteger' });
    const listed = asList(body['api:hasActionRequest'] as Json[]);
    expect(listed.map((r) => r['@id'])).to.deep.equal([
      requests.revoked,
      requests.failed,
      requests.accepted,
      requests.rejected,
      requests.pending,
    ]);
    expect(listed.map((r) => ((r['api:hasRequestStatus'] as Json)['@id'] as string).replace(API, ''))).to.deep.equal([
      'REQUEST_REVOKED',
      'REQUEST_FAILED',
      'REQUEST_ACCEPTED',
      'REQUEST_REJECTED',
      'REQUEST_PENDING',
    ]);
    for (const r of listed) expect((r['api:hasChange'] as Json)['@type']).to.equal('api:Change');
    // The 2.0 name lists the same requests by reference.
    expect(asList(body['api:hasChangeRequest'] as Json[]).map((r) => r['@id'])).to.deep.equal(
      listed.map((r) => r['@id']),
    );
  });

  it('reads back as the same triples in JSON-LD (through jsonld.js) and in Turtle', async () => {
    const jsonLd = await jsonLdToQuads(await trail());
    const res = await server.request(`${object}/audit-trail`, { headers: { Accept: 'text/turtle' } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/turtle; version=2.3.0');
    const turtle = new Parser().parse(await res.text());
    expect(ntLines(jsonLd)).to.deep.equal(ntLines(turtle));
    expect(turtle.length).to.be.greaterThan(100);
  });

  it('filters by status: short names, full IRIs, several at once; 400 for unknown ones', async () => {
    expect(await ids('?status=ACCEPTED')).to.deep.equal([requests.accepted]);
    expect(await ids(`?status=${encodeURIComponent(`${API}REQUEST_FAILED`)}`)).to.deep.equal([requests.failed]);
    expect(await ids('?status=REQUEST_PENDING,REJECTED')).to.deep.equal([requests.rejected, requests.pending]);
    expect((await server.request(`${object}/audit-trail?status=DONE`)).status).to.equal(400);
  });

  it('filters by the time of status changes (updated-from, updated-to, also camelCase); 400 for bad values', async () => {
    expect(await ids(`?updated-from=${encodeURIComponent(midway)}`)).to.deep.equal([
      requests.rejected,
      requests.pending,
    ]);
    expect(await ids(`?updatedTo=${encodeURIComponent(midway)}`)).to.deep.equal([
      requests.revoked,
      requests.failed,
      requests.accepted,
    ]);
    expect(await ids('?updated-from=20000101T000000Z&updated-to=20990101T000000Z')).to.have.length(5);
    expect(await ids('?updated-to=20000101T000000Z')).to.deep.equal([]);
    expect((await server.request(`${object}/audit-trail?updated-from=yesterday`)).status).to.equal(400);
    expect(
      (await server.request(`${object}/audit-trail?updated-from=20990101T000000Z&updated-to=20000101T000000Z`)).status,
    ).to.equal(400);
  });

  it('a filter given under both its spellings is 400 naming the second, as for every parameter with several spellings', async () => {
    const res = await server.request(
      `${object}/audit-trail?updated-from=20000101T000000Z&updatedFrom=20000101T000000Z`,
    );
    expect(res.status).to.equal(400);
    expect(await res.text()).to.include('give updated-from or updatedFrom, not both');
  });

  it('404 for an unknown object; 403 for a caller who may not read the object; 405 for other methods', async () => {
    expect((await server.request(`${server.url}/logistics-objects/nope/audit-trail`)).status).to.equal(404);
    expect((await server.request(`${object}/audit-trail`, { agent: 'other' })).status).to.equal(403);
    const post = await server.request(`${object}/audit-trail`, { method: 'POST' });
    expect(post.status).to.equal(405);
    expect(post.headers.get('allow')).to.equal('GET, HEAD');
  });
});
