/**
 * What a change costs the publisher as the outbox backlog of a dead subscriber grows: the cost of
 * a write must not depend on how many notifications wait in the store. One server in this process
 * (fsync on), 10 objects, a subscription to every Logistics Object whose endpoint is down (nothing
 * listens); the outbox is filled to each backlog in turn by entries like the ones a PATCH queues
 * (written in commits of 1,000, so the fill takes seconds, not the minutes of real changes), and at
 * each backlog `changes` PATCHes are made by 10 lanes, as fast as the server answers: their rate,
 * latency and the process CPU per change (all threads). Backlogs of 0 fill nothing: rounds of
 * `0,0,0,...` measure the changes' own notifications piling up, and every object's revisions growing.
 * OBJECTS=n changes n objects (n lanes) instead of 10. LOG_LEVEL=info shows the store's log.
 *   npm run build && node dist/scripts/bench/outbox-backlog.js [backlogs, comma-separated] [changes]
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API, CARGO } from '../../src/rdf/vocab.js';
import { startServer } from '../../src/server.js';
import { createLogger } from '../../src/observability/logger.js';
import { outboxEntryQuads, type OutboxEntry } from '../../src/store/schema/outbox.js';
import { everyObjectUpdatedSubscription, markedPiece, publisherConfig, replaceMarkChange } from './fixtures.js';
import { LoadClient, fmt, freePort, machine, percentile } from './harness.js';

const SUBSCRIBER = 'https://subscriber.example.com/logistics-objects/org';
const OBJECTS = Number(process.env.OBJECTS ?? 10);
const FILL_PER_COMMIT = 1000;

const backlogs = (process.argv[2] ?? '0,20000,40000,60000').split(',').map(Number);
const changes = Number(process.argv[3] ?? 2000);

// A port nothing listens on: every send fails at once, as to a subscriber that is down.
const closed = createServer().listen(0, '127.0.0.1');
await once(closed, 'listening');
const deadPort = (closed.address() as { port: number }).port;
closed.close();

const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-outbox-backlog-'));
const port = await freePort();
const config = publisherConfig(port, dataDir, SUBSCRIBER, `http://127.0.0.1:${deadPort}/notifications`);
const server = await startServer(config, createLogger((process.env.LOG_LEVEL as 'info' | undefined) ?? 'silent'));
const token = await server.services.identityProvider!.issue(server.services.holder);
const client = new LoadClient({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/ld+json' });
const objects: { iri: string; revision: number }[] = [];
for (let i = 0; i < OBJECTS; i++) {
  const res = await client.send(`${server.url}/logistics-objects`, 'POST', markedPiece(`object ${i}`));
  objects.push({ iri: res.headers.location as string, revision: 1 });
}
const subscribed = await client.send(`${server.url}/subscriptions`, 'POST', everyObjectUpdatedSubscription(SUBSCRIBER));
if (subscribed.status !== 201) throw new Error(`subscription: ${subscribed.status}`);

/** The number of the last entry queued, as the outbox numbers them (entries follow the after-commit stream). */
let lastSequence = 0;
server.store.committed.subscribe((events) => {
  for (const e of events) if (e.kind === 'notification-queued') lastSequence = Math.max(lastSequence, e.entry.sequence);
});

const pending = () => server.services.delivery.depth().pending;

/** Entries like a PATCH's, in commits of FILL_PER_COMMIT, until `backlog` notifications are pending. */
async function fillTo(backlog: number): Promise<void> {
  while (pending() < backlog) {
    const tx = server.store.begin();
    for (let i = 0; i < Math.min(FILL_PER_COMMIT, backlog - pending()); i++) {
      const object = objects[i % OBJECTS].iri;
      const entry: OutboxEntry = {
        sequence: ++lastSequence,
        iri: `${server.url}/notifications/${randomUUID()}`,
        queuedAt: new Date(),
        content: {
          eventType: `${API}LOGISTICS_OBJECT_UPDATED`,
          object,
          objectType: `${CARGO}Piece`,
          revision: 1,
          changed: [`${CARGO}shippingMarks`],
        },
        topics: [{ object, type: `${CARGO}Piece` }],
        addressed: [],
        recipients: 1,
      };
      tx.insert.push(...outboxEntryQuads(entry));
      tx.events.push({ kind: 'notification-queued', entry });
    }
    await server.store.commit(tx);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** `changes` PATCHes by OBJECTS lanes, each as soon as the one before it was answered. */
async function measure(): Promise<{ perSecond: number; p50: number; p99: number; cpuMs: number }> {
  const latencies: number[] = [];
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    objects.map(async (object) => {
      for (let n = 0; n < changes / OBJECTS; n++) {
        const t = performance.now();
        const res = await client.send(object.iri, 'PATCH', replaceMarkChange(object.iri, object.revision));
        if (res.status !== 201) throw new Error(`PATCH ${res.status}`);
        object.revision += 1;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = performance.now() - t0;
  const used = process.cpuUsage(cpu);
  return {
    perSecond: (latencies.length * 1000) / elapsed,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    cpuMs: (used.user + used.system) / 1000 / latencies.length,
  };
}

console.log(
  `# outbox backlog: ${machine()}; ${changes} PATCHes by ${OBJECTS} lanes at each backlog of a dead subscriber's queue`,
);
await measure(); // warm-up
for (const backlog of backlogs) {
  const t = performance.now();
  await fillTo(backlog);
  const filled = performance.now() - t;
  const r = await measure();
  console.log(
    `backlog ${fmt(backlog)} (filled in ${fmt(filled / 1000, 1)} s, ${fmt(pending())} pending after): ${fmt(r.perSecond)} PATCH/s, p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms, CPU ${fmt(r.cpuMs, 2)} ms per PATCH (process)`,
  );
}
client.close();
await server.close();
await rm(dataDir, { recursive: true, force: true });
