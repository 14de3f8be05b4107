import { expect } from 'chai';
import { createObject, piece } from './support/changes.js';
import { METRICS_TOKEN, metricSample, scrapeMetrics } from './support/metrics.js';
import { startTestServer, TEST_STORE_BACKEND, type TestServer } from './support/server.js';

// The embedded store's query replica runs only while /sparql is queried (sparql.replicaIdleMillis).
// An engine answers /sparql itself: there is no replica to start or stop.

const CARGO = 'https://onerecord.iata.org/ns/cargo#';

/** Worker threads the writes feed (0: the replica is stopped), and the writes they have applied, from the server's metrics. */
async function replicaMetrics(server: TestServer): Promise<{ workers: number; applied: number }> {
  const text = await scrapeMetrics(`${server.url}/metrics`);
  return {
    workers: metricSample(text, 'onerecord_sparql_replica_workers'),
    applied: metricSample(text, 'onerecord_sparql_replica_visible_seconds_count'),
  };
}

/** The goods descriptions of every Piece, as a query sees them, and the answer's SPARQL-Replica-Lag. */
async function described(server: TestServer): Promise<{ descriptions: string[]; lag: string | null }> {
  const query = `SELECT ?d WHERE { ?s a <${CARGO}Piece> ; <${CARGO}goodsDescription> ?d }`;
  const res = await server.request(`/sparql?${new URLSearchParams({ query })}`, {
    headers: { Accept: 'application/sparql-results+json' },
  });
  const text = await res.text();
  expect(res.status, text).to.equal(200);
  const rows = (JSON.parse(text) as { results: { bindings: { d: { value: string } }[] } }).results.bindings;
  return { descriptions: rows.map((row) => row.d.value).sort(), lag: res.headers.get('sparql-replica-lag') };
}

/** Writes `count` Pieces at once, described `${prefix} ${i}`: the descriptions, all acknowledged. */
async function burst(server: TestServer, prefix: string, count: number): Promise<string[]> {
  const descriptions = Array.from({ length: count }, (_, i) => `${prefix} ${i}`);
  await Promise.all(descriptions.map((d) => createObject(server, { ...piece(), 'cargo:goodsDescription': d })));
  return descriptions;
}

/** Polls the metrics until `done` holds of them (or `waitMs` passed): the last ones read. */
async function metricsWhen(
  server: TestServer,
  done: (m: { workers: number; applied: number }) => boolean,
  waitMs: number,
) {
  const until = Date.now() + waitMs;
  for (;;) {
    const found = await replicaMetrics(server);
    if (done(found) || Date.now() > until) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

if (TEST_STORE_BACKEND === 'embedded') {
  describe('SPARQL query replica: started by the first query, stopped when none comes', function () {
    this.timeout(60_000);
    const IDLE_MS = 1500;
    let server: TestServer;
    let first: string[];

    before(async () => {
      server = await startTestServer({ sparql: { replicaIdleMillis: IDLE_MS }, metrics: { token: METRICS_TOKEN } });
    });
    after(() => server.close());

    it('runs no replica before the first query: writes feed none', async () => {
      first = await burst(server, 'before any query', 10);
      expect(await replicaMetrics(server)).to.deep.equal({ workers: 0, applied: 0 });
    });

    it('the first query starts it, waits for its copy and sees every write acknowledged before it', async () => {
      const written = await burst(server, 'just before the first query', 30);
      const { descriptions, lag } = await described(server);
      expect(descriptions).to.deep.equal([...first, ...written].sort());
      expect(lag).to.equal('0');
      expect((await replicaMetrics(server)).workers).to.equal(1);
      // From now on the writes feed it, and a query sees them.
      const more = await burst(server, 'while it runs', 5);
      expect((await described(server)).descriptions).to.include.members(more);
      expect((await metricsWhen(server, (m) => m.applied >= 5, 5000)).applied).to.be.at.least(5);
    });

    it(`is stopped once no query came for sparql.replicaIdleMillis, not before; writes then feed nothing`, async () => {
      // Queries keep it running.
      for (let i = 0; i < 4; i++) {
        await new Promise((resolve) => setTimeout(resolve, IDLE_MS / 3));
        await described(server);
      }
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS / 2));
      expect((await replicaMetrics(server)).workers, 'not stopped before the idle time').to.equal(1);
      const stopped = await metricsWhen(server, (m) => m.workers === 0, IDLE_MS + 10_000);
      expect(stopped.workers, 'stopped').to.equal(0);
      await burst(server, 'while it is stopped', 10);
      expect((await replicaMetrics(server)).applied, 'writes fed to no replica').to.equal(stopped.applied);
    });

    it('a query after it stopped starts it again and sees every write, those made while it was stopped too', async () => {
      const before = await replicaMetrics(server);
      const written = await burst(server, 'just before the next query', 20);
      const { descriptions, lag } = await described(server);
      expect(descriptions).to.include.members([
        ...Array.from({ length: 10 }, (_, i) => `while it is stopped ${i}`),
        ...written,
      ]);
      expect(descriptions).to.have.length(10 + 30 + 5 + 10 + 20);
      expect(lag).to.equal('0');
      expect((await replicaMetrics(server)).workers).to.equal(1);
      // Its copy holds the writes made before it: they are not counted as applied by it one by one.
      expect((await replicaMetrics(server)).applied).to.equal(before.applied);
    });
  });

  describe('SPARQL query replica: always on with sparql.replicaIdleMillis 0', function () {
    this.timeout(60_000);

    it('starts with the server and takes every write before any query', async () => {
      const server = await startTestServer({ sparql: { replicaIdleMillis: 0 }, metrics: { token: METRICS_TOKEN } });
      try {
        expect((await replicaMetrics(server)).workers).to.equal(1);
        const written = await burst(server, 'always on', 5);
        expect((await metricsWhen(server, (m) => m.applied >= 5, 5000)).applied, 'fed without a query').to.be.at.least(
          5,
        );
        expect((await described(server)).descriptions).to.deep.equal(written.sort());
      } finally {
        await server.close();
      }
    });
  });
}
