/**
 * The engine backend (store.backend: sparql) at growing sizes, each on a Virtuoso of its own, filled with copies of
 * one object the server stored through its API (so the layout is the server's own), written as N-Quads and loaded
 * with Virtuoso's bulk loader; then Virtuoso is restarted (as after any bulk load), every index of its quads read into
 * its buffers (as after hours of serving; BENCH_COLD_ENGINE=1 measures it right after the restart), and a server
 * process starts on the engine (it reads no object at start; its start is measured again at the end, on the engine
 * serving, as a process added to a cluster) and 20 clients measure GET of objects each read once (in a random order), GET of
 * random objects, PATCH of objects no run changed before and then of the objects that run changed, POST of one Logistics
 * Event per request to random objects and then to the objects of that run, a page of the object list and a page of a random object's events, and on the added process a page of the events of
 * objects each listed once and a Logistics Event POSTed to objects each posted once. Per size: the load time, the start time, the API
 * process's RSS and JS heap after a full GC, each rate with p50/p99, and the server's and Virtuoso's CPU per
 * request, RSS and heap again after the run that read each object once; then GET again while SPARQL analytics queries over the whole store run one after the
 * other (a count of objects by type), its p99 against an idle GET run just before; then each figure as a ratio to the first size's.
 * At the first size, the same GET, PATCH and event runs on the embedded store (the same objects,
 * created through its API) give the engine's figures as ratios to the default backend's.
 *   npm run build && node dist/scripts/bench/engine-scale.js [sizes] [seconds]
 * sizes: comma-separated, ascending (default 10000,100000), each on an engine of its own; BENCH_ENGINE_MEMORY_MB sets
 * Virtuoso's page buffers (default 4096); BENCH_DIR holds the engines and the load files (default a temp directory,
 * removed after): a run on a BENCH_DIR of an earlier one loads nothing again (its objects changed are kept aside);
 * BENCH_FILL=writes fills new engines by `INSERT DATA` requests in id order instead of the bulk loader (as objects created
 * one after another fill an engine: 160-175 objects a second on 2 cores);
 * BENCH_PROFILE_DIR=DIR has each server process write a CPU profile into DIR; BENCH_SHARED_WRITERS=1
 * runs the engine's servers with `store.sparql.sharedWriters` (every change conditioned in the engine).
 */
import { get } from 'node:http';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type ConfigOverrides } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { CARGO } from '../../src/rdf/vocab.js';
import { startServer } from '../../src/server.js';
import { stopWithCheckpoint, type RunningVirtuoso } from '../virtuoso/virtuoso.js';
import {
  engineFill,
  engineOfSize,
  engineStore,
  objectId,
  startEngineServer,
  unchangedObject,
  type EngineServer,
  type EngineServerReady,
} from './engine-objects.js';
import { sendChange } from './cluster.js';
import { benchEvent, CAPACITY_PIECE, createdPiece, type ChangedPiece } from './fixtures.js';
import {
  benchServerSample,
  closedLoop,
  fmt,
  freePort,
  machine,
  processCpuSeconds,
  type LoopResult,
} from './harness.js';

const CLIENTS = 20;
/** Objects each client changes in a PATCH run, in turn (each change grows its object by nothing: it replaces two values). */
const OBJECTS_PER_CLIENT = 25;
const WARM_UP_SECONDS = 5;
const BENCH_TOKEN_SECONDS = 24 * 3600;

/** The server side: a server on the engine named by BENCH_STORE_CONFIG; answers 'memory' after a full GC. */
async function serve(): Promise<void> {
  const port = Number(process.env.BENCH_PORT);
  const store = JSON.parse(process.env.BENCH_STORE_CONFIG!) as ConfigOverrides['store'];
  // The analytics query over the whole store may take minutes: its time is measured, not cut.
  const sparql = { timeBudgetMillis: 3_600_000 };
  const config = loadConfig(
    {},
    {
      port,
      host: '127.0.0.1',
      baseUrl: `http://127.0.0.1:${port}`,
      dataDir: process.env.BENCH_DATA_DIR!,
      decisionPolicy: 'auto',
      store,
      sparql,
    },
  );
  const server = await startServer(config, createLogger('silent'));
  // A day: a run over every one of 1,000,000 objects takes more than the default token's hour.
  const token = await server.services.identityProvider!.issue(server.services.holder, BENCH_TOKEN_SECONDS);
  process.on('message', (message) => {
    if (message === 'memory') process.send!(benchServerSample(0));
    else if (message === 'stop') void server.close().then(() => process.exit(0));
  });
  process.send!({ url: server.url, token, startMs: performance.now() } satisfies EngineServerReady);
}

interface Measured extends LoopResult {
  serverCpuUs: number;
  engineCpuUs: number;
}

/** A closed-loop run after a warm-up on the same load, with the server's and the engine's CPU per successful request. */
async function measured(
  server: EngineServer,
  engine: RunningVirtuoso,
  seconds: number,
  send: (client: number) => Promise<{ status: number }>,
  expected: number,
): Promise<Measured> {
  await closedLoop(CLIENTS, WARM_UP_SECONDS, send, expected);
  const before = await server.sample();
  const engineBefore = processCpuSeconds(engine.pid);
  const result = await closedLoop(CLIENTS, seconds, send, expected);
  const after = await server.sample();
  const engineUs = (processCpuSeconds(engine.pid) - engineBefore) * 1e6;
  return { ...result, serverCpuUs: (after.cpu - before.cpu) / result.count, engineCpuUs: engineUs / result.count };
}

/** The analytics query: over every object's latest revision, through the server's `/sparql`. */
const ANALYTICS_QUERY = 'SELECT ?type (COUNT(*) AS ?objects) WHERE { ?o a ?type } GROUP BY ?type';

interface Analytics {
  /** GET measured just before the query, with the server's caches as warm as for the run with it. */
  idle: Measured;
  /** GET measured while the queries ran. */
  get: Measured;
  queries: number;
  /** From sending a query to its answer, ms, on average. */
  queryMs: number;
  /** The number of Pieces it counted. */
  pieces: number;
}

/** A GET's status and body, however long it takes (the load client's connections time out when idle for 4 s). */
function answerOf(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** GET measured idle, then while analytics queries run one after the other, from before that run starts until it ended. */
async function getWhileQuerying(
  server: EngineServer,
  engine: RunningVirtuoso,
  seconds: number,
  getOne: () => Promise<{ status: number }>,
): Promise<Analytics> {
  const idle = await measured(server, engine, seconds, getOne, 200);
  const times: number[] = [];
  let pieces = 0;
  let getting = true;
  const querying = (async () => {
    do {
      const started = performance.now();
      const res = await answerOf(`${server.ready.url}/sparql?${new URLSearchParams({ query: ANALYTICS_QUERY })}`, {
        Accept: 'text/csv',
        Authorization: `Bearer ${server.ready.token}`,
      });
      if (res.status !== 200) throw new Error(`the analytics query failed: ${res.status} ${res.body}`);
      times.push(performance.now() - started);
      pieces = Number(
        res.body
          .split('\n')
          .find((line) => line.startsWith(`${CARGO}Piece,`))
          ?.split(',')[1] ?? 0,
      );
    } while (getting);
  })();
  const during = await measured(server, engine, seconds, getOne, 200).finally(() => (getting = false));
  await querying;
  return { idle, get: during, queries: times.length, queryMs: times.reduce((a, b) => a + b, 0) / times.length, pieces };
}

const objectIri = (server: EngineServer, n: number) => `${server.ready.url}/logistics-objects/${objectId(n)}`;

interface ApiResult {
  /** GET of objects in a random order, each once: no answer can come from a cache of an earlier read. */
  firstGet: Measured;
  /** Reads of that run (warm-up included) past the last object, which read objects again. */
  firstGetRepeats: number;
  get: Measured;
  /** GET once every object was read (its body in the server's cache): at sizes the cache holds whole. */
  warmGet?: Measured;
  /** PATCH of objects no run changed before. */
  patch: Measured;
  /** PATCH of the objects that run changed. */
  patchAgain: Measured;
  /** How the PATCHes that were not accepted were answered: status and count. */
  patchRefusals: Map<number, number>;
  /** POST of one Logistics Event to random objects. */
  event: Measured;
  /** The same, to the objects of that run. */
  eventAgain: Measured;
  /** A page of 50 of the object list (`/internal/logistics-objects`) from a random place in its first 1,000. */
  objectList: Measured;
  /** A page of 20 of a random object's Logistics Events. */
  eventList: Measured;
  /** The server's RSS and JS heap after a full GC, once the first-read run has read `firstGet.count` distinct objects. */
  afterFirstReads: { rssMb: number; heapMb: number };
}

/** Objects whose bodies fit the server's cache of serialised bodies (`cache.serializedRevisionBytes`, default, a few KB each): up to this size, GET is also measured warm. */
const SERIALIZED_REVISIONS_KEPT = 20_000;

/** Reads every object once, 20 clients at a time. */
async function readEveryObject(server: EngineServer, size: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let n = next++; n < size; n = next++) {
        const res = await server.client.send(objectIri(server, n), 'GET');
        if (res.status !== 200) throw new Error(`object ${n} could not be read: ${res.status}`);
      }
    }),
  );
}

/** The objects `0` to `size - 1`, each once, in a random order; past the last, from the first again (counted). */
class FirstReads {
  private readonly order: Uint32Array;
  private taken = 0;

  constructor(size: number) {
    this.order = Uint32Array.from({ length: size }, (_, n) => n);
    for (let i = size - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [this.order[i], this.order[j]] = [this.order[j], this.order[i]];
    }
  }

  next(): number {
    return this.order[this.taken++ % this.order.length];
  }

  get repeats(): number {
    return Math.max(0, this.taken - this.order.length);
  }
}

/**
 * GET of objects each read once (first reads: at any size, no answer comes from a cache of an
 * earlier read), then GET of random objects, then the writes (`measureWrites`) and the lists, on a server holding
 * `objectId(0)` to `objectId(size - 1)`.
 */
async function measureApi(
  server: EngineServer,
  engine: RunningVirtuoso,
  size: number,
  seconds: number,
  changed: Set<number>,
): Promise<ApiResult> {
  const random = () => Math.floor(Math.random() * size);
  const getRandom = () => server.client.send(objectIri(server, random()), 'GET');
  const firstReads = new FirstReads(size);
  const firstGet = await measured(
    server,
    engine,
    seconds,
    () => server.client.send(objectIri(server, firstReads.next()), 'GET'),
    200,
  );
  const afterFirstReads = megabytes(await server.sample());
  const get = await measured(server, engine, seconds, getRandom, 200);
  const warmGet =
    size <= SERIALIZED_REVISIONS_KEPT
      ? await readEveryObject(server, size).then(() => measured(server, engine, seconds, getRandom, 200))
      : undefined;
  const writes = await measureWrites(server, engine, size, seconds, changed);
  const lists = await measureLists(server, engine, size, seconds);
  return {
    firstGet,
    firstGetRepeats: firstReads.repeats,
    get,
    warmGet,
    ...writes,
    ...lists,
    afterFirstReads,
  };
}

/** POST of the `n`th bench event to object `object`. */
const postEvent = (server: EngineServer, object: number, n: number) =>
  server.client.send(
    `${objectIri(server, object)}/logistics-events`,
    'POST',
    JSON.stringify({ '@context': { cargo: CARGO }, ...benchEvent(n) }),
    { 'Content-Type': 'application/ld+json' },
  );

/**
 * PATCH of objects no run changed before (`changed`, kept across runs), then of those that run changed; POST of one
 * Logistics Event per request to random objects, then to the objects of that run.
 */
async function measureWrites(
  server: EngineServer,
  engine: RunningVirtuoso,
  size: number,
  seconds: number,
  changed: Set<number>,
): Promise<Pick<ApiResult, 'patch' | 'patchAgain' | 'patchRefusals' | 'event' | 'eventAgain'>> {
  const random = () => Math.floor(Math.random() * size);
  const pieces: ChangedPiece[][] = Array.from({ length: CLIENTS }, () =>
    Array.from({ length: OBJECTS_PER_CLIENT }, () => createdPiece(objectIri(server, unchangedObject(size, changed)))),
  );
  const patchRefusals = new Map<number, number>();
  /** A PATCH run of 20 clients, each changing its `own` pieces in turn. */
  const patchRun = (own: ChangedPiece[][]) => {
    const turns = new Array<number>(CLIENTS).fill(0);
    return measured(
      server,
      engine,
      seconds,
      (client) => sendChange(server.client, own[client][turns[client]++ % own[client].length], patchRefusals),
      201,
    );
  };
  const patch = await patchRun(pieces);
  // The pieces that run changed, changed again: Virtuoso's first write among an object's quads in index segments no
  // write changed since the fill costs it more than later ones (docs/sparql-engine.md, "Write cost").
  const patchAgain = await patchRun(
    pieces.map((own) => (own.some((p) => p.revision > 1) ? own.filter((p) => p.revision > 1) : own)),
  );
  let events = 0;
  const eventRun = (object: () => number) =>
    measured(server, engine, seconds, () => postEvent(server, object(), events++), 201);
  const withEvents: number[] = [];
  const event = await eventRun(() => {
    const n = random();
    withEvents.push(n);
    return n;
  });
  const eventAgain = await eventRun(() => withEvents[Math.floor(Math.random() * withEvents.length)]);
  return { patch, patchAgain, patchRefusals, event, eventAgain };
}

/** A page of the object list from a random place in its first 1,000, and a page of a random object's events. */
async function measureLists(
  server: EngineServer,
  engine: RunningVirtuoso,
  size: number,
  seconds: number,
): Promise<Pick<ApiResult, 'objectList' | 'eventList'>> {
  const random = () => Math.floor(Math.random() * size);
  const objectList = await measured(
    server,
    engine,
    seconds,
    () => server.client.send(`${server.ready.url}/internal/logistics-objects?limit=50&skip=${random() % 1000}`, 'GET'),
    200,
  );
  const eventList = await measured(
    server,
    engine,
    seconds,
    () => server.client.send(`${objectIri(server, random())}/logistics-events?limit=20`, 'GET'),
    200,
  );
  return { objectList, eventList };
}

/**
 * On a process that holds no object: a page of the events of objects each listed once, then a Logistics Event POSTed to
 * objects each posted once (other objects than the lists'). At any size each reads its object from the engine (the
 * random objects of `measureWrites` and `measureLists` are often held at 10,000, after the GET runs read most of them,
 * and nearly never at 1,000,000).
 */
async function firstTouches(server: EngineServer, engine: RunningVirtuoso, size: number, seconds: number) {
  const order = new FirstReads(size);
  const eventList = await measured(
    server,
    engine,
    seconds,
    () => server.client.send(`${objectIri(server, order.next())}/logistics-events?limit=20`, 'GET'),
    200,
  );
  let events = 0;
  const eventPost = await measured(server, engine, seconds, () => postEvent(server, order.next(), events++), 201);
  return { eventList, eventPost };
}

const megabytes = (sample: { rss: number; heapUsed: number }) => ({
  rssMb: sample.rss / 1024 ** 2,
  heapMb: sample.heapUsed / 1024 ** 2,
});

/** The same measures on the embedded store (the default backend), its `size` objects created through the API by 20 clients: the same-run baseline of the engine's. */
async function embeddedApi(
  engine: RunningVirtuoso,
  dataDir: string,
  size: number,
  seconds: number,
): Promise<ApiResult> {
  await rm(dataDir, { recursive: true, force: true });
  await mkdir(dataDir, { recursive: true });
  const server = await startEngineServer({ backend: 'embedded' }, dataDir, await freePort());
  try {
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let n = next++; n < size; n = next++) {
          const res = await server.client.send(
            `${server.ready.url}/logistics-objects`,
            'POST',
            JSON.stringify({ '@id': objectIri(server, n), ...CAPACITY_PIECE }),
            { 'Content-Type': 'application/ld+json' },
          );
          if (res.status !== 201) throw new Error(`object ${n} was refused by the embedded store: ${res.status}`);
        }
      }),
    );
    return await measureApi(server, engine, size, seconds, new Set());
  } finally {
    await server.stop();
  }
}

interface SizeResult extends ApiResult {
  objects: number;
  load: { quads: number; seconds: number };
  /** Start of the first process, on the engine just restarted, ms. */
  startMs: number;
  /** Start of a process on the engine once it has served (as one added to a running cluster), ms. */
  addedStartMs: number;
  /** Event list pages of objects each listed once, then event POSTs to objects each posted once, on that added process. */
  first: { eventList: Measured; eventPost: Measured };
  rssMb: number;
  heapMb: number;
  analytics: Analytics;
}

async function main(): Promise<void> {
  const sizes = (process.argv[2] ?? '10000,100000').split(',').map(Number);
  const seconds = Number(process.argv[3] ?? 10);
  const dir = process.env.BENCH_DIR ?? (await mkdtemp(join(tmpdir(), 'onerecord-bench-scale-')));
  const bufferMemoryMb = Number(process.env.BENCH_ENGINE_MEMORY_MB ?? 4096);
  const results: SizeResult[] = [];
  let embedded: ApiResult | undefined;
  try {
    for (const size of sizes) {
      // An engine per size, kept in BENCH_DIR: a later run measures again without loading again.
      const { engine, objects, dataDir, load } = await engineOfSize(dir, size, bufferMemoryMb);
      try {
        const server = await startEngineServer(
          engineStore(engine, process.env.BENCH_SHARED_WRITERS === '1'),
          dataDir,
          objects.port,
        );
        const memory = await server.sample();
        const changed = objects.changed;
        const api = await measureApi(server, engine, size, seconds, changed).finally(() => objects.save(changed));
        const analytics = await getWhileQuerying(server, engine, seconds, () =>
          server.client.send(objectIri(server, Math.floor(Math.random() * size)), 'GET'),
        );
        await server.stop();
        // A process added to a running cluster meets an engine that is serving: started again now.
        const added = await startEngineServer(engineStore(engine), dataDir, objects.port);
        const first = await firstTouches(added, engine, size, seconds).finally(() => added.stop());
        results.push({
          objects: size,
          load,
          startMs: server.ready.startMs,
          addedStartMs: added.ready.startMs,
          first,
          ...megabytes(memory),
          ...api,
          analytics,
        });
        if (!embedded) embedded = await embeddedApi(engine, join(dir, 'embedded'), size, seconds);
      } finally {
        await stopWithCheckpoint(engine);
      }
      report(results, embedded, seconds);
    }
  } finally {
    if (!process.env.BENCH_DIR) await rm(dir, { recursive: true, force: true });
  }
}

const refusals = (statuses: Map<number, number>) =>
  statuses.size === 0
    ? ''
    : ` (not accepted: ${[...statuses].map(([status, count]) => `${count} × ${status}`).join(', ')})`;

function report(results: SizeResult[], embedded: ApiResult | undefined, seconds: number): void {
  const base = results[0];
  const rate = (r: Measured, b: Measured) =>
    `${fmt(r.perSecond)}/s (${fmt(r.perSecond / b.perSecond, 2)}×), p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms (${fmt(r.p99 / b.p99, 2)}×), server ${fmt(r.serverCpuUs)} µs + engine ${fmt(r.engineCpuUs)} µs CPU, ${r.failures} failed`;
  console.log(
    `\nengine-scale, ${machine()}, ${CLIENTS} clients, ${seconds} s runs; ratios against ${fmt(base.objects)} objects`,
  );
  for (const r of results) {
    console.log(
      `\n${fmt(r.objects)} objects: ${r.load.quads === 0 ? 'loaded by an earlier run' : `${engineFill() === 'writes' ? 'filled through writes with' : 'bulk load'} ${fmt(r.load.quads)} quads in ${fmt(r.load.seconds, 1)} s`}; server start ${fmt(r.startMs / 1000, 1)} s on the engine just restarted, ${fmt(r.addedStartMs / 1000, 1)} s on the engine serving; RSS ${fmt(r.rssMb)} MB, JS heap ${fmt(r.heapMb)} MB (after a full GC)`,
    );
    const repeats =
      r.firstGetRepeats > 0 ? ` (${fmt(r.firstGetRepeats)} reads, warm-up included, were of objects read before)` : '';
    console.log(`  GET, each object read once: ${rate(r.firstGet, base.firstGet)}${repeats}`);
    console.log(
      `  GET of random objects (an object may be read again, its answer then cached): ${rate(r.get, base.get)}`,
    );
    if (r.warmGet)
      console.log(`  GET, every object read once before (ratios against the GET above): ${rate(r.warmGet, r.get)}`);
    console.log(`  PATCH       ${rate(r.patch, base.patch)}${refusals(r.patchRefusals)}`);
    console.log(`  PATCH of objects that run changed: ${rate(r.patchAgain, base.patchAgain)}`);
    console.log(`  event POST  ${rate(r.event, base.event)}`);
    console.log(`  event POST to objects of that run: ${rate(r.eventAgain, base.eventAgain)}`);
    console.log(`  object list page (50) ${rate(r.objectList, base.objectList)}`);
    console.log(`  event list page (20)  ${rate(r.eventList, base.eventList)}`);
    console.log(
      `  event list page (20) of objects each listed once, on a process started after the runs: ${rate(r.first.eventList, base.first.eventList)}`,
    );
    console.log(
      `  event POST to objects each posted once (none listed), on that process: ${rate(r.first.eventPost, base.first.eventPost)}`,
    );
    console.log(
      `  after the first-read run (${fmt(r.firstGet.count)} distinct objects read): RSS ${fmt(r.afterFirstReads.rssMb)} MB, JS heap ${fmt(r.afterFirstReads.heapMb)} MB`,
    );
    const { analytics } = r;
    if (r === base && embedded) {
      const against = (engineRun: Measured, embeddedRun: Measured) =>
        `${fmt(engineRun.perSecond / embeddedRun.perSecond, 2)}× (${fmt(embeddedRun.perSecond)}/s, p99 ${fmt(embeddedRun.p99, 1)} ms, server ${fmt(embeddedRun.serverCpuUs)} µs CPU)`;
      const warm =
        r.warmGet && embedded.warmGet
          ? `, GET with every object read once before ${against(r.warmGet, embedded.warmGet)}`
          : '';
      console.log(
        `  engine against the embedded store, same run and objects: GET ${against(r.get, embedded.get)}${warm}, PATCH ${against(r.patch, embedded.patch)}${refusals(embedded.patchRefusals)}, event POST ${against(r.event, embedded.event)}`,
      );
    }
    console.log(
      `  GET while an analytics query runs: ${fmt(analytics.get.perSecond)}/s; p99 ${fmt(analytics.get.p99, 1)} ms against ${fmt(analytics.idle.p99, 1)} ms just before (${fmt(analytics.get.p99 / analytics.idle.p99, 2)}×); ${fmt(analytics.queries)} queries (${fmt(analytics.pieces)} Pieces counted) answered in ${fmt(analytics.queryMs / 1000, 1)} s each`,
    );
  }
}

if (process.argv[2] === 'serve') await serve();
else await main();
