import { expect } from 'chai';
import { expectApiError } from './support/api-error.js';
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
import { startTestServer, type TestServer } from './support/server.js';

type Json = Record<string, unknown>;

describe('PATCH /action-requests/{id}?status=S when the request already has status S', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ decisionPolicy: 'auto' });
  });
  after(() => server.close());

  const decide = (request: string, status: string) =>
    server.request(`${request}?status=${status}`, { method: 'PATCH' });
  const snapshot = async (request: string, object: string) => ({
    request: await readJson(server, request),
    object: await readJson(server, object),
  });

  it('accepting a request the auto policy already accepted: 204 with Location and Type, nothing changes', async () => {
    const object = await createObject(server);
    const request = await submit(server, object, change(object, 1, [add(object, 'goodsDescription', str('Pens'))]));
    expect(await statusOf(server, request)).to.equal('REQUEST_ACCEPTED');
    const before = await snapshot(request, object);
    for (const status of ['REQUEST_ACCEPTED', `${API}REQUEST_ACCEPTED`, 'ACCEPTED']) {
      const res = await decide(request, encodeURIComponent(status));
      expect(res.status, await res.clone().text()).to.equal(204);
      expect(res.headers.get('location')).to.equal(request);
      expect(res.headers.get('type')).to.equal(CHANGE_REQUEST_TYPE);
    }
    const after = await snapshot(request, object);
    expect(after).to.deep.equal(before);
    expect(asList<Json>(after.request['api:hasRequestStatusHistory'] as Json)).to.have.length(1);
    expect(after.object['api:hasRevision']).to.equal(2);
  });

  it('rejecting a rejected request and revoking a revoked one answer 204 and add no history entry', async () => {
    const object = await createObject(server);
    const outdated = await submit(server, object, change(object, 7, [add(object, 'goodsDescription', str('Ink'))]));
    expect(await statusOf(server, outdated)).to.equal('REQUEST_REJECTED');
    const rejected = await readJson(server, outdated);
    expect((await decide(outdated, 'REQUEST_REJECTED')).status).to.equal(204);
    expect(await readJson(server, outdated)).to.deep.equal(rejected);

    const manual = await startTestServer({ decisionPolicy: 'manual' });
    try {
      const other = await createObject(manual);
      const pending = await submit(
        manual,
        other,
        change(other, 1, [add(other, 'goodsDescription', str('Chalk'))]),
        'other',
      );
      expect((await manual.request(pending, { method: 'DELETE', agent: 'other' })).status).to.equal(204);
      const revoked = await readJson(manual, pending);
      const res = await manual.request(`${pending}?status=REQUEST_REVOKED`, { method: 'PATCH' });
      expect(res.status).to.equal(204);
      expect(await readJson(manual, pending)).to.deep.equal(revoked);
    } finally {
      await manual.close();
    }
  });

  it('other transitions out of a final status stay 422 with a message naming both statuses', async () => {
    const object = await createObject(server);
    const request = await submit(server, object, change(object, 1, [add(object, 'goodsDescription', str('Glue'))]));
    const before = await snapshot(request, object);
    await expectApiError(
      await decide(request, 'REQUEST_REJECTED'),
      422,
      /already REQUEST_ACCEPTED.*cannot become REQUEST_REJECTED/,
    );
    // Revoking is DELETE's: a PATCH to REQUEST_REVOKED is 400 unless the request is already revoked.
    await expectApiError(await decide(request, 'REQUEST_REVOKED'), 400, /DELETE/);
    await expectApiError(await decide(request, 'REQUEST_PENDING'), 400);
    expect(await snapshot(request, object)).to.deep.equal(before);
  });
});
