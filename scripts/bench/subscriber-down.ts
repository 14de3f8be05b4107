/**
 * A subscriber down while the publisher keeps changing objects, then back. Three phases in one run,
 * against one publisher (a real server in its own process, fsync on):
 *   1. no subscription at all: `rate` changes/s for `baseline` seconds (the baseline write latency);
 *   2. a subscription to every Logistics Object (type topic, one FIFO queue) whose endpoint is
 *      down (nothing listens): the same load, every change queues a notification that cannot go;
 *   3. the endpoint comes back: time until every notification of phase 2 arrived, whether each
 *      object's revisions arrived complete and in order, and the publisher's memory on the way.
 * The changes are spread over 10 objects (each changed in turn, so 10 changes are in flight at
 * most). The endpoint is a bare node:http server in this process answering 204: it stands for the
 * subscriber's POST /notifications, measured elsewhere.
 *   npm run build && node dist/scripts/bench/subscriber-down.js [seconds] [rate] [baseline seconds, default: seconds]
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../src/server.js';
import { createLogger } from '../../src/observability/logger.js';
import { everyObjectUpdatedSubscription, markedPiece, publisherConfig, replaceMarkChange } from './fixtures.js';
import { cpuProfileFlags, LoadClient, SERVER_NODE_FLAGS, fmt, machine } from './harness.js';

const SUBSCRIBER = 'https://subscriber.example.com/logistics-objects/org';
const OBJECTS = 10;

interface Ready {
  url: string;
  token: string;
}

interface Memory {
  heapUsedMb: number;
  rssMb: number;
  pending: number;
  inMemory: number;
}

/** The publisher, in a process of its own: node subscriber-down.js publisher <port> <callback URL> */
async function publisher(): Promise<void> {
  const [port, callback] = [Number(process.argv[3]), process.argv[4]];
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-subscriber-down-'));
  const config = publisherConfig(port, dataDir, SUBSCRIBER, callback);
  const server = await startServer(config, createLogger('silent'));
  const token = await server.services.identityProvider!.issue(server.services.holder);
  process.send!({ url: server.url, token } satisfies Ready);
  process.on('message', () => {
    global.gc?.();
    const queues = server.services.delivery.queueViews();
    const memory = process.memoryUsage();
    process.send!({
      heapUsedMb: memory.heapUsed / 2 ** 20,
      rssMb: memory.rss / 2 ** 20,
      pending: queues.reduce((sum, q) => sum + q.pending, 0),
      inMemory: queues.reduce((sum, q) => sum + q.inMemory, 0),
    } satisfies Memory);
  });
  process.on(
    'SIGTERM',
    () =>
      void server
        .close()
        .then(() => rm(dataDir, { recursive: true, force: true }))
        .then(() => process.exit(0)),
  );
}

/** api:hasRevision as sent: a JSON number, or a typed value. */
const revisionOf = (value: unknown) =>
  Number(typeof value === 'object' && value !== null ? (value as { '@value': string })['@value'] : value);
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The subscriber's stand-in: a bare HTTP server answering 204, counting what arrives. */
interface Endpoint {
  server: Server;
  port: number;
  /** Revisions each object's notifications carried, in arrival order (duplicates included). */
  arrived: Map<string, number[]>;
  received(): number;
}

/** The endpoint, bound once to learn a free port and closed again: the subscriber starts down. */
async function closedEndpoint(): Promise<Endpoint> {
  const arrived = new Map<string, number[]>();
  let received = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      const object = (n['api:hasLogisticsObject'] as { '@id': string })['@id'];
      arrived.set(object, [...(arrived.get(object) ?? []), revisionOf(n['api:hasRevision'])]);
      received += 1;
      res.writeHead(204).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  server.close();
  return { server, port, arrived, received: () => received };
}

/** The publisher's process, as the driver talks to it. */
interface Publisher {
  ready: Ready;
  /** The publisher's memory and outbox after a garbage collection. */
  memory(): Promise<Memory>;
  stop(): Promise<void>;
}

async function forkPublisher(callback: string): Promise<Publisher> {
  const port = 19000 + Math.floor(Math.random() * 500);
  const child = fork(fileURLToPath(import.meta.url), ['publisher', String(port), callback], {
    // PROFILE_DIR=dir: the publisher writes a V8 CPU profile there (node --cpu-prof) when it stops.
    execArgv: [...SERVER_NODE_FLAGS, '--expose-gc', ...cpuProfileFlags(process.env.PROFILE_DIR)],
  });
  // A driver stopped half-way (timeout, ^C) must not leave the publisher running.
  process.once('exit', () => child.kill('SIGKILL'));
  process.once('SIGTERM', () => process.exit(1));
  // A publisher that dies half-way is said so, not left for a connection reset to tell.
  let stopping = false;
  child.once('exit', (code, signal) => {
    if (stopping) return;
    console.error(`the publisher exited (${signal ?? `code ${code}`}) before the run ended`);
    process.exit(1);
  });
  const [ready] = (await once(child, 'message')) as [Ready];
  return {
    ready,
    memory: async () => {
      child.send('memory');
      return ((await once(child, 'message')) as [Memory])[0];
    },
    stop: async () => {
      stopping = true;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

interface Tracked {
  iri: string;
  revision: number;
}

/** `rate` changes/s for `seconds`, each object changed in turn by its own lane: latencies and the rate reached. */
async function load(client: LoadClient, objects: Tracked[], rate: number, seconds: number) {
  const latencies: number[] = [];
  const interval = (1000 * OBJECTS) / rate;
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    objects.map(async (object, lane) => {
      for (let next = t0 + (lane * interval) / OBJECTS; next < deadline; next += interval) {
        const wait = next - performance.now();
        if (wait > 0) await sleep(wait);
        const t = performance.now();
        const res = await client.send(object.iri, 'PATCH', replaceMarkChange(object.iri, object.revision));
        if (res.status !== 201) throw new Error(`PATCH ${res.status}`);
        object.revision += 1;
        latencies.push(performance.now() - t);
      }
    }),
  );
  return {
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    perSecond: (latencies.length * 1000) / (performance.now() - t0),
    changes: latencies.length,
  };
}

async function driver(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 60);
  const rate = Number(process.argv[3] ?? 100);
  const baselineSeconds = Number(process.argv[4] ?? seconds);
  const endpoint = await closedEndpoint();
  const pub = await forkPublisher(`http://127.0.0.1:${endpoint.port}/notifications`);
  const { ready } = pub;
  const client = new LoadClient({ Authorization: `Bearer ${ready.token}`, 'Content-Type': 'application/ld+json' });
  const objects: Tracked[] = [];
  for (let i = 0; i < OBJECTS; i++) {
    const res = await client.send(`${ready.url}/logistics-objects`, 'POST', markedPiece(`object ${i}`));
    objects.push({ iri: res.headers.location as string, revision: 1 });
  }

  console.log(
    `# subscriber down: ${machine()}; ${rate} changes/s over ${OBJECTS} objects for ${baselineSeconds} s without subscription, then ${seconds} s with the subscriber down`,
  );
  const baseline = await load(client, objects, rate, baselineSeconds);
  console.log(
    `phase 1, no subscription: ${baseline.changes} changes, ${fmt(baseline.perSecond, 1)}/s, PATCH p50 ${fmt(baseline.p50, 1)} ms, p99 ${fmt(baseline.p99, 1)} ms`,
  );
  const before = await pub.memory();

  const subscribed = await client.send(
    `${ready.url}/subscriptions`,
    'POST',
    everyObjectUpdatedSubscription(SUBSCRIBER),
  );
  if (subscribed.status !== 201) throw new Error(`subscription: ${subscribed.status}`);
  const firstQueued = new Map(objects.map((o) => [o.iri, o.revision + 1]));
  const down = await load(client, objects, rate, seconds);
  console.log(
    `phase 2, subscriber down: ${down.changes} changes, ${fmt(down.perSecond, 1)}/s, PATCH p50 ${fmt(down.p50, 1)} ms, p99 ${fmt(down.p99, 1)} ms; p50 ratio ${fmt(down.p50 / baseline.p50, 2)}, p99 ratio ${fmt(down.p99 / baseline.p99, 2)}`,
  );
  const backlog = await pub.memory();

  const { drainedMs, peak } = await drain(endpoint, pub, down.changes, backlog);
  const after = await pub.memory();
  const { lost, outOfOrder } = arrivalFaults(objects, firstQueued, endpoint.arrived);
  const received = endpoint.received();
  const distinct = [...endpoint.arrived.values()].reduce((sum, s) => sum + new Set(s).size, 0);
  console.log(
    `phase 3, subscriber back: ${received} notifications received (${down.changes} queued) in ${fmt(drainedMs / 1000, 1)} s (target: within 60 s); lost ${lost}, out of order ${outOfOrder}, duplicates ${received - distinct}`,
  );
  console.log(
    `publisher heap after gc: ${fmt(before.heapUsedMb, 1)} MB before the downtime, ${fmt(backlog.heapUsedMb, 1)} MB with ${backlog.pending} notifications pending (${backlog.inMemory} of them in memory), ` +
      `peak ${fmt(peak.heapUsedMb, 1)} MB while draining, ${fmt(after.heapUsedMb, 1)} MB after; RSS ${fmt(before.rssMb)} / ${fmt(backlog.rssMb)} / ${fmt(after.rssMb)} MB (the outbox lives in the store)`,
  );
  client.close();
  await pub.stop();
  endpoint.server.close();
}

/** Brings the endpoint back and waits until `queued` notifications arrived (30 minutes at most). */
async function drain(
  endpoint: Endpoint,
  pub: Publisher,
  queued: number,
  backlog: Memory,
): Promise<{ drainedMs: number; peak: Memory }> {
  endpoint.server.listen(endpoint.port, '127.0.0.1');
  await once(endpoint.server, 'listening');
  const back = performance.now();
  let peak = backlog;
  for (let second = 1; endpoint.received() < queued; second++) {
    await sleep(1000);
    const now = await pub.memory();
    if (now.heapUsedMb > peak.heapUsedMb) peak = now;
    if (second % 10 === 0)
      console.log(
        `  ${second} s after the subscriber came back: ${endpoint.received()} of ${queued} received; publisher heap ${fmt(now.heapUsedMb, 1)} MB, ${now.pending} pending`,
      );
    if (performance.now() - back > 30 * 60_000) break;
  }
  return { drainedMs: performance.now() - back, peak };
}

/** Revisions from `firstQueued` on that never arrived, and arrivals (first of each revision) out of order. */
function arrivalFaults(
  objects: Tracked[],
  firstQueued: Map<string, number>,
  arrived: Map<string, number[]>,
): { lost: number; outOfOrder: number } {
  let lost = 0;
  let outOfOrder = 0;
  for (const o of objects) {
    const seen = arrived.get(o.iri) ?? [];
    const firsts = seen.filter((r, i) => seen.indexOf(r) === i);
    for (let r = firstQueued.get(o.iri)!; r <= o.revision; r++) if (!firsts.includes(r)) lost += 1;
    for (let i = 1; i < firsts.length; i++) if (firsts[i] < firsts[i - 1]) outOfOrder += 1;
  }
  return { lost, outOfOrder };
}

if (process.argv[2] === 'publisher') await publisher();
else await driver();
