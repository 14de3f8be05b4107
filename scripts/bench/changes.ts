/**
 * Accepted changes per second: PATCH with the auto policy (the holder's changes are accepted at
 * once), each Change 2 DELETEs + 3 ADDs on a ~40-triple Piece, sequentially and with 20 clients on
 * distinct objects; p50/p99; ratio to the POST-object rate; the time of a change on an object with
 * 10 vs 1,000 revisions; memory per revision. Every run has a server of its own, in its own
 * process (startServer, loopback, fsync on), holding the same preloaded store, so no run depends on
 * what an earlier one wrote; each run is measured after WARM_UP_SECONDS of the same load (the server's
 * JIT warm: see there; a PATCH run warms up on objects of its own, so the measured ones start at the
 * same size); the 20-client PATCH run is repeated and its median reported.
 *   npm run build && node dist/scripts/bench/changes.js [seconds] [repeats]
 * With `validation` first, it measures only POST and PATCH (20 clients) with data-model validation
 * on and off, alternating, each setting `repeats` times (medians):
 *   npm run build && node dist/scripts/bench/changes.js validation [seconds] [repeats]
 * With `throughput` first, only POST and PATCH with 20 clients and the same two requests on the
 * write baseline (write-baseline.ts: parse, journal with group commit and fsync, a bare Oxigraph),
 * alternating, `repeats` times each (medians): rates and server CPU per request as ratios to the
 * baseline's, and PATCH's rate as a ratio to POST's. BENCH_PROFILE_DIR=DIR has every server write
 * a CPU profile into DIR, and DIR/runs.json say where each run was (profile-breakdown.ts):
 *   npm run build && node dist/scripts/bench/changes.js throughput [seconds] [repeats]
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { parseBody } from '../../src/rdf/parse.js';
import { startServer } from '../../src/server.js';
import { BENCH_PIECE, nextChange, type ChangedPiece } from './fixtures.js';
import { benchStore } from './bench-store.js';
import {
  benchServerSample,
  closedLoop,
  forkBenchServer,
  freePort,
  percentile,
  fmt,
  machine,
  type BenchServerReady,
  type BenchServerSample,
  type ForkedBenchServer,
  type LoopResult,
  type SentRequest,
  type ThreadCpu,
} from './harness.js';

const CLIENTS = 20;
/** The clients cycle over this many objects, each client over its own share, so no object grows much during a run (every change adds one triple). */
const CHANGED_OBJECTS = 500;
/** Objects every server starts with (about 0.5 million quads), so each run sees a store of the same size. */
const PRELOADED_OBJECTS = 10_000;
/**
 * Seconds of the same load before each measured run, so that the server runs as a long-running one
 * does. V8's optimising compiler goes on compiling the write path for the first ~5,000-7,000 changes
 * (measured with --trace-opt, one client in process: 3.3-3.5 s of TurboFan work over changes
 * 1,000-4,000, 0.4 s over changes 7,000-10,000), on helper threads that take CPU from the measured
 * run on 2 cores; 2 s of warm-up (the harness's WARM_UP_SECONDS, used here until 2026-11-23) left
 * about 1 ms of that work per change in a 10-s run. BENCH_WARM_UP_SECONDS overrides it.
 */
const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_UP_SECONDS ?? 20);

type Ready = BenchServerReady;
type Memory = BenchServerSample;

/** The server side: a real server; answers 'memory' messages after a full GC. */
async function serve(validation: boolean): Promise<void> {
  const port = await freePort();
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-bench-changes-'));
  // No snapshot during the runs: one started by the POST run would slow down the PATCH runs after it.
  const journal = { fsync: true, snapshotAfterBytes: 4 * 1024 ** 3 };
  const store = await benchStore();
  const config = loadConfig(
    {},
    {
      port,
      host: '127.0.0.1',
      baseUrl: `http://127.0.0.1:${port}`,
      dataDir,
      decisionPolicy: 'auto',
      journal,
      validation: { enabled: validation },
      store: store.config,
    },
  );
  const server = await startServer(config, createLogger('silent'));
  const { objects, holder, access, identityProvider } = server.services;
  const token = await identityProvider!.issue(holder);
  const body = await parseBody(Buffer.from(JSON.stringify(BENCH_PIECE)), 'jsonld', {
    base: objects.objectsPrefix,
    limits: config.limits,
  });
  for (let created = 0; created < PRELOADED_OBJECTS; created += 100) {
    await Promise.all(Array.from({ length: 100 }, () => objects.create(body, access.caller(holder))));
  }
  process.on('message', (message) => {
    if (message === 'memory') {
      process.send!(benchServerSample(server.embedded?.index.size ?? 0, store.engineCpuSeconds() * 1e6));
    } else if (message === 'stop') {
      void server
        .close()
        .then(() => store.stop())
        .then(() => rm(dataDir, { recursive: true, force: true }))
        .then(() => process.exit(0));
    }
  });
  process.send!({ url: server.url, token } satisfies Ready);
}

/**
 * Where a measured run was, for profile-breakdown.ts: the server's pid, its clock (µs) at the start
 * and end, and the CPU each of its threads used in between (µs) with the thread's start.
 */
export interface RunWindow {
  pid: number;
  from: number;
  to: number;
  threads: ThreadCpu[];
}

const runWindow = (before: Memory, after: Memory): RunWindow => ({
  pid: before.pid,
  from: before.at,
  to: after.at,
  threads: after.threads.map((t) => ({ ...t, cpu: t.cpu - (before.threads.find((b) => b.tid === t.tid)?.cpu ?? 0) })),
});

/** A bench server process and a client for it. */
interface BenchServer extends ForkedBenchServer {
  post(): Promise<SentRequest>;
  patch(subject: ChangedPiece, grow: boolean): Promise<SentRequest>;
  /** Creates `n` Pieces to change. */
  subjects(n: number): Promise<ChangedPiece[]>;
  /** How many changes answered 201 were not applied: each object must be at revision 1 + changes sent. */
  unaccepted(list: ChangedPiece[]): Promise<number>;
}

/** What a run measures: our server (with data-model validation on or off) or the write baseline (write-baseline.ts). */
type ServerKind = 'validation on' | 'validation off' | 'baseline';

const WRITE_BASELINE = fileURLToPath(new URL('./write-baseline.js', import.meta.url));

async function startBenchServer(kind: ServerKind = 'validation on'): Promise<BenchServer> {
  const [script, args] =
    kind === 'baseline'
      ? [WRITE_BASELINE, ['serve', String(PRELOADED_OBJECTS)]]
      : [fileURLToPath(import.meta.url), ['serve', kind === 'validation on' ? 'on' : 'off']];
  const forked = await forkBenchServer(script, args);
  const { ready, client } = forked;
  const jsonLd = { 'Content-Type': 'application/ld+json' };
  const piece = JSON.stringify(BENCH_PIECE);
  const post = () => client.send(`${ready.url}/logistics-objects`, 'POST', piece, jsonLd);
  const server: BenchServer = {
    ...forked,
    post,
    patch: (subject, grow) =>
      client.send(subject.iri, 'PATCH', nextChange(subject, grow), jsonLd).then((res) => {
        if (res.status === 201) subject.revision += 1;
        return res;
      }),
    async subjects(n) {
      const out: ChangedPiece[] = [];
      for (let i = 0; i < n; i++) {
        const res = await post();
        out.push({
          iri: String(res.headers.location),
          revision: 1,
          goods: BENCH_PIECE['cargo:goodsDescription'],
          upid: BENCH_PIECE['cargo:upid'],
          step: 0,
        });
      }
      return out;
    },
    async unaccepted(list) {
      // The baseline keeps no revisions: there is nothing to check.
      if (kind === 'baseline') return 0;
      let missing = 0;
      for (const s of list)
        missing += s.revision - Number((await client.send(s.iri, 'GET')).headers['latest-revision']);
      return missing;
    },
  };
  return server;
}

interface PatchRun extends LoopResult {
  /** Server CPU (user + system) per accepted change, µs. */
  cpuPerChange: number;
  /** The SPARQL engine's CPU per accepted change, µs (0 on the embedded store). */
  engineCpuPerChange: number;
  /** Growth of the server's memory per accepted change, over the run, after a full GC. */
  bytesPerChange: { rss: number; heapUsed: number; external: number; quads: number };
  missing: number;
  window: RunWindow;
}

/** PATCH run with `clients` clients, each on its own objects, on a fresh server. */
async function patchRun(clients: number, seconds: number, kind: ServerKind = 'validation on'): Promise<PatchRun> {
  const server = await startBenchServer(kind);
  const perClient = CHANGED_OBJECTS / clients;
  const created = () => Promise.all(Array.from({ length: clients }, () => server.subjects(perClient)));
  const warming = await created();
  const objects = await created();
  const cursors = new Array<number>(clients).fill(0);
  const changeOf = (list: ChangedPiece[][]) => (c: number) => server.patch(list[c][cursors[c]++ % perClient], true);
  // The server's JIT and caches warm on the same load before the measured run (no figure of it is kept),
  // on objects of their own: the measured changes start on objects of the same size however long it ran.
  await closedLoop(clients, WARM_UP_SECONDS, changeOf(warming), 201);
  cursors.fill(0);
  const change = changeOf(objects);
  const before = await server.sample();
  const result = await closedLoop(clients, seconds, change, 201);
  const after = await server.sample();
  const missing = await server.unaccepted([...warming.flat(), ...objects.flat()]);
  await server.stop();
  const per = (name: 'rss' | 'heapUsed' | 'external' | 'quads') => (after[name] - before[name]) / result.count;
  return {
    ...result,
    cpuPerChange: (after.cpu - before.cpu) / result.count,
    engineCpuPerChange: (after.engineCpu - before.engineCpu) / result.count,
    bytesPerChange: { rss: per('rss'), heapUsed: per('heapUsed'), external: per('external'), quads: per('quads') },
    missing,
    window: runWindow(before, after),
  };
}

interface PostRun extends LoopResult {
  /** Server CPU (user + system) per object created, µs. */
  cpuPerPost: number;
  /** The SPARQL engine's CPU per object created, µs (0 on the embedded store). */
  engineCpuPerPost: number;
  window: RunWindow;
}

async function postRun(clients: number, seconds: number, kind: ServerKind = 'validation on'): Promise<PostRun> {
  const server = await startBenchServer(kind);
  await closedLoop(clients, WARM_UP_SECONDS, () => server.post(), 201);
  const before = await server.sample();
  const result = await closedLoop(clients, seconds, () => server.post(), 201);
  const after = await server.sample();
  await server.stop();
  return {
    ...result,
    cpuPerPost: (after.cpu - before.cpu) / result.count,
    engineCpuPerPost: (after.engineCpu - before.engineCpu) / result.count,
    window: runWindow(before, after),
  };
}

const median = <T>(runs: T[], by: (r: T) => number): T =>
  [...runs].sort((a, b) => by(a) - by(b))[Math.floor(runs.length / 2)];

async function drive(seconds: number, repeats: number): Promise<void> {
  const postSequential = await postRun(1, seconds);
  const patchSequential = await patchRun(1, seconds);
  const postConcurrent = await postRun(CLIENTS, seconds);
  const patchRuns: PatchRun[] = [];
  for (let i = 0; i < repeats; i++) patchRuns.push(await patchRun(CLIENTS, seconds));
  const patchConcurrent = median(patchRuns, (r) => r.perSecond);

  // Cost growth: the same size-neutral change (2 DELETEs + 2 ADDs) on objects with 10 and 1,000 revisions.
  const server = await startBenchServer();
  const [few, many] = await server.subjects(2);
  for (const [subject, count] of [
    [few, 9],
    [many, 999],
  ] as const)
    for (let i = 0; i < count; i++) await server.patch(subject, false);
  // Alternating between the two objects, so a slow moment of this shared machine hits both alike.
  const latencies = new Map<ChangedPiece, number[]>([
    [few, []],
    [many, []],
  ]);
  for (let i = 0; i < 200; i++) {
    for (const subject of [few, many]) {
      const t = performance.now();
      await server.patch(subject, false);
      latencies.get(subject)!.push(performance.now() - t);
    }
  }
  const timeOf = (list: number[]) => ({ p50: percentile(list, 0.5), p99: percentile(list, 0.99) });
  const fewTime = timeOf(latencies.get(few)!);
  const manyTime = timeOf(latencies.get(many)!);
  const growthMissing = await server.unaccepted([few, many]);
  await server.stop();

  const row = (name: string, r: LoopResult, base?: LoopResult) =>
    `| ${name} | ${fmt(r.perSecond)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${base ? fmt(r.perSecond / base.perSecond, 2) : '-'} | ${r.failures} |`;
  console.log(
    `machine: ${machine()}; ${seconds} s per run; fsync on, no snapshot during the runs; each run on a fresh server process preloaded with ${fmt(PRELOADED_OBJECTS)} objects, each run after ${WARM_UP_SECONDS} s of warm-up`,
  );
  console.log('| run | per s | p50 ms | p99 ms | ratio | failures |');
  console.log('|---|---|---|---|---|---|');
  console.log(row('POST Logistics Object, 1 client', postSequential));
  console.log(row(`POST Logistics Object, ${CLIENTS} clients`, postConcurrent));
  console.log(row('PATCH accepted change, 1 client (ratio: to POST, 1 client)', patchSequential, postSequential));
  console.log(
    row(
      `PATCH accepted change, ${CLIENTS} clients on distinct objects, median of ${repeats} (ratio: to POST, ${CLIENTS} clients)`,
      patchConcurrent,
      postConcurrent,
    ),
  );
  console.log(
    `PATCH with ${CLIENTS} clients, every run: ${patchRuns.map((r) => `${fmt(r.perSecond)}/s (server CPU ${fmt(r.cpuPerChange)} µs per change)`).join(', ')}`,
  );
  const missing = patchSequential.missing + patchRuns.reduce((sum, r) => sum + r.missing, 0) + growthMissing;
  console.log(`changes answered 201 but not applied: ${missing}`);
  console.log(
    `change on an object with 10 revisions: p50 ${fmt(fewTime.p50, 2)} ms, p99 ${fmt(fewTime.p99, 2)} ms; with 1,000: p50 ${fmt(manyTime.p50, 2)} ms, p99 ${fmt(manyTime.p99, 2)} ms; ratio of p50 ${fmt(manyTime.p50 / fewTime.p50, 2)}`,
  );
  console.log(
    `server CPU per accepted change (${CLIENTS} clients, median run): ${fmt(patchConcurrent.cpuPerChange)} µs, so one core takes ${fmt(1e6 / patchConcurrent.cpuPerChange)} changes/s`,
  );
  const m = patchConcurrent.bytesPerChange;
  console.log(
    `memory per accepted change (revision + its ChangeRequest), over the ${fmt(patchConcurrent.count)} changes of the median run: ` +
      `rss ${fmt(m.rss)} B, JS heap ${fmt(m.heapUsed)} B, external (Oxigraph's WASM memory) ${fmt(m.external)} B, quads ${fmt(m.quads, 1)}`,
  );
}

/** POST and PATCH throughput with validation on and off, alternating so a slow moment of the machine hits both. */
async function compareValidation(seconds: number, repeats: number): Promise<void> {
  const runs = {
    postOn: [] as PostRun[],
    postOff: [] as PostRun[],
    patchOn: [] as PatchRun[],
    patchOff: [] as PatchRun[],
  };
  for (let i = 0; i < repeats; i++) {
    runs.postOn.push(await postRun(CLIENTS, seconds, 'validation on'));
    runs.postOff.push(await postRun(CLIENTS, seconds, 'validation off'));
    runs.patchOn.push(await patchRun(CLIENTS, seconds, 'validation on'));
    runs.patchOff.push(await patchRun(CLIENTS, seconds, 'validation off'));
  }
  const rate = (list: LoopResult[]) => median(list, (r) => r.perSecond);
  const row = (name: string, on: LoopResult, off: LoopResult) =>
    `| ${name} | ${fmt(on.perSecond)} | ${fmt(off.perSecond)} | ${fmt(on.perSecond / off.perSecond, 3)} | ${fmt(on.p50, 2)} / ${fmt(off.p50, 2)} | ${fmt(on.p99, 2)} / ${fmt(off.p99, 2)} | ${on.failures + off.failures} |`;
  console.log(
    `machine: ${machine()}; ${seconds} s per run, ${CLIENTS} clients, each setting ${repeats} times alternating (medians); fsync on; fresh server per run preloaded with ${fmt(PRELOADED_OBJECTS)} objects, each run after ${WARM_UP_SECONDS} s of warm-up`,
  );
  console.log(
    '| run | per s, validation on | per s, off | ratio on/off | p50 ms on / off | p99 ms on / off | failures |',
  );
  console.log('|---|---|---|---|---|---|---|');
  console.log(row('POST Logistics Object', rate(runs.postOn), rate(runs.postOff)));
  console.log(row('PATCH accepted change', rate(runs.patchOn), rate(runs.patchOff)));
  // Validation's share of request time: the server CPU it adds per request, over the CPU per request with it.
  const share = (name: string, on: number, off: number) =>
    console.log(
      `server CPU per ${name} (median): ${fmt(on)} µs with validation, ${fmt(off)} µs without: validation's share ${fmt((100 * (on - off)) / on, 1)}%`,
    );
  share(
    'object created',
    median(runs.postOn, (r) => r.cpuPerPost).cpuPerPost,
    median(runs.postOff, (r) => r.cpuPerPost).cpuPerPost,
  );
  share(
    'accepted change',
    median(runs.patchOn, (r) => r.cpuPerChange).cpuPerChange,
    median(runs.patchOff, (r) => r.cpuPerChange).cpuPerChange,
  );
  for (const [name, list] of Object.entries(runs))
    console.log(`${name}: ${list.map((r) => `${fmt(r.perSecond)}/s`).join(', ')}`);
}

/** POST and PATCH with CLIENTS clients and the same on the write baseline, each run `repeats` times (medians by rate). */
export interface Throughput {
  seconds: number;
  repeats: number;
  post: PostRun;
  patch: PatchRun;
  baselinePost: PostRun;
  baselinePatch: PatchRun;
  runs: { posts: PostRun[]; patches: PatchRun[]; baselinePosts: PostRun[]; baselinePatches: PatchRun[] };
}

/** Goals of issue 33: a write's rate at least this share of the baseline's, its server CPU at most this multiple. */
export const THROUGHPUT_GOAL = 0.6;
export const CPU_GOAL = 2;

/**
 * POST and PATCH with CLIENTS clients, then the same requests on the write baseline
 * (write-baseline.ts), alternating so a slow moment of the machine hits all of them. With
 * BENCH_PROFILE_DIR set, every server writes a CPU profile there and each run's window goes to
 * runs.json in it, which profile-breakdown.ts reads.
 */
export async function measureThroughput(seconds: number, repeats: number): Promise<Throughput> {
  const runs = {
    posts: [] as PostRun[],
    patches: [] as PatchRun[],
    baselinePosts: [] as PostRun[],
    baselinePatches: [] as PatchRun[],
  };
  for (let i = 0; i < repeats; i++) {
    runs.baselinePosts.push(await postRun(CLIENTS, seconds, 'baseline'));
    runs.posts.push(await postRun(CLIENTS, seconds));
    runs.baselinePatches.push(await patchRun(CLIENTS, seconds, 'baseline'));
    runs.patches.push(await patchRun(CLIENTS, seconds));
  }
  const profiles = process.env.BENCH_PROFILE_DIR;
  if (profiles) {
    const windows = Object.entries(runs).flatMap(([name, list]) =>
      (list as (PostRun | PatchRun)[]).map((r) => ({
        run: name,
        ...r.window,
        count: r.count,
        cpuPerRequest: 'cpuPerPost' in r ? r.cpuPerPost : r.cpuPerChange,
      })),
    );
    await writeFile(join(profiles, 'runs.json'), JSON.stringify(windows, null, 2));
  }
  const byRate = (r: LoopResult) => r.perSecond;
  return {
    seconds,
    repeats,
    post: median(runs.posts, byRate),
    patch: median(runs.patches, byRate),
    baselinePost: median(runs.baselinePosts, byRate),
    baselinePatch: median(runs.baselinePatches, byRate),
    runs,
  };
}

/** The rate and server CPU of a POST or PATCH run as ratios to its baseline run. */
export function againstBaseline(t: Throughput): {
  post: { rate: number; cpu: number };
  patch: { rate: number; cpu: number };
} {
  return {
    post: { rate: t.post.perSecond / t.baselinePost.perSecond, cpu: t.post.cpuPerPost / t.baselinePost.cpuPerPost },
    patch: {
      rate: t.patch.perSecond / t.baselinePatch.perSecond,
      cpu: t.patch.cpuPerChange / t.baselinePatch.cpuPerChange,
    },
  };
}

async function compareThroughput(seconds: number, repeats: number): Promise<void> {
  const t = await measureThroughput(seconds, repeats);
  const { post, patch, baselinePost, baselinePatch, runs } = t;
  const ratios = againstBaseline(t);
  console.log(
    `machine: ${machine()}; store ${process.env.BENCH_STORE ?? 'embedded'}; ${seconds} s per run, ${CLIENTS} clients, POST and PATCH and the write baseline of each ${repeats} times, alternating (medians); fsync on; fresh server per run preloaded with ${fmt(PRELOADED_OBJECTS)} objects, each run after ${WARM_UP_SECONDS} s of warm-up`,
  );
  console.log('| run | per s | p50 ms | p99 ms | server CPU per request µs | engine CPU per request µs | failures |');
  console.log('|---|---|---|---|---|---|---|');
  const row = (name: string, r: LoopResult, cpu: number, engineCpu: number) =>
    `| ${name} | ${fmt(r.perSecond)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(cpu)} | ${fmt(engineCpu)} | ${r.failures} |`;
  console.log(row('POST Logistics Object', post, post.cpuPerPost, post.engineCpuPerPost));
  console.log(row('PATCH accepted change', patch, patch.cpuPerChange, patch.engineCpuPerChange));
  console.log(row('baseline: POST the same body (parse, journal, Oxigraph)', baselinePost, baselinePost.cpuPerPost, 0));
  console.log(
    row('baseline: PATCH the same Change (parse, journal, Oxigraph)', baselinePatch, baselinePatch.cpuPerChange, 0),
  );
  const verdict = (rate: number, cpu: number) =>
    `throughput ${fmt(rate, 2)}x (goal >= ${THROUGHPUT_GOAL}: ${rate >= THROUGHPUT_GOAL ? 'met' : 'not met'}), server CPU ${fmt(cpu, 2)}x (goal <= ${CPU_GOAL}: ${cpu <= CPU_GOAL ? 'met' : 'not met'})`;
  console.log(`POST against the baseline: ${verdict(ratios.post.rate, ratios.post.cpu)}`);
  console.log(`PATCH against the baseline: ${verdict(ratios.patch.rate, ratios.patch.cpu)}`);
  console.log(
    `PATCH / POST (accepted changes per second over objects created per second): ${fmt(patch.perSecond / post.perSecond, 2)}`,
  );
  const list = (rs: (PostRun | PatchRun)[]) =>
    rs.map((r) => `${fmt(r.perSecond)}/s (${fmt('cpuPerPost' in r ? r.cpuPerPost : r.cpuPerChange)} µs)`).join(', ');
  console.log(
    `every run: POST ${list(runs.posts)}; PATCH ${list(runs.patches)}; baseline POST ${list(runs.baselinePosts)}; baseline PATCH ${list(runs.baselinePatches)}`,
  );
  console.log(`changes answered 201 but not applied: ${runs.patches.reduce((sum, r) => sum + r.missing, 0)}`);
}

/** Run as a script rather than imported (all.ts imports measureThroughput). */
const asScript = process.argv[1] === fileURLToPath(import.meta.url);
if (asScript && process.argv[2] === 'serve') await serve(process.argv[3] !== 'off');
else if (asScript && process.argv[2] === 'throughput')
  await compareThroughput(Number(process.argv[3] ?? 10), Number(process.argv[4] ?? 3));
else if (asScript && process.argv[2] === 'validation')
  await compareValidation(Number(process.argv[3] ?? 10), Number(process.argv[4] ?? 3));
else if (asScript) await drive(Number(process.argv[2] ?? 10), Number(process.argv[3] ?? 3));
