import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { EngineLease } from '../src/store/sparql-engine/engine-lease.js';
import { LeaseShare } from '../src/store/sparql-engine/lease-share.js';
import { SparqlClient } from '../src/store/sparql-engine/sparql-client.js';
import { quadsStoredIn } from './support/server.js';
import { startTcpProxy } from './support/tcp-proxy.js';
import { leaseEngine, releaseEngine } from './support/virtuoso.js';

// The delivery lease of several server processes on one Virtuoso (store.sparql.deliveryLeaseMillis):
// one holder at a time, renewed while it lives, taken over once it stops.
// Whatever TEST_STORE_BACKEND says.

const TERM_MS = 600;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a lease among processes in the engine', function () {
  this.timeout(60_000);
  let dataDir: string;
  let client: (url?: URL) => SparqlClient;
  let engineUrl: URL;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    const engine = await leaseEngine(dataDir);
    engineUrl = new URL(engine.authUrl);
    client = (url = engineUrl) =>
      new SparqlClient({
        queryUrl: url.href,
        updateUrl: url.href,
        auth: { user: engine.user, password: engine.password, scheme: 'digest' },
        timeoutMs: 2_000,
      });
  });
  after(async () => {
    await releaseEngine(dataDir);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('three claimants: one holds it at a time and keeps it while it renews; when it stops, another takes it within 1.5 terms and a poll', async () => {
    /** When each claimant held the lease: [from, to]. */
    const held: { claimant: number; from: number; to?: number }[] = [];
    const leases = [0, 1, 2].map((claimant) => {
      const lease = new EngineLease(client(), 'test', { termMs: TERM_MS, log: () => {} });
      lease.start({
        gained: () => held.push({ claimant, from: Date.now() }),
        lost: () => (held.filter((h) => h.claimant === claimant).pop()!.to = Date.now()),
      });
      return lease;
    });
    await pause(TERM_MS * 6);
    // Held all along by the first to claim it.
    expect(held, JSON.stringify(held)).to.have.length(1);
    expect(held[0].to).to.equal(undefined);
    const first = held[0].claimant;
    const stoppedAt = Date.now();
    await leases[first].stop();
    for (const deadline = Date.now() + TERM_MS * 5; held.length < 2 && Date.now() < deadline; ) await pause(20);
    expect(held, JSON.stringify(held)).to.have.length(2);
    expect(held[1].claimant).to.not.equal(first);
    expect(held[1].from - stoppedAt).to.be.at.most(1.5 * TERM_MS + TERM_MS / 5 + 300);
    // Never two at once.
    expect(held[1].from).to.be.at.least(held[0].to!);
    for (const lease of leases) await lease.stop();
  });

  it("claims its terms on its own clock, in a graph of its own that the tests' count of stored quads leaves out", async () => {
    // A refused write must leave the stored quads as they were (storedQuads); a lease claiming its
    // next term between the two counts made that check fail under the cluster backend.
    const engine = client();
    const allQuads = async () =>
      Number(
        (await engine.select('SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }')).results.bindings[0].n.value,
      );
    const [allBefore, storedBefore] = [await allQuads(), await quadsStoredIn(engine)];
    const lease = new EngineLease(engine, 'counted', { termMs: TERM_MS, log: () => {} });
    lease.start({ gained: () => {}, lost: () => {} });
    await pause(TERM_MS * 3);
    await lease.stop();
    expect(await allQuads()).to.be.above(allBefore);
    expect(await quadsStoredIn(engine)).to.equal(storedBefore);
  });

  it('a holder whose engine answers slowly keeps the lease: it renews right at the halfway point of its term, not at a poll late in its window', async () => {
    // Each claim takes two requests: 2 × 40 ms of the window of a quarter term (150 ms) that a
    // holder has to renew in. Polling every fifth of a term (120 ms), the claim began up to a poll
    // after the halfway point and the lease lapsed for a moment within a few terms.
    const engine = client();
    const slow = {
      select: async (sparql: string) => {
        await pause(40);
        return engine.select(sparql);
      },
      update: async (text: string) => {
        await pause(40);
        return engine.update(text);
      },
    };
    const changes: string[] = [];
    const lease = new EngineLease(slow, 'slow', { termMs: TERM_MS, log: () => {} });
    lease.start({ gained: () => changes.push(`gained ${Date.now()}`), lost: () => changes.push(`lost ${Date.now()}`) });
    await pause(TERM_MS * 10);
    await lease.stop();
    expect(
      changes.slice(0, 2).map((c) => c.split(' ')[0]),
      changes.join(),
    ).to.deep.equal(['gained', 'lost']);
    expect(changes, changes.join()).to.have.length(2);
  });

  it('a holder that cannot reach the engine stops before its term ends; a claimant that can takes it after', async () => {
    const events: string[] = [];
    const proxy = await startTcpProxy(engineUrl.hostname, Number(engineUrl.port));
    const throughProxy = new URL(engineUrl);
    throughProxy.port = String(proxy.port);
    const unreachable = new EngineLease(client(throughProxy), 'cut', { termMs: TERM_MS, log: () => {} });
    unreachable.start({
      gained: () => events.push(`gained ${Date.now()}`),
      lost: () => events.push(`lost ${Date.now()}`),
    });
    for (const deadline = Date.now() + TERM_MS * 3; events.length === 0 && Date.now() < deadline; ) await pause(10);
    expect(events).to.have.length(1);
    // The engine goes away for this holder (its connections dropped, new ones refused).
    await proxy.cut();
    const cutAt = Date.now();
    for (const deadline = Date.now() + TERM_MS * 4; events.length < 2 && Date.now() < deadline; ) await pause(10);
    expect(events[1], events.join()).to.match(/^lost/);
    const lostAt = Number(events[1].split(' ')[1]);
    expect(lostAt - cutAt).to.be.at.most(2 * TERM_MS);
    // Its last term ends after it stopped: the next holder starts after that.
    const next = new EngineLease(client(), 'cut', { termMs: TERM_MS, log: () => {} });
    let gainedAt = 0;
    next.start({ gained: () => (gainedAt = Date.now()), lost: () => {} });
    for (const deadline = Date.now() + TERM_MS * 4; gainedAt === 0 && Date.now() < deadline; ) await pause(10);
    expect(gainedAt).to.be.greaterThan(lostAt);
    await next.stop();
    await unreachable.stop();
  });

  it('leases shared out (LeaseShare): one renewed only after it lapsed (a slow engine) still counts, and the process gives back those beyond its share', async () => {
    // A renewal that came back after the lease's end made it held again without counting it: the process then
    // kept, beyond its share, a lease the others never got (5 and 7 of 12 groups between two processes).
    let live = 1;
    const processes = { select: async () => ({ head: { vars: [] }, results: { bindings: livenessRows(live) } }) };
    const share = new LeaseShare(processes, 2, TERM_MS, TERM_MS / 5);
    const engine = client();
    let slowRenewal = false;
    const slowOnce = {
      select: (sparql: string) => engine.select(sparql),
      update: async (text: string) => {
        // Past the quarter term a holder has left to renew in: the lease lapses, then the claim comes back held.
        if (slowRenewal && text.startsWith('INSERT')) {
          slowRenewal = false;
          await pause(TERM_MS / 2);
        }
        return engine.update(text);
      },
    };
    const changes: string[][] = [[], []];
    const leases = [slowOnce, engine].map((access, i) => {
      const lease = new EngineLease(access, `shared:${i}`, { termMs: TERM_MS, log: () => {}, share });
      lease.start({ gained: () => changes[i].push('gained'), lost: () => changes[i].push('lost') });
      return lease;
    });
    const holding = () => changes.filter((c) => c.at(-1) === 'gained').length;
    for (const deadline = Date.now() + TERM_MS * 4; holding() < 2 && Date.now() < deadline; ) await pause(10);
    expect(changes, JSON.stringify(changes)).to.deep.equal([['gained'], ['gained']]);
    slowRenewal = true;
    for (const deadline = Date.now() + TERM_MS * 4; changes[0].length < 3 && Date.now() < deadline; ) await pause(10);
    expect(changes[0], JSON.stringify(changes)).to.deep.equal(['gained', 'lost', 'gained']);
    // Another process comes: a share of one lease each.
    live = 2;
    await pause(TERM_MS * 4);
    expect(holding(), JSON.stringify(changes)).to.equal(1);
    for (const lease of leases) await lease.stop();
  });
});

/** Liveness records (process-liveness.ts) of `count` processes seen just now. */
function livenessRows(count: number) {
  const at = new Date().toISOString();
  return Array.from({ length: count }, (_, i) => ({
    process: { type: 'uri' as const, value: `urn:test:process:${i}` },
    at: { type: 'literal' as const, value: at },
  }));
}
