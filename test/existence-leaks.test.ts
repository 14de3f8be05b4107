import { expect } from 'chai';
import { add, change, createObject, str, submit } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { startTestServer, type TestServer } from './support/server.js';

/** Status and body of an answer, with the id asked for and the error's own node ids replaced, so two answers compare. */
async function answer(res: Response, id: string): Promise<{ status: number; body: string }> {
  return { status: res.status, body: (await res.text()).split(id).join('<id>').replace(/"@id":"internal:[0-9a-f-]{36}"/g, '"@id":"<error node>"') };
}

describe('No existence leaks to a caller without access', () => {
  for (const hideForbidden of [false, true]) {
    describe(`an event id under an object the caller may not read (hideForbidden: ${hideForbidden})`, () => {
      let server: TestServer;
      before(async () => {
        server = await startTestServer({ hideForbidden });
      });
      after(() => server.close());

      it('answers the same whether or not the event exists', async () => {
        const object = await createObject(server);
        const posted = await postEvent(server, object, eventJson());
        expect(posted.status).to.equal(201);
        const existing = posted.headers.get('location')!;
        const existingId = existing.slice(existing.lastIndexOf('/') + 1);
        const missingId = '00000000-0000-0000-0000-000000000000';
        const seen = await answer(await server.request(existing, { agent: 'other' }), existingId);
        const unseen = await answer(await server.request(`${object}/logistics-events/${missingId}`, { agent: 'other' }), missingId);
        expect(seen.status).to.equal(hideForbidden ? 404 : 403);
        expect(unseen).to.deep.equal(seen);
        // The holder still tells them apart.
        expect((await server.request(existing)).status).to.equal(200);
        expect((await server.request(`${object}/logistics-events/${missingId}`)).status).to.equal(404);
      });
    });
  }

  describe("a ChangeRequest's error read by a requester who may not read the object", () => {
    it('an outdated revision: the error names the Change\'s revision, not the current one', async () => {
      const server = await startTestServer();
      try {
        const object = await createObject(server);
        await submit(server, object, change(object, 1, [add(object, 'goodsDescription', str('second'))]));
        await submit(server, object, change(object, 2, [add(object, 'goodsDescription', str('third'))]));
        expect((await server.request(object, { agent: 'other' })).status, 'the partner may not read the object').to.equal(403);
        const request = await submit(server, object, change(object, 1, [add(object, 'goodsDescription', str('late'))]), 'other');
        const text = await (await server.request(request, { agent: 'other' })).text();
        expect(text).to.match(/REQUEST_REJECTED/);
        expect(text).to.match(/revision 1\b/);
        expect(text).not.to.match(/revision 3\b/);
      } finally {
        await server.close();
      }
    });

    it('superseded by an accepted change: the error names neither the new revision nor the accepted request', async () => {
      const server = await startTestServer({ decisionPolicy: 'manual' });
      try {
        const object = await createObject(server);
        const accepted = await submit(server, object, change(object, 1, [add(object, 'goodsDescription', str('one'))]), 'other');
        const superseded = await submit(server, object, change(object, 1, [add(object, 'goodsDescription', str('two'))]), 'other');
        expect((await server.request(`${accepted}?status=REQUEST_ACCEPTED`, { method: 'PATCH' })).status).to.equal(204);
        const text = await (await server.request(superseded, { agent: 'other' })).text();
        expect(text).to.match(/REQUEST_REJECTED/);
        expect(text).to.match(/superseded/);
        expect(text).not.to.match(/revision 2\b/);
        expect(text).not.to.include(accepted);
      } finally {
        await server.close();
      }
    });
  });
});
