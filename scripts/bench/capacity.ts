/**
 * Capacity: fills a store through its commit path with the default limits until it refuses a
 * write, then checks that reads work, that the refusal changed nothing on disk, and that a fresh
 * process starts from the full data directory.
 *   node dist/scripts/bench/capacity.js [--literal-bytes 40] [--quads-per-write 45]
 * Each write is one new graph of `--quads-per-write` quads (about an object revision) whose
 * literals are `--literal-bytes` long: short literals meet `store.capacityQuads` first, long ones
 * the WASM memory reserve. fsync is off (this measures memory, not the disk).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULTS } from '../../src/config.js';
import { literal, namedNode, quad, type Quad } from '../../src/rdf/terms.js';
import { StoreFullError } from '../../src/store/errors.js';
import { DurableStore } from '../../src/store/embedded/durable-store.js';
import { fmt, machine } from './harness.js';

const { values } = parseArgs({
  options: {
    'literal-bytes': { type: 'string', default: '40' },
    'quads-per-write': { type: 'string', default: '45' },
    reopen: { type: 'string' },
  },
});
const MB = 2 ** 20;

const open = (dataDir: string) =>
  DurableStore.open({
    dataDir,
    fsync: false,
    snapshotAfterBytes: Number.MAX_SAFE_INTEGER,
    maxReplayBytes: Number.MAX_SAFE_INTEGER,
    ...DEFAULTS.store,
    log: (line) => console.log(`  store: ${line}`),
  });

async function directoryBytes(dir: string): Promise<number> {
  let bytes = 0;
  for (const name of await readdir(dir)) bytes += (await stat(join(dir, name))).size;
  return bytes;
}

/** Child mode: a fresh process opens the full data directory. */
async function reopen(dataDir: string): Promise<void> {
  const started = performance.now();
  const store = await open(dataDir);
  const ms = performance.now() - started;
  const { quads, wasmMemoryBytes } = store.capacity();
  const refused = await store
    .commit(
      store.begin({
        insert: [quad(namedNode('urn:x:s'), namedNode('urn:x:p'), literal('one more'), namedNode('urn:x:g'))],
      }),
    )
    .catch((err: unknown) => err);
  console.log(
    `reopened in a fresh process: ${fmt(quads)} quads in ${fmt(ms / 1000, 1)} s, WASM memory ${fmt(wasmMemoryBytes / MB)} MB, a write then: ${refused instanceof StoreFullError ? '507 (refused)' : refused ? String(refused) : 'accepted'}`,
  );
  process.exit(0);
}

async function fill(): Promise<void> {
  const literalBytes = Number(values['literal-bytes']);
  const perWrite = Number(values['quads-per-write']);
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-capacity-'));
  try {
    const store = await open(dataDir);
    const pad = 'x'.repeat(Math.max(0, literalBytes - 12));
    const write = (n: number): Quad[] => {
      const graph = namedNode(`http://bench.invalid/logistics-objects/o${n}?revision=1`);
      return Array.from({ length: perWrite }, (_, i) =>
        quad(
          namedNode(`http://bench.invalid/logistics-objects/o${n}#n${i % 8}`),
          namedNode(`https://onerecord.iata.org/ns/cargo#p${i}`),
          literal(`${n}-${i}-${pad}`.slice(0, literalBytes)),
          graph,
        ),
      );
    };
    const started = performance.now();
    let n = 0;
    let refusal: Error | undefined;
    while (!refusal) {
      // 50 writes in flight, as concurrent clients would have them.
      const outcomes = await Promise.allSettled(
        Array.from({ length: 50 }, () => store.commit(store.begin({ insert: write(n++) }))),
      );
      refusal = outcomes.map((o) => (o.status === 'rejected' ? (o.reason as Error) : undefined)).find(Boolean);
      if (n % 20_000 < 50)
        console.log(
          `  ${fmt(store.capacity().quads)} quads, WASM ${fmt(store.capacity().wasmMemoryBytes / MB)} MB, ${fmt((performance.now() - started) / 1000)} s`,
        );
    }
    const capacity = store.capacity();
    console.log(machine());
    console.log(`literals of ${literalBytes} bytes, ${perWrite} quads per write:`);
    console.log(
      `refused at ${fmt(capacity.quads)} quads, WASM memory ${fmt(capacity.wasmMemoryBytes / MB)} MB of ${fmt(capacity.wasmMemoryLimitBytes / MB)} MB, after ${fmt((performance.now() - started) / 1000)} s`,
    );
    console.log(`refusal (${refusal instanceof StoreFullError ? '507' : 'not a StoreFullError!'}): ${refusal.message}`);
    const before = await directoryBytes(dataDir);
    const again = await store.commit(store.begin({ insert: write(n++) })).catch((err: unknown) => err);
    console.log(
      `another write: ${again instanceof StoreFullError ? 'refused' : 'NOT refused'}; data directory unchanged by it: ${(await directoryBytes(dataDir)) === before}`,
    );
    const graphs = (await store.select('SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }')).results
      .bindings[0].n.value;
    console.log(
      `reads after the refusal: ${(await store.graphTriples('http://bench.invalid/logistics-objects/o0?revision=1')).length} triples of the first graph, ${graphs} graphs counted by SPARQL`,
    );
    const closing = performance.now();
    await store.close(); // folds the journal into a snapshot on the snapshot thread
    console.log(
      `closed (snapshot written) in ${fmt((performance.now() - closing) / 1000, 1)} s; data directory ${fmt((await directoryBytes(dataDir)) / MB)} MB`,
    );
    const child = fork(fileURLToPath(import.meta.url), ['--reopen', dataDir]);
    await once(child, 'exit');
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (values.reopen) await reopen(values.reopen);
else await fill();
