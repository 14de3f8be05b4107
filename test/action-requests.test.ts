import { expect } from 'chai';
import { OTHER_AGENT, startTestServer, type TestServer } from './support/server.js';
import { authorization, grant } from './support/access.js';
import {
  API,
  CHANGE_REQUEST_TYPE,
  add,
  asList,
  change,
  createObject,
  readJson,
  statusOf,
  str,
  submit,
} from './support/changes.js';

type Json = Record<string, unknown>;

const STRANGER = {
  id: 'stranger',
  secret: 'stranger-secret',
  agent: 'https://stranger.example.com/logistics-objects/org',
};
const clients = [{ id: 'partner', secret: 'partner-secret', agent: OTHER_AGENT }, STRANGER];

async function strangerToken(server: TestServer): Promise<string> {
  const res = await fetch(`${server.url}/idp/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: STRANGER.id,
      client_secret: STRANGER.secret,
    }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

const decide = (server: TestServer, request: string, status: string, agent: 'holder' | 'other' = 'holder') =>
  server.request(`${request}?status=${encodeURIComponent(status)}`, { method: 'PATCH', agent });

describe('action requests: decisions, reading, revoking, listing', () => {
  let server: TestServer;
  let stranger: string;
  before(async () => {
    server = await startTestServer({ decisionPolicy: 'manual', identityProvider: { clients } });
    stranger = await strangerToken(server);
  });
  after(() => server.close());

  const pendingChange = async (agent: 'holder' | 'other' = 'other') => {
    const object = await createObject(server);
    const request = await submit(server, object, change(object, 1, [add(object, 'remarks', str('Pens'))]), agent);
    return { object, request };
  };

  describe('PATCH /action-requests/{id}: the holder decides (manual policy)', () => {
    it('accepts: 204 with Location and Type; the very next GET sees the new revision and status', async () => {
      const { object, request } = await pendingChange('holder');
      expect(await statusOf(server, request)).to.equal('REQUEST_PENDING');
      const res = await decide(server, request, 'REQUEST_ACCEPTED');
      expect(res.status).to.equal(204);
      expect(res.headers.get('location')).to.equal(request);
      expect(res.headers.get('type')).to.equal(CHANGE_REQUEST_TYPE);
      const body = await readJson(server, object);
      expect(body['api:hasRevision']).to.equal(2);
      expect(asList(body['cargo:remarks'])).to.include('Pens');
      const decided = await readJson(server, request);
      expect((decided['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_ACCEPTED`);
      const history = asList<Json>(decided['api:hasRequestStatusHistory'] as Json);
      expect(history.map((h) => (h['api:hasRequestStatus'] as Json)['@id'])).to.deep.equal([`${API}REQUEST_PENDING`]);
      expect(history[0]['@type']).to.equal('api:RequestStatusEntry');
      // Types implied by the linking property are added when read, each once.
      const changeNode = decided['api:hasChange'] as Json;
      expect(changeNode['@type']).to.equal('api:Change');
      const operation = asList<Json>(changeNode['api:hasOperation'] as Json)[0];
      expect(operation['@type']).to.equal('api:Operation');
      expect((operation['api:o'] as Json)['@type']).to.equal('api:OperationObject');
    });

    it('rejects, with the status given as a full IRI', async () => {
      const { object, request } = await pendingChange();
      expect((await decide(server, request, `${API}REQUEST_REJECTED`)).status).to.equal(204);
      expect(await statusOf(server, request)).to.equal('REQUEST_REJECTED');
      expect((await readJson(server, object))['api:hasRevision']).to.equal(1);
    });

    it('an accept that cannot apply ends REQUEST_FAILED and answers 422; a request another accept rejected cannot be decided', async () => {
      const object = await createObject(server);
      const failing = await submit(server, object, change(object, 1, [add(object, 'remarks', str('Books'))]), 'other');
      const res = await decide(server, failing, 'REQUEST_ACCEPTED');
      expect(res.status).to.equal(422);
      expect(((await res.json()) as Json)['@type']).to.equal('api:Error');
      expect(await statusOf(server, failing)).to.equal('REQUEST_FAILED');

      const stale = await submit(server, object, change(object, 1, [add(object, 'remarks', str('A'))]), 'other');
      const winner = await submit(server, object, change(object, 1, [add(object, 'remarks', str('B'))]), 'holder');
      expect((await decide(server, winner, 'REQUEST_ACCEPTED')).status).to.equal(204);
      expect((await decide(server, stale, 'REQUEST_ACCEPTED')).status).to.equal(422);
      expect(await statusOf(server, stale)).to.equal('REQUEST_REJECTED');
    });

    it('only internal actors decide (403); only pending requests (422); status must be a decision (400); unknown id 404', async () => {
      const { request } = await pendingChange();
      expect((await decide(server, request, 'REQUEST_ACCEPTED', 'other')).status).to.equal(403);
      expect((await server.request(request, { method: 'PATCH' })).status).to.equal(400);
      expect((await decide(server, request, 'REQUEST_DONE')).status).to.equal(400);
      expect((await decide(server, request, 'REQUEST_PENDING')).status).to.equal(400);
      expect((await decide(server, `${server.url}/action-requests/nope`, 'REQUEST_ACCEPTED')).status).to.equal(404);
      expect((await decide(server, request, 'REQUEST_REJECTED')).status).to.equal(204);
      expect((await decide(server, request, 'REQUEST_ACCEPTED')).status).to.equal(422);
    });
  });

  describe('GET and HEAD /action-requests/{id}', () => {
    it('requester and holder read the full request with Type and Last-Modified; others get 403', async () => {
      const { request } = await pendingChange();
      for (const agent of ['holder', 'other'] as const) {
        const res = await server.request(request, { agent });
        expect(res.status).to.equal(200);
        expect(res.headers.get('type')).to.equal(CHANGE_REQUEST_TYPE);
        expect(res.headers.get('content-type')).to.equal('application/ld+json; version=2.3.0');
        expect(res.headers.get('last-modified')).to.match(/GMT$/);
        expect(((await res.json()) as Json)['api:hasChange']).to.be.an('object');
      }
      const head = await server.request(request, { method: 'HEAD', agent: 'other' });
      expect(head.status).to.equal(200);
      expect(head.headers.get('type')).to.equal(CHANGE_REQUEST_TYPE);
      expect(await head.text()).to.equal('');
      const denied = await server.request(request, { headers: { Authorization: `Bearer ${stranger}` } });
      expect(denied.status).to.equal(403);
      expect((await server.request(`${server.url}/action-requests/nope`)).status).to.equal(404);
    });

    it('serves Turtle too', async () => {
      const { request } = await pendingChange();
      const res = await server.request(request, { headers: { Accept: 'text/turtle' } });
      expect(res.headers.get('content-type')).to.equal('text/turtle; version=2.3.0');
      expect(await res.text()).to.include('api:hasRequestStatus api:REQUEST_PENDING');
    });
  });

  describe('DELETE /action-requests/{id} revokes', () => {
    it('the requester revokes a pending request: 204, REQUEST_REVOKED with isRevokedBy and isRevokedAt', async () => {
      const { request } = await pendingChange();
      const res = await server.request(request, { method: 'DELETE', agent: 'other' });
      expect(res.status).to.equal(204);
      const body = await readJson(server, request, 'other');
      expect((body['api:hasRequestStatus'] as Json)['@id']).to.equal(`${API}REQUEST_REVOKED`);
      expect((body['api:isRevokedBy'] as Json)['@id']).to.equal(OTHER_AGENT);
      expect((body['api:isRevokedAt'] as Json)['@value']).to.equal(
        (body['api:hasRequestStatusSince'] as Json)['@value'],
      );
    });

    it('the holder may revoke too; a request no longer pending is 422; strangers 403', async () => {
      const { request } = await pendingChange();
      expect(
        (await server.request(request, { method: 'DELETE', headers: { Authorization: `Bearer ${stranger}` } })).status,
      ).to.equal(403);
      expect((await server.request(request, { method: 'DELETE' })).status).to.equal(204);
      expect((await server.request(request, { method: 'DELETE', agent: 'other' })).status).to.equal(422);
      const accepted = await pendingChange('holder');
      expect((await decide(server, accepted.request, 'REQUEST_ACCEPTED')).status).to.equal(204);
      expect((await server.request(accepted.request, { method: 'DELETE' })).status).to.equal(422);
    });
  });

  describe('GET /action-requests (internal)', () => {
    it('lists with filters on status, type and logistics object', async () => {
      const first = await pendingChange();
      const second = await pendingChange();
      await decide(server, second.request, 'REQUEST_REJECTED');
      const items = async (query: string) => {
        const body = await readJson(server, `/action-requests${query}`);
        expect(body['@type']).to.equal('api:Collection');
        return asList(body['api:hasItem'] as Json[]).map((i) => i['@id']);
      };
      expect(await items(`?logistics-object=${encodeURIComponent(first.object)}`)).to.deep.equal([first.request]);
      const pending = await items('?status=REQUEST_PENDING&type=ChangeRequest');
      expect(pending).to.include(first.request).and.not.include(second.request);
      expect(
        await items(
          `?status=${encodeURIComponent(`${API}REQUEST_REJECTED`)}&logistics-object=${encodeURIComponent(second.object)}`,
        ),
      ).to.deep.equal([second.request]);
      expect(await items('?type=SubscriptionRequest')).to.deep.equal([]);
      expect((await server.request('/action-requests?status=DONE')).status).to.equal(400);
      expect((await server.request('/action-requests', { agent: 'other' })).status).to.equal(403);
    });
  });

  it('405 with Allow for other methods', async () => {
    const { request } = await pendingChange();
    for (const [path, allow] of [
      [request, 'GET, HEAD, PATCH, DELETE'],
      ['/action-requests', 'GET, HEAD'],
    ]) {
      const res = await server.request(path, { method: 'POST' });
      expect(res.status).to.equal(405);
      expect(res.headers.get('allow')).to.equal(allow);
      expect(((await res.json()) as Json)['@type']).to.equal('api:Error');
    }
  });

  it('requests, statuses and errors survive a restart', async () => {
    const { object, request } = await pendingChange();
    const rejected = await submit(server, object, change(object, 7, [add(object, 'remarks', str('x'))]), 'other');
    const before = [
      await readJson(server, request),
      await readJson(server, rejected),
      await readJson(server, `${object}/audit-trail`),
    ];
    await server.stop();
    await server.restart();
    stranger = await strangerToken(server);
    expect([
      await readJson(server, request),
      await readJson(server, rejected),
      await readJson(server, `${object}/audit-trail`),
    ]).to.deep.equal(before);
    expect((await decide(server, request, 'REQUEST_ACCEPTED')).status).to.equal(204);
    expect((await readJson(server, object))['api:hasRevision']).to.equal(2);
  });
});

describe('decision policies', () => {
  // A partner that may not read the object has its Change decided by the holder, whatever the policy:
  // deciding it at once would tell the partner which revision is the latest (docs/access-control.md).
  for (const [policy, holderStatus, readerStatus, otherStatus] of [
    ['auto', 'REQUEST_ACCEPTED', 'REQUEST_PENDING', 'REQUEST_PENDING'],
    ['all', 'REQUEST_ACCEPTED', 'REQUEST_ACCEPTED', 'REQUEST_PENDING'],
    ['manual', 'REQUEST_PENDING', 'REQUEST_PENDING', 'REQUEST_PENDING'],
  ] as const) {
    it(`${policy}: the holder's change is ${holderStatus}, a reading partner's ${readerStatus}, another partner's ${otherStatus}`, async () => {
      const server = await startTestServer({ decisionPolicy: policy });
      try {
        for (const [agent, reads, expected] of [
          ['holder', true, holderStatus],
          ['other', true, readerStatus],
          ['other', false, otherStatus],
        ] as const) {
          const object = await createObject(server);
          if (agent === 'other' && reads) await grant(server, authorization(OTHER_AGENT, [object], ['Read']));
          const request = await submit(server, object, change(object, 1, [add(object, 'remarks', str('Pens'))]), agent);
          expect(await statusOf(server, request)).to.equal(expected);
          expect((await readJson(server, object))['api:hasRevision']).to.equal(expected === 'REQUEST_ACCEPTED' ? 2 : 1);
        }
      } finally {
        await server.close();
      }
    });
  }
});
