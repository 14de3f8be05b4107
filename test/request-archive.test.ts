import { expect } from 'chai';
import { add, change, createObject, readJson, statusOf, str, submit } from './support/changes.js';

type Json = Awaited<ReturnType<typeof readJson>>;
import { startTestServer, type TestServer } from './support/server.js';

const hotGraphs = (server: TestServer) => new Set(server.running.embedded!.index.listGraphs());
const auditRequests = async (server: TestServer, object: string) => {
  const trail = await readJson(server, `${object}/audit-trail`);
  const list = trail['api:hasChangeRequest'] as Json | Json[] | undefined;
  return (list === undefined ? [] : Array.isArray(list) ? list : [list]).map((r) => r['@id'] as string).sort();
};

describe('decided ChangeRequests leave the hot store for the archive', () => {
  describe("the holder's changes, accepted at once (auto policy)", () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ decisionPolicy: 'auto' });
    });
    after(() => server.close());

    it('never enter Oxigraph, and read back, are listed and show in the audit trail, before and after a restart', async () => {
      const object = await createObject(server);
      const accepted = await submit(server, object, change(object, 1, [add(object, 'remarks', str('Pens'))]));
      const failed = await submit(server, object, change(object, 2, [add(object, 'remarks', str('Pens'))]));
      const rejected = await submit(server, object, change(object, 1, [add(object, 'remarks', str('Cups'))]));
      const requests = [accepted, failed, rejected];
      const check = async () => {
        const hot = hotGraphs(server);
        for (const request of requests) expect(hot.has(request), request).to.equal(false);
        expect(await Promise.all(requests.map((r) => statusOf(server, r)))).to.deep.equal([
          'REQUEST_ACCEPTED',
          'REQUEST_FAILED',
          'REQUEST_REJECTED',
        ]);
        expect(await auditRequests(server, object)).to.deep.equal([...requests].sort());
        const listed = await readJson(server, `/action-requests?object=${encodeURIComponent(object)}`);
        expect(JSON.stringify(listed)).to.include(accepted).and.to.include(failed).and.to.include(rejected);
        expect(server.running.services.actionRequests.index.get(accepted)).to.equal(undefined);
      };
      await check();
      await server.stop();
      await server.restart();
      await check();
    });
  });

  describe('a request decided by the holder after it was pending (manual policy)', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ decisionPolicy: 'manual' });
    });
    after(() => server.close());

    it('is in the hot store while pending and leaves it, name and all, once decided; an accept rejects the other pending ones, which leave too', async () => {
      const object = await createObject(server);
      const first = await submit(server, object, change(object, 1, [add(object, 'remarks', str('Pens'))]));
      const second = await submit(server, object, change(object, 1, [add(object, 'remarks', str('Cups'))]));
      expect(hotGraphs(server).has(first)).to.equal(true);
      expect(hotGraphs(server).has(second)).to.equal(true);
      const res = await server.request(`${first}?status=REQUEST_ACCEPTED`, { method: 'PATCH' });
      expect(res.status, await res.text()).to.be.oneOf([200, 204]);
      expect(hotGraphs(server).has(first)).to.equal(false);
      expect(hotGraphs(server).has(second)).to.equal(false);
      expect(await statusOf(server, first)).to.equal('REQUEST_ACCEPTED');
      expect(await statusOf(server, second)).to.equal('REQUEST_REJECTED');
      const again = await server.request(`${first}?status=REQUEST_ACCEPTED`, { method: 'PATCH' });
      expect(again.status).to.be.oneOf([200, 204]);
      await server.stop();
      await server.restart();
      expect(hotGraphs(server).has(first)).to.equal(false);
      expect(await statusOf(server, first)).to.equal('REQUEST_ACCEPTED');
      expect(await auditRequests(server, object)).to.deep.equal([first, second].sort());
    });
  });
});
