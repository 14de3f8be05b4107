/**
 * The pieces the engine benchmarks share (engine-scale.ts, engine-start.ts): a server process on a
 * Virtuoso, and the engine filled with N copies of one Logistics Object by Virtuoso's bulk loader (or, with
 * BENCH_FILL=writes, by `INSERT DATA` requests).
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Parser } from 'n3';
import { fileURLToPath } from 'node:url';
import type { ConfigOverrides } from '../../src/config.js';
import { quad, termToNt, type Quad } from '../../src/rdf/terms.js';
import { INTERNAL_SCHEME } from '../../src/rdf/vocab.js';
import { SparqlClient } from '../../src/store/sparql-engine/sparql-client.js';
import { dataOperations } from '../../src/store/sparql-engine/update-text.js';
import { termOf } from '../../src/store/sparql-engine/engine-literals.js';
import { bulkLoad } from '../virtuoso/bulk-load.js';
import { fillBuffers, restartVirtuoso, startVirtuoso, type RunningVirtuoso } from '../virtuoso/virtuoso.js';
import { CAPACITY_PIECE } from './fixtures.js';
import { forkBenchServer, freePort, type BenchServerReady, type ForkedBenchServer } from './harness.js';

export interface EngineServerReady extends BenchServerReady {
  /** From the process's start to listening, ms: the indexes rebuilt from the engine included. */
  startMs: number;
}

export type EngineServer = ForkedBenchServer<EngineServerReady>;

/** The script whose `serve` runs a server on the store named by BENCH_STORE_CONFIG (engine-scale.ts). */
export const ENGINE_SERVER_SCRIPT = fileURLToPath(new URL('./engine-scale.js', import.meta.url));

export const engineStore = (engine: RunningVirtuoso, sharedWriters = false): ConfigOverrides['store'] => ({
  backend: 'sparql',
  sparql: {
    queryUrl: engine.authUrl,
    updateUrl: engine.authUrl,
    user: engine.user,
    password: engine.password,
    authScheme: 'digest',
    sharedWriters,
  },
});

/**
 * A server on `store` in a process of its own, `script`'s `serve` (another build's engine-scale.js
 * for a baseline); on the engine, with the same port and data directory every time: the IRIs of the
 * loaded objects start with its base URL.
 */
export const startEngineServer = (
  store: ConfigOverrides['store'],
  dataDir: string,
  port: number,
  script = ENGINE_SERVER_SCRIPT,
): Promise<EngineServer> =>
  forkBenchServer<EngineServerReady>(script, ['serve'], {
    BENCH_STORE_CONFIG: JSON.stringify(store),
    BENCH_DATA_DIR: dataDir,
    BENCH_PORT: String(port),
  });

export const objectId = (n: number) => `scale-${String(n).padStart(8, '0')}`;

/** A random one of `size` loaded objects that `changed` does not hold yet, added to it. */
export function unchangedObject(size: number, changed: Set<number>): number {
  let n = Math.floor(Math.random() * size);
  while (changed.has(n)) n = Math.floor(Math.random() * size);
  changed.add(n);
  return n;
}

/** What `EngineObjects` keeps beside the engine's data, so that a later run finds the objects loaded. */
interface LoadedState {
  port: number;
  templateId: string;
  /** The template's quads as N-Quads lines. */
  template: string[];
  loaded: number;
  /** Objects a run changed (their revision is no longer 1). */
  changed: number[];
}

/**
 * Fills an engine with copies of one object the server stored through its API (so the layout is the
 * server's own), `objectId(0)` onwards, written as N-Quads into `dir` and bulk-loaded. What was loaded is
 * recorded in `dir`: a run on the same directory (and so the same engine data) loads only what is missing.
 */
export class EngineObjects {
  private constructor(
    private readonly engine: RunningVirtuoso,
    private readonly dir: string,
    private readonly state: LoadedState,
  ) {}

  /** The port the server must listen on: the loaded objects' IRIs start with its base URL. */
  get port(): number {
    return this.state.port;
  }

  /** Objects loaded so far. */
  get loaded(): number {
    return this.state.loaded;
  }

  /** Objects a run changed: add to it and `save` after a run that changes objects. */
  get changed(): Set<number> {
    return new Set(this.state.changed);
  }

  async save(changed: ReadonlySet<number>): Promise<void> {
    this.state.changed = [...changed];
    await writeFile(stateFile(this.dir), JSON.stringify(this.state));
  }

  /**
   * The objects recorded in `dir` for `engine`'s data, or, for an engine without them, the template object created
   * through a server on `engine` (started and stopped here) on `port`.
   */
  static async open(engine: RunningVirtuoso, dir: string, dataDir: string, port: number): Promise<EngineObjects> {
    const kept = await readFile(stateFile(dir), 'utf8').then(
      (text) => JSON.parse(text) as LoadedState,
      () => undefined,
    );
    if (kept) return new EngineObjects(engine, dir, kept);
    const server = await startEngineServer(engineStore(engine), dataDir, port);
    const created = await server.client.send(
      `${server.ready.url}/logistics-objects`,
      'POST',
      JSON.stringify(CAPACITY_PIECE),
      { 'Content-Type': 'application/ld+json' },
    );
    await server.stop();
    if (created.status !== 201) throw new Error(`the template object was refused: ${created.status}`);
    const templateId = String(created.headers.location).split('/').pop()!;
    const template = (await templateOf(engine, templateId)).map(
      (q) => `${termToNt(q.subject)} ${termToNt(q.predicate)} ${termToNt(q.object)} ${termToNt(q.graph)} .\n`,
    );
    const state = { port, templateId, template, loaded: 0, changed: [] };
    await writeFile(stateFile(dir), JSON.stringify(state));
    return new EngineObjects(engine, dir, state);
  }

  /**
   * Loads the objects missing to reach `size`: the quads loaded and the time it took (none if loaded before). By
   * Virtuoso's bulk loader, or with `through: 'writes'` as `INSERT DATA` requests in id order, as objects created one
   * after another reach an engine (at 300,000 objects first changes cost Virtuoso less so; at 1,000,000 the same:
   * docs/sparql-engine.md, "Write cost").
   */
  async loadUpTo(size: number, through: EngineFill = 'loader'): Promise<{ quads: number; seconds: number }> {
    if (size <= this.state.loaded) return { quads: 0, seconds: 0 };
    const { template, templateId, loaded } = this.state;
    const load =
      through === 'writes'
        ? await insertCopies(this.engine, template, templateId, loaded, size)
        : await this.bulkLoadCopies(loaded, size);
    this.state.loaded = size;
    await writeFile(stateFile(this.dir), JSON.stringify(this.state));
    return load;
  }

  private async bulkLoadCopies(from: number, to: number): Promise<{ quads: number; seconds: number }> {
    const file = join(this.dir, `objects-${from}-${to}.nq`);
    await writeCopies(this.state.template, this.state.templateId, from, to, file);
    try {
      return await bulkLoad(this.engine, file);
    } finally {
      await rm(file, { force: true });
    }
  }
}

/** How an engine is filled: BENCH_FILL=writes for `INSERT DATA` requests, else the bulk loader. */
export type EngineFill = 'loader' | 'writes';
export const engineFill = (): EngineFill => (process.env.BENCH_FILL === 'writes' ? 'writes' : 'loader');

const stateFile = (dir: string) => join(dir, 'engine-objects.json');

/** The quads the engine holds that mention `id` (one object's graphs and metadata), in N-Triples terms with literals in the server's forms. */
async function templateOf(engine: RunningVirtuoso, id: string): Promise<Quad[]> {
  const client = new SparqlClient({ queryUrl: engine.queryUrl, updateUrl: engine.updateUrl, timeoutMs: 60_000 });
  const rows = await client.select(
    `SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } FILTER (CONTAINS(STR(?g), "${id}") || CONTAINS(STR(?s), "${id}")) }`,
  );
  return rows.results.bindings.map((b) =>
    quad(
      termOf(b.s) as Quad['subject'],
      termOf(b.p) as Quad['predicate'],
      termOf(b.o) as Quad['object'],
      termOf(b.g) as Quad['graph'],
    ),
  );
}

/**
 * An embedded node's IRI as the server makes it (`internal:` and a random UUID), its last group apart, and as a
 * revision's graph names it (with the revision's suffix: revision-subjects.ts).
 */
const EMBEDDED_NODE = new RegExp(
  `(<${INTERNAL_SCHEME}[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-)[0-9a-f]{12}((?:\\?revision=[0-9]+)?>)`,
  'g',
);

/** The template revision's creation time, as written in the metadata graph. */
const CREATED_AT = /<urn:onerecord:store:createdAt> "([^"]+)"\^\^<http:\/\/www\.w3\.org\/2001\/XMLSchema#dateTime>/;

/**
 * N-Quads of the objects `from` to `to` (exclusive): the template with its object's id replaced,
 * blank nodes and embedded nodes renamed per copy (the UUID's last group is the copy's number), as
 * the server names every object's embedded nodes afresh; copy n created n seconds before the template (objects of one
 * instant would make the object list's order a sort of every IRI, as no real store is). (Copies that shared the template's
 * embedded nodes made each of those IRIs the subject of a million graphs' triples, and a GET at
 * 1,000,000 objects cost Virtuoso 15-18 ms of CPU against 2 at 10,000: a scan of that subject's rows.)
 */
async function writeCopies(lines: string[], id: string, from: number, to: number, file: string): Promise<void> {
  const copyOf = copier(lines, id);
  const out = createWriteStream(file);
  for (let n = from; n < to; n++) {
    if (!out.write(copyOf(n).join(''))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** Copy n of the template's N-Quads lines, as `writeCopies` describes. */
function copier(lines: string[], id: string): (n: number) => string[] {
  const createdAt = lines.join('').match(CREATED_AT)?.[1];
  if (createdAt === undefined) throw new Error('the template object has no creation time');
  return (n) => {
    const copyNumber = n.toString(16).padStart(12, '0');
    const copyCreatedAt = new Date(Date.parse(createdAt) - n * 1000).toISOString();
    return lines.map((line) =>
      line
        .split(id)
        .join(objectId(n))
        .split(createdAt)
        .join(copyCreatedAt)
        .replace(/_:(\w+)/g, `_:$1x${n}`)
        .replace(EMBEDDED_NODE, `$1${copyNumber}$2`),
    );
  };
}

/** Objects per `INSERT DATA` request when filling through writes (1,090 quads: Virtuoso takes fewer than 5,000). */
const OBJECTS_PER_WRITE = 10;
/** Requests under way at once when filling through writes: one per core of this machine's engine. */
const WRITES_AT_ONCE = 2;

/**
 * The copies `from` to `to` (exclusive) as `INSERT DATA` requests in id order, written as the server writes data
 * (`dataOperations`: each quad under its graph, literals in the engine's forms).
 */
async function insertCopies(
  engine: RunningVirtuoso,
  lines: string[],
  id: string,
  from: number,
  to: number,
): Promise<{ quads: number; seconds: number }> {
  if (lines.some((line) => line.includes('_:')))
    throw new Error('INSERT DATA takes no blank node: the template has one');
  const copyOf = copier(lines, id);
  const client = new SparqlClient({ queryUrl: engine.queryUrl, updateUrl: engine.updateUrl, timeoutMs: 120_000 });
  const started = performance.now();
  let next = from;
  const writer = async () => {
    while (next < to) {
      const first = next;
      const last = Math.min(to, first + OBJECTS_PER_WRITE);
      next = last;
      const copies = Array.from({ length: last - first }, (_, i) => copyOf(first + i).join('')).join('');
      const insert = new Parser({ format: 'N-Quads' }).parse(copies);
      await client.update(dataOperations({ insert, remove: [], removedGraphs: [], created: new Set() }));
    }
  };
  await Promise.all(Array.from({ length: WRITES_AT_ONCE }, writer));
  return { quads: (to - from) * lines.length, seconds: (performance.now() - started) / 1000 };
}

/**
 * The engine of `size` objects kept in `dir` (`objects-<size>`: Virtuoso's files, the objects' state, the server's
 * data directory), started, loaded up to `size` if it holds fewer, then restarted, as docs/sparql-engine.md asks of
 * users after a load, and its buffers filled: what engine-scale.ts and engine-distinct-reads.ts measure on.
 */
export async function engineOfSize(
  dir: string,
  size: number,
  bufferMemoryMb: number,
): Promise<{
  engine: RunningVirtuoso;
  objects: EngineObjects;
  dataDir: string;
  load: { quads: number; seconds: number };
}> {
  const sizeDir = join(dir, `objects-${size}`);
  const dataDir = join(sizeDir, 'server');
  await mkdir(dataDir, { recursive: true });
  const engine = await startVirtuoso({ dir: join(sizeDir, 'virtuoso'), bufferMemoryMb });
  try {
    // One object through the API: its quads in the engine are the template of every loaded one.
    const objects = await EngineObjects.open(engine, sizeDir, dataDir, await freePort());
    const load = await objects.loadUpTo(size, engineFill());
    const restarted = await restartVirtuoso(engine, bufferMemoryMb);
    // A production engine has served for hours: its indexes are in its buffers (BENCH_COLD_ENGINE=1 measures it cold).
    if (process.env.BENCH_COLD_ENGINE !== '1')
      console.log(`engine of ${size} objects: buffers filled in ${(await fillBuffers(restarted)).toFixed(1)} s`);
    return { engine: restarted, objects, dataDir, load };
  } catch (err) {
    await engine.stop();
    throw err;
  }
}
