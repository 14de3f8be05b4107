/**
 * Several server processes over one Virtuoso behind nginx (round robin), with
 * store.sparql.sharedWriters, against one process alone on the engine without it, in the same run:
 * for 1 (alone), 1, 2 and 3 processes, and 3 with `readYourWrites` off, 20 clients through the balancer
 * (the lone process: directly) measure GET of random objects and PATCH of objects each client
 * changes in turn; per run the rate, p50/p99, the CPU per request of the server processes (all of
 * them), of Virtuoso and of nginx, and the commit feed's lag (commit in the engine to published by
 * every other process: `onerecord_commit_feed_lag_seconds`, bucket bounds) under that PATCH run (the
 * engine saturated) and under 20 changes a second sent at a steady pace. On one machine the
 * processes, the engine and nginx share its cores: see BENCHMARKS.md for what N machines give.
 *   npm run build && node dist/scripts/bench/processes.js [seconds]
 */
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { shareIdentityProvider } from '../../src/auth/identity-provider.js';
import { loadConfig, type ConfigOverrides } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { startServer } from '../../src/server.js';
import { startNginx } from '../cluster/nginx.js';
import { startVirtuoso, type RunningVirtuoso } from '../virtuoso/virtuoso.js';
import { engineStore } from './engine-objects.js';
import { CAPACITY_PIECE, nextChange, type ChangedPiece } from './fixtures.js';
import {
  benchServerSample,
  closedLoop,
  fmt,
  forkBenchServer,
  freePort,
  LoadClient,
  machine,
  processCpuSeconds,
  type BenchServerReady,
  type ForkedBenchServer,
  type LoopResult,
} from './harness.js';

const CLIENTS = 20;
const OBJECTS_PER_CLIENT = 5;
const WARM_UP_SECONDS = 3;
const METRICS_TOKEN = 'bench-processes-metrics';
const SCRIPT = fileURLToPath(import.meta.url);

/** The server side: a server on the store named by BENCH_STORE_CONFIG, at BENCH_PORT, named BENCH_BASE_URL. */
async function serve(): Promise<void> {
  const port = Number(process.env.BENCH_PORT);
  const store = JSON.parse(process.env.BENCH_STORE_CONFIG!) as ConfigOverrides['store'];
  const config = loadConfig(
    {},
    {
      port,
      host: '127.0.0.1',
      baseUrl: process.env.BENCH_BASE_URL!,
      dataDir: process.env.BENCH_DATA_DIR!,
      decisionPolicy: 'auto',
      store,
      metrics: { token: METRICS_TOKEN },
    },
  );
  const server = await startServer(config, createLogger('silent'));
  const token = await server.services.identityProvider!.issue(server.services.holder);
  process.on('message', (message) => {
    if (message === 'memory') process.send!(benchServerSample(0));
    else if (message === 'stop') void server.close().then(() => process.exit(0));
  });
  process.send!({ url: server.url, token } satisfies BenchServerReady);
}

/** CPU seconds of `pid` and of its children (nginx's workers). */
async function treeCpuSeconds(pid: number): Promise<number> {
  let total = processCpuSeconds(pid);
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (Number(stat.split(') ')[1]?.split(' ')[1]) === pid) total += processCpuSeconds(Number(entry));
  }
  return total;
}

interface Cluster {
  servers: ForkedBenchServer[];
  /** Where clients send requests: the balancer, or the lone process. */
  url: string;
  nginxPid?: number;
  stop(): Promise<void>;
}

/** How the processes run: alone on the engine (no feed, no balancer), or sharing it, with or without waiting for earlier commits before a request. */
type Mode = 'alone' | 'shared' | 'shared, readYourWrites off';

async function startCluster(engine: RunningVirtuoso, processes: number, mode: Mode, dir: string): Promise<Cluster> {
  const port = await freePort();
  const balanced = mode !== 'alone';
  const baseUrl = `http://127.0.0.1:${port}`;
  const base = engineStore(engine, balanced);
  const store = { ...base, sparql: { ...base?.sparql, readYourWrites: mode === 'shared' } };
  const servers: ForkedBenchServer[] = [];
  for (let i = 0; i < processes; i++) {
    const dataDir = join(dir, `server-${i}`);
    if (i > 0) await shareIdentityProvider(join(dir, 'server-0'), dataDir);
    else await mkdir(dataDir, { recursive: true });
    const own = balanced ? await freePort() : port;
    servers.push(
      await forkBenchServer(SCRIPT, ['serve'], {
        BENCH_STORE_CONFIG: JSON.stringify(store),
        BENCH_DATA_DIR: dataDir,
        BENCH_PORT: String(own),
        BENCH_BASE_URL: baseUrl,
      }),
    );
  }
  const nginx = balanced
    ? await startNginx({ dir: join(dir, 'nginx'), port, upstreams: servers.map((s) => new URL(s.ready.url).host) })
    : undefined;
  return {
    servers,
    url: baseUrl,
    nginxPid: nginx?.pid,
    async stop() {
      await nginx?.stop();
      for (const server of servers) await server.stop();
    },
  };
}

interface Measured extends LoopResult {
  serverCpuUs: number;
  engineCpuUs: number;
  nginxCpuUs: number;
}

async function measured(
  cluster: Cluster,
  engine: RunningVirtuoso,
  seconds: number,
  send: (client: number) => Promise<{ status: number }>,
  expected: number,
): Promise<Measured> {
  await closedLoop(CLIENTS, WARM_UP_SECONDS, send, expected);
  const cpu = async () => ({
    servers: (await Promise.all(cluster.servers.map((s) => s.sample()))).reduce((sum, s) => sum + s.cpu, 0),
    engine: processCpuSeconds(engine.pid) * 1e6,
    nginx: cluster.nginxPid ? (await treeCpuSeconds(cluster.nginxPid)) * 1e6 : 0,
  });
  const before = await cpu();
  const result = await closedLoop(CLIENTS, seconds, send, expected);
  const after = await cpu();
  const per = (a: number, b: number) => (b - a) / Math.max(1, result.count);
  return {
    ...result,
    serverCpuUs: per(before.servers, after.servers),
    engineCpuUs: per(before.engine, after.engine),
    nginxCpuUs: per(before.nginx, after.nginx),
  };
}

/** The feed lag's bucket counts (cumulative, by upper bound in seconds) summed over every process. */
async function lagBuckets(cluster: Cluster): Promise<Map<number, number>> {
  const buckets = new Map<number, number>();
  for (const server of cluster.servers) {
    const text = await (
      await fetch(`${server.ready.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    for (const m of text.matchAll(/^onerecord_commit_feed_lag_seconds_bucket\{le="([^"]+)"\} (\d+)/gm)) {
      const le = m[1] === '+Inf' ? Infinity : Number(m[1]);
      buckets.set(le, (buckets.get(le) ?? 0) + Number(m[2]));
    }
  }
  return buckets;
}

interface Lag {
  count: number;
  p50?: number;
  p99?: number;
}

/** Upper bounds of p50 and p99 of what was observed between `before` and `after`. */
function lagBetween(before: Map<number, number>, after: Map<number, number>): Lag {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counted = (le: number) => after.get(le)! - (before.get(le) ?? 0);
  const count = counted(Infinity);
  const bound = (p: number) => bounds.find((le) => counted(le) >= p * count);
  return count > 0 ? { count, p50: bound(0.5), p99: bound(0.99) } : { count };
}

/** The next change of `piece`; one not accepted is counted by status in `refusals`, and the piece keeps the values it had. */
async function sendChange(
  client: LoadClient,
  piece: ChangedPiece,
  refusals: Map<number, number>,
): Promise<{ status: number }> {
  const unchanged = { ...piece };
  const res = await client.send(piece.iri, 'PATCH', nextChange(piece, false), {
    'Content-Type': 'application/ld+json',
  });
  if (res.status === 201) piece.revision += 1;
  else {
    Object.assign(piece, unchanged);
    refusals.set(res.status, (refusals.get(res.status) ?? 0) + 1);
  }
  return res;
}

/** Changes sent at `perSecond` (open loop, whatever their answers take), for `seconds`. */
async function pacedChanges(
  client: LoadClient,
  pieces: ChangedPiece[][],
  perSecond: number,
  seconds: number,
  refusals: Map<number, number>,
): Promise<void> {
  const sent: Promise<unknown>[] = [];
  const flat = pieces.flat();
  const busy = new Set<ChangedPiece>();
  const started = performance.now();
  for (let n = 0; performance.now() - started < seconds * 1000; n++) {
    const due = started + (n * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    // An object whose previous change has not been answered yet is left out: its revision is not known.
    const piece = flat.find((p, i) => i >= n % flat.length && !busy.has(p)) ?? flat.find((p) => !busy.has(p));
    if (!piece) continue;
    busy.add(piece);
    sent.push(sendChange(client, piece, refusals).finally(() => busy.delete(piece)));
  }
  await Promise.all(sent);
}

interface RunResult {
  label: string;
  get: Measured;
  patch: Measured;
  /** Under the PATCH run (the engine saturated), and under PACED_CHANGES a second. */
  lag: Lag;
  pacedLag: Lag;
  /** Changes not accepted, by status: in the PATCH run and the paced one. */
  refusals: Map<number, number>;
}

/** The paced write load under which the feed lag is measured again: about half of what the engine takes here. */
const PACED_CHANGES = 20;

async function run(
  engine: RunningVirtuoso,
  processes: number,
  mode: Mode,
  seconds: number,
  dir: string,
): Promise<RunResult> {
  const cluster = await startCluster(engine, processes, mode, join(dir, `${processes}-${mode.replace(/\W+/g, '-')}`));
  try {
    const client = new LoadClient({ Authorization: `Bearer ${cluster.servers[0].ready.token}` });
    const pieces: ChangedPiece[][] = [];
    for (let c = 0; c < CLIENTS; c++) {
      const own: ChangedPiece[] = [];
      for (let i = 0; i < OBJECTS_PER_CLIENT; i++) {
        const res = await client.send(`${cluster.url}/logistics-objects`, 'POST', JSON.stringify(CAPACITY_PIECE), {
          'Content-Type': 'application/ld+json',
        });
        if (res.status !== 201) throw new Error(`object not created: ${res.status}`);
        own.push({
          iri: String(res.headers.location),
          revision: 1,
          goods: CAPACITY_PIECE['cargo:goodsDescription'],
          upid: CAPACITY_PIECE['cargo:upid'],
          step: 0,
        });
      }
      pieces.push(own);
    }
    const all = pieces.flat();
    const get = await measured(
      cluster,
      engine,
      seconds,
      () => client.send(all[Math.floor(Math.random() * all.length)].iri, 'GET'),
      200,
    );
    const turn = new Array<number>(CLIENTS).fill(0);
    const refusals = new Map<number, number>();
    const beforePatch = await lagBuckets(cluster);
    const patch = await measured(
      cluster,
      engine,
      seconds,
      async (c) => {
        const piece = pieces[c][turn[c]++ % OBJECTS_PER_CLIENT];
        return sendChange(client, piece, refusals);
      },
      201,
    );
    const afterPatch = await lagBuckets(cluster);
    await pacedChanges(client, pieces, PACED_CHANGES, seconds, refusals);
    const afterPaced = await lagBuckets(cluster);
    client.close();
    const label =
      mode === 'alone' ? '1, alone on the engine' : `${processes}${mode === 'shared' ? '' : ', readYourWrites off'}`;
    return {
      label,
      get,
      patch,
      lag: lagBetween(beforePatch, afterPatch),
      pacedLag: lagBetween(afterPatch, afterPaced),
      refusals,
    };
  } finally {
    await cluster.stop();
  }
}

async function main(): Promise<void> {
  const seconds = Number(process.argv[2] ?? 10);
  const dir = await mkdtemp(join(tmpdir(), 'onerecord-bench-processes-'));
  const engine = await startVirtuoso({ dir: join(dir, 'virtuoso'), bufferMemoryMb: 2048 });
  try {
    const results: RunResult[] = [];
    const runs: [number, Mode][] = [
      [1, 'alone'],
      [1, 'shared'],
      [2, 'shared'],
      [3, 'shared'],
      [3, 'shared, readYourWrites off'],
    ];
    for (const [processes, mode] of runs) results.push(await run(engine, processes, mode, seconds, dir));
    console.log(
      `# Several server processes over one Virtuoso behind nginx: ${machine()}, ${CLIENTS} clients, ${seconds} s per run`,
    );
    console.log(
      `| processes | GET/s | GET p50 / p99 ms | µs CPU per GET: servers / Virtuoso / nginx | PATCH/s | PATCH p50 / p99 ms | µs CPU per PATCH: servers / Virtuoso / nginx | feed lag p50 / p99 (bucket bounds), commits seen: PATCH run / ${PACED_CHANGES} changes a second |`,
    );
    console.log('|---|---|---|---|---|---|---|---|');
    const alone = results[0];
    for (const r of results) {
      const ratio = (a: number, b: number) => (r === alone ? '' : ` (${fmt(a / b, 2)}×)`);
      const lagText = (lag: Lag) =>
        lag.count > 0 ? `≤ ${lag.p50! * 1000} / ≤ ${lag.p99! * 1000} ms, ${lag.count}` : '-';
      const lag = r === alone ? '-' : `${lagText(r.lag)}; ${lagText(r.pacedLag)}`;
      console.log(
        `| ${r.label}${r.refusals.size > 0 ? ` (changes not accepted: ${[...r.refusals].map(([status, count]) => `${count} × ${status}`).join(', ')})` : ''} | ${fmt(r.get.perSecond)}${ratio(r.get.perSecond, alone.get.perSecond)} | ${fmt(r.get.p50, 1)} / ${fmt(r.get.p99, 1)} | ${fmt(r.get.serverCpuUs)} / ${fmt(r.get.engineCpuUs)} / ${fmt(r.get.nginxCpuUs)} | ${fmt(r.patch.perSecond)}${ratio(r.patch.perSecond, alone.patch.perSecond)} | ${fmt(r.patch.p50, 1)} / ${fmt(r.patch.p99, 1)} | ${fmt(r.patch.serverCpuUs)} / ${fmt(r.patch.engineCpuUs)} / ${fmt(r.patch.nginxCpuUs)} | ${lag} |`,
      );
    }
  } finally {
    await engine.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'serve') await serve();
else await main();
