import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { shareIdentityProvider } from '../src/auth/identity-provider.js';
import { add, change, createObject, patch, str } from './support/changes.js';
import { faultsOnceDelivered, pieceSubscription, startNotificationSink } from './support/notification-sink.js';
import { startTestServer, type TestServer } from './support/server.js';
import { leaseEngine, releaseEngine } from './support/virtuoso.js';

// Notification delivery over three server processes on one engine, each holding a share of the groups of queues:
// a run of several seconds per case, so it runs with the engine's tests (npm run test:engine, in test:long).

describe('notification delivery spread over three server processes (groups of queues, store.sparql.deliveryGroups)', function () {
  this.timeout(120_000);
  // Twelve leases renewed by each process at once: a term long enough for their round trips on a busy machine.
  const TERM_MS = 2500;
  const METRICS_TOKEN = 'metrics-token-for-the-test';
  let engineKey: string;
  let sink: Awaited<ReturnType<typeof startNotificationSink>>;
  const servers: TestServer[] = [];
  const expected = new Set<string>();

  before(async () => {
    engineKey = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    const engine = await leaseEngine(engineKey);
    sink = await startNotificationSink();
    const overrides = {
      internalAgents: [sink.organization],
      outbound: { allowPrivateAddresses: true },
      metrics: { token: METRICS_TOKEN },
      store: {
        backend: 'sparql' as const,
        sparql: {
          queryUrl: engine.authUrl,
          updateUrl: engine.authUrl,
          user: engine.user,
          password: engine.password,
          authScheme: 'digest' as const,
          sharedWriters: true,
          feedPollMillis: 20,
          deliveryLeaseMillis: TERM_MS,
          processDeadAfterMillis: TERM_MS,
        },
      },
    };
    servers.push(await startTestServer(overrides));
    for (let i = 1; i < 3; i++) {
      const dir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
      await shareIdentityProvider(servers[0].dataDir, dir);
      servers.push(await startTestServer({ ...overrides, baseUrl: servers[0].url }, dir));
    }
  });
  after(async () => {
    for (const server of servers.reverse()) await server.close().catch(() => {});
    await sink?.close();
    await releaseEngine(engineKey);
    await rm(engineKey, { recursive: true, force: true });
  });

  const groupsOf = (server: TestServer) => server.running.services.delivery.groups ?? [];

  /** Waits until the running servers hold every group between them, each its fair share. */
  async function shared(running: TestServer[], groups = 12): Promise<number[][]> {
    const share = Math.ceil(groups / running.length);
    const held = () => running.map(groupsOf);
    for (
      const deadline = Date.now() + 30_000;
      Date.now() < deadline &&
      !(
        held().flat().length === groups &&
        new Set(held().flat()).size === groups &&
        held().every((g) => g.length === share)
      );
    )
      await new Promise((resolve) => setTimeout(resolve, 50));
    return held();
  }

  async function delivered(server: TestServer): Promise<number> {
    const res = await server.request('/metrics', { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
    const line = (await res.text())
      .split('\n')
      .find((l) => /^onerecord_notification_deliveries_total\{.*outcome="delivered"/.test(l));
    return line ? Number(line.split(' ').pop()) : 0;
  }

  /** Twelve objects, each subscribed to on its own (a queue each), created and changed twice through the servers. */
  async function writeThrough(through: TestServer[], label: string): Promise<void> {
    await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const server = through[i % through.length];
        const object = await createObject(server);
        const subscribed = await server.request('/subscriptions', {
          method: 'POST',
          headers: { 'Content-Type': 'application/ld+json' },
          body: JSON.stringify({
            ...pieceSubscription(sink.organization),
            'api:hasTopicType': { '@id': 'api:LOGISTICS_OBJECT_IDENTIFIER' },
            'api:hasTopic': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI', '@value': object },
          }),
        });
        expect(subscribed.status, await subscribed.text()).to.equal(201);
        for (let revision = 1; revision <= 2; revision++) {
          const res = await patch(
            through[(i + revision) % through.length],
            object,
            change(object, revision, [add(object, 'remarks', str(`${label} ${i} change ${revision}`))]),
          );
          expect(res.status, await res.text()).to.equal(201);
          expected.add(`${object} ${revision + 1} LOGISTICS_OBJECT_UPDATED`);
        }
      }),
    );
    expect(await faultsOnceDelivered(sink.received, expected)).to.deep.equal([]);
  }

  it('each process takes a third of the groups and delivers its part; the subscriber gets each notification once, in order', async () => {
    const held = await shared(servers);
    expect(
      held.map((g) => g.length),
      JSON.stringify(held),
    ).to.deep.equal([4, 4, 4]);
    for (const server of servers) {
      const answer = (await (await server.request('/internal/outbox/queues')).json()) as { groups: number[] };
      expect(answer.groups).to.deep.equal(groupsOf(server));
    }
    await writeThrough(servers, 'first');
    // Twelve queues hashed over twelve groups: each process delivered some of them.
    const counts = await Promise.all(servers.map(delivered));
    expect(
      counts.filter((n) => n > 0),
      counts.join(),
    ).to.have.length(3);
  });

  it("a process that stops: the others take its groups, six each, and deliver its queues' notifications", async () => {
    const gone = servers.pop()!;
    await gone.close();
    const held = await shared(servers);
    expect(
      held.map((g) => g.length),
      JSON.stringify(held),
    ).to.deep.equal([6, 6]);
    await writeThrough(servers, 'second');
  });
});
