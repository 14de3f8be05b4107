/**
 * Cold start with deep history (issue: history out of the hot store): time to ready of a server
 * whose objects have 20 revisions each, against the depth of that history. The data is written
 * through the store's commit path (DurableStore.commit with the revisions the domain writes for a
 * Change of 2 DELETEs + 2 ADDs: the same journal records, hot store and archive, without the
 * ChangeRequests, which would only add to the archive), fsync off, 50 commits in flight, each
 * writing the next revision of `--per-commit` objects (1: one record per revision, as the server
 * writes them; more builds a large directory faster, in fewer and larger records). A run adds
 * `--objects` objects to `--data-dir` (created if missing) and closes it (a snapshot is written),
 * so a large directory is built in runs of a few minutes; each run first times the start of what
 * the earlier runs wrote, in a fresh process (startServer until it listens; the SPARQL replica
 * copies the archive after that, in the background).
 *   node dist/scripts/bench/history-cold-start.js --data-dir DIR [--objects 25000] [--revisions 20] [--per-commit 1]
 */
import { spawnSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULTS, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { literal, namedNode, quad, type Quad } from '../../src/rdf/terms.js';
import { CARGO } from '../../src/rdf/vocab.js';
import { startServer } from '../../src/server.js';
import { DurableStore } from '../../src/store/durable-store.js';
import { revisionGraph, type RevisionRecord } from '../../src/store/schema/revisions.js';
import { benchObject } from './fixtures.js';
import { fmt, machine } from './harness.js';

const { values } = parseArgs({
  options: { 'data-dir': { type: 'string' }, objects: { type: 'string', default: '25000' }, revisions: { type: 'string', default: '20' }, 'per-commit': { type: 'string', default: '1' }, measure: { type: 'boolean', default: false } },
});
const dataDir = values['data-dir'];
if (!dataDir) throw new Error('--data-dir is required');
const IN_FLIGHT = 50;
const BASE = 'http://127.0.0.1:18600';

/** Child mode: one timed start of the server on the data directory, printed as JSON. */
async function measure(dir: string): Promise<void> {
  const started = performance.now();
  const server = await startServer(loadConfig({}, { port: 0, baseUrl: BASE, dataDir: dir, journal: { fsync: false } }), createLogger('silent'));
  const startMs = performance.now() - started;
  const { quads, wasmMemoryBytes } = server.store.capacity();
  console.log(JSON.stringify({ startMs, objects: server.services.objects.index.size, quads, wasmMb: wasmMemoryBytes / 2 ** 20, rssMb: process.memoryUsage().rss / 2 ** 20 }));
  process.exit(0); // no close(): it would write a snapshot and change what the next run measures
}

/** The object's triples of revision `n`: the template's, with `goodsDescription` and `upid` of that revision. */
function revisionTriples(template: readonly Quad[], iri: string, n: number): Quad[] {
  return template.map((t) => {
    if (t.subject.value !== iri) return t;
    if (t.predicate.value === `${CARGO}goodsDescription`) return quad(t.subject, t.predicate, literal(`goods of revision ${n}`));
    if (t.predicate.value === `${CARGO}upid`) return quad(t.subject, t.predicate, literal(`UPID-${n}`));
    return t;
  });
}

/** The bench Piece as object `iri`: its root node named `iri`, its embedded nodes `internal:` IRIs, as the domain names them. */
function asObject(parsed: readonly Quad[], iri: string): Quad[] {
  const objects = new Set(parsed.map((t) => t.object.value));
  const root = parsed.find((t) => !objects.has(t.subject.value))!.subject.value;
  const names = new Map<string, string>([[root, iri]]);
  const rename = (term: Quad['subject'] | Quad['object']) => {
    if (term.termType === 'Literal' || (term.termType === 'NamedNode' && !names.has(term.value) && term.value !== root && !parsed.some((t) => t.subject.value === term.value))) return term;
    let name = names.get(term.value);
    if (!name) names.set(term.value, (name = `internal:${iri.slice(BASE.length)}-${names.size}`));
    return namedNode(name);
  };
  return parsed.map((t) => quad(rename(t.subject) as Quad['subject'], t.predicate, rename(t.object) as Quad['object']));
}

async function build(dir: string, count: number, revisions: number, perCommit: number): Promise<void> {
  const store = await DurableStore.open({ dataDir: dir, fsync: false, snapshotAfterBytes: Number.MAX_SAFE_INTEGER, ...DEFAULTS.store, log: () => undefined });
  const parsed = await benchObject();
  const holder = `${BASE}/logistics-objects/holder`;
  const first = Date.now();
  const started = performance.now();
  const existing = store.capacity().quads;
  let next = 0;
  const runId = Date.now().toString(36);
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) {
        const group = Array.from({ length: Math.min(perCommit, count - next) }, () => next++).map((k) => {
          const iri = `${BASE}/logistics-objects/${runId}-${k}`;
          return { k, iri, template: asObject(parsed, iri), previous: undefined as { revision: RevisionRecord; triples: Quad[] } | undefined };
        });
        for (let n = 1; n <= revisions; n++) {
          const tx = store.begin();
          for (const o of group) {
            const triples = revisionTriples(o.template, o.iri, n);
            const revision: RevisionRecord = { object: o.iri, number: n, graph: revisionGraph(o.iri, n), createdAt: new Date(first + o.k * 100 + n), createdBy: holder, mostSpecificType: `${CARGO}Piece` };
            if (o.previous) {
              const changed = (t: Quad) => t.subject.value === o.iri && (t.predicate.value === `${CARGO}goodsDescription` || t.predicate.value === `${CARGO}upid`);
              tx.revisions.push({ revision, triples, replaces: { ...o.previous, added: triples.filter(changed), removed: o.previous.triples.filter(changed) } });
            } else {
              tx.revisions.push({ revision, triples });
            }
            o.previous = { revision, triples };
          }
          await store.commit(tx);
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const { quads, wasmMemoryBytes } = store.capacity();
  console.log(
    `added ${fmt(count)} objects x ${revisions} revisions (${fmt(Math.ceil(count / perCommit) * revisions)} commits) in ${fmt(seconds, 1)} s; ` +
      `hot store ${fmt(existing)} -> ${fmt(quads)} quads (${fmt((quads - existing) / count, 1)} per object), WASM ${fmt(wasmMemoryBytes / 2 ** 20)} MB`,
  );
  const closing = performance.now();
  await store.close();
  console.log(`closed (snapshot) in ${fmt((performance.now() - closing) / 1000, 1)} s`);
}

function timedStart(dir: string): string {
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--measure', '--data-dir', dir], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (child.status !== 0) throw new Error(`measuring run failed:\n${child.stderr}`);
  const m = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as { startMs: number; objects: number; quads: number; wasmMb: number; rssMb: number };
  return `server start (fresh process, until it listens): ${fmt(m.startMs / 1000, 2)} s with ${fmt(m.objects)} objects, ${fmt(m.quads)} quads, WASM ${fmt(m.wasmMb)} MB, RSS ${fmt(m.rssMb)} MB`;
}

if (values.measure) {
  await measure(dataDir);
} else {
  console.log(`history cold start, ${machine()}, ${new Date().toISOString()}`);
  await mkdir(dataDir, { recursive: true });
  console.log(`before: ${timedStart(dataDir)}`);
  await build(dataDir, Number(values.objects), Number(values.revisions), Number(values['per-commit']));
  console.log(`after: ${timedStart(dataDir)}`);
}
