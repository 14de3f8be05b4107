import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { shareIdentityProvider } from '../src/auth/identity-provider.js';
import { add, change, createObject, patch, piece, str } from './support/changes.js';
import { CLUSTER_PROCESSES, startTestCluster } from './support/cluster.js';
import { eventJson, postEvent } from './support/events.js';
import { faultsOnceDelivered, pieceSubscription, startNotificationSink } from './support/notification-sink.js';
import { startTestServer, type TestServer } from './support/server.js';
import { leaseEngine, releaseEngine, engineSettings } from './support/virtuoso.js';

// Three server processes over one Virtuoso behind nginx (round robin), as a carrier runs them
// (store.sparql.sharedWriters): whichever process a request reaches, it sees every write any of
// them acknowledged before (the commit feed, and each request waiting until its process caught up).
// Whatever TEST_STORE_BACKEND says.

describe('three server processes over one engine behind a load balancer', function () {
  this.timeout(120_000);
  let dataDir: string;
  /** The API as clients see it: every request through the balancer. */
  let api: TestServer;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    api = await startTestCluster(startTestServer, { store: { sparql: { feedPollMillis: 20 } } }, dataDir, true);
  });
  after(() => api?.close());

  async function readThroughEach(object: string): Promise<{ status: number; revision: string | null; body: string }[]> {
    const answers = [];
    // Round robin: consecutive requests reach each process in turn.
    for (let i = 0; i < CLUSTER_PROCESSES; i++) {
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
      expect(
        (await patch(api, object, change(object, 1, [add(object, 'goodsDescription', str(`changed ${round}`))])))
          .status,
      ).to.equal(201);
      for (const read of await readThroughEach(object)) {
        expect(read.revision).to.equal('2');
        expect(read.body).to.contain(`changed ${round}`);
      }
    }
  });

  it("an object's events and audit trail are the same through every process, whichever process took each write", async () => {
    const object = await createObject(api);
    for (let i = 0; i < 6; i++)
      expect((await postEvent(api, object, eventJson({ 'cargo:eventName': `event ${i}` }))).status).to.equal(201);
    for (const path of [`${object}/logistics-events`, `${object}/audit-trail`]) {
      const bodies = new Set<string>();
      for (let i = 0; i < CLUSTER_PROCESSES; i++) {
        const res = await api.request(path, { headers: { Accept: 'application/n-triples' } });
        expect(res.status, path).to.equal(200);
        bodies.add(await res.text());
      }
      expect(bodies.size, path).to.equal(1);
    }
    const listed = await (
      await api.request(`${object}/logistics-events`, { headers: { Accept: 'application/n-triples' } })
    ).text();
    expect(listed.match(/event \d/g)).to.have.length(6);
  });
});

describe('notifications from three server processes over one engine', function () {
  this.timeout(120_000);
  let dataDir: string;
  let api: TestServer;
  let sink: Awaited<ReturnType<typeof startNotificationSink>>;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    sink = await startNotificationSink();
    api = await startTestCluster(
      startTestServer,
      {
        internalAgents: [sink.organization],
        outbound: { allowPrivateAddresses: true },
        // One group of queues: one process delivers them all (the groups are tested below).
        store: { sparql: { feedPollMillis: 20, deliveryLeaseMillis: 1000, deliveryGroups: 1 } },
      },
      dataDir,
      true,
    );
  });
  after(async () => {
    await api?.close();
    await sink?.close();
  });

  it("one process delivers every process's notifications: each under one id, each object's in revision order", async () => {
    const subscribed = await api.request('/subscriptions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/ld+json' },
      body: JSON.stringify(pieceSubscription(sink.organization)),
    });
    expect(subscribed.status, await subscribed.text()).to.equal(201);
    // Eight clients at once, each creating an object and changing it three times, through whichever process.
    const expected = new Set<string>();
    await Promise.all(
      Array.from({ length: 8 }, async (_, client) => {
        const object = await createObject(api);
        expected.add(`${object} 1 LOGISTICS_OBJECT_CREATED`);
        for (let revision = 1; revision <= 3; revision++) {
          const res = await patch(
            api,
            object,
            change(object, revision, [add(object, 'remarks', str(`client ${client} change ${revision}`))]),
          );
          expect(res.status, await res.text()).to.equal(201);
          expected.add(`${object} ${revision + 1} LOGISTICS_OBJECT_UPDATED`);
        }
      }),
    );
    expect(await faultsOnceDelivered(sink.received, expected)).to.deep.equal([]);
    // One process holds the lease: it alone has queues to show.
    const delivering: boolean[] = [];
    for (let i = 0; i < CLUSTER_PROCESSES; i++)
      delivering.push(
        ((await (await api.request('/internal/outbox/queues')).json()) as { delivering: boolean }).delivering,
      );
    expect(delivering.filter(Boolean), delivering.join()).to.have.length(1);
  });
});

describe('two server processes with store.sparql.readYourWrites off', function () {
  this.timeout(120_000);
  let engineKey: string;
  const servers: TestServer[] = [];

  before(async () => {
    engineKey = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    const engine = await leaseEngine(engineKey);
    // A feed read once a minute: within the test, the second process learns nothing from it.
    const sparql = {
      ...engineSettings(engine),
      sharedWriters: true,
      readYourWrites: false,
      feedPollMillis: 60_000,
      // One lease: gaining one reads the feed, and with groups of queues leases change hands until they are shared.
      deliveryGroups: 1,
    };
    servers.push(await startTestServer({ store: { backend: 'sparql', sparql } }));
    const dir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    await shareIdentityProvider(servers[0].dataDir, dir);
    servers.push(await startTestServer({ store: { backend: 'sparql', sparql }, baseUrl: servers[0].url }, dir));
    // Until one of them delivers: a process that gains the delivery lease reads the feed once (so the
    // second, should it gain it while the test creates its object, would learn of it).
    for (
      const deadline = Date.now() + 30_000;
      !servers.some((s) => s.running.services.delivery.delivering) && Date.now() < deadline;
    )
      await new Promise((resolve) => setTimeout(resolve, 50));
  });
  after(async () => {
    for (const server of servers.reverse()) await server.close();
    await releaseEngine(engineKey);
    await rm(engineKey, { recursive: true, force: true });
  });

  it('a request does not wait for the feed: a change made through one process is not seen yet through the other, which holds the object', async () => {
    const object = await createObject(servers[0]);
    const atSecond = `${servers[1].url}${new URL(object).pathname}`;
    // Not held by the second process: read from the engine.
    expect((await servers[1].request(atSecond)).headers.get('revision')).to.equal('1');
    const changed = await patch(servers[0], object, change(object, 1, [add(object, 'remarks', str('changed'))]));
    expect(changed.status).to.equal(201);
    expect((await servers[0].request(object)).headers.get('revision')).to.equal('2');
    expect((await servers[1].request(atSecond)).headers.get('revision')).to.equal('1');
  });
});
