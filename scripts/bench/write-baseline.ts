/**
 * The least a durable ONE Record write can cost on this machine: the same-run baseline of the
 * POST and PATCH throughput benchmark (changes.ts). An express app with two routes:
 *   POST  /logistics-objects      (a Logistics Object)
 *   PATCH /logistics-objects/:id  (a Change)
 * Each reads the body as the server does (express.raw), parses it with our JSON-LD parser
 * (parseBody: the fast path, the same limits and checks), names its blank nodes, writes the quads
 * as N-Quads in a graph of their own, appends them to our journal (src/store/embedded/journal: the
 * same record, group commit and fdatasync) and, once durable, loads them into a bare Oxigraph
 * store, then answers 201 with a Location. No authentication, access control, shapes, revisions,
 * claims, archive, replica, outbox, metrics or logs.
 * The Oxigraph store is the project's bindings without OxigraphIndex; its WASM memory is grown once
 * at start (every growth starts a full GC, see oxigraph-index.ts), and it holds `preloadObjects`
 * objects before the first request, as the benchmark's server does.
 * Run by changes.ts as a process of its own, which speaks the same messages as its server:
 *   node dist/scripts/bench/write-baseline.js serve [preloaded objects]
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { DEFAULTS } from '../../src/config.js';
import { parseBody } from '../../src/rdf/parse.js';
import { triplesInGraphToNq } from '../../src/rdf/terms.js';
import { nameBlankNodes } from '../../src/rdf/triples.js';
import { Journal } from '../../src/store/embedded/journal/journal.js';
import { canAllocate, loadOxigraphBindings } from '../../src/store/embedded/oxigraph/oxigraph-bindings.js';
import { BENCH_PIECE } from './fixtures.js';
import { benchServerSample, freePort, type BenchServerReady } from './harness.js';

const NQUADS = 'application/n-quads';
/** WASM memory grown at start, untouched: room for the preloaded objects and every run's writes. */
const WASM_GROWTH_BYTES = 1024 ** 3;

export interface WriteBaseline {
  url: string;
  /** Quads in the Oxigraph store. */
  quads(): number;
  close(): Promise<void>;
}

export async function startWriteBaseline(options: { preloadObjects: number; port?: number }): Promise<WriteBaseline> {
  const port = options.port ?? (await freePort());
  const base = `http://127.0.0.1:${port}`;
  const objectsPrefix = `${base}/logistics-objects/`;
  const limits = DEFAULTS.limits;
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-bench-baseline-'));
  const { oxigraph, allocator } = loadOxigraphBindings();
  if (!canAllocate({ oxigraph, allocator }, WASM_GROWTH_BYTES))
    throw new Error('could not grow the WASM memory of the baseline store');
  const store = new oxigraph.Store();
  const journal = await Journal.open({
    dir: dataDir,
    segment: 1,
    fsync: true,
    snapshotAfterBytes: Number.POSITIVE_INFINITY,
    onSizeExceeded: () => {},
  });

  /** The body's quads with named blank nodes, as N-Quads in `graph`. */
  const nquads = async (body: Buffer, graph: string) => {
    let named = 0;
    const quads = nameBlankNodes(await parseBody(body, 'jsonld', { base: objectsPrefix, limits }), () =>
      named++ === 0 ? graph : `${graph}#${randomUUID()}`,
    );
    return triplesInGraphToNq(quads, graph).join('');
  };
  const write = (insert: string) =>
    journal.append({ delete: '', insert }, (stored) => store.load(stored.insert, { format: NQUADS, lenient: true }));

  const piece = Buffer.from(JSON.stringify(BENCH_PIECE));
  for (let done = 0; done < options.preloadObjects; done += 1000) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(1000, options.preloadObjects - done) }, () =>
        nquads(piece, `${objectsPrefix}${randomUUID()}`),
      ),
    );
    store.load(batch.join(''), { format: NQUADS, lenient: true });
  }

  const app = express();
  const raw = express.raw({ type: () => true, limit: limits.bodyBytes });
  app.post('/logistics-objects', raw, async (req, res, next) => {
    try {
      const iri = `${objectsPrefix}${randomUUID()}`;
      await write(await nquads(req.body as Buffer, iri));
      res.status(201).location(iri).end();
    } catch (err) {
      next(err);
    }
  });
  app.patch('/logistics-objects/:id', raw, async (req, res, next) => {
    try {
      const iri = `${base}/action-requests/${randomUUID()}`;
      await write(await nquads(req.body as Buffer, iri));
      res.status(201).location(iri).end();
    } catch (err) {
      next(err);
    }
  });
  const server = app.listen(port, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    url: base,
    quads: () => store.size,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await journal.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The process changes.ts forks: the baseline, answering its 'memory' and 'stop' messages. */
async function serve(preloadObjects: number): Promise<void> {
  const baseline = await startWriteBaseline({ preloadObjects });
  process.on('message', (message) => {
    if (message === 'memory') process.send!(benchServerSample(baseline.quads()));
    else if (message === 'stop') void baseline.close().then(() => process.exit(0));
  });
  process.send!({ url: baseline.url, token: 'none' } satisfies BenchServerReady);
}

if (process.argv[2] === 'serve') await serve(Number(process.argv[3] ?? 10_000));
