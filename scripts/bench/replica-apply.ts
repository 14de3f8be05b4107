/**
 * The SPARQL replica's own rate, without HTTP or the request thread: the journal records of
 * `objects` new ~40-triple Pieces and `changes` changes of each (captured from a real store's
 * after-commit stream, as the worker gets them), applied to a ReplicaStore in batches of 250 in this
 * thread, creations and changes timed apart; then `objects` changes made as PATCH makes them (a
 * ChangeRequest accepted at once: its record holds the finished request too), one record at a time
 * as the worker gets them when it keeps up; then a Piece of ~2,000 triples changed 200 times (each
 * change copies the revision it replaces whole into the history window) against a ~40-triple one,
 * and the quads the replica holds per object.
 *   npm run build && node dist/scripts/bench/replica-apply.js [objects] [changes]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULTS, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { parseBody } from '../../src/rdf/parse.js';
import { startServer } from '../../src/server.js';
import { ReplicaStore, type ReplicaRecord } from '../../src/store/embedded/replica/replica-store.js';
import { addRevisions, benchObject, pieceWithInstructions, replaceMarkChange, markedPiece } from './fixtures.js';
import { fmt, machine } from './harness.js';

const OBJECTS = Number(process.argv[2] ?? 2_000);
const CHANGES = Number(process.argv[3] ?? 5);
const BATCH = 250;
const utf8 = new TextDecoder();

const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-replica-bench-'));
const server = await startServer(
  loadConfig({}, { port: 0, dataDir, journal: { fsync: false } }),
  createLogger('silent'),
);
const records: ReplicaRecord[] = [];
server.store.committed.subscribeData((record) =>
  records.push({ insert: utf8.decode(record.insert), delete: utf8.decode(record.delete) }),
);
const { objects, holder, changeRequests } = server.services;
const caller = { agent: holder, internal: true };
const parse = (json: string) =>
  parseBody(Buffer.from(json), 'jsonld', { base: objects.objectsPrefix, limits: DEFAULTS.limits });

/** The records a piece of work writes. */
async function recordsOf(work: () => Promise<void>): Promise<ReplicaRecord[]> {
  const from = records.length;
  await work();
  return records.slice(from);
}

const small: string[] = [];
const created = await recordsOf(async () => {
  for (let i = 0; i < OBJECTS; i++) small.push((await objects.create(await benchObject(), caller)).iri);
});
const changed = await recordsOf(async () => {
  for (let c = 0; c < CHANGES; c++) for (const iri of small) await addRevisions(server.store, objects, iri, holder, 1);
});
// Changes as PATCH makes them (auto policy: the ChangeRequest is accepted in the commit that creates it).
const marked: string[] = [];
for (let i = 0; i < OBJECTS; i++) marked.push((await objects.create(await parse(markedPiece('bench')), caller)).iri);
const requested = await recordsOf(async () => {
  for (const iri of marked)
    await changeRequests.submit(await objects.existing(iri), await parse(replaceMarkChange(iri, 1)), caller);
});
const markedCreated = records.slice(records.length - requested.length - OBJECTS, records.length - requested.length);
let big = '';
const bigCreated = await recordsOf(async () => {
  big = (
    await objects.create(
      await parseBody(Buffer.from(JSON.stringify(pieceWithInstructions(490))), 'jsonld', {
        base: 'http://bench.invalid/',
        limits: DEFAULTS.limits,
      }),
      caller,
    )
  ).iri;
});
const bigChanged = await recordsOf(() => addRevisions(server.store, objects, big, holder, 200));
const smallChanged = await recordsOf(() => addRevisions(server.store, objects, small[0], holder, 200));
await server.close();
await rm(dataDir, { recursive: true, force: true });

const replica = new ReplicaStore(DEFAULTS.sparql.historyMaxQuads);
/** Milliseconds to apply `of` in batches, as the worker does. */
function apply(of: readonly ReplicaRecord[]): number {
  const t0 = performance.now();
  for (let i = 0; i < of.length; i += BATCH) replica.applyRecords(of.slice(i, i + BATCH));
  return performance.now() - t0;
}
const row = (name: string, of: readonly ReplicaRecord[], ms: number) =>
  `| ${name} | ${fmt(of.length)} | ${fmt(of.reduce((n, r) => n + r.insert.length + r.delete.length, 0) / of.length)} | ${fmt((ms * 1000) / of.length)} | ${fmt((of.length * 1000) / ms)} |`;
const createdMs = apply(created);
const quadsCreated = replica.size;
const changedMs = apply(changed);
const quadsChanged = replica.size;
// The large and the small object's changes, one apply each (the worker gets them one at a time when it keeps up).
const one = (of: readonly ReplicaRecord[]) => {
  const t0 = performance.now();
  for (const record of of) replica.applyRecords([record]);
  return performance.now() - t0;
};
apply(markedCreated);
const requestedMs = one(requested);
apply(bigCreated);
const bigMs = one(bigChanged);
const smallMs = one(smallChanged);
console.log(
  `machine: ${machine()}; replica store in this thread, history window ${fmt(DEFAULTS.sparql.historyMaxQuads)} quads`,
);
console.log('| records | count | bytes per record | µs per record | records/s |');
console.log('|---|---|---|---|---|');
console.log(row(`create a ~40-triple Piece, batches of ${BATCH}`, created, createdMs));
console.log(row(`change it (new revision), batches of ${BATCH}`, changed, changedMs));
console.log(
  row('change through an accepted ChangeRequest (as PATCH writes it), one record at a time', requested, requestedMs),
);
console.log(row('change a ~2,000-triple Piece, one record at a time', bigChanged, bigMs));
console.log(row('change a ~40-triple Piece, one record at a time', smallChanged, smallMs));
console.log(
  `ratio of µs per change, ~2,000 vs ~40 triples: ${fmt(bigMs / bigChanged.length / (smallMs / smallChanged.length), 2)}`,
);
console.log(
  `replica quads per ~40-triple object: ${fmt(quadsCreated / OBJECTS, 1)} after the creations, ${fmt(quadsChanged / OBJECTS, 1)} after ${CHANGES} changes each ` +
    `(history window ${fmt(DEFAULTS.sparql.historyMaxQuads)} quads at most, included)`,
);
