/**
 * What the embedded store keeps per change and per event (issue: memory follows live data, not
 * history). A real server in a process of its own (`npm start`'s defaults: embedded store, fsync
 * on, snapshots and the memory image on) holds `--objects` Pieces; `--clients` keep-alive clients
 * then make `--total` replace-style Changes (each DELETEs the shipping mark and ADDs the next,
 * accepted at once: the objects keep their size), or with `events` as many Logistics Events spread
 * over the same objects. Every `--every` writes the server is sampled after a full GC: anonymous
 * memory (RssAnon), JS heap, WASM memory, quads held, and the write rate since the last sample.
 * The summary gives each figure's growth from the sample at `--from` writes to the end, and the
 * rate of the last stretch against the first.
 *   npm run build && node dist/scripts/bench/memory-growth.js [changes|events] [--total 1000000]
 *     [--objects 1000] [--clients 20] [--every 100000] [--from 100000]
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { CARGO } from '../../src/rdf/vocab.js';
import { startServer } from '../../src/server.js';
import { benchEvent, markedPiece, replaceMarkChange } from './fixtures.js';
import {
  type BenchServerReady,
  type BenchServerSample,
  benchServerSample,
  fmt,
  forkBenchServer,
  freePort,
  machine,
} from './harness.js';

/** A sample of the server, with what `process.memoryUsage` does not say. */
interface MemorySample extends BenchServerSample {
  /** Anonymous resident memory (RssAnon of /proc/self/status): the heap, WASM memory and buffers, not mapped files such as the LMDB archive. */
  rssAnon: number;
  /** RssAnon before the full GC: what the process holds as it runs (a compacted store's old WASM memory waits for a GC). */
  rssAnonBeforeGc: number;
  wasmMemory: number;
  /** Anonymous memory resident in WASM memories (mappings of 512 MiB and more: each instance's memory), old ones included. */
  wasmResident: number;
  /** Compactions of the hot store so far. */
  compactions: number;
}

/** RssAnon in bytes (0 where /proc is missing). */
function rssAnon(): number {
  try {
    const line = readFileSync('/proc/self/status', 'utf8').match(/^RssAnon:\s+(\d+) kB$/m);
    return line ? Number(line[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Anonymous resident bytes of the mappings of at least 512 MiB in /proc/self/smaps (WASM memories: nothing else maps that much). */
function wasmResident(): number {
  let total = 0;
  let large = false;
  try {
    for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
      const range = line.match(/^([0-9a-f]+)-([0-9a-f]+) /);
      if (range) large = Number.parseInt(range[2], 16) - Number.parseInt(range[1], 16) >= 512 * 1024 ** 2;
      else if (large && line.startsWith('Anonymous:')) total += Number(line.split(/\s+/)[1]) * 1024;
    }
  } catch {
    return 0;
  }
  return total;
}

async function serve(): Promise<void> {
  const port = await freePort();
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-bench-memory-'));
  const config = loadConfig(
    {},
    { port, host: '127.0.0.1', baseUrl: `http://127.0.0.1:${port}`, dataDir, decisionPolicy: 'auto' },
  );
  let compactions = 0;
  // Info lines are on so the store's compaction lines can be counted; request lines cost every run alike.
  const countCompactions = {
    write(line: string) {
      if (line.includes('store compacted')) compactions += 1;
    },
  };
  const server = await startServer(config, createLogger('info', countCompactions));
  const { holder, identityProvider } = server.services;
  const token = await identityProvider!.issue(holder);
  process.on('message', (message) => {
    if (message === 'memory') {
      const index = server.embedded?.index;
      const rssAnonBeforeGc = rssAnon();
      const sample = benchServerSample(index?.size ?? 0);
      const wasmMemory = index?.wasmMemoryBytes ?? 0;
      process.send!({
        ...sample,
        rssAnon: rssAnon(),
        rssAnonBeforeGc,
        wasmMemory,
        wasmResident: wasmResident(),
        compactions,
      } satisfies MemorySample);
    } else if (message === 'stop') {
      void server
        .close()
        .then(() => rm(dataDir, { recursive: true, force: true }))
        .then(() => process.exit(0));
    }
  });
  process.send!({ url: server.url, token } satisfies BenchServerReady);
}

interface Options {
  mode: 'changes' | 'events';
  total: number;
  objects: number;
  clients: number;
  every: number;
  from: number;
}

function options(): Options {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      total: { type: 'string', default: '1000000' },
      objects: { type: 'string', default: '1000' },
      clients: { type: 'string', default: '20' },
      every: { type: 'string' },
      from: { type: 'string' },
    },
  });
  const mode = positionals[0] ?? 'changes';
  if (mode !== 'changes' && mode !== 'events') throw new Error(`unknown mode ${mode}: changes or events`);
  const total = Number(values.total);
  return {
    mode,
    total,
    objects: Number(values.objects),
    clients: Number(values.clients),
    every: Number(values.every ?? total / 10),
    from: Number(values.from ?? total / 10),
  };
}

interface Row {
  writes: number;
  perSecond: number;
  sample: MemorySample;
}

const MB = 1024 ** 2;

async function drive(opts: Options): Promise<void> {
  const server = await forkBenchServer<BenchServerReady>(fileURLToPath(import.meta.url), ['serve']);
  const { client, ready } = server;
  const jsonLd = { 'Content-Type': 'application/ld+json' };
  const objects: { iri: string; revision: number }[] = [];
  for (let i = 0; i < opts.objects; i++) {
    const res = await client.send(`${ready.url}/logistics-objects`, 'POST', markedPiece(`piece ${i}`), jsonLd);
    if (res.status !== 201) throw new Error(`POST an object: ${res.status}`);
    objects.push({ iri: String(res.headers.location), revision: 1 });
  }
  let written = 0;
  let failures = 0;
  // Each client its own objects, so no two Changes race for one revision.
  const write = async (c: number, n: number): Promise<void> => {
    const object = objects[c + opts.clients * (n % Math.floor(opts.objects / opts.clients))];
    const res =
      opts.mode === 'changes'
        ? await client.send(object.iri, 'PATCH', replaceMarkChange(object.iri, object.revision), jsonLd)
        : await client.send(
            `${object.iri}/logistics-events`,
            'POST',
            JSON.stringify({ '@context': { cargo: CARGO }, ...benchEvent(written) }),
            jsonLd,
          );
    if (res.status !== 201) failures += 1;
    else if (opts.mode === 'changes') object.revision += 1;
  };
  const rows: Row[] = [{ writes: 0, perSecond: 0, sample: (await server.sample()) as MemorySample }];
  report(rows[0]);
  const cursors = new Array<number>(opts.clients).fill(0);
  while (written < opts.total) {
    const until = Math.min(opts.total, written + opts.every);
    const started = performance.now();
    const before = written;
    await Promise.all(
      cursors.map(async (_, c) => {
        while (written < until) {
          written += 1;
          await write(c, cursors[c]++);
        }
      }),
    );
    const perSecond = (written - before) / ((performance.now() - started) / 1000);
    rows.push({ writes: written, perSecond, sample: (await server.sample()) as MemorySample });
    report(rows.at(-1)!);
  }
  await server.stop();
  summary(opts, rows, failures);
}

function report({ writes, perSecond, sample }: Row): void {
  console.log(
    `| ${fmt(writes)} | ${fmt(perSecond)} | ${fmt(sample.rssAnonBeforeGc / MB)} | ${fmt(sample.rssAnon / MB)} | ` +
      `${fmt(sample.heapUsed / MB, 1)} | ` +
      `${fmt(sample.wasmResident / MB)} | ${fmt(sample.wasmMemory / MB)} | ${fmt(sample.quads)} | ${sample.compactions} |`,
  );
}

function summary(opts: Options, rows: Row[], failures: number): void {
  const from = rows.find((r) => r.writes >= opts.from) ?? rows[1];
  const last = rows.at(-1)!;
  const growth = (of: (s: MemorySample) => number) => fmt(of(last.sample) / of(from.sample), 3);
  const retained = (of: (s: MemorySample) => number) =>
    fmt((of(last.sample) - of(rows[0].sample)) / Math.max(1, last.writes));
  console.log(
    `growth from ${fmt(from.writes)} to ${fmt(last.writes)} ${opts.mode}: RssAnon x${growth((s) => s.rssAnon)}, ` +
      `JS heap x${growth((s) => s.heapUsed)}, WASM resident x${growth((s) => s.wasmResident)}, quads x${growth((s) => s.quads)}`,
  );
  console.log(
    `retained per write over the whole run: RssAnon ${retained((s) => s.rssAnon)} B, ` +
      `JS heap ${retained((s) => s.heapUsed)} B, WASM resident ${retained((s) => s.wasmResident)} B`,
  );
  console.log(
    `rate of the last stretch / the first: ${fmt(last.perSecond / rows[1].perSecond, 2)}; writes not answered 201: ${failures}`,
  );
}

if (process.argv[2] === 'serve') await serve();
else {
  const opts = options();
  console.log(
    `machine: ${machine()}; ${opts.mode}: ${fmt(opts.total)} on ${fmt(opts.objects)} objects, ${opts.clients} clients; ` +
      'embedded store with the defaults (fsync on); server sampled after a full GC',
  );
  console.log(
    `| ${opts.mode} | per s | RssAnon MB before GC | RssAnon MB | JS heap MB | WASM resident MB | WASM MB | quads | compactions |`,
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  await drive(opts);
}
