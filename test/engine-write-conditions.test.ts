import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { ConfigOverrides } from '../src/config.js';
import { expectApiError } from './support/api-error.js';
import { add, change, createObject, patch, piece, str } from './support/changes.js';
import { postJsonLd, startTestServer, type TestServer } from './support/server.js';
import { leaseEngine, releaseEngine, stopAllVirtuoso } from './support/virtuoso.js';

// Two server processes over one Virtuoso, as behind a load balancer (store.sparql.sharedWriters):
// each decides a write from its own in-memory indexes, which may be behind the engine; the engine's
// conditions (an intent stored only if its slots are empty and unclaimed) decide between them.
// Whatever TEST_STORE_BACKEND says.

after(stopAllVirtuoso);

describe('writes of two server processes over one engine', function () {
  this.timeout(120_000);
  let dataDir: string;
  let first: TestServer;
  let second: TestServer;
  /** An object both processes know of (created before the second started: a process learns of objects at its start). */
  let changed: string;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    const engine = await leaseEngine(dataDir);
    const sparql = { queryUrl: engine.authUrl, updateUrl: engine.authUrl, user: engine.user, password: engine.password, authScheme: 'digest' as const, sharedWriters: true };
    const store: ConfigOverrides['store'] = { backend: 'sparql', sparql };
    first = await startTestServer({ store });
    changed = await createObject(first, piece());
    // Behind one load balancer both are the same server to clients: the same base URL and token issuer key.
    const secondDir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    await copyFile(join(first.running.services.config.dataDir, 'identity-provider.json'), join(secondDir, 'identity-provider.json'));
    second = await startTestServer({ store, baseUrl: first.url }, secondDir);
  });
  after(async () => {
    await second?.close();
    await first?.close();
    await releaseEngine(dataDir);
    await rm(dataDir, { recursive: true, force: true });
  });

  /** The revisions of `object` the engine holds metadata of, as the revisions view shows them. */
  async function revisionNumbers(object: string): Promise<string[]> {
    const query = `SELECT ?n WHERE { ?g <urn:onerecord:store:revisionOf> <${object}> ; <urn:onerecord:store:revisionNumber> ?n } ORDER BY ?n`;
    const res = await first.request(`/sparql?${new URLSearchParams({ query, view: 'revisions' })}`, { headers: { Accept: 'application/sparql-results+json' } });
    expect(res.status).to.equal(200);
    return ((await res.json()) as { results: { bindings: { n: { value: string } }[] } }).results.bindings.map((b) => b.n.value);
  }

  it('a change built on a revision the other process replaced is refused with 409 revision_conflict, and nothing of it is written', async () => {
    expect((await patch(first, changed, change(changed, 1, [add(changed, 'remarks', str('from the first'))]))).status).to.equal(201);
    // The second process still has revision 1 as the latest: its own claims let the change through.
    // (An object's IRI names the first process's address: the second is reached at its own.)
    const atSecond = `${second.url}${new URL(changed).pathname}`;
    await expectApiError(await patch(second, atSecond, change(changed, 1, [add(changed, 'remarks', str('from the second'))])), 409, /written first/);
    expect(await revisionNumbers(changed)).to.deep.equal(['1', '2']);
    const body = await (await first.request(changed, { headers: { Accept: 'application/n-triples' } })).text();
    expect(body).to.contain('from the first');
    expect(body).to.not.contain('from the second');
  });

  it('an object whose @id a client chose, created through the other process first: 409 object_exists, and nothing of it is written', async () => {
    // Created after the second process started: it does not know of it, so its own checks let the create through.
    const id = `${first.url}/logistics-objects/chosen-by-the-client`;
    expect((await postJsonLd(first, '/logistics-objects', { ...piece(), '@id': id, 'cargo:remarks': 'from the first' })).status).to.equal(201);
    await expectApiError(await postJsonLd(second, '/logistics-objects', { ...piece(), '@id': id, 'cargo:remarks': 'from the second' }), 409, /already exists/);
    expect(await revisionNumbers(id)).to.deep.equal(['1']);
    const body = await (await first.request(id, { headers: { Accept: 'application/n-triples' } })).text();
    expect(body).to.contain('from the first');
    expect(body).to.not.contain('from the second');
  });
});
