import { expect } from 'chai';
import { parseBody } from '../src/rdf/parse.js';
import { OTHER_AGENT, startTestServer, type TestServer } from './support/server.js';
import { authorization, grant } from './support/access.js';
import {
  API,
  add,
  asList,
  change,
  createObject,
  errorCodes,
  readJson,
  revisionsOf,
  str,
  submit,
} from './support/changes.js';

type Json = Record<string, unknown>;

const CLIENTS = 20;

async function statuses(server: TestServer, object: string): Promise<Json[]> {
  return asList((await readJson(server, `${object}/audit-trail`))['api:hasActionRequest'] as Json[]);
}

const statusName = (request: Json) => ((request['api:hasRequestStatus'] as Json)['@id'] as string).replace(API, '');
const revisionOf = (request: Json) => (request['api:hasChange'] as Json)['api:hasRevision'] as number;

describe('change requests under concurrency', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ decisionPolicy: 'auto' });
  });
  after(() => server.close());

  it(`${CLIENTS} clients patching one revision at once: one accepted, the rest rejected with 409, revisions without gaps`, async () => {
    const object = await createObject(server);
    const rounds = 4;
    for (let revision = 1; revision <= rounds; revision++) {
      const locations = await Promise.all(
        Array.from({ length: CLIENTS }, (_, i) =>
          submit(
            server,
            object,
            change(object, revision, [add(object, 'remarks', str(`round ${revision} client ${i}`))]),
          ),
        ),
      );
      const bodies = await Promise.all(locations.map((l) => readJson(server, l)));
      const accepted = bodies.filter((b) => statusName(b) === 'REQUEST_ACCEPTED');
      expect(accepted, `round ${revision}`).to.have.length(1);
      for (const b of bodies.filter((x) => statusName(x) !== 'REQUEST_ACCEPTED')) {
        expect(statusName(b)).to.equal('REQUEST_REJECTED');
        expect(errorCodes(b)).to.deep.equal(['409']);
      }
    }
    expect((await revisionsOf(server, object)).map((r) => r.number)).to.deep.equal([1, 2, 3, 4, 5]);
    const body = await readJson(server, object);
    expect(body['api:hasRevision']).to.equal(rounds + 1);
    expect(asList(body['cargo:remarks'] as string[])).to.have.length(rounds + 1);
    expect(await statuses(server, object)).to.have.length(rounds * CLIENTS);

    await server.stop();
    await server.restart();
    expect((await revisionsOf(server, object)).map((r) => r.number)).to.deep.equal([1, 2, 3, 4, 5]);
    expect((await statuses(server, object)).filter((r) => statusName(r) === 'REQUEST_ACCEPTED')).to.have.length(rounds);
  });

  it('partners submitting while the holder accepts: no pending request is left on a replaced revision', async () => {
    const object = await createObject(server);
    // Partners that may read the object: a Change of theirs on an outdated revision is rejected at once.
    await grant(server, authorization(OTHER_AGENT, [object], ['Read']));
    const first = await submit(server, object, change(object, 1, [add(object, 'remarks', str('first'))]), 'other');
    const partner = (i: number) =>
      submit(server, object, change(object, 1, [add(object, 'remarks', str(`partner ${i}`))]), 'other');
    const accept = server.request(`${first}?status=REQUEST_ACCEPTED`, { method: 'PATCH' });
    const [decision] = await Promise.all([accept, ...Array.from({ length: CLIENTS }, (_, i) => partner(i))]);
    expect(decision.status).to.equal(204);
    const all = await statuses(server, object);
    expect(all).to.have.length(CLIENTS + 1);
    expect(all.filter((r) => statusName(r) === 'REQUEST_PENDING' && revisionOf(r) < 2)).to.deep.equal([]);
    expect(all.filter((r) => statusName(r) === 'REQUEST_ACCEPTED').map((r) => r['@id'])).to.deep.equal([first]);
  });

  it('an accept decided while a pending request is being stored rejects that request in the same commit', async () => {
    const { services } = server.running;
    const object = await createObject(server);
    const first = await submit(server, object, change(object, 1, [add(object, 'remarks', str('first'))]), 'other');
    const body = Buffer.from(JSON.stringify(change(object, 1, [add(object, 'remarks', str('late'))])));
    const quads = await parseBody(body, 'jsonld', {
      base: services.objects.objectsPrefix,
      limits: services.config.limits,
    });
    const entry = await services.objects.existing(object);
    // Both start in the same tick: the submission's commit is still in flight when the accept is planned.
    const submitted = services.changeRequests.submit(entry, quads, services.access.caller(OTHER_AGENT));
    const decided = services.actionRequests.decide(
      first,
      `${API}REQUEST_ACCEPTED`,
      services.access.caller(services.holder),
    );
    const [late] = await Promise.all([submitted, decided]);
    const stored = await readJson(server, late.iri);
    expect(statusName(stored)).to.equal('REQUEST_REJECTED');
    expect(errorCodes(stored)).to.deep.equal(['409']);
    expect(asList(stored['api:hasRequestStatusHistory'] as Json[])).to.have.length(1);
    // Finished once the later of the two writes settled: served by the store, not kept in memory.
    expect(services.actionRequests.index.get(late.iri)).to.equal(undefined);
    expect(await readJson(server, late.iri)).to.deep.equal(stored);
  });
});
