/**
 * A server process on the engine while 20 clients read `reads` of its `size` objects (all by default), each once, in a
 * random order: its RSS
 * sampled every few seconds through the run (the highest is what the run needed), then its RSS and JS heap after a full
 * GC at the end, against the configured caches (`cache.objectBytes` and `cache.serializedRevisionBytes`, their
 * defaults) over the process's RSS at start. The engine is engine-scale.ts's, in BENCH_DIR (`objects-<size>`),
 * loaded if missing.
 *   npm run build && BENCH_DIR=DIR node dist/scripts/bench/engine-distinct-reads.js [size] [reads]
 * BENCH_ENGINE_MEMORY_MB sets Virtuoso's page buffers (default 4096).
 */
import { readFile } from 'node:fs/promises';
import { loadConfig } from '../../src/config.js';
import { engineOfSize, engineStore, objectId, startEngineServer, type EngineServer } from './engine-objects.js';
import { fmt, machine, percentile } from './harness.js';
import { stopWithCheckpoint } from '../virtuoso/virtuoso.js';

const CLIENTS = 20;
const SAMPLE_EVERY_MS = 5_000;
const MB = 1024 * 1024;

/** The process's resident set now, without a GC first (what the run holds, garbage included). */
async function residentBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) * 1024;
}

/** A random order of `0` to `size - 1`. */
function shuffled(size: number): Uint32Array {
  const order = Uint32Array.from({ length: size }, (_, n) => n);
  for (let i = size - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

interface Sample {
  read: number;
  seconds: number;
  rssBytes: number;
}

/** Reads each object once with CLIENTS clients, sampling the server's RSS as it goes. */
async function readAll(
  server: EngineServer,
  pid: number,
  size: number,
  reads: number,
): Promise<{ samples: Sample[]; ms: number[] }> {
  const order = shuffled(size).subarray(0, reads);
  const latencies: number[] = [];
  const samples: Sample[] = [];
  const started = Date.now();
  let next = 0;
  let read = 0;
  const sampler = setInterval(() => {
    void residentBytes(pid).then((rssBytes) => {
      samples.push({ read, seconds: (Date.now() - started) / 1000, rssBytes });
      if (samples.length % 12 === 0)
        console.error(`  ${fmt(read)} read in ${fmt(samples.at(-1)!.seconds)} s, RSS ${fmt(rssBytes / MB)} MB`);
    });
  }, SAMPLE_EVERY_MS);
  try {
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let n = next++; n < reads; n = next++) {
          const at = performance.now();
          const res = await server.client.send(`${server.ready.url}/logistics-objects/${objectId(order[n])}`, 'GET');
          if (res.status !== 200) throw new Error(`object ${order[n]} could not be read: ${res.status}`);
          latencies.push(performance.now() - at);
          read++;
        }
      }),
    );
  } finally {
    clearInterval(sampler);
  }
  return { samples, ms: latencies };
}

async function main(): Promise<void> {
  const size = Number(process.argv[2] ?? 1_000_000);
  const reads = Math.min(size, Number(process.argv[3] ?? size));
  const dir = process.env.BENCH_DIR;
  if (!dir) throw new Error('BENCH_DIR names the directory of the engines (engine-scale.ts keeps them there)');
  const bufferMemoryMb = Number(process.env.BENCH_ENGINE_MEMORY_MB ?? 4096);
  const { engine, objects, dataDir } = await engineOfSize(dir, size, bufferMemoryMb);
  try {
    const server = await startEngineServer(engineStore(engine), dataDir, objects.port);
    try {
      const atStart = await server.sample();
      const { samples, ms } = await readAll(server, atStart.pid, size, reads);
      const atEnd = await server.sample();
      const cache = loadConfig({}).cache;
      const budget = cache.objectBytes + cache.serializedRevisionBytes;
      const highest = Math.max(...samples.map((s) => s.rssBytes));
      const seconds = samples.at(-1)?.seconds ?? NaN;
      const at = (part: number) => samples.find((s) => s.read >= reads * part)?.rssBytes ?? NaN;
      console.log(
        [
          `\nengine-distinct-reads, ${machine()}, ${CLIENTS} clients, ${fmt(reads)} of ${fmt(size)} objects, each read once`,
          `  ${fmt(reads / seconds)} GET/s over ${fmt(seconds)} s, p50 ${fmt(percentile(ms, 0.5))} ms, ` +
            `p99 ${fmt(percentile(ms, 0.99))} ms`,
          `  RSS at start ${fmt(atStart.rss / MB)} MB (heap ${fmt(atStart.heapUsed / MB)} MB, after a full GC); ` +
            `caches configured ${fmt(budget / MB)} MB (objects and serialised bodies)`,
          `  RSS during the run, at a quarter, half, three quarters of the reads: ` +
            `${[0.25, 0.5, 0.75].map((part) => fmt(at(part) / MB)).join(', ')} MB; highest ${fmt(highest / MB)} MB`,
          `  at the end, after a full GC: RSS ${fmt(atEnd.rss / MB)} MB, JS heap ${fmt(atEnd.heapUsed / MB)} MB, ` +
            `outside the heap ${fmt(atEnd.external / MB)} MB`,
        ].join('\n'),
      );
    } finally {
      await server.stop();
    }
  } finally {
    await stopWithCheckpoint(engine);
  }
}

await main();
