/**
 * History out of the hot store (issue: the revision archive). One real server (startServer,
 * loopback, fsync on, the holder's changes accepted at once), in this process:
 * 1. change cost vs object size: sequential PATCH (2 DELETEs + 2 ADDs) on a 2,000-triple Piece and
 *    on a 40-triple one, alternating, same server, same run: p50 of each and their ratio;
 * 2. historical reads of an object with 1,000 revisions: GET ?revision=k of every k once, in random
 *    order (so no answer comes from a cache), p50/p99; GET ?revision=1 the first time, then 999 times
 *    more (p50/p99); the store's
 *    own read of revision 1 from the archive (no HTTP), p50/p99; GET of the latest revision as baseline;
 * 3. what one object of 40 triples changed 20 times costs: `objects` such objects, changed by 20
 *    clients; quads in Oxigraph, WASM memory, archive bytes on disk, per object;
 * 4. cold start: time to ready of that data directory after a clean stop, against one holding the
 *    same number of objects that were never changed (same run).
 *   npm run build && node dist/scripts/bench/history.js [objects] [parts: e.g. 1,3; all by default]
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { revisionGraph } from '../../src/store/schema/revisions.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { BENCH_PIECE, pieceWithInstructions, stringOperation as operation } from './fixtures.js';
import { LoadClient, fmt, freePort, machine, percentile } from './harness.js';

const OBJECTS = Number(process.argv[2] ?? 2_000);
const CHANGES_PER_OBJECT = 20;
const CLIENTS = 20;
const PARTS = new Set((process.argv[3] ?? '1,2,3,4').split(',').map(Number));

/** The 40-triple bench Piece with enough handling instructions to reach about 2,000 triples. */
const BIG_PIECE = pieceWithInstructions(490);

interface Subject {
  iri: string;
  revision: number;
  goods: string;
  upid: string;
}

function nextChange(subject: Subject): string {
  const goods = `goods of revision ${subject.revision + 1}`;
  const upid = `UPID-${subject.revision + 1}`;
  const body = JSON.stringify({
    '@context': {
      api: 'https://onerecord.iata.org/ns/api#',
      'api:p': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI' },
    },
    '@type': 'api:Change',
    'api:hasLogisticsObject': { '@id': subject.iri },
    'api:hasOperation': [
      operation('DELETE', subject.iri, 'goodsDescription', subject.goods),
      operation('DELETE', subject.iri, 'upid', subject.upid),
      operation('ADD', subject.iri, 'goodsDescription', goods),
      operation('ADD', subject.iri, 'upid', upid),
    ],
    'api:hasRevision': subject.revision,
  });
  subject.goods = goods;
  subject.upid = upid;
  return body;
}

interface Bench {
  server: RunningServer;
  client: LoadClient;
  dataDir: string;
}

async function start(dataDir: string): Promise<Bench & { startMs: number }> {
  const started = performance.now();
  // No snapshot while measuring: one started meanwhile would slow down what runs then.
  const port = await freePort();
  const config = loadConfig(
    {},
    {
      port,
      host: '127.0.0.1',
      baseUrl: `http://127.0.0.1:${port}`,
      dataDir,
      decisionPolicy: 'auto',
      journal: { fsync: true, snapshotAfterBytes: 4 * 1024 ** 3 },
    },
  );
  const server = await startServer(config, createLogger('silent'));
  const startMs = performance.now() - started;
  const token = await server.services.identityProvider!.issue(server.services.holder);
  return { server, client: new LoadClient({ Authorization: `Bearer ${token}` }), dataDir, startMs };
}

async function create(bench: Bench, body: object): Promise<Subject> {
  const res = await bench.client.send(`${bench.server.url}/logistics-objects`, 'POST', JSON.stringify(body), {
    'Content-Type': 'application/ld+json',
  });
  if (res.status !== 201) throw new Error(`POST answered ${res.status}`);
  return {
    iri: String(res.headers.location),
    revision: 1,
    goods: BENCH_PIECE['cargo:goodsDescription'],
    upid: BENCH_PIECE['cargo:upid'],
  };
}

async function patch(bench: Bench, subject: Subject): Promise<number> {
  const started = performance.now();
  const res = await bench.client.send(subject.iri, 'PATCH', nextChange(subject), {
    'Content-Type': 'application/ld+json',
  });
  if (res.status !== 201) throw new Error(`PATCH answered ${res.status}`);
  subject.revision += 1;
  return performance.now() - started;
}

async function timedGet(bench: Bench, url: string): Promise<number> {
  const started = performance.now();
  const res = await bench.client.send(url, 'GET', undefined, { Accept: 'application/ld+json' });
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}`);
  return performance.now() - started;
}

const duBytes = (path: string) => Number(execFileSync('du', ['-sb', path]).toString().split('\t')[0]);

async function changeCost(bench: Bench): Promise<void> {
  const small = await create(bench, BENCH_PIECE);
  const big = await create(bench, BIG_PIECE);
  const triples = async (s: Subject) =>
    (
      await bench.server.services.objects.triples(
        bench.server.services.objects.index.latest(bench.server.services.objects.index.get(s.iri)!),
      )
    ).length;
  const times = { small: [] as number[], big: [] as number[] };
  for (let i = 0; i < 50; i++) {
    await patch(bench, small);
    await patch(bench, big);
  }
  for (let i = 0; i < 400; i++) {
    times.small.push(await patch(bench, small));
    times.big.push(await patch(bench, big));
  }
  const p50 = { small: percentile(times.small, 0.5), big: percentile(times.big, 0.5) };
  console.log(`\n1. sequential PATCH, 400 each, alternating (after 50 each to warm up):`);
  console.log('| object | triples | p50 ms | p99 ms |');
  console.log('|---|---:|---:|---:|');
  console.log(`| small | ${await triples(small)} | ${fmt(p50.small, 2)} | ${fmt(percentile(times.small, 0.99), 2)} |`);
  console.log(`| large | ${await triples(big)} | ${fmt(p50.big, 2)} | ${fmt(percentile(times.big, 0.99), 2)} |`);
  console.log(`ratio of p50, large / small: ${fmt(p50.big / p50.small, 2)} (target <= 1.3)`);
}

async function historicalReads(bench: Bench): Promise<void> {
  const subject = await create(bench, BENCH_PIECE);
  for (let i = 1; i < 1000; i++) await patch(bench, subject);
  const first = await timedGet(bench, `${subject.iri}?revision=1`);
  const order = Array.from({ length: 999 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
  const byNumber: number[] = [];
  for (const k of order) byNumber.push(await timedGet(bench, `${subject.iri}?revision=${k}`));
  const again: number[] = [];
  for (let i = 0; i < 999; i++) again.push(await timedGet(bench, `${subject.iri}?revision=1`));
  const latest: number[] = [];
  for (let i = 0; i < 999; i++) latest.push(await timedGet(bench, subject.iri));
  const store: number[] = [];
  for (let i = 0; i < 999; i++) {
    const started = performance.now();
    await bench.server.store.graphTriples(revisionGraph(subject.iri, 1 + (i % 999)));
    store.push(performance.now() - started);
  }
  const one: number[] = [];
  for (let i = 0; i < 999; i++) {
    const started = performance.now();
    await bench.server.store.graphTriples(revisionGraph(subject.iri, 1));
    one.push(performance.now() - started);
  }
  console.log(`\n2. an object with ${subject.revision} revisions:`);
  console.log('| read | p50 ms | p99 ms |');
  console.log('|---|---:|---:|');
  console.log(`| GET ?revision=1, first time | ${fmt(first, 2)} | |`);
  console.log(
    `| GET ?revision=1 again, 999 times (the server's caches hold its answer) | ${fmt(percentile(again, 0.5), 2)} | ${fmt(percentile(again, 0.99), 2)} |`,
  );
  console.log(
    `| GET ?revision=k, every k < 1,000 once, random order (no cache) | ${fmt(percentile(byNumber, 0.5), 2)} | ${fmt(percentile(byNumber, 0.99), 2)} |`,
  );
  console.log(
    `| GET latest (baseline, cached answer) | ${fmt(percentile(latest, 0.5), 2)} | ${fmt(percentile(latest, 0.99), 2)} |`,
  );
  console.log(
    `| store read of revision 1 from the archive, no HTTP | ${fmt(percentile(one, 0.5), 3)} | ${fmt(percentile(one, 0.99), 3)} |`,
  );
  console.log(
    `| store read of revision k, every k once | ${fmt(percentile(store, 0.5), 3)} | ${fmt(percentile(store, 0.99), 3)} |`,
  );
}

/** `count` objects of 40 triples, each changed `changes` times by `CLIENTS` clients; returns the seconds the changes took. */
async function fill(bench: Bench, count: number, changes: number): Promise<number> {
  const subjects: Subject[] = [];
  for (let i = 0; i < count; i += CLIENTS)
    subjects.push(
      ...(await Promise.all(Array.from({ length: Math.min(CLIENTS, count - i) }, () => create(bench, BENCH_PIECE)))),
    );
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, client) => {
      for (let round = 0; round < changes; round++)
        for (let i = client; i < subjects.length; i += CLIENTS) await patch(bench, subjects[i]);
    }),
  );
  return (performance.now() - started) / 1000;
}

async function perObject(): Promise<void> {
  const dirs = {
    changed: await mkdtemp(join(tmpdir(), 'onerecord-bench-history-')),
    created: await mkdtemp(join(tmpdir(), 'onerecord-bench-history-')),
  };
  try {
    const measured: Record<string, { quads: number; wasm: number; archive: number; heap: number; seconds: number }> =
      {};
    for (const [name, changes] of [
      ['created', 0],
      ['changed', CHANGES_PER_OBJECT],
    ] as const) {
      const bench = await start(dirs[name]);
      const before = bench.server.embedded!.capacity();
      const seconds = await fill(bench, OBJECTS, changes);
      (globalThis as { gc?: () => void }).gc?.();
      const after = bench.server.embedded!.capacity();
      measured[name] = {
        quads: after.quads - before.quads,
        wasm: after.wasmMemoryBytes - before.wasmMemoryBytes,
        archive: 0,
        heap: process.memoryUsage().heapUsed,
        seconds,
      };
      bench.client.close();
      await bench.server.close();
      measured[name].archive = duBytes(join(dirs[name], 'archive'));
    }
    const changed = measured.changed;
    console.log(
      `\n3. ${fmt(OBJECTS)} objects of 40 triples, each changed ${CHANGES_PER_OBJECT} times (${fmt(OBJECTS * CHANGES_PER_OBJECT)} changes by ${CLIENTS} clients in ${fmt(changed.seconds, 1)} s: ${fmt((OBJECTS * CHANGES_PER_OBJECT) / changed.seconds)} changes/s):`,
    );
    console.log('| per object | never changed | changed 20 times |');
    console.log('|---|---:|---:|');
    console.log(
      `| quads in Oxigraph | ${fmt(measured.created.quads / OBJECTS, 1)} | ${fmt(changed.quads / OBJECTS, 1)} |`,
    );
    console.log(
      `| WASM memory grown (bytes; grows in steps of 64-256 MB) | ${fmt(measured.created.wasm / OBJECTS)} | ${fmt(changed.wasm / OBJECTS)} |`,
    );
    console.log(
      `| revision archive on disk (bytes) | ${fmt(measured.created.archive / OBJECTS)} | ${fmt(changed.archive / OBJECTS)} |`,
    );
    const capacity = loadConfig({}, {}).store.capacityQuads;
    console.log(
      `objects like these within store.capacityQuads (${fmt(capacity)}): ${fmt(capacity / (changed.quads / OBJECTS))}`,
    );

    const times: Record<string, number> = {};
    for (const name of ['created', 'changed'] as const) {
      const bench = await start(dirs[name]);
      times[name] = bench.startMs;
      bench.client.close();
      await bench.server.close();
    }
    console.log(
      `\n4. cold start (after a clean stop, which writes a snapshot): ${fmt(OBJECTS)} objects never changed: ${fmt(times.created)} ms; changed 20 times each: ${fmt(times.changed)} ms (ratio ${fmt(times.changed / times.created, 2)})`,
    );
  } finally {
    await rm(dirs.changed, { recursive: true, force: true });
    await rm(dirs.created, { recursive: true, force: true });
  }
}

console.log(`history benchmark, ${machine()}, ${new Date().toISOString()}`);
const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-bench-history-'));
try {
  const bench = await start(dataDir);
  if (PARTS.has(1)) await changeCost(bench);
  if (PARTS.has(2)) await historicalReads(bench);
  bench.client.close();
  await bench.server.close();
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
if (PARTS.has(3) || PARTS.has(4)) await perObject();
