import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { ConfigOverrides } from '../src/config.js';
import { freePorts } from '../scripts/virtuoso/free-port.js';
import { startBalancer, type Balancer } from './support/balancer.js';
import { add, change, createObject, patch, piece, str } from './support/changes.js';
import { eventJson, postEvent } from './support/events.js';
import { startTestServer, type TestServer } from './support/server.js';
import { leaseEngine, releaseEngine, stopAllVirtuoso } from './support/virtuoso.js';

// Three server processes over one Virtuoso behind nginx (round robin), as a carrier runs them
// (store.sparql.sharedWriters): whichever process a request reaches, it sees every write any of
// them acknowledged before (the commit feed, and each request waiting until its process caught up).
// Whatever TEST_STORE_BACKEND says.

after(stopAllVirtuoso);

const PROCESSES = 3;

describe('three server processes over one engine behind a load balancer', function () {
  this.timeout(120_000);
  let engineKey: string;
  const servers: TestServer[] = [];
  let balancer: Balancer;
  /** The API as clients see it: every request through the balancer. */
  let api: TestServer;

  before(async () => {
    engineKey = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    const engine = await leaseEngine(engineKey);
    const sparql = { queryUrl: engine.authUrl, updateUrl: engine.authUrl, user: engine.user, password: engine.password, authScheme: 'digest' as const, sharedWriters: true, feedPollMillis: 20 };
    const store: ConfigOverrides['store'] = { backend: 'sparql', sparql };
    const [port] = await freePorts(1);
    const baseUrl = `http://127.0.0.1:${port}`;
    servers.push(await startTestServer({ store, baseUrl }));
    for (let i = 1; i < PROCESSES; i++) {
      // One token issuer key for all: a token from any process is good at every other.
      const dir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
      await copyFile(join(servers[0].dataDir, 'identity-provider.json'), join(dir, 'identity-provider.json'));
      servers.push(await startTestServer({ store, baseUrl }, dir));
    }
    balancer = await startBalancer({ port, upstreams: servers.map((s) => new URL(s.url).host) });
    api = { ...servers[0], url: balancer.url, request: (path, init) => servers[0].request(path.startsWith('http') ? path : `${balancer.url}${path}`, init) } as TestServer;
  });
  after(async () => {
    await balancer?.stop();
    for (const server of servers.reverse()) await server.close();
    await releaseEngine(engineKey);
    await rm(engineKey, { recursive: true, force: true });
  });

  async function readThroughEach(object: string): Promise<{ status: number; revision: string | null; body: string }[]> {
    const answers = [];
    // Round robin: consecutive requests reach each process in turn.
    for (let i = 0; i < PROCESSES; i++) {
      const res = await api.request(object, { headers: { Accept: 'application/n-triples' } });
      answers.push({ status: res.status, revision: res.headers.get('latest-revision'), body: await res.text() });
    }
    return answers;
  }

  it('an object created, then changed, through one process is read at once through every other, as written', async () => {
    for (let round = 0; round < 6; round++) {
      const object = await createObject(api, { ...piece(), 'cargo:remarks': `created ${round}` });
      for (const read of await readThroughEach(object)) {
        expect(read.status).to.equal(200);
        expect(read.revision).to.equal('1');
        expect(read.body).to.contain(`created ${round}`);
      }
      expect((await patch(api, object, change(object, 1, [add(object, 'goodsDescription', str(`changed ${round}`))]))).status).to.equal(201);
      for (const read of await readThroughEach(object)) {
        expect(read.revision).to.equal('2');
        expect(read.body).to.contain(`changed ${round}`);
      }
    }
  });

  it("an object's events and audit trail are the same through every process, whichever process took each write", async () => {
    const object = await createObject(api);
    for (let i = 0; i < 6; i++) expect((await postEvent(api, object, eventJson({ 'cargo:eventName': `event ${i}` }))).status).to.equal(201);
    for (const path of [`${object}/logistics-events`, `${object}/audit-trail`]) {
      const bodies = new Set<string>();
      for (let i = 0; i < PROCESSES; i++) {
        const res = await api.request(path, { headers: { Accept: 'application/n-triples' } });
        expect(res.status, path).to.equal(200);
        bodies.add(await res.text());
      }
      expect(bodies.size, path).to.equal(1);
    }
    const listed = await (await api.request(`${object}/logistics-events`, { headers: { Accept: 'application/n-triples' } })).text();
    expect(listed.match(/event \d/g)).to.have.length(6);
  });
});
