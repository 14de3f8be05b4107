/**
 * Several server processes over one Virtuoso behind nginx (round robin), with
 * store.sparql.sharedWriters, against one process alone on the engine without it, in the same run:
 * for 1 (alone), 1, 2 and 3 processes, and 3 with `readYourWrites` off, 20 clients through the balancer
 * (the lone process: directly) measure GET of random objects and PATCH of objects each client
 * changes in turn; per run the rate, p50/p99, the CPU per request of the server processes (all of
 * them), of Virtuoso and of nginx, and the commit feed's lag (commit in the engine to published by
 * every other process: `onerecord_commit_feed_lag_seconds`, bucket bounds) under that PATCH run (the
 * engine saturated) and under 20 changes a second sent at a steady pace. On one machine the
 * processes, the engine and nginx share its cores: see BENCHMARKS.md for what N machines give. Their notification
 * rate: processes-notifications.ts.
 *   npm run build && node dist/scripts/bench/processes.js [seconds]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startVirtuoso, type RunningVirtuoso } from '../virtuoso/virtuoso.js';
import {
  createPieces,
  METRICS_TOKEN,
  sendChange,
  startCluster,
  treeCpuSeconds,
  type Cluster,
  type Mode,
} from './cluster.js';
import type { ChangedPiece } from './fixtures.js';
import { closedLoop, fmt, LoadClient, machine, processCpuSeconds, type LoopResult } from './harness.js';

const CLIENTS = 20;
const OBJECTS_PER_CLIENT = 5;
const WARM_UP_SECONDS = 3;

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
    for (let c = 0; c < CLIENTS; c++) pieces.push(await createPieces(client, cluster.url, OBJECTS_PER_CLIENT));
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

await main();
