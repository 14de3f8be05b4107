import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { shareIdentityProvider } from '../../src/auth/identity-provider.js';
import { startBalancer } from '../support/balancer.js';
import { add, change, createObject, piece, statusOf, str } from '../support/changes.js';
import { CLUSTER_PROCESSES, holdPort, startTestCluster } from '../support/cluster.js';
import {
  deliveryFaults,
  pieceSubscription,
  startNotificationSink,
  type ReceivedNotification,
} from '../support/notification-sink.js';
import { ServerProcess } from '../support/server-process.js';
import { acceptedChanges, changeOnRead, expectAppliedOnce, remarksOf, type Sent } from '../support/soak-history.js';
import { freePort, startTestServer, type TestServer } from '../support/server.js';
import {
  engineClientOptions,
  engineRestarts,
  killEngine,
  leaseEngine,
  releaseEngine,
  type EngineConnection,
  engineSettings,
} from '../support/virtuoso.js';
import { STORE } from '../../src/rdf/vocab.js';
import { outboxEntryGraph, readOutboxPositions } from '../../src/store/schema/outbox.js';
import { parseEvents, readFeed } from '../../src/store/sparql-engine/commit-feed.js';
import { storedIntentNames } from '../../src/store/sparql-engine/commit-intents.js';
import { SparqlClient } from '../../src/store/sparql-engine/sparql-client.js';

// Three server processes over one Virtuoso behind nginx (store.sparql.sharedWriters): 20 clients
// change 50 objects for 20 s, each change built on the revision the client just read, through
// whichever process the balancer picks. Whatever TEST_STORE_BACKEND says.

const CLIENTS = 20;
const OBJECTS = 50;
const SECONDS = 20;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** What a client does with a 503: wait as long as its Retry-After says. */
const waitRetryAfter = (res: Response) => sleep(Number(res.headers.get('retry-after') ?? 1) * 1000);

/** The answer to `request` once it is not a 503, each 503 waited out as it says while `waitOut` holds for it. */
async function past503(request: () => Promise<Response>, waitOut: () => boolean = () => true): Promise<Response> {
  for (;;) {
    const res = await request();
    if (res.status !== 503 || !waitOut()) return res;
    await res.arrayBuffer();
    await waitRetryAfter(res);
  }
}

/**
 * 20 clients change 50 objects for 20 s through the cluster, then every object's history is
 * checked through every process. `killEngineAfterMs`: the engine is SIGKILLed that long into the
 * run (and started again on its data by the test support, as a service manager would). Whenever
 * the engine is down, a client does what the 503 says: it tries again after Retry-After. A PATCH
 * answered 503 was not acknowledged: it may be applied (the server sends the operation again until
 * the engine answers) or not; every acknowledged one must be, once.
 */
async function soak(cluster: TestServer, engineKey: string, killEngineAfterMs?: number): Promise<void> {
  const objects = await Promise.all(Array.from({ length: OBJECTS }, () => createObject(cluster, piece())));
  const sent: Sent[] = [];
  let unavailable = 0;
  const read = (path: string) =>
    past503(
      () => cluster.request(path, { headers: { Accept: 'application/n-triples' } }),
      () => {
        unavailable += 1;
        return true;
      },
    );
  const deadline = Date.now() + SECONDS * 1000;
  let restartedAt: number | undefined;
  const killing =
    killEngineAfterMs === undefined
      ? undefined
      : (async () => {
          await sleep(killEngineAfterMs);
          await killEngine(engineKey);
          await leaseEngine(engineKey);
          restartedAt = Date.now();
        })();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let n = 0; Date.now() < deadline; n++) {
        const object = objects[Math.floor(Math.random() * OBJECTS)];
        const { sent: outcome, answer } = await changeOnRead(cluster, read, object, `client ${client} change ${n}`);
        sent.push(outcome);
        if (outcome.status === 503) await waitRetryAfter(answer);
      }
    }),
  );
  await killing;
  const restarts = engineRestarts(engineKey);
  // 503 only while the engine was down.
  const allowed = restarts > 0 ? [201, 409, 503] : [201, 409];
  expect(
    sent.filter((s) => !allowed.includes(s.status)).map((s) => `${s.status} ${s.message}`),
    `answers other than ${allowed.join(', ')}`,
  ).to.deep.equal([]);
  if (restarts === 0) expect(unavailable, 'GETs answered 503 with the engine up').to.equal(0);
  if (killEngineAfterMs !== undefined) {
    // More than one when Virtuoso also died by itself (7.2 aborts now and then under this load).
    expect(restarts, 'engine restarts').to.be.at.least(1);
    // The servers went on by themselves once the engine was back.
    expect(
      sent.filter((s) => s.status === 201 && s.at > restartedAt!).length,
      'changes acknowledged after the engine came back',
    ).to.be.greaterThan(0);
  }
  // A lost race: the revision built on was replaced, or another change of it is being (or was) written.
  for (const refused of sent.filter((s) => s.status === 409))
    expect(refused.message, refused.remark).to.match(/revision/);

  const mismatchDetail = async (object: string) => {
    const lines = [object];
    for (let i = 0; i < CLUSTER_PROCESSES; i++) {
      const res = await read(object);
      lines.push(
        `a process: latest revision ${res.headers.get('latest-revision')}, ${remarksOf(await res.text()).length} remarks`,
      );
    }
    for (const s of sent.filter((x) => x.object === object))
      lines.push(
        `sent on revision ${s.revision} at ${s.at}: ${s.remark} ${s.status} ${s.request ? await statusOf(cluster, s.request) : s.message}`,
      );
    return lines.join('\n');
  };
  const accepted = await acceptedChanges(cluster, sent);
  expect(accepted.size).to.be.greaterThan(CLIENTS);
  const unanswered = new Set(sent.filter((s) => s.status === 503).map((s) => s.remark));

  for (const object of objects) {
    const expected = sent.filter((s) => s.object === object && accepted.has(s.remark)).map((s) => s.remark);
    await expectAppliedOnce(read, object, expected, { accepted, unanswered }, () => mismatchDetail(object));
    // The same audit trail through every process (round robin: consecutive requests reach each).
    const trails = new Set<string>();
    for (let i = 0; i < CLUSTER_PROCESSES; i++) trails.add(await (await read(`${object}/audit-trail`)).text());
    expect(trails.size, `${object}/audit-trail`).to.equal(1);
  }
}

describe('three processes behind a balancer, 20 clients changing 50 objects for 20 s', function () {
  this.timeout(300_000);
  let dataDir: string;
  let cluster: TestServer;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    cluster = await startTestCluster(startTestServer, {}, dataDir, true);
  });
  afterEach(() => cluster?.close());

  it('every accepted change is applied once, revisions have no gaps, a 409 is only a lost race, and every process tells the same history', () =>
    soak(cluster, dataDir));

  it('the same with the engine SIGKILLed 8 s into the run and started again: the processes answer 503 while it is down, then go on; no acknowledged change is lost or applied twice', () =>
    soak(cluster, dataDir, 8_000));
});

/** The paths of the objects that fault messages name (each starts with, or holds, an object's IRI). */
const objectPaths = (faults: readonly string[]) =>
  faults.flatMap((f) => f.match(/https?:\/\/\S+/g) ?? []).map((iri) => new URL(iri).pathname);

/**
 * On a delivery fault: what the engine holds of the objects `faults` name. From the commit feed (every
 * commit of the run, with its process's intent and its time relative to the run's start): the commits
 * that name them, with their outbox entry numbers and whether each entry is stored; any other commit
 * that queued an entry under one of those numbers; and the first queue position and compaction past
 * each number. Then the outbox's positions now, and the intents left.
 */
async function engineStateAbout(
  engine: EngineConnection,
  faults: readonly string[],
  startedAt: number,
  received: readonly ReceivedNotification[],
): Promise<string> {
  const client = new SparqlClient(engineClientOptions(engine));
  const ids = [...new Set(objectPaths(faults).map((path) => path.split('/').pop()!))];
  const feed = (await readFeed(client, 0, [], 1_000_000)).map((e) => ({
    position: e.position,
    intent: e.intent.replace(`${STORE}commit:`, ''),
    at: `${((e.committedAt.getTime() - startedAt) / 1000).toFixed(2)} s`,
    text: e.events,
    events: parseEvents(e.events),
  }));
  const queued = (e: (typeof feed)[number]) =>
    e.events.flatMap((d) => (d.kind === 'notification-queued' ? [d.entry.sequence] : []));
  const lines: string[] = [];
  const numbers = new Set<number>();
  for (const entry of feed.filter((e) => ids.some((id) => e.text.includes(id)))) {
    const stored = await Promise.all(
      queued(entry).map(
        async (n) =>
          `${n}${(await client.ask(`ASK { GRAPH <${outboxEntryGraph(n)}> { ?s ?p ?o } }`)) ? ' stored' : ' not stored'}`,
      ),
    );
    for (const n of queued(entry)) numbers.add(n);
    lines.push(
      `engine: feed ${entry.position} at ${entry.at} by ${entry.intent}: ${entry.events.map((e) => e.kind).join(', ')}; entries ${stored.join(', ')}`,
    );
    // Its notifications' @ids start with the entry's: whatever body came with them.
    for (const e of entry.events) {
      if (e.kind !== 'notification-queued') continue;
      const arrivals = received.flatMap((n, i) =>
        n.id.startsWith(e.entry.iri) ? [`arrival ${i} as ${n.object} ${n.revision} ${n.eventType}`] : [],
      );
      lines.push(
        `engine: entry ${e.entry.sequence} (${e.entry.iri}): ${arrivals.length > 0 ? arrivals.join('; ') : 'no notification under its @id arrived'}`,
      );
    }
  }
  for (const n of numbers) {
    for (const entry of feed.filter((e) => queued(e).includes(n) && !ids.some((id) => e.text.includes(id))))
      lines.push(`engine: entry ${n} also queued by feed ${entry.position} at ${entry.at} by ${entry.intent}`);
    const passed = (kind: 'outbox-advanced' | 'outbox-compacted') =>
      feed.find((e) => e.events.some((d) => d.kind === kind && d.through >= n));
    for (const kind of ['outbox-advanced', 'outbox-compacted'] as const) {
      const first = passed(kind);
      const through = first?.events.flatMap((d) => (d.kind === kind ? [d.through] : [])).join(', ');
      lines.push(
        `engine: entry ${n}: first ${kind} past it ${first ? `feed ${first.position} at ${first.at} by ${first.intent} (through ${through})` : 'none'}`,
      );
    }
    // Each group's position, and any process's word that the number would not be written.
    const groups = new Map<string, string>();
    for (const e of feed)
      for (const d of e.events)
        if (d.kind === 'outbox-group-advanced' && d.through >= n && !groups.has(d.group))
          groups.set(d.group, `${d.group} by feed ${e.position} at ${e.at} by ${e.intent} (through ${d.through})`);
    lines.push(`engine: entry ${n}: first group positions past it: ${[...groups.values()].join('; ') || 'none'}`);
    for (const e of feed.filter((f) =>
      f.events.some((d) => d.kind === 'outbox-numbers-released' && d.numbers.includes(n)),
    ))
      lines.push(`engine: entry ${n}: said unused by feed ${e.position} at ${e.at} by ${e.intent}`);
  }
  const positions = await readOutboxPositions(client);
  lines.push(
    `engine: outbox compacted through ${positions.compactedThrough}; queues ${positions.queues.map((q) => q.through).join(', ')}`,
  );
  lines.push(`engine: intents stored ${(await storedIntentNames(client)).size}`);
  return lines.join('\n');
}

describe('three processes behind a balancer, the one delivering notifications SIGKILLed and restarted twice while 20 clients write', function () {
  this.timeout(300_000);
  let dataDir: string;
  let sink: Awaited<ReturnType<typeof startNotificationSink>>;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    sink = await startNotificationSink();
  });
  after(async () => {
    await sink.close();
    await releaseEngine(dataDir);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('loses no acknowledged write and no notification: every object created and every change accepted through any process is there, through every process, and its notification came under one id', async () => {
    const engine = await leaseEngine(dataDir);
    const held = await holdPort();
    const baseUrl = `http://127.0.0.1:${held.port}`;
    const config = {
      baseUrl,
      decisionPolicy: 'auto' as const,
      internalAgents: [sink.organization],
      outbound: { allowPrivateAddresses: true },
      store: {
        backend: 'sparql' as const,
        sparql: {
          ...engineSettings(engine),
          sharedWriters: true,
          deliveryLeaseMillis: 4000,
        },
      },
    };
    const dirs = Array.from({ length: CLUSTER_PROCESSES }, (_, i) => join(dataDir, `process-${i + 1}`));
    const ports = await Promise.all(dirs.map(() => freePort()));
    /** Every process started, killed ones included: their logs explain a failed read. */
    const started: ServerProcess[] = [];
    const start = (i: number) => {
      const server = new ServerProcess({ dataDir: dirs[i], port: ports[i], config });
      started.push(server);
      return server;
    };
    /**
     * On a failure: what every process, killed ones too, logged of the objects `faults` name (each
     * fault starts with, or holds, an object's IRI), of the writes it waited for or completed, and of `also`.
     */
    const logsAbout = (faults: readonly string[], also?: RegExp) => {
      const paths = objectPaths(faults);
      const about = (line: string) =>
        paths.some((path) => line.includes(path)) || /write\(s\)/.test(line) || (also?.test(line) ?? false);
      return started.flatMap((p, i) => p.log.filter(about).map((line) => `process ${i + 1}: ${line}`)).join('\n');
    };
    const processes: ServerProcess[] = [];
    await mkdir(dirs[0], { recursive: true });
    processes.push(start(0));
    const { token } = await processes[0].ready;
    for (let i = 1; i < CLUSTER_PROCESSES; i++) {
      // One token issuer key for all.
      await shareIdentityProvider(dirs[0], dirs[i]);
      processes.push(start(i));
      await processes[i].ready;
    }
    await held.release();
    const balancer = await startBalancer({ port: held.port, upstreams: ports.map((p) => `127.0.0.1:${p}`) });
    const send = (path: string, init: RequestInit = {}) =>
      fetch(path.startsWith('http') ? path : `${baseUrl}${path}`, {
        ...init,
        headers: { ...init.headers, Authorization: `Bearer ${token}` },
      });
    /** The process delivering the notifications (holding the lease), asked directly. */
    const deliverer = async (): Promise<number> => {
      for (
        const deadline = Date.now() + 30_000;
        Date.now() < deadline;
        await new Promise((resolve) => setTimeout(resolve, 200))
      ) {
        for (let i = 0; i < ports.length; i++) {
          const res = await fetch(`http://127.0.0.1:${ports[i]}/internal/outbox/queues`, {
            headers: { Authorization: `Bearer ${token}` },
          }).catch(() => undefined);
          if (res?.status === 200 && ((await res.json()) as { delivering: boolean }).delivering) return i;
        }
      }
      throw new Error('no process delivers the notifications');
    };
    try {
      const subscribed = await send('/subscriptions', {
        method: 'POST',
        headers: { 'Content-Type': 'application/ld+json' },
        body: JSON.stringify(pieceSubscription(sink.organization)),
      });
      expect(subscribed.status, await subscribed.text()).to.equal(201);
      const created: string[] = [];
      const changed = new Set<string>();
      let writing = true;
      const client = async (i: number) => {
        for (let n = 0; writing; n++) {
          try {
            const res = await send('/logistics-objects', {
              method: 'POST',
              headers: { 'Content-Type': 'application/ld+json' },
              body: JSON.stringify(piece(i % 3)),
            });
            if (res.status !== 201) continue;
            const object = res.headers.get('location')!;
            created.push(object);
            const patched = await send(object, {
              method: 'PATCH',
              headers: { 'Content-Type': 'application/ld+json' },
              body: JSON.stringify(change(object, 1, [add(object, 'remarks', str(`client ${i} write ${n}`))])),
            });
            if (patched.status === 201) changed.add(object);
          } catch {
            // The connection died with a process: not acknowledged.
          }
        }
      };
      const startedAt = Date.now();
      const clients = Array.from({ length: 20 }, (_, i) => client(i));
      const acknowledged = async (count: number) => {
        for (const deadline = Date.now() + 60_000; created.length < count && Date.now() < deadline; )
          await new Promise((resolve) => setTimeout(resolve, 50));
      };
      const kills: string[] = [];
      for (const round of [1, 2]) {
        await acknowledged(40 * round);
        const victim = await deliverer();
        kills.push(`process ${victim + 1} killed at ${((Date.now() - startedAt) / 1000).toFixed(2)} s`);
        await processes[victim].stop('SIGKILL');
        await new Promise((resolve) => setTimeout(resolve, 500));
        processes[victim] = start(victim);
        await processes[victim].ready;
      }
      await acknowledged(120);
      writing = false;
      await Promise.all(clients);
      expect(created.length, 'objects acknowledged').to.be.at.least(120);

      // Read through the balancer: each read reaches the processes in turn, the restarted one among them. Should
      // Virtuoso have aborted meanwhile (docs/sparql-engine.md, "Known limits"), a 503 is waited out as a client would.
      const readUntil = Date.now() + 60_000;
      const read = (path: string) =>
        past503(
          () => send(path),
          () => engineRestarts(dataDir) > 0 && Date.now() < readUntil,
        );
      const missing: string[] = [];
      for (const object of created) {
        const revisions = changed.has(object) ? 2 : 1;
        for (let revision = 1; revision <= revisions; revision++) {
          const res = await read(`${object}?revision=${revision}`);
          if (res.status !== 200) missing.push(`${object} revision ${revision}: ${res.status}`);
        }
        const latest = await read(object);
        if (latest.status !== 200 || Number(latest.headers.get('latest-revision')) < revisions)
          missing.push(`${object} latest: ${latest.status} ${latest.headers.get('latest-revision')}`);
      }
      expect(missing, logsAbout(missing)).to.deep.equal([]);

      // Every notification of every acknowledged write, delivered by whichever process held the lease, under one id each, in order.
      const expected = new Set<string>();
      for (const object of created) {
        expected.add(`${object} 1 LOGISTICS_OBJECT_CREATED`);
        if (changed.has(object)) expected.add(`${object} 2 LOGISTICS_OBJECT_UPDATED`);
      }
      const covered = () =>
        expected.size -
        [...expected].filter((key) => !sink.received.some((n) => `${n.object} ${n.revision} ${n.eventType}` === key))
          .length;
      for (const deadline = Date.now() + 60_000; covered() < expected.size && Date.now() < deadline; )
        await new Promise((resolve) => setTimeout(resolve, 200));
      // A write whose answer was lost with its process (not acknowledged) may be there, with its notification.
      const faults = deliveryFaults(sink.received, expected).filter((f) => !f.startsWith('not expected'));
      const arrivals = (fault: string) =>
        sink.received.flatMap((n, i) =>
          fault.includes(n.object) ? [`arrival ${i}: ${n.id} ${n.object} ${n.revision} ${n.eventType}`] : [],
        );
      const engineState = faults.length > 0 ? await engineStateAbout(engine, faults, startedAt, sink.received) : '';
      expect(
        faults,
        `${kills.join('\n')}\n${faults.flatMap(arrivals).join('\n')}\n${logsAbout(faults, /lease|deliver/)}\n${engineState}`,
      ).to.deep.equal([]);
    } finally {
      await balancer.stop();
      for (const p of processes) await p.stop('SIGTERM');
    }
  });
});
