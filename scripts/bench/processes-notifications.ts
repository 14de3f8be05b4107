/**
 * The notification rate of 1, 2 and 3 server processes sharing one Virtuoso (store.sparql.sharedWriters, behind
 * nginx), which spread delivery by groups of queues (store.sparql.deliveryGroups, 12). Each process count runs on a
 * fresh Virtuoso: `subscribers` subscriptions to every Logistics Object's updates (one queue each, their subscriber
 * IRIs chosen so the queues fall evenly into the 12 groups), then 10 clients make `changes` changes of 10 Pieces
 * through the balancer, so each change makes `subscribers` notifications. While API requests are answered a process
 * paces its sends (delivery.sendsPerSecondWhileServing), so most wait in the outbox when the writes end: the rate
 * after the last write answered, until the last notification arrived, is the delivery's own, at saturation.
 * The subscribers are light node:http servers in this process, one port each, answering 204; they count each
 * notification by its @id (a second arrival is a duplicate) and check each queue's order (an object's revisions
 * arrive rising). Per process count: notifications per second after the writes (and from the first notification to
 * the last), the server processes' and Virtuoso's CPU per notification delivered after the writes, the groups each
 * process holds (GET /internal/outbox/queues `groups`, before the writes and after the last notification),
 * duplicates, order violations and notifications that never arrived. All on one machine: the processes, the engine,
 * nginx and the subscribers share its cores.
 *   npm run build && node dist/scripts/bench/processes-notifications.js [changes] [subscribers]
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { queueGroup } from '../../src/domain/pubsub/delivery-groups.js';
import { API, CARGO } from '../../src/rdf/vocab.js';
import { startVirtuoso } from '../virtuoso/virtuoso.js';
import { createPieces, sendChange, startCluster, type Cluster } from './cluster.js';
import { everyObjectUpdatedSubscription, type ChangedPiece } from './fixtures.js';
import { fmt, LoadClient, machine, processCpuSeconds } from './harness.js';

const GROUPS = 12;
const WRITERS = 10;
const PROCESS_COUNTS = [1, 2, 3];
/** Lease terms are 10 s: a process started after the first gets its share of groups within ~15 s. */
const SPREAD_TIMEOUT_MS = 60_000;
/** No notification for this long after the writes: those missing are taken as lost. */
const STALL_MS = 30_000;
const ACL = 'http://www.w3.org/ns/auth/acl#';
const JSON_LD = { 'Content-Type': 'application/ld+json' };

/** One subscriber: its endpoint, and what it received of the current run. */
interface Subscriber {
  server: Server;
  iri: string;
  ids: Set<string>;
  /** Per object, the highest revision received. */
  revisions: Map<string, number>;
}

/** The subscribers' endpoints, and the counts of a run over all of them. */
class Subscribers {
  readonly all: Subscriber[] = [];
  private objects = new Set<string>();
  received = 0;
  duplicates = 0;
  orderViolations = 0;
  firstAt = 0;
  lastAt = 0;
  private arrived: () => void = () => undefined;

  /** `count` endpoints; subscriber i's queue falls in group i mod 12 (FNV-1a of the queue key, delivery-groups.ts). */
  async start(count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          this.record(subscriber, Buffer.concat(chunks).toString());
          res.writeHead(204).end();
        });
      });
      server.keepAliveTimeout = 65_000;
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const { port } = server.address() as { port: number };
      let salt = 0;
      const iri = () => `http://127.0.0.1:${port}/logistics-objects/org-${i}-${salt}`;
      while (queueGroup(`${iri()} ${API}LOGISTICS_OBJECT_TYPE ${CARGO}LogisticsObject`, GROUPS) !== i % GROUPS) salt++;
      const subscriber: Subscriber = { server, iri: iri(), ids: new Set(), revisions: new Map() };
      this.all.push(subscriber);
    }
  }

  /** A new run, about `objects`: notifications about other resources (a subscription's status) are not counted. */
  reset(objects: readonly string[]): void {
    this.objects = new Set(objects);
    this.received = this.duplicates = this.orderViolations = this.firstAt = this.lastAt = 0;
    for (const s of this.all) {
      s.ids.clear();
      s.revisions.clear();
    }
  }

  private record(s: Subscriber, body: string): void {
    const n = JSON.parse(body) as {
      '@id': string;
      'api:hasLogisticsObject'?: { '@id': string };
      'api:hasRevision'?: number;
    };
    const object = n['api:hasLogisticsObject']?.['@id'];
    const revision = n['api:hasRevision'];
    if (object === undefined || revision === undefined || !this.objects.has(object)) return;
    if (s.ids.has(n['@id'])) {
      this.duplicates += 1;
      return;
    }
    s.ids.add(n['@id']);
    if (revision <= (s.revisions.get(object) ?? 0)) this.orderViolations += 1;
    else s.revisions.set(object, revision);
    this.received += 1;
    this.lastAt = performance.now();
    this.firstAt ||= this.lastAt;
    this.arrived();
  }

  /** Resolves once `expected` notifications arrived, or none did for STALL_MS. */
  async until(expected: number): Promise<void> {
    while (this.received < expected) {
      const before = this.received;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, STALL_MS);
        this.arrived = () => {
          if (this.received < expected) return;
          clearTimeout(timer);
          resolve();
        };
      });
      this.arrived = () => undefined;
      if (this.received === before) return;
    }
  }

  stop(): void {
    for (const { server } of this.all) {
      server.closeAllConnections();
      server.close();
    }
  }
}

/** The groups each process delivers now (GET /internal/outbox/queues on the process itself). */
async function groupsHeld(cluster: Cluster): Promise<number[]> {
  return Promise.all(
    cluster.servers.map(async ({ ready }) => {
      const res = await fetch(`${ready.url}/internal/outbox/queues`, {
        headers: { Authorization: `Bearer ${ready.token}` },
      });
      const body = (await res.json()) as { groups?: number[] };
      return body.groups?.length ?? 0;
    }),
  );
}

/** Waits until the processes hold every group, none more than its fair share (SPREAD_TIMEOUT_MS at most). */
async function spread(cluster: Cluster): Promise<number[]> {
  const share = Math.ceil(GROUPS / cluster.servers.length);
  const deadline = Date.now() + SPREAD_TIMEOUT_MS;
  for (;;) {
    const held = await groupsHeld(cluster);
    const spreadOut = held.reduce((a, b) => a + b, 0) === GROUPS && held.every((n) => n <= share);
    if (spreadOut || Date.now() > deadline) return held;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Public read of `pieces` (the subscribers may read what they are notified of), and every subscriber subscribed. */
async function subscribeAll(client: LoadClient, url: string, pieces: ChangedPiece[], subscribers: Subscribers) {
  for (const piece of pieces) {
    const grant = JSON.stringify({
      '@type': `${ACL}Authorization`,
      [`${ACL}agentClass`]: { '@id': `${ACL}AuthenticatedAgent` },
      [`${ACL}accessTo`]: { '@id': piece.iri },
      [`${ACL}mode`]: { '@id': `${ACL}Read` },
    });
    const res = await client.send(`${url}/internal/acl`, 'POST', grant, JSON_LD);
    if (res.status !== 201) throw new Error(`grant: ${res.status}`);
  }
  for (const s of subscribers.all) {
    const res = await client.send(`${url}/subscriptions`, 'POST', everyObjectUpdatedSubscription(s.iri), JSON_LD);
    if (res.status !== 201) throw new Error(`subscription: ${res.status}`);
  }
}

/** `changes` changes by WRITERS clients, each changing its own piece in turn; the number accepted. */
async function write(client: LoadClient, pieces: ChangedPiece[], changes: number, refusals: Map<number, number>) {
  let sent = 0;
  let accepted = 0;
  await Promise.all(
    pieces.map(async (piece) => {
      while (sent < changes) {
        sent += 1;
        if ((await sendChange(client, piece, refusals)).status === 201) accepted += 1;
      }
    }),
  );
  return accepted;
}

interface RunResult {
  processes: number;
  groupsBefore: number[];
  groupsAfter: number[];
  accepted: number;
  refusals: Map<number, number>;
  writeSeconds: number;
  expected: number;
  /** Notifications that arrived while the writes went on, and after them. */
  whileWriting: number;
  drained: number;
  drainSeconds: number;
  firstToLastSeconds: number;
  serverCpuUs: number;
  engineCpuUs: number;
  received: number;
  duplicates: number;
  orderViolations: number;
}

/** One process count on a fresh engine. */
async function run(processes: number, changes: number, subscribers: Subscribers, dir: string): Promise<RunResult> {
  const engine = await startVirtuoso({ dir: join(dir, `virtuoso-${processes}`), bufferMemoryMb: 1024 });
  try {
    const cluster = await startCluster(engine, processes, 'shared', join(dir, `cluster-${processes}`), {
      outbound: { allowPrivateAddresses: true },
      store: { sparql: { deliveryGroups: GROUPS } },
    });
    try {
      return await measure(cluster, engine.pid, changes, subscribers);
    } finally {
      await cluster.stop();
    }
  } finally {
    await engine.stop();
  }
}

/** Subscriptions, the writes, and the notifications until the last arrived. */
async function measure(
  cluster: Cluster,
  enginePid: number,
  changes: number,
  subscribers: Subscribers,
): Promise<RunResult> {
  const client = new LoadClient({ Authorization: `Bearer ${cluster.servers[0].ready.token}` });
  try {
    const pieces = await createPieces(client, cluster.url, WRITERS);
    subscribers.reset(pieces.map((p) => p.iri));
    await subscribeAll(client, cluster.url, pieces, subscribers);
    const groupsBefore = await spread(cluster);
    const refusals = new Map<number, number>();
    const started = performance.now();
    const accepted = await write(client, pieces, changes, refusals);
    const written = performance.now();
    const whileWriting = subscribers.received;
    const cpu = async () => ({
      servers: (await Promise.all(cluster.servers.map((s) => s.sample()))).reduce((sum, s) => sum + s.cpu, 0),
      engine: processCpuSeconds(enginePid) * 1e6,
    });
    const before = await cpu();
    const expected = accepted * subscribers.all.length;
    await subscribers.until(expected);
    const after = await cpu();
    const drained = subscribers.received - whileWriting;
    return {
      processes: cluster.servers.length,
      groupsBefore,
      groupsAfter: await groupsHeld(cluster),
      accepted,
      refusals,
      writeSeconds: (written - started) / 1000,
      expected,
      whileWriting,
      drained,
      drainSeconds: (Math.max(subscribers.lastAt, written) - written) / 1000,
      firstToLastSeconds: (subscribers.lastAt - subscribers.firstAt) / 1000,
      serverCpuUs: (after.servers - before.servers) / Math.max(1, drained),
      engineCpuUs: (after.engine - before.engine) / Math.max(1, drained),
      received: subscribers.received,
      duplicates: subscribers.duplicates,
      orderViolations: subscribers.orderViolations,
    };
  } finally {
    client.close();
  }
}

function report(results: RunResult[], changes: number, subscriberCount: number): void {
  console.log(
    `# Notification delivery of 1-${PROCESS_COUNTS.at(-1)} processes over one Virtuoso behind nginx: ${machine()}; ` +
      `${subscriberCount} subscribers (one queue each, ${GROUPS} groups), ${changes} changes by ${WRITERS} clients`,
  );
  console.log(
    '| processes | groups held per process: before the writes → after | changes accepted, per s while writing | ' +
      'notifications arrived while writing / after | notifications/s after the writes | ' +
      'notifications/s first to last | µs CPU per notification after the writes: servers / Virtuoso | ' +
      'duplicates | order violations | never arrived |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  const one = results[0];
  const drainRate = (r: RunResult) => r.drained / Math.max(r.drainSeconds, 1e-3);
  const overallRate = (r: RunResult) => r.received / Math.max(r.firstToLastSeconds, 1e-3);
  const ratio = (r: RunResult, rate: (r: RunResult) => number) =>
    r === one ? '' : ` (${fmt(rate(r) / rate(one), 2)}×)`;
  for (const r of results) {
    const refused = [...r.refusals].map(([status, count]) => `, ${count} × ${status}`).join('');
    console.log(
      `| ${r.processes} | ${r.groupsBefore.join(' / ')} → ${r.groupsAfter.join(' / ')} | ` +
        `${r.accepted}${refused}, ${fmt(r.accepted / r.writeSeconds, 1)}/s | ${fmt(r.whileWriting)} / ${fmt(r.drained)} | ` +
        `${fmt(drainRate(r))}${ratio(r, drainRate)} | ${fmt(overallRate(r))}${ratio(r, overallRate)} | ` +
        `${fmt(r.serverCpuUs)} / ${fmt(r.engineCpuUs)} | ${r.duplicates} | ${r.orderViolations} | ` +
        `${r.expected - r.received} |`,
    );
  }
}

async function main(): Promise<void> {
  const changes = Number(process.argv[2] ?? 300);
  const subscriberCount = Number(process.argv[3] ?? 60);
  const dir = await mkdtemp(join(tmpdir(), 'onerecord-bench-processes-notifications-'));
  const subscribers = new Subscribers();
  try {
    await subscribers.start(subscriberCount);
    const results: RunResult[] = [];
    for (const processes of PROCESS_COUNTS) results.push(await run(processes, changes, subscribers, dir));
    report(results, changes, subscriberCount);
  } finally {
    subscribers.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
