import { expect } from 'chai';
import { add, change, createObject, str, submit } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { startTestServer, type TestServer } from './support/server.js';

/** Status and body of an answer, with the id asked for and the error's own node ids replaced, so two answers compare. */
async function answer(res: Response, id: string): Promise<{ status: number; body: string }> {
  return {
    status: res.status,
    body: (await res.text())
      .split(id)
      .join('<id>')
      .replace(/"@id":"internal:[0-9a-f-]{36}"/g, '"@id":"<error node>"'),
  };
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
        const unseen = await answer(
          await server.request(`${object}/logistics-events/${missingId}`, { agent: 'other' }),
          missingId,
        );
        expect(seen.status).to.equal(hideForbidden ? 404 : 403);
        expect(unseen).to.deep.equal(seen);
        // The holder still tells them apart.
        expect((await server.request(existing)).status).to.equal(200);
        expect((await server.request(`${object}/logistics-events/${missingId}`)).status).to.equal(404);
      });
    });
  }

  describe("a ChangeRequest's error read by a requester who may not read the object", () => {
    /**
     * What the requester sees of its own request: the answer, with what differs between any two requests (ids, times,
     * its Change) left out, as parsed JSON (an engine may give the properties in another order each time).
     */
    const seenByRequester = async (server: TestServer, request: string) => {
      const res = await server.request(request, { agent: 'other' });
      const body = (await res.text()).split(request.slice(request.lastIndexOf('/') + 1)).join('<id>');
      const alike = body
        .replace(/"(internal:)?[0-9a-f-]{36}(-change)?/g, '"<id>')
        .replace(/"20\d\d-[^"]+"/g, '"<time>"')
        .replace(/"api:hasRevision":\{[^}]*\}|"api:hasRevision":\d+/g, '"api:hasRevision":"<revision>"');
      return { status: res.status, body: JSON.parse(alike) as unknown };
    };

    for (const decisionPolicy of ['auto', 'all', 'manual'] as const) {
      it(`cannot find the latest revision by trying (decisionPolicy ${decisionPolicy}): every revision it names stays pending alike`, async () => {
        const server = await startTestServer({ decisionPolicy, hideForbidden: true });
        try {
          const object = await createObject(server);
          const first = await submit(
            server,
            object,
            change(object, 1, [add(object, 'goodsDescription', str('second'))]),
          );
          if (decisionPolicy === 'manual')
            expect((await server.request(`${first}?status=REQUEST_ACCEPTED`, { method: 'PATCH' })).status).to.equal(
              204,
            );
          expect(
            (await server.request(object, { agent: 'other' })).status,
            'the partner may not read the object',
          ).to.equal(404);
          const guess = (revision: number) => change(object, revision, [add(object, 'goodsDescription', str('guess'))]);
          const tries = await Promise.all(
            [1, 2, 3].map((revision) => submit(server, object, guess(revision), 'other')),
          );
          const seen = await Promise.all(tries.map((request) => seenByRequester(server, request)));
          expect(JSON.stringify(seen[0].body)).to.match(/REQUEST_PENDING/);
          expect(seen[1], 'the latest revision').to.deep.equal(seen[0]);
          expect(seen[2], 'a revision yet to come').to.deep.equal(seen[0]);
          // The holder's decision is the answer: an accept of the outdated one rejects it, naming only its own revision.
          expect((await server.request(`${tries[0]}?status=REQUEST_ACCEPTED`, { method: 'PATCH' })).status).to.equal(
            409,
          );
          const text = await (await server.request(tries[0], { agent: 'other' })).text();
          expect(text).to.match(/REQUEST_REJECTED/);
          expect(text).to.match(/revision 1\b/);
          expect(text).not.to.match(/revision 2\b/);
        } finally {
          await server.close();
        }
      });
    }

    it('a requester who may read the object learns at once that its revision is outdated', async () => {
      const server = await startTestServer({ decisionPolicy: 'manual' });
      try {
        const object = await createObject(server);
        const request = await submit(
          server,
          object,
          change(object, 2, [add(object, 'goodsDescription', str('ahead'))]),
        );
        expect(await (await server.request(request)).text()).to.match(/REQUEST_REJECTED/);
      } finally {
        await server.close();
      }
    });

    it('superseded by an accepted change: the error names neither the new revision nor the accepted request', async () => {
      const server = await startTestServer({ decisionPolicy: 'manual' });
      try {
        const object = await createObject(server);
        const accepted = await submit(
          server,
          object,
          change(object, 1, [add(object, 'goodsDescription', str('one'))]),
          'other',
        );
        const superseded = await submit(
          server,
          object,
          change(object, 1, [add(object, 'goodsDescription', str('two'))]),
          'other',
        );
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
