/**
 * Cold start with deep history (issue: history out of the hot store): time to ready of a server
 * whose objects have 20 revisions each, against the depth of that history. The data is written
 * through the store's commit path (history-fill.ts: the journal records, hot store and archive a
 * Change of 2 DELETEs + 2 ADDs writes, without the ChangeRequests), `--per-commit` objects' next
 * revisions per commit (1: one record per revision, as the server writes them). A run adds
 * `--objects` objects to `--data-dir` (created if missing) and closes it (a snapshot is written),
 * so a large directory is built in runs of a few minutes; each run first times the start of what
 * the earlier runs wrote, in a fresh process (startServer until it listens). `--piece` picks the
 * object: `bench` (39 triples) or `capacity` (52, as history-capacity.ts writes them).
 *   node dist/scripts/bench/history-cold-start.js --data-dir DIR [--objects 25000] [--revisions 20] [--per-commit 1] [--piece bench]
 *   node dist/scripts/bench/history-cold-start.js --data-dir DIR --objects 0   (only times a start)
 *   node dist/scripts/bench/history-cold-start.js --data-dir DIR --memory-image on [--runs 2]
 * times starts from the memory image of a clean stop (store.memoryImage, index-image.ts) against
 * starts from the snapshot, alternating: A starts without an image (it loads the snapshot) and
 * stops cleanly, writing one (the stop is timed too); B starts from it.
 *   node dist/scripts/bench/history-cold-start.js --data-dir DIR --crash on [--objects 1000] [--runs 2]
 * times starts after a crash: a process opens the store, writes a snapshot without an image and
 * then one with (store.imageAtSnapshot; the longest the event loop was held up during each is
 * measured), adds `--objects` objects of `--revisions` revisions after it, and is SIGKILLed; then B
 * starts from the image of that snapshot and replays the journal after it, and A (images off)
 * loads the snapshot and replays the same journal. The objects stay in the directory. Each start
 * says how much journal it replays (the segments after the newest snapshot) and, from an image, in
 * how long: the replay rate that bounds a crash start (`journal.maxReplayBytes`).
 */
import { spawnSync } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DEFAULTS, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { parseBody } from '../../src/rdf/parse.js';
import { startServer } from '../../src/server.js';
import { BENCH_PIECE, CAPACITY_PIECE } from './fixtures.js';
import { fmt, machine } from './harness.js';
import { fillThroughStore, type FillOptions } from './history-fill.js';
import { IMAGE_FILE, storePosition } from '../../src/store/embedded/image/index-image.js';
import { latestSnapshot } from '../../src/store/embedded/snapshot/snapshot.js';

const { values } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    objects: { type: 'string', default: '25000' },
    revisions: { type: 'string', default: '20' },
    'per-commit': { type: 'string', default: '1' },
    piece: { type: 'string', default: 'bench' },
    measure: { type: 'boolean', default: false },
    stop: { type: 'boolean', default: false },
    'memory-image': { type: 'string', default: 'off' },
    crash: { type: 'string', default: 'off' },
    'make-crash': { type: 'boolean', default: false },
    runs: { type: 'string', default: '1' },
  },
});
const dataDir = values['data-dir'];
if (!dataDir) throw new Error('--data-dir is required');
const BASE = 'http://127.0.0.1:18600';

/**
 * Child mode: one timed start of the server on the data directory, printed as JSON; with `stop`,
 * then a clean stop, timed too (it writes the memory image when `memoryImage` is on). A start from
 * an image also times the replay of the journal after it: from the store's line saying the image
 * was read to the one saying the store recovered (records applied to the index and the archive,
 * then the archive's sample check and a quad count).
 */
async function measure(dir: string, memoryImage: boolean, stop: boolean): Promise<void> {
  const imageThere = await stat(join(dir, IMAGE_FILE)).then(
    () => true,
    () => false,
  );
  const journalBytes = (await storePosition(dir, await latestSnapshot(dir))).journal.reduce(
    (sum, [, bytes]) => sum + bytes,
    0,
  );
  let imageRead: number | undefined;
  let replayMs: number | undefined;
  const logger = createLogger('info', {
    write: (line: string) => {
      const { msg } = JSON.parse(line) as { msg: string };
      if (/^memory image of snapshot .* read in/.test(msg)) imageRead = performance.now();
      if (imageRead !== undefined && msg.startsWith('store recovered:')) replayMs = performance.now() - imageRead;
    },
  });
  const started = performance.now();
  const server = await startServer(
    loadConfig(
      {},
      {
        port: 0,
        baseUrl: BASE,
        dataDir: dir,
        journal: { fsync: false },
        store: { memoryImage, memoryImageMinQuads: 0 },
      },
    ),
    logger,
  );
  const startMs = performance.now() - started;
  const { quads, wasmMemoryBytes } = server.embedded!.capacity();
  const measured: Measured = {
    startMs,
    imageThere,
    objects: server.services.objects.index.size,
    quads,
    wasmMb: wasmMemoryBytes / 2 ** 20,
    rssMb: process.memoryUsage().rss / 2 ** 20,
    journalMb: journalBytes / 2 ** 20,
    replayMs,
  };
  if (stop) {
    const stopping = performance.now();
    await server.close();
    const image = await stat(join(dir, IMAGE_FILE)).catch(() => undefined);
    console.log(
      JSON.stringify({
        ...measured,
        stopMs: performance.now() - stopping,
        imageMb: image && image.size / 2 ** 20,
        imageDiskMb: image && (image.blocks * 512) / 2 ** 20,
      }),
    );
  } else {
    console.log(JSON.stringify(measured));
  }
  process.exit(0); // no close() unless asked: it could write a snapshot and change what the next run measures
}

interface Measured {
  startMs: number;
  imageThere: boolean;
  objects: number;
  quads: number;
  wasmMb: number;
  rssMb: number;
  /** The journal after the newest snapshot, which the start replays. */
  journalMb: number;
  /** Its replay, when the start read an image (see measure). */
  replayMs?: number;
  stopMs?: number;
  imageMb?: number;
  imageDiskMb?: number;
}

function timedStart(dir: string, options: { memoryImage?: boolean; stop?: boolean } = {}): string {
  const args = [
    '--measure',
    '--data-dir',
    dir,
    '--memory-image',
    options.memoryImage ? 'on' : 'off',
    ...(options.stop ? ['--stop'] : []),
  ];
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  if (child.status !== 0) throw new Error(`measuring run failed:\n${child.stderr}`);
  const m = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as Measured;
  const from = m.imageThere && options.memoryImage ? 'from the memory image' : 'from the snapshot';
  const replayed =
    m.replayMs === undefined
      ? ''
      : ` in ${fmt(m.replayMs / 1000, 2)} s (${fmt(m.journalMb / (m.replayMs / 1000), 1)} MB/s)`;
  const journal = m.journalMb > 0 ? `; journal ${fmt(m.journalMb, 1)} MB replayed${replayed}` : '';
  const stopped =
    m.stopMs === undefined
      ? ''
      : `; clean stop ${fmt(m.stopMs / 1000, 2)} s` +
        (m.imageMb ? ` (memory image ${fmt(m.imageMb)} MB, ${fmt(m.imageDiskMb ?? 0)} MB on disk)` : '');
  return `server start (fresh process, until it listens, ${from}): ${fmt(m.startMs / 1000, 2)} s with ${fmt(m.objects)} objects, ${fmt(m.quads)} quads, WASM ${fmt(m.wasmMb)} MB, RSS ${fmt(m.rssMb)} MB${journal}${stopped}`;
}

/** The object to add and how: from the command line. */
async function fillOptions(): Promise<Pick<FillOptions, 'base' | 'parsed' | 'objects' | 'revisions' | 'perCommit'>> {
  const piece = values.piece === 'capacity' ? CAPACITY_PIECE : BENCH_PIECE;
  const parsed = await parseBody(Buffer.from(JSON.stringify(piece)), 'jsonld', {
    base: 'http://bench.invalid/',
    limits: DEFAULTS.limits,
  });
  return {
    base: BASE,
    parsed,
    objects: Number(values.objects),
    revisions: Number(values.revisions),
    perCommit: Number(values['per-commit']),
  };
}

/**
 * Child mode: the state a crash after a snapshot leaves. Opens the store, writes a snapshot without
 * a memory image and one with (the longest event-loop delay during each, and the store's log line of
 * the second), adds the objects, and SIGKILLs itself before the store is closed.
 */
async function makeCrash(dir: string): Promise<void> {
  const lines: string[] = [];
  const stalls: number[] = [];
  await fillThroughStore(dir, {
    ...(await fillOptions()),
    store: { memoryImage: true, imageAtSnapshot: true, memoryImageMinQuads: 0, log: (line) => lines.push(line) },
    beforeWrites: async (store) => {
      for (const withImage of [false, true]) {
        const delay = monitorEventLoopDelay({ resolution: 1 });
        delay.enable();
        await store.snapshot(withImage);
        delay.disable();
        stalls.push(delay.max / 1e6);
      }
    },
    beforeClose: () => {
      const snapshots = lines.filter((line) => line.startsWith('snapshot '));
      console.log(
        `longest event-loop delay during a snapshot: ${fmt(stalls[0], 0)} ms without an image, ${fmt(stalls[1], 0)} ms with one; ${snapshots.at(-1)}`,
      );
      process.kill(process.pid, 'SIGKILL');
      return new Promise(() => {});
    },
  });
}

if (values.measure) {
  await measure(dataDir, values['memory-image'] === 'on', values.stop);
} else if (values['make-crash']) {
  await makeCrash(dataDir);
} else if (values.crash === 'on') {
  console.log(
    `history cold start after a crash, from the image of the snapshot vs from the snapshot, ${machine()}, ${new Date().toISOString()}`,
  );
  for (let run = 0; run < Number(values.runs); run++) {
    const args = [
      '--make-crash',
      '--data-dir',
      dataDir,
      '--objects',
      values.objects,
      '--revisions',
      values.revisions,
      '--per-commit',
      values['per-commit'],
      '--piece',
      values.piece,
    ];
    const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...args], {
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    });
    if (child.signal !== 'SIGKILL')
      throw new Error(`the crashing run ended with ${child.signal ?? child.status}:\n${child.stderr}`);
    console.log(
      `crash: ${fmt(Number(values.objects))} objects x ${values.revisions} revisions written after the snapshots, then SIGKILL; ${child.stdout.trim()}`,
    );
    // B first: A, with images off, removes the image.
    console.log(`B: ${timedStart(dataDir, { memoryImage: true })}`);
    console.log(`A: ${timedStart(dataDir)}`);
  }
} else if (values['memory-image'] === 'on') {
  console.log(
    `history cold start from the memory image vs from the snapshot, ${machine()}, ${new Date().toISOString()}`,
  );
  await rm(join(dataDir, IMAGE_FILE), { force: true });
  for (let run = 0; run < Number(values.runs); run++) {
    // No image there: this start loads the snapshot; its clean stop writes the image the next start reads.
    console.log(`A: ${timedStart(dataDir, { memoryImage: true, stop: true })}`);
    console.log(`B: ${timedStart(dataDir, { memoryImage: true })}`);
  }
} else {
  console.log(`history cold start, ${machine()}, ${new Date().toISOString()}`);
  await mkdir(dataDir, { recursive: true });
  console.log(`before: ${timedStart(dataDir)}`);
  if (Number(values.objects) > 0) {
    const options = await fillOptions();
    const { parsed, revisions, perCommit } = options;
    const filled = await fillThroughStore(dataDir, { ...options, store: { memoryImage: false } });
    console.log(
      `added ${fmt(filled.objects)} objects of ${parsed.length} triples x ${revisions} revisions (${fmt(Math.ceil(filled.objects / perCommit) * revisions)} commits) in ${fmt(filled.seconds, 1)} s; ` +
        `hot store ${fmt(filled.quadsBefore)} -> ${fmt(filled.quadsAfter)} quads (${fmt((filled.quadsAfter - filled.quadsBefore) / Math.max(1, filled.objects), 1)} per object), WASM ${fmt(filled.wasmBytes / 2 ** 20)} MB` +
        (filled.refused ? `; refused: ${filled.refused.message}` : ''),
    );
    console.log(`closed (snapshot) in ${fmt(filled.closeSeconds, 1)} s`);
    console.log(`after: ${timedStart(dataDir)}`);
  }
}
