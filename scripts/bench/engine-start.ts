/**
 * The engine backend's start (store.backend: sparql), at growing sizes on one Virtuoso: the server
 * rebuilds its in-memory indexes from the engine at every start. Per size, the objects missing are
 * bulk-loaded (engine-objects.ts: copies of one ~100-quad object), then a server process starts on
 * the engine `starts` times: from the process's start to listening, with Virtuoso's CPU over it.
 * Then the start's reads (SparqlEngineStore.publishStored) run once more in this process through a
 * client that times every request: per read (its query, shortened; pages of one read together) the
 * requests, the time and the answers' size, and the time of what is not a request (parsing, building
 * the events).
 *   npm run build && node dist/scripts/bench/engine-start.js [sizes] [starts]
 * sizes: comma-separated, ascending (default 100000,300000); starts per size (default 2).
 * BENCH_BASELINE=another build's dist/scripts/bench/engine-scale.js: each start of this build's
 * server alternates with one of that build's, on the same engine (a same-run baseline).
 * Virtuoso is restarted after each load (see there). BENCH_ENGINE_MEMORY_MB sets Virtuoso's page buffers (default 4096); BENCH_DIR holds the engine and
 * the load files (default a temp directory, removed after).
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SparqlClient } from '../../src/store/sparql-engine/sparql-client.js';
import { SparqlEngineStore } from '../../src/store/sparql-engine/sparql-engine-store.js';
import { restartVirtuoso, startVirtuoso, type RunningVirtuoso } from '../virtuoso/virtuoso.js';
import { ENGINE_SERVER_SCRIPT, EngineObjects, engineStore, startEngineServer } from './engine-objects.js';
import { fmt, freePort, machine, percentile, processCpuSeconds } from './harness.js';

interface Start {
  build: string;
  ms: number;
  engineCpuS: number;
}

/** The requests of one read: its query shortened, how many were sent, their time and the characters (or rows) answered. */
interface Read {
  query: string;
  requests: number;
  ms: number;
  answered: number;
}

/** A query with its IRIs shortened to their last segment and its literals left out: the pages of one read share it. */
const readOf = (query: string) =>
  query
    .replace(/<[^>]*[/#:]([^/#:>]*)>/g, '<$1>')
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 140);

/** What an answer holds: its characters (a string), its rows (SPARQL JSON results, or the count selectCsv answers). */
const answered = (answer: unknown) =>
  typeof answer === 'string'
    ? answer.length
    : typeof answer === 'number'
      ? answer
      : ((answer as { results?: { bindings: unknown[] } }).results?.bindings.length ?? 0);

/** `engine` with every method's request timed into `reads`. */
function timed<T extends object>(engine: T, reads: Map<string, Read>): T {
  return new Proxy(engine, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const started = performance.now();
        const answer = (await value.apply(target, args)) as unknown;
        const query = `${String(key)}: ${readOf(String(args[0]))}`;
        const read = reads.get(query) ?? { query, requests: 0, ms: 0, answered: 0 };
        reads.set(query, {
          query,
          requests: read.requests + 1,
          ms: read.ms + performance.now() - started,
          answered: read.answered + answered(answer),
        });
        return answer;
      };
    },
  });
}

/** The start's reads in this process, each timed; `total` from the first request to the events built. */
async function startReads(engine: RunningVirtuoso): Promise<{ reads: Read[]; totalMs: number }> {
  const reads = new Map<string, Read>();
  const client = new SparqlClient({
    queryUrl: engine.authUrl,
    updateUrl: engine.authUrl,
    auth: { user: engine.user, password: engine.password, scheme: 'digest' },
    timeoutMs: 600_000,
  });
  const started = performance.now();
  await new SparqlEngineStore(timed(client, reads)).publishStored();
  return { reads: [...reads.values()], totalMs: performance.now() - started };
}

async function main(): Promise<void> {
  const sizes = (process.argv[2] ?? '100000,300000').split(',').map(Number);
  const starts = Number(process.argv[3] ?? 2);
  const builds = [
    { build: 'this build', script: ENGINE_SERVER_SCRIPT },
    ...(process.env.BENCH_BASELINE ? [{ build: 'baseline', script: process.env.BENCH_BASELINE }] : []),
  ];
  const dir = process.env.BENCH_DIR ?? (await mkdtemp(join(tmpdir(), 'onerecord-bench-start-')));
  await mkdir(dir, { recursive: true });
  const bufferMemoryMb = Number(process.env.BENCH_ENGINE_MEMORY_MB ?? 4096);
  let engine = await startVirtuoso({ dir: join(dir, 'virtuoso'), bufferMemoryMb });
  const dataDir = join(dir, 'server');
  await mkdir(dataDir, { recursive: true });
  // A longer limit per request than the default 30 s: the baseline's first page after a bulk load has passed it.
  const store = { ...engineStore(engine), sparql: { ...engineStore(engine)!.sparql, timeoutMs: 300_000 } };
  console.log(`engine-start, ${machine()}; Virtuoso ${engine.pid}`);
  try {
    const objects = await EngineObjects.open(engine, dir, dataDir, await freePort());
    const { port } = objects;
    for (const size of sizes) {
      const load = await objects.loadUpTo(size);
      console.log(`\n${fmt(size)} objects: bulk load ${fmt(load.quads)} quads in ${fmt(load.seconds, 1)} s`);
      // The starts measured are those of a server restarted on an engine that has been running (restartVirtuoso).
      engine = await restartVirtuoso(engine, bufferMemoryMb);
      const measured: Start[] = [];
      for (let n = 0; n < starts; n++) {
        for (const { build, script } of builds) {
          const engineBefore = processCpuSeconds(engine.pid);
          const server = await startEngineServer(store, dataDir, port, script);
          const engineCpuS = processCpuSeconds(engine.pid) - engineBefore;
          await server.stop();
          measured.push({ build, ms: server.ready.startMs, engineCpuS });
          console.log(
            `  start (${build}): ${fmt(server.ready.startMs / 1000, 2)} s, Virtuoso ${fmt(engineCpuS, 1)} s CPU; ${fmt((server.ready.startMs * 1000) / size, 1)} µs per object`,
          );
        }
      }
      const { reads, totalMs } = await startReads(engine);
      console.log(`  the start's reads in this process (this build): ${fmt(totalMs / 1000, 2)} s`);
      for (const r of reads)
        console.log(
          `    ${fmt(r.ms / 1000, 2).padStart(7)} s ${String(r.requests).padStart(4)}× ${fmt(r.answered).padStart(12)} answered  ${r.query}`,
        );
      const requestsMs = reads.reduce((sum, r) => sum + r.ms, 0);
      console.log(
        `    ${fmt((totalMs - requestsMs) / 1000, 2).padStart(7)} s       besides the requests (parsing rows, building the events)`,
      );
      for (const { build } of builds) {
        const ms = percentile(
          measured.filter((m) => m.build === build).map((m) => m.ms),
          0.5,
        );
        console.log(`  ${build}: median start ${fmt(ms / 1000, 2)} s (${fmt((ms * 1000) / size, 1)} µs per object)`);
      }
    }
  } finally {
    await engine.stop();
    if (!process.env.BENCH_DIR) await rm(dir, { recursive: true, force: true });
  }
}

await main();
