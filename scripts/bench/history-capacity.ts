/**
 * Capacity with history (issue: history out of the hot store): how many objects of ~50 triples,
 * each changed 20 times, one server holds before it refuses writes (507). Two steps, each in runs
 * of a few minutes that continue one data directory (`--data-dir`):
 * 1. `--prefill N`: adds N such objects with their 20 revisions through the store's commit path
 *    (history-fill.ts, 10 objects' next revisions per commit, fsync off, no ChangeRequests, which
 *    only add to the archive on disk): millions of revisions in minutes instead of hours of HTTP;
 * 2. then (unless `--prefill-only`) a real server (startServer, loopback, the holder's changes
 *    accepted at once, shapes on, fsync off: this measures memory, not the disk) starts on that
 *    directory and `--clients` keep-alive clients fill it over HTTP, each creating an object (POST)
 *    and changing it 20 times (PATCH, 4 operations each), until the server answers 507, `--minutes`
 *    have passed or `--objects` are held. The figure reported is the server's own refusal.
 *   node --expose-gc dist/scripts/bench/history-capacity.js [--data-dir DIR] [--prefill 0] [--prefill-only] [--clients 20] [--minutes 9] [--objects 1000000]
 */
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULTS, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { parseBody } from '../../src/rdf/parse.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { BENCH_PIECE, CAPACITY_PIECE, stringOperation as operation } from './fixtures.js';
import { LoadClient, type SentRequest, fmt, freePort, machine } from './harness.js';
import { fillThroughStore } from './history-fill.js';
import type { DurableStore } from '../../src/store/embedded/durable-store.js';

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    prefill: { type: 'string', default: '0' },
    'prefill-only': { type: 'boolean', default: false },
    clients: { type: 'string', default: '20' },
    minutes: { type: 'string', default: '9' },
    objects: { type: 'string', default: '1000000' },
  },
});
// Without --data-dir, a fresh directory, removed at the end.
const dataDir = values['data-dir'] ?? (await mkdtemp(join(tmpdir(), 'onerecord-bench-history-capacity-')));
const DEADLINE = performance.now() + Number(values.minutes) * 60_000;
const CHANGES = 20;
const MB = 2 ** 20;
/** The base URL of the server on the directory: the objects' IRIs start with it, so every run uses the same. */
const BASE = 'http://127.0.0.1:18601';

async function directoryBytes(dir: string): Promise<number> {
  let bytes = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    bytes += entry.isDirectory() ? await directoryBytes(path) : (await stat(path)).size;
  }
  return bytes;
}

function report(server: RunningServer, created: number, started: number, label: string): void {
  (globalThis as { gc?: () => void }).gc?.();
  const c = server.embedded!.capacity();
  const m = process.memoryUsage();
  const objects = server.services.objects.index.size;
  console.log(
    `| ${label} | ${fmt(objects)} | ${fmt(created)} | ${fmt(c.quads)} | ${fmt(c.quads / Math.max(1, objects), 1)} | ${fmt(c.wasmMemoryBytes / MB)} | ${fmt(m.rss / MB)} | ${fmt(m.heapUsed / MB)} | ${fmt((performance.now() - started) / 1000)} |`,
  );
}

/** The body of the Change that makes revision `revision + 1` of an object made from CAPACITY_PIECE: it replaces the goods description and the UPID. */
function change(object: string, revision: number): string {
  const value = (p: 'goods' | 'upid', n: number) =>
    p === 'goods'
      ? n === 1
        ? BENCH_PIECE['cargo:goodsDescription']
        : `goods of revision ${n}`
      : n === 1
        ? BENCH_PIECE['cargo:upid']
        : `UPID-${n}`;
  return JSON.stringify({
    '@context': {
      api: 'https://onerecord.iata.org/ns/api#',
      'api:p': { '@type': 'http://www.w3.org/2001/XMLSchema#anyURI' },
    },
    '@type': 'api:Change',
    'api:hasLogisticsObject': { '@id': object },
    'api:hasOperation': [
      operation('DELETE', object, 'goodsDescription', value('goods', revision)),
      operation('DELETE', object, 'upid', value('upid', revision)),
      operation('ADD', object, 'goodsDescription', value('goods', revision + 1)),
      operation('ADD', object, 'upid', value('upid', revision + 1)),
    ],
    'api:hasRevision': revision,
  });
}

/** Fills the server over HTTP until it answers 507, the deadline or `target` objects. */
async function fillOverHttp(server: RunningServer, clients: number, target: number): Promise<void> {
  const token = await server.services.identityProvider!.issue(server.services.holder);
  const client = new LoadClient({ Authorization: `Bearer ${token}` });
  const jsonLd = { 'Content-Type': 'application/ld+json' };
  const piece = JSON.stringify(CAPACITY_PIECE);
  const started = performance.now();
  let created = 0;
  let refusal: string | undefined;
  let nextReport = performance.now() + 30_000;
  const more = () => !refusal && performance.now() < DEADLINE && server.services.objects.index.size < target;
  let dropped = 0;
  const send = async (url: string, method: 'POST' | 'PATCH', body: string): Promise<string | undefined> => {
    let res: SentRequest;
    try {
      res = await client.send(url, method, body, jsonLd);
    } catch (err) {
      // A keep-alive connection the server closed as this request went out: the object is left as it is.
      if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET') throw err;
      dropped += 1;
      return undefined;
    }
    if (res.status === 507) {
      // Why, as the server says it (its capacity report).
      refusal ??= `${method} answered 507: ${server.embedded!.capacity().writesRefused ?? '(no reason recorded)'}`;
      return undefined;
    }
    if (res.status !== 201) throw new Error(`${method} ${url} answered ${res.status}`);
    return String(res.headers.location);
  };
  console.log(
    '| after | objects held | created over HTTP | quads in Oxigraph | quads per object | WASM MB | RSS MB | JS heap MB | seconds |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  report(server, created, started, 'start');
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (more()) {
        const iri = await send(`${server.url}/logistics-objects`, 'POST', piece);
        if (!iri) continue;
        // The object's IRI names the directory's base URL; the requests go to where the server listens.
        const url = `${server.url}${new URL(iri).pathname}`;
        let revision = 1;
        while (revision <= CHANGES && (await send(url, 'PATCH', change(iri, revision)))) revision++;
        if (revision <= CHANGES) continue;
        created += 1;
        if (performance.now() > nextReport) {
          nextReport += 30_000;
          report(server, created, started, 'filling');
        }
      }
    }),
  );
  report(server, created, started, refusal ? 'refused' : 'stopped');
  client.close();
  if (dropped > 0)
    console.log(
      `${dropped} requests met a connection the server had closed; their objects were left with fewer changes`,
    );
  if (refusal) console.log(`refused: ${refusal}`);
  else
    console.log(
      `no refusal after ${values.minutes} minutes or ${fmt(target)} objects (continue with --data-dir ${dataDir})`,
    );
}

console.log(`history capacity benchmark, ${machine()}, ${new Date().toISOString()}`);
await mkdir(dataDir, { recursive: true });
const prefill = Number(values.prefill);
if (prefill > 0) {
  const parsed = await parseBody(Buffer.from(JSON.stringify(CAPACITY_PIECE)), 'jsonld', {
    base: 'http://bench.invalid/',
    limits: DEFAULTS.limits,
  });
  let nextReport = 0;
  const progress = (added: number, store: DurableStore) => {
    if (performance.now() < nextReport) return;
    nextReport = performance.now() + 60_000;
    const c = store.capacity();
    console.log(
      `  ${new Date().toISOString()} ${fmt(added)} objects added: ${fmt(c.quads)} quads, WASM ${fmt(c.wasmMemoryBytes / MB)} MB, RSS ${fmt(process.memoryUsage().rss / MB)} MB`,
    );
  };
  const filled = await fillThroughStore(dataDir, {
    base: BASE,
    parsed,
    objects: prefill,
    revisions: CHANGES + 1,
    perCommit: 10,
    deadline: DEADLINE,
    progress,
    store: { log: (line) => console.log(`  store: ${line}`) },
  });
  console.log(
    `prefill through the store: ${fmt(filled.objects)} objects of ${parsed.length} triples x ${CHANGES + 1} revisions in ${fmt(filled.seconds, 1)} s; ` +
      `hot store ${fmt(filled.quadsBefore)} -> ${fmt(filled.quadsAfter)} quads, WASM ${fmt(filled.wasmBytes / MB)} MB; closed (snapshot) in ${fmt(filled.closeSeconds, 1)} s` +
      (filled.refused ? `; refused: ${filled.refused.message}` : ''),
  );
}
if (!values['prefill-only']) {
  const port = await freePort();
  const config = loadConfig(
    {},
    { port, host: '127.0.0.1', baseUrl: BASE, dataDir, decisionPolicy: 'auto', journal: { fsync: false } },
  );
  const starting = performance.now();
  const server = await startServer(config, createLogger('silent'));
  console.log(
    `server started in ${fmt((performance.now() - starting) / 1000, 1)} s on ${fmt(server.services.objects.index.size)} objects (${fmt(server.embedded!.capacity().quads)} quads; store.capacityQuads ${fmt(config.store.capacityQuads)})`,
  );
  await fillOverHttp(server, Number(values.clients), Number(values.objects));
  const closing = performance.now();
  await server.close();
  console.log(`closed in ${fmt((performance.now() - closing) / 1000, 1)} s`);
}
console.log(
  `data directory ${fmt((await directoryBytes(dataDir)) / MB)} MB (archive ${fmt((await directoryBytes(join(dataDir, 'archive'))) / MB)} MB)`,
);
if (!values['data-dir']) await rm(dataDir, { recursive: true, force: true });
