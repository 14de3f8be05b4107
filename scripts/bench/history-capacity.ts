/**
 * Capacity with history (issue: history out of the hot store): how many objects of ~50 triples,
 * each changed 20 times, one server holds before it refuses writes. One real server in this
 * process (startServer: store, domain, archive, SPARQL replica; the holder's changes accepted at
 * once, shapes on), driven through the domain services rather than HTTP (what is measured is
 * memory, and HTTP would make a fill of millions of changes take hours): objects are created
 * and changed in batches, 50 writes in flight, until a write is refused, `--objects` are
 * reached or `--minutes` have passed. fsync is off (this measures memory, not the disk).
 *
 * `--data-dir` keeps the data directory and continues in it on the next run: a fill can be split
 * into runs of a few minutes each, and each run first measures the cold start of what the
 * earlier ones wrote.
 *   node --expose-gc dist/scripts/bench/history-capacity.js [--objects 100000] [--minutes 9] [--data-dir DIR]
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Caller } from '../../src/auth/authorizer.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { parseBody } from '../../src/rdf/parse.js';
import { literal, namedNode, quad, xsdLiteral, type Quad } from '../../src/rdf/terms.js';
import { API, CARGO, XSD, rdf, xsd } from '../../src/rdf/vocab.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { StoreFullError } from '../../src/store/capacity.js';
import { BENCH_PIECE, pieceWithInstructions } from './fixtures.js';
import { fmt, freePort, machine } from './harness.js';

const { values } = parseArgs({
  options: { objects: { type: 'string', default: '100000' }, minutes: { type: 'string', default: '9' }, 'data-dir': { type: 'string' }, batch: { type: 'string', default: '5000' } },
});
const TARGET = Number(values.objects);
const DEADLINE = performance.now() + Number(values.minutes) * 60_000;
const BATCH = Number(values.batch);
const CHANGES = 20;
const IN_FLIGHT = 50;
const MB = 2 ** 20;

/** The 40-triple bench Piece with three more handling instructions: 52 triples. */
const PIECE = pieceWithInstructions(6);

/** An api:Change replacing the goods description and the UPID (4 operations), as parsed from a PATCH body. */
function changeQuads(object: string, revision: number): Quad[] {
  const change = namedNode(`http://bench.invalid/changes/${revision}`);
  const out = [
    quad(change, namedNode(rdf.type), namedNode(`${API}Change`)),
    quad(change, namedNode(`${API}hasLogisticsObject`), namedNode(object)),
    quad(change, namedNode(`${API}hasRevision`), xsdLiteral(revision, xsd.positiveInteger)),
  ];
  const value = (p: string, n: number) => (p === 'goodsDescription' ? (n === 1 ? BENCH_PIECE['cargo:goodsDescription'] : `goods of revision ${n}`) : n === 1 ? BENCH_PIECE['cargo:upid'] : `UPID-${n}`);
  const ops = [
    ['DELETE', 'goodsDescription', value('goodsDescription', revision)],
    ['DELETE', 'upid', value('upid', revision)],
    ['ADD', 'goodsDescription', value('goodsDescription', revision + 1)],
    ['ADD', 'upid', value('upid', revision + 1)],
  ];
  ops.forEach(([op, p, v], i) => {
    const node = namedNode(`${change.value}/op${i}`);
    const o = namedNode(`${node.value}/o`);
    out.push(
      quad(change, namedNode(`${API}hasOperation`), node),
      quad(node, namedNode(rdf.type), namedNode(`${API}Operation`)),
      quad(node, namedNode(`${API}op`), namedNode(`${API}${op}`)),
      quad(node, namedNode(`${API}s`), literal(object)),
      quad(node, namedNode(`${API}p`), xsdLiteral(`${CARGO}${p}`, xsd.anyURI)),
      quad(node, namedNode(`${API}o`), o),
      quad(o, namedNode(rdf.type), namedNode(`${API}OperationObject`)),
      quad(o, namedNode(`${API}hasDatatype`), xsdLiteral(`${XSD}string`, xsd.anyURI)),
      quad(o, namedNode(`${API}hasValue`), literal(v)),
    );
  });
  return out;
}

async function directoryBytes(dir: string): Promise<number> {
  let bytes = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    bytes += entry.isDirectory() ? await directoryBytes(path) : (await stat(path)).size;
  }
  return bytes;
}

/** Runs `work(i)` for i in [0, count), `IN_FLIGHT` at a time; stops at the first StoreFullError, which it returns. */
async function inFlight(count: number, work: (i: number) => Promise<unknown>): Promise<StoreFullError | undefined> {
  let next = 0;
  let refused: StoreFullError | undefined;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (!refused && next < count) {
        const i = next++;
        try {
          await work(i);
        } catch (err) {
          if (err instanceof StoreFullError) refused ??= err;
          else throw err;
        }
      }
    }),
  );
  return refused;
}

function report(server: RunningServer, objects: number, started: number, label: string): void {
  (globalThis as { gc?: () => void }).gc?.();
  const c = server.store.capacity();
  const m = process.memoryUsage();
  console.log(
    `| ${label} | ${fmt(objects)} | ${fmt(c.quads)} | ${fmt(c.quads / Math.max(1, objects), 1)} | ${fmt(c.wasmMemoryBytes / MB)} | ${fmt(m.rss / MB)} | ${fmt(m.heapUsed / MB)} | ${fmt((performance.now() - started) / 1000)} |`,
  );
}

const dataDir = values['data-dir'] ?? (await mkdtemp(join(tmpdir(), 'onerecord-bench-history-capacity-')));
try {
  console.log(`history capacity benchmark, ${machine()}, ${new Date().toISOString()}`);
  const port = await freePort();
  const config = loadConfig({}, { port, host: '127.0.0.1', baseUrl: 'http://bench.invalid', dataDir, decisionPolicy: 'auto', journal: { fsync: false } });
  const starting = performance.now();
  const server = await startServer(config, createLogger('silent'));
  const startMs = performance.now() - starting;
  const { objects: domain, changeRequests, holder } = server.services;
  const caller: Caller = { agent: holder, internal: true };
  const triples = await parseBody(Buffer.from(JSON.stringify(PIECE)), 'jsonld', { base: 'http://bench.invalid/', limits: config.limits });
  const held = domain.index.size;
  console.log(`started in ${fmt(startMs)} ms on ${fmt(held)} objects already there (${fmt(server.store.capacity().quads)} quads); objects of ${triples.length} triples, each changed ${CHANGES} times (4 operations each)`);
  console.log('| after | objects | quads in Oxigraph | quads per object | WASM MB | RSS MB | JS heap MB | seconds |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  const started = performance.now();
  let objects = held;
  let refused: StoreFullError | undefined;
  while (!refused && objects < TARGET && performance.now() < DEADLINE) {
    const count = Math.min(BATCH, TARGET - objects);
    const iris: string[] = [];
    refused = await inFlight(count, async () => iris.push((await domain.create(triples, caller)).iri));
    for (let round = 1; !refused && round <= CHANGES; round++) {
      refused = await inFlight(iris.length, (i) => changeRequests.submit(iris[i], changeQuads(iris[i], round), caller));
    }
    objects += iris.length;
    report(server, objects, started, refused ? 'refused' : `batch of ${fmt(count)}`);
  }
  if (refused) console.log(`refused (507): ${refused.message}`);
  else console.log(objects >= TARGET ? `reached ${fmt(objects)} objects without a refusal` : `stopped after ${values.minutes} minutes (continue with --data-dir ${dataDir})`);
  const closing = performance.now();
  await server.close();
  console.log(`closed in ${fmt((performance.now() - closing) / 1000, 1)} s; data directory ${fmt((await directoryBytes(dataDir)) / MB)} MB (archive ${fmt((await directoryBytes(join(dataDir, 'archive'))) / MB)} MB)`);
} finally {
  if (!values['data-dir']) await rm(dataDir, { recursive: true, force: true });
}
