/**
 * The SPARQL replica's memory per object: the creation record of one ~40-triple Piece (captured from
 * a real store's after-commit stream), copied for each of `objects` objects with ids of its own, applied
 * to a ReplicaStore in this thread in batches of 250, as the worker gets them; every `step` objects the
 * quads it holds per object, its WASM memory and the process's resident memory (RSS; the WASM memory is
 * reserved ahead in large steps, untouched until data lands there, so RSS is what it takes). Stops at
 * `objects`, or where the replica's WASM memory (4 GiB at most) can take no more.
 *   npm run build && node --expose-gc dist/scripts/bench/replica-memory.js [objects] [step]
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULTS, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { startServer } from '../../src/server.js';
import { ReplicaStore, type ReplicaRecord } from '../../src/store/embedded/replica/replica-store.js';
import { benchObject } from './fixtures.js';
import { fmt, machine } from './harness.js';

const OBJECTS = Number(process.argv[2] ?? 10_000);
const STEP = Number(process.argv[3] ?? 10_000);
const BATCH = 250;
const utf8 = new TextDecoder();
const MB = 1024 * 1024;

const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-replica-memory-'));
const server = await startServer(
  loadConfig({}, { port: 0, dataDir, journal: { fsync: false } }),
  createLogger('silent'),
);
const records: ReplicaRecord[] = [];
server.store.committed.subscribeData((record) =>
  records.push({ insert: utf8.decode(record.insert), delete: utf8.decode(record.delete) }),
);
await server.services.objects.create(await benchObject(), { agent: server.services.holder, internal: true });
await server.close();
await rm(dataDir, { recursive: true, force: true });
const [created] = records;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
/** The creation record again, for an object (and embedded nodes) of new ids. */
const another = (): ReplicaRecord => {
  const ids = new Map<string, string>();
  const renamed = (id: string) => {
    if (!ids.has(id)) ids.set(id, randomUUID());
    return ids.get(id)!;
  };
  return {
    insert: created.insert.replace(UUID, renamed),
    delete: '',
  };
};

global.gc?.();
const rssBefore = process.memoryUsage().rss;
const replica = new ReplicaStore(DEFAULTS.sparql.historyMaxQuads);
console.log(
  `machine: ${machine()}; one creation record of ${fmt(created.insert.length)} bytes (${created.insert.split('\n').length - 1} N-Quads lines) per object, batches of ${BATCH}`,
);
console.log(
  '| objects | replica quads | quads per object | WASM memory (MB) | RSS added (MB) | RSS per object (bytes) | µs per record |',
);
console.log('|---|---|---|---|---|---|---|');
let applied = 0;
let started = performance.now();
try {
  while (applied < OBJECTS) {
    const batch = Array.from({ length: Math.min(BATCH, OBJECTS - applied) }, another);
    replica.applyRecords(batch);
    applied += batch.length;
    if (applied % STEP === 0 || applied === OBJECTS) {
      const µs = ((performance.now() - started) * 1000) / STEP;
      global.gc?.();
      const quads = replica.size;
      const rss = process.memoryUsage().rss - rssBefore;
      console.log(
        `| ${fmt(applied)} | ${fmt(quads)} | ${fmt(quads / applied, 1)} | ${fmt(replica.wasmMemoryBytes / MB)} | ${fmt(rss / MB)} | ${fmt(rss / applied)} | ${fmt(µs)} |`,
      );
      started = performance.now();
    }
  }
} catch (err) {
  console.log(
    `stopped after ${fmt(applied)} objects: ${(err as Error).message} (WASM memory ${fmt(replica.wasmMemoryBytes / MB)} MB)`,
  );
}
