import { expect } from 'chai';
import { expectApiError } from './support/api-error.js';
import { add, change, createObject, str } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { moveQuads, readMoves, type MoveRecord } from '../src/store/schema/moved-objects.js';
import { startTestServer, type TestServer } from './support/server.js';

const NEW_HOME = 'https://new-home.example.com/logistics-objects/moved-piece';

describe('moved Logistics Objects: 301/302 for the object, its audit trail and its events', () => {
  let server: TestServer;
  let object: string;
  let event: string;
  before(async () => {
    server = await startTestServer();
    object = await createObject(server);
    const posted = await postEvent(server, object, eventJson());
    expect(posted.status).to.equal(201);
    event = posted.headers.get('location')!;
  });
  after(() => server.close());

  const idOf = (iri: string) => iri.slice(iri.lastIndexOf('/') + 1);
  const setMove = (
    iri: string,
    body: unknown,
    agent: 'holder' | 'other' | 'none' = 'holder',
    type = 'application/json',
  ) =>
    server.request(`/internal/moves/${idOf(iri)}`, {
      method: 'PUT',
      headers: { 'Content-Type': type },
      body: JSON.stringify(body),
      agent,
    });
  const undoMove = (iri: string, agent: 'holder' | 'other' | 'none' = 'holder') =>
    server.request(`/internal/moves/${idOf(iri)}`, { method: 'DELETE', agent });
  const call = (url: string, method = 'GET', init: RequestInit = {}, agent: 'holder' | 'other' = 'holder') =>
    server.request(url, { ...init, method, redirect: 'manual', agent });

  /** Every route under the object, with the URL it must redirect to. */
  const routesUnder = (location: string) => [
    { method: 'GET', url: object, to: location },
    { method: 'HEAD', url: object, to: location },
    {
      method: 'GET',
      url: `${object}?at=20240101T000000Z&embedded=true`,
      to: `${location}?at=20240101T000000Z&embedded=true`,
    },
    {
      method: 'PATCH',
      url: object,
      to: location,
      init: {
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(change(object, 1, [add(object, 'goodsDescription', str('Pens'))])),
      },
    },
    { method: 'GET', url: `${object}/audit-trail`, to: `${location}/audit-trail` },
    { method: 'GET', url: `${object}/logistics-events`, to: `${location}/logistics-events` },
    { method: 'HEAD', url: `${object}/logistics-events`, to: `${location}/logistics-events` },
    {
      method: 'POST',
      url: `${object}/logistics-events`,
      to: `${location}/logistics-events`,
      init: { headers: { 'Content-Type': 'application/ld+json' }, body: JSON.stringify(eventJson()) },
    },
    { method: 'GET', url: event, to: `${location}/logistics-events/${idOf(event)}` },
    { method: 'HEAD', url: event, to: `${location}/logistics-events/${idOf(event)}` },
  ];

  async function expectRedirects(status: 301 | 302, location: string): Promise<void> {
    for (const r of routesUnder(location)) {
      const res = await call(r.url, r.method, r.init);
      const text = await res.text();
      expect(res.status, `${r.method} ${r.url}: ${text}`).to.equal(status);
      expect(res.headers.get('location'), `${r.method} ${r.url}`).to.equal(r.to);
      expect(text, `${r.method} ${r.url}`).to.equal('');
    }
  }

  async function expectServedHere(): Promise<void> {
    for (const url of [object, `${object}/audit-trail`, `${object}/logistics-events`, event]) {
      const res = await call(url);
      expect(res.status, url).to.equal(200);
    }
  }

  it('the moves graph reads back what its writer wrote, and the same quads remove it', async () => {
    const store = server.running.store;
    const records: MoveRecord[] = [
      {
        object: `${object}-a`,
        location: NEW_HOME,
        permanent: true,
        movedAt: new Date('2024-05-01T10:00:00.120Z'),
        movedBy: server.running.services.holder,
      },
      {
        object: `${object}-b`,
        location: `${NEW_HOME}?x=1`,
        permanent: false,
        movedAt: new Date('2024-05-01T10:00:00Z'),
        movedBy: 'https://partner.example.com/org',
      },
    ];
    await store.commit(store.begin({ insert: records.flatMap(moveQuads) }));
    expect((await readMoves(store)).sort((a, b) => a.object.localeCompare(b.object))).to.deep.equal(records);
    await store.commit(store.begin({ insert: [], delete: records.flatMap(moveQuads) }));
    expect(await readMoves(store)).to.deep.equal([]);
  });

  it('is for internal actors only: 401 without a token, 403 for others', async () => {
    await expectApiError(await setMove(object, { location: NEW_HOME }, 'none'), 401);
    await expectApiError(await setMove(object, { location: NEW_HOME }, 'other'), 403);
    await expectApiError(await undoMove(object, 'other'), 403);
    await expectApiError(await server.request('/internal/moves', { agent: 'other' }), 403);
    await expectApiError(await server.request('/internal/moves', { agent: 'none' }), 401);
    await expectServedHere();
  });

  it('refuses unknown objects (404), bad locations (400) and other body types (415)', async () => {
    await expectApiError(await setMove(`${object}-missing`, { location: NEW_HOME }), 404);
    for (const location of ['not a url', 'ftp://example.com/x', object, 42])
      await expectApiError(await setMove(object, { location }), 400);
    await expectApiError(await setMove(object, { location: NEW_HOME, permanent: 'yes' }), 400);
    await expectApiError(await setMove(object, { location: NEW_HOME }, 'holder', 'text/plain'), 415);
    await expectApiError(await undoMove(object), 404);
    await expectServedHere();
  });

  it('permanently moved: 301 with Location under the new URL and no body for every method and route, surviving a restart', async () => {
    const res = await setMove(object, { location: NEW_HOME, permanent: true });
    expect(res.status).to.equal(200);
    expect(await res.json()).to.include({ object, location: NEW_HOME, permanent: true });
    await expectRedirects(301, NEW_HOME);
    await server.stop();
    await server.restart();
    await expectRedirects(301, NEW_HOME);
    const listed = (await (await server.request('/internal/moves')).json()) as { object: string; location: string }[];
    expect(listed.map((m) => [m.object, m.location])).to.deep.equal([[object, NEW_HOME]]);
  });

  it('callers who may not read the object learn nothing of the move (403)', async () => {
    await expectApiError(await call(object, 'GET', {}, 'other'), 403);
    await expectApiError(await call(`${object}/logistics-events`, 'GET', {}, 'other'), 403);
  });

  it('moved again, temporarily: 302 to the new place; the change survives a restart', async () => {
    const temporary = 'https://temporary.example.com/lo/piece-1';
    expect((await setMove(object, { location: temporary, permanent: false })).status).to.equal(200);
    await expectRedirects(302, temporary);
    await server.stop();
    await server.restart();
    await expectRedirects(302, temporary);
    expect(await (await server.request(`/internal/moves/${idOf(object)}`)).json()).to.include({
      location: temporary,
      permanent: false,
    });
  });

  it('undone: the object, its audit trail and events answer here again, also after a restart', async () => {
    const res = await undoMove(object);
    expect(res.status).to.equal(204);
    await expectServedHere();
    await server.stop();
    await server.restart();
    await expectServedHere();
    expect(await (await server.request('/internal/moves')).json()).to.deep.equal([]);
    await expectApiError(await server.request(`/internal/moves/${idOf(object)}`), 404);
  });
});
