/**
 * Cold start: how long a server with a large store takes from startServer() to listening.
 *   node dist/scripts/bench/cold-start.js [--objects 10000] [--revisions 5] [--runs 3]
 * Builds the data in-process through the domain write path (fsync off: this measures starting,
 * not writing), copies the data directory while it holds only the journal, then closes the
 * server, which folds the journal into a snapshot. Each start is timed in a fresh process.
 */
import { spawnSync } from 'node:child_process';
import { cp, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import { startServer } from '../../src/server.js';
import { addRevisions, benchObject } from './fixtures.js';
import { machine } from './harness.js';

const BATCH = 200;

const configFor = (dataDir: string): Config =>
  loadConfig(
    {},
    {
      port: 0,
      baseUrl: 'http://127.0.0.1:18500',
      dataDir,
      journal: { fsync: false, snapshotAfterBytes: Number.MAX_SAFE_INTEGER },
    },
  );

interface Measured {
  startMs: number;
  /** When the store had loaded the snapshot and replayed the journal, since startServer was called. */
  storeMs: number;
  quads: number;
  rssMb: number;
}

/** A logger handing the message of each line to `onMessage`. */
function messageLogger(onMessage: (message: string) => void): Logger {
  return createLogger('info', { write: (line: string) => onMessage((JSON.parse(line) as { msg: string }).msg) });
}

/** Child mode: one timed start, printed as JSON. */
async function measure(dataDir: string): Promise<void> {
  let storeMs = 0;
  let quads = 0;
  const started = performance.now();
  await startServer(
    configFor(dataDir),
    messageLogger((line) => {
      const recovered = /^store recovered: .* (\d+) quads$/.exec(line);
      if (recovered) {
        storeMs = performance.now() - started;
        quads = Number(recovered[1]);
      }
    }),
  );
  const result: Measured = {
    startMs: performance.now() - started,
    storeMs,
    quads,
    rssMb: process.memoryUsage().rss / 2 ** 20,
  };
  console.log(JSON.stringify(result));
  process.exit(0); // no close(): it could write a snapshot and change what the next run measures
}

/** Builds the data, copies the journal-only directory to `journalOnly`, then closes (writing a snapshot). */
async function build(dataDir: string, journalOnly: string, objectCount: number, revisions: number): Promise<void> {
  const log: string[] = [];
  const server = await startServer(
    configFor(dataDir),
    messageLogger((line) => log.push(line)),
  );
  const { objects, holder } = server.services;
  const caller = { agent: holder, internal: true };
  const started = performance.now();
  for (let done = 0; done < objectCount; done += BATCH) {
    await Promise.all(
      Array.from({ length: Math.min(BATCH, objectCount - done) }, async () => {
        const { iri } = await objects.create(await benchObject(), caller);
        await addRevisions(server.store, objects, iri, holder, revisions - 1);
      }),
    );
  }
  console.log(
    `built ${objectCount} objects x ${revisions} revisions (${server.embedded!.index.size} quads) in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  await cp(dataDir, journalOnly, { recursive: true });
  await server.close();
  console.log(`on close: ${log.filter((line) => line.startsWith('snapshot')).join('; ')}`);
}

async function directoryMb(dir: string, prefix: string): Promise<number> {
  let bytes = 0;
  for (const name of await readdir(dir)) if (name.startsWith(prefix)) bytes += (await stat(join(dir, name))).size;
  return bytes / 2 ** 20;
}

function timedStarts(dataDir: string, runs: number): Measured[] {
  const script = fileURLToPath(import.meta.url);
  return Array.from({ length: runs }, () => {
    const child = spawnSync(process.execPath, [script, '--measure', dataDir], { encoding: 'utf8', maxBuffer: 1 << 20 });
    if (child.status !== 0) throw new Error(`measuring run failed:\n${child.stderr}`);
    return JSON.parse(child.stdout.trim().split('\n').at(-1)!) as Measured;
  });
}

function summary(label: string, runs: Measured[]): string {
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return (
    `${label}: start ${(median(runs.map((r) => r.startMs)) / 1000).toFixed(2)} s (median of ${runs.length}; ` +
    `store ${(median(runs.map((r) => r.storeMs)) / 1000).toFixed(2)} s, rest ${(median(runs.map((r) => r.startMs - r.storeMs)) / 1000).toFixed(2)} s), ` +
    `${runs[0].quads} quads, RSS ${median(runs.map((r) => r.rssMb)).toFixed(0)} MB`
  );
}

const { values } = parseArgs({
  options: {
    measure: { type: 'string' },
    objects: { type: 'string', default: '10000' },
    revisions: { type: 'string', default: '5' },
    runs: { type: 'string', default: '3' },
  },
});

if (values.measure) {
  await measure(values.measure);
} else {
  const withSnapshot = await mkdtemp(join(tmpdir(), 'onerecord-cold-'));
  const journalOnly = `${withSnapshot}-journal-only`;
  try {
    await build(withSnapshot, journalOnly, Number(values.objects), Number(values.revisions));
    console.log(machine());
    const runs = Number(values.runs);
    console.log(
      summary(
        `journal only (${(await directoryMb(journalOnly, 'journal-')).toFixed(0)} MB journal)`,
        timedStarts(journalOnly, runs),
      ),
    );
    console.log(
      summary(
        `snapshot (${(await directoryMb(withSnapshot, 'snapshot-')).toFixed(0)} MB)`,
        timedStarts(withSnapshot, runs),
      ),
    );
  } finally {
    await rm(withSnapshot, { recursive: true, force: true });
    await rm(journalOnly, { recursive: true, force: true });
  }
}
