import { expect } from 'chai';
import { expectApiError } from './support/api-error.js';
import {
  API,
  PARTNER_CLIENTS,
  as,
  authorization,
  decide,
  delegate,
  delegationBody,
  grant,
  partner,
  postDelegation,
  requestDelegation,
  statusOf,
} from './support/access.js';
import { add, change, str } from './support/changes.js';
import { createObject, piece } from './support/changes.js';
import { eventJson } from './support/events.js';
import { startTestServer, type TestServer } from './support/server.js';

const AIRLINE = partner('airline');
const HANDLER = partner('handler');
const TRUCKER = partner('trucker');
const BROKER = partner('broker');

async function startWithPartners(overrides: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  return startTestServer({ ...overrides, identityProvider: { clients: PARTNER_CLIENTS } });
}

const readAs = async (server: TestServer, who: Parameters<typeof as>[1], iri: string) =>
  (await as(server, who, iri)).status;

describe('access control: grants, delegations and trust chains', () => {
  let server: TestServer;
  before(async () => {
    server = await startWithPartners({ decisionPolicy: 'auto' });
  });
  after(() => server.close());

  it('deny by default; an accepted delegation (asked by the delegate itself) lets it read on the very next request', async () => {
    const object = await createObject(server);
    await expectApiError(await as(server, 'airline', object), 403);
    const request = await requestDelegation(server, 'airline', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: AIRLINE,
      objects: [object],
    });
    expect(request).to.match(new RegExp(`^${server.url}/action-requests/`));
    expect(await statusOf(server, request)).to.equal('REQUEST_PENDING');
    expect(await readAs(server, 'airline', object)).to.equal(403);
    // The requester reads its request; an unrelated organisation does not.
    expect((await as(server, 'airline', request)).status).to.equal(200);
    expect((await as(server, 'stranger', request)).status).to.equal(403);
    expect((await decide(server, request, 'REQUEST_ACCEPTED')).status).to.equal(204);
    expect(await readAs(server, 'airline', object)).to.equal(200);
    expect(await readAs(server, 'airline', `${object}?revision=1`)).to.equal(200);
    expect(await readAs(server, 'airline', `${object}/audit-trail`)).to.equal(200);
    // GET_LOGISTICS_OBJECT does not give events, nor a change accepted at once.
    expect(await readAs(server, 'airline', `${object}/logistics-events`)).to.equal(403);
    expect(await readAs(server, 'stranger', object)).to.equal(403);
    const body = (await (await as(server, 'airline', request)).json()) as Record<string, Record<string, unknown>>;
    expect(body['@type']).to.equal('api:AccessDelegationRequest');
    expect(body['api:isRequestedBy']).to.deep.equal({ '@id': AIRLINE });
    expect(body['api:hasAccessDelegation']['api:isRequestedFor']).to.deep.equal({ '@id': AIRLINE });
  });

  it('a rejected delegation creates no grant', async () => {
    const object = await createObject(server);
    const request = await requestDelegation(server, 'airline', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: AIRLINE,
      objects: [object],
    });
    expect((await decide(server, request, 'REQUEST_REJECTED')).status).to.equal(204);
    expect(await statusOf(server, request)).to.equal('REQUEST_REJECTED');
    expect(await readAs(server, 'airline', object)).to.equal(403);
  });

  it('validation: 400 naming the property, nothing stored', async () => {
    const object = await createObject(server);
    const cases: [Record<string, unknown>, string][] = [
      [
        {
          ...delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: AIRLINE, objects: [object] }),
          'api:hasPermission': [],
        },
        'hasPermission',
      ],
      [delegationBody({ permissions: ['READ_EVERYTHING'], for: AIRLINE, objects: [object] }), 'hasPermission'],
      [delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: AIRLINE, objects: [] }), 'hasLogisticsObject'],
      [
        delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: AIRLINE, objects: [`${object}-missing`] }),
        'hasLogisticsObject',
      ],
      [
        delegationBody({
          permissions: ['GET_LOGISTICS_OBJECT'],
          for: AIRLINE,
          objects: ['https://elsewhere.example.com/logistics-objects/x'],
        }),
        'hasLogisticsObject',
      ],
      [delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: [], objects: [object] }), 'isRequestedFor'],
      [
        delegationBody({
          permissions: ['GET_LOGISTICS_OBJECT'],
          for: AIRLINE,
          objects: [object],
          expiresAt: '2001-01-01T00:00:00Z',
        }),
        'expiresAt',
      ],
      [
        {
          ...delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: AIRLINE, objects: [object] }),
          '@type': 'api:Change',
        },
        'type',
      ],
    ];
    for (const [body, property] of cases) {
      const res = await postDelegation(server, 'airline', body);
      const text = await res.clone().text();
      await expectApiError(res, 400);
      expect(text, property).to.contain(property);
    }
    expect(
      (
        await server.request(
          `/action-requests?type=AccessDelegationRequest&logistics-object=${encodeURIComponent(object)}`,
        )
      ).status,
    ).to.equal(200);
    const listed = (await (
      await server.request(`/action-requests?logistics-object=${encodeURIComponent(object)}`)
    ).json()) as Record<string, unknown>;
    expect(listed['api:hasTotalItems']).to.equal(0);
  });

  it('2.0–2.2 clients: a list of delegates, each of them gets the grant', async () => {
    const object = await createObject(server);
    await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: [AIRLINE, HANDLER],
      objects: [object],
    });
    expect(await readAs(server, 'airline', object)).to.equal(200);
    expect(await readAs(server, 'handler', object)).to.equal(200);
    expect(await readAs(server, 'trucker', object)).to.equal(403);
  });

  it('the holder asking is accepted at once by the auto policy', async () => {
    const object = await createObject(server);
    const request = await requestDelegation(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: AIRLINE,
      objects: [object],
    });
    expect(await statusOf(server, request)).to.equal('REQUEST_ACCEPTED');
  });

  it('events by their own permissions: GET_LOGISTICS_EVENT reads, POST_LOGISTICS_EVENT posts', async () => {
    const object = await createObject(server);
    await delegate(server, 'holder', { permissions: ['POST_LOGISTICS_EVENT'], for: HANDLER, objects: [object] });
    const posted = await as(server, 'handler', `${object}/logistics-events`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify(eventJson()),
    });
    expect(posted.status, await posted.clone().text()).to.equal(201);
    expect(await readAs(server, 'handler', object)).to.equal(403);
    expect(await readAs(server, 'handler', `${object}/logistics-events`)).to.equal(403);
    // Whoever posted an event may read it back.
    expect(await readAs(server, 'handler', posted.headers.get('location')!)).to.equal(200);
    await delegate(server, 'holder', { permissions: ['GET_LOGISTICS_EVENT'], for: TRUCKER, objects: [object] });
    expect(await readAs(server, 'trucker', `${object}/logistics-events`)).to.equal(200);
    expect(await readAs(server, 'trucker', posted.headers.get('location')!)).to.equal(200);
    expect(await readAs(server, 'trucker', object)).to.equal(403);
  });

  it('auto policy: a change is accepted at once only when the requester holds PATCH_LOGISTICS_OBJECT and may read the object', async () => {
    const object = await createObject(server);
    await delegate(server, 'holder', { permissions: ['GET_LOGISTICS_OBJECT'], for: AIRLINE, objects: [object] });
    const patch = (who: 'airline' | 'handler', revision: number, value: string) =>
      as(server, who, object, {
        method: 'PATCH',
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(change(object, revision, [add(object, 'goodsDescription', str(value))])),
      });
    const pending = await patch('airline', 1, 'pending');
    expect(pending.status).to.equal(201);
    expect(await statusOf(server, pending.headers.get('location')!)).to.equal('REQUEST_PENDING');
    // Without GET_LOGISTICS_OBJECT, an accept at once would tell the handler which revision is the latest.
    await delegate(server, 'holder', { permissions: ['PATCH_LOGISTICS_OBJECT'], for: HANDLER, objects: [object] });
    const unread = await patch('handler', 1, 'unread');
    expect(await statusOf(server, unread.headers.get('location')!)).to.equal('REQUEST_PENDING');
    await delegate(server, 'holder', { permissions: ['GET_LOGISTICS_OBJECT'], for: HANDLER, objects: [object] });
    const accepted = await patch('handler', 1, 'accepted');
    expect(await statusOf(server, accepted.headers.get('location')!)).to.equal('REQUEST_ACCEPTED');
  });

  it('embedded=true inlines only the linked objects the caller may read', async () => {
    const readable = await createObject(server, { ...piece(), 'cargo:goodsDescription': 'readable' });
    const hidden = await createObject(server, { ...piece(), 'cargo:goodsDescription': 'hidden' });
    const shipment = await createObject(server, {
      '@context': { cargo: 'https://onerecord.iata.org/ns/cargo#' },
      '@type': 'cargo:Shipment',
      'cargo:pieces': [{ '@id': readable }, { '@id': hidden }],
    });
    await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: AIRLINE,
      objects: [shipment, readable],
    });
    const res = await as(server, 'airline', `${shipment}?embedded=true`);
    expect(res.status).to.equal(200);
    const text = await res.text();
    expect(text).to.contain('readable');
    expect(text).not.to.contain('hidden');
    expect(text).to.contain(hidden);
  });

  it('a delegate can only delegate what it holds (403), and may pass on what it holds', async () => {
    const object = await createObject(server);
    await delegate(server, 'holder', { permissions: ['GET_LOGISTICS_OBJECT'], for: AIRLINE, objects: [object] });
    const refused = await postDelegation(
      server,
      'airline',
      delegationBody({
        permissions: ['GET_LOGISTICS_OBJECT', 'PATCH_LOGISTICS_OBJECT'],
        for: HANDLER,
        objects: [object],
      }),
    );
    await expectApiError(refused, 403, /PATCH_LOGISTICS_OBJECT/);
    await expectApiError(
      await postDelegation(
        server,
        'stranger',
        delegationBody({ permissions: ['GET_LOGISTICS_OBJECT'], for: HANDLER, objects: [object] }),
      ),
      403,
    );
    await delegate(server, 'airline', { permissions: ['GET_LOGISTICS_OBJECT'], for: HANDLER, objects: [object] });
    expect(await readAs(server, 'handler', object)).to.equal(200);
  });

  it('trust chain: revoking the first delegation withdraws every grant derived from it, at any depth, in one commit', async () => {
    const objects = [await createObject(server), await createObject(server)];
    const first = await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT', 'GET_LOGISTICS_EVENT'],
      for: AIRLINE,
      objects,
    });
    const second = await delegate(server, 'airline', { permissions: ['GET_LOGISTICS_OBJECT'], for: HANDLER, objects });
    const third = await delegate(server, 'handler', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: TRUCKER,
      objects: [objects[0]],
    });
    // An independent grant to the trucker on the other object stays.
    await delegate(server, 'holder', { permissions: ['GET_LOGISTICS_OBJECT'], for: BROKER, objects });
    for (const who of ['airline', 'handler', 'trucker'] as const)
      expect(await readAs(server, who, objects[0]), who).to.equal(200);

    const explained = (await (
      await server.request(
        `/internal/access?object=${encodeURIComponent(objects[0])}&agent=${encodeURIComponent(TRUCKER)}`,
      )
    ).json()) as {
      permissions: Record<
        string,
        {
          held: boolean;
          sources: {
            delegation?: { request: string };
            derivedFrom: { delegation?: { request: string }; derivedFrom: { delegation?: { request: string } }[] }[];
          }[];
        }
      >;
    };
    const read = explained.permissions.GET_LOGISTICS_OBJECT;
    expect(read.held).to.equal(true);
    expect(read.sources[0].delegation?.request).to.equal(third);
    expect(read.sources[0].derivedFrom[0].delegation?.request).to.equal(second);
    expect(read.sources[0].derivedFrom[0].derivedFrom[0].delegation?.request).to.equal(first);
    expect(explained.permissions.PATCH_LOGISTICS_OBJECT.held).to.equal(false);

    expect((await server.request(first, { method: 'DELETE' })).status).to.equal(204);
    for (const who of ['airline', 'handler', 'trucker'] as const) {
      for (const object of objects) expect(await readAs(server, who, object), who).to.equal(403);
    }
    expect(await readAs(server, 'broker', objects[1])).to.equal(200);
    for (const request of [first, second, third]) expect(await statusOf(server, request)).to.equal('REQUEST_REVOKED');
    const revoked = (await (await server.request(second)).json()) as Record<string, unknown>;
    expect(revoked['api:isRevokedBy']).to.deep.equal({ '@id': `${server.url}/logistics-objects/data-holder` });
    // Revoking again: 422.
    await expectApiError(await server.request(first, { method: 'DELETE' }), 422);
  });

  it('the requester revokes its own pending or accepted request; others may not', async () => {
    const object = await createObject(server);
    const pending = await requestDelegation(server, 'airline', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: AIRLINE,
      objects: [object],
    });
    await expectApiError(await as(server, 'stranger', pending, { method: 'DELETE' }), 403);
    expect((await as(server, 'airline', pending, { method: 'DELETE' })).status).to.equal(204);
    expect(await statusOf(server, pending)).to.equal('REQUEST_REVOKED');
    await expectApiError(await decide(server, pending, 'REQUEST_ACCEPTED'), 422);
    const accepted = await delegate(server, 'airline', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: AIRLINE,
      objects: [object],
    });
    expect(await readAs(server, 'airline', object)).to.equal(200);
    expect((await as(server, 'airline', accepted, { method: 'DELETE' })).status).to.equal(204);
    expect(await readAs(server, 'airline', object)).to.equal(403);
  });

  it('expiresAt ends the grant', async () => {
    const object = await createObject(server);
    await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: AIRLINE,
      objects: [object],
      expiresAt: new Date(Date.now() + 1500).toISOString(),
    });
    expect(await readAs(server, 'airline', object)).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 1600));
    expect(await readAs(server, 'airline', object)).to.equal(403);
  });

  it('internal ACL routes: grant (ACL.json form), list per object and agent, show, revoke per object and agent; internal actors only', async () => {
    const [a, b] = [await createObject(server), await createObject(server)];
    const body = authorization(HANDLER, [a, b], ['Read']);
    await expectApiError(
      await as(server, 'handler', '/internal/acl', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(body),
      }),
      403,
    );
    const location = await grant(server, body);
    expect(location).to.match(new RegExp(`^${server.url}/internal/acl/`));
    expect(await readAs(server, 'handler', a)).to.equal(200);
    const shown = (await (await server.request(location)).json()) as Record<string, unknown>;
    expect(shown['@type']).to.equal('http://www.w3.org/ns/auth/acl#Authorization');
    expect(shown['http://www.w3.org/ns/auth/acl#agent']).to.deep.equal({ '@id': HANDLER });
    const listed = (await (await server.request(`/internal/acl?object=${encodeURIComponent(a)}`)).json()) as Record<
      string,
      unknown
    >;
    expect(listed['api:hasTotalItems']).to.equal(1);
    expect((await server.request(`/internal/acl?agent=${encodeURIComponent(HANDLER)}`)).status).to.equal(200);
    await expectApiError(await as(server, 'handler', `/internal/acl?object=${encodeURIComponent(a)}`), 403);
    // Withdraw the handler's access to `a` only.
    expect(
      (
        await server.request(`/internal/acl?object=${encodeURIComponent(a)}&agent=${encodeURIComponent(HANDLER)}`, {
          method: 'DELETE',
        })
      ).status,
    ).to.equal(204);
    expect(await readAs(server, 'handler', a)).to.equal(403);
    expect(await readAs(server, 'handler', b)).to.equal(200);
    expect((await server.request(location, { method: 'DELETE' })).status).to.equal(204);
    expect(await readAs(server, 'handler', b)).to.equal(403);
    expect((await server.request(location)).status).to.equal(404);
  });

  it('public read: acl:agentClass acl:AuthenticatedAgent lets every authenticated caller read', async () => {
    const object = await createObject(server);
    await grant(server, authorization(undefined, [object], ['Read']));
    expect(await readAs(server, 'stranger', object)).to.equal(200);
    expect(await readAs(server, 'stranger', `${object}/logistics-events`)).to.equal(403);
  });

  it('grants and revocations survive a restart', async () => {
    const object = await createObject(server);
    const kept = await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: [AIRLINE, HANDLER],
      objects: [object],
    });
    const onward = await delegate(server, 'airline', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: TRUCKER,
      objects: [object],
    });
    const revoked = await delegate(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: BROKER,
      objects: [object],
    });
    expect((await server.request(revoked, { method: 'DELETE' })).status).to.equal(204);
    await server.stop();
    await server.restart();
    expect(await readAs(server, 'airline', object)).to.equal(200);
    expect(await readAs(server, 'trucker', object)).to.equal(200);
    expect(await readAs(server, 'broker', object)).to.equal(403);
    // The trust chain is rebuilt too.
    expect((await server.request(kept, { method: 'DELETE' })).status).to.equal(204);
    expect(await readAs(server, 'trucker', object)).to.equal(403);
    expect(await statusOf(server, onward)).to.equal('REQUEST_REVOKED');
  });
});

describe('access control: hideForbidden and the manual policy', () => {
  let server: TestServer;
  before(async () => {
    server = await startWithPartners({ hideForbidden: true, decisionPolicy: 'manual' });
  });
  after(() => server.close());

  it('a denied read is 404; the holder own requests wait for a decision under manual', async () => {
    const object = await createObject(server);
    await expectApiError(await as(server, 'airline', object), 404);
    const request = await requestDelegation(server, 'holder', {
      permissions: ['GET_LOGISTICS_OBJECT'],
      for: AIRLINE,
      objects: [object],
    });
    expect(await statusOf(server, request)).to.equal('REQUEST_PENDING');
    expect((await decide(server, request, 'REQUEST_ACCEPTED')).status).to.equal(204);
    expect(await readAs(server, 'airline', object)).to.equal(200);
    expect(API).to.be.a('string');
  });
});
