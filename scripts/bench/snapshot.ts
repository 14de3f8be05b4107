/**
 * Snapshot stall: GET and POST latency while a snapshot of a large store (~5 million quads) is
 * written (Oxigraph holds the latest revision of each object, so ~115,000 objects of ~44 quads),
 * against the same load without a snapshot, measured in the same run on the same server.
 *   node dist/scripts/bench/snapshot.js [--objects 115000] [--revisions 1] [--compare <dist of another build>]
 *       [--get-rate 500] [--post-rate 50] [--baseline-seconds 20]
 * The data directory (journal only, so the snapshot has the whole journal to fold) is built once
 * through the domain write path; each build then gets a copy, starts from it (and waits until its
 * SPARQL replica has copied the store, start-up work that is not a snapshot), takes the load for
 * `--baseline-seconds`, then is told to write a snapshot and takes the same load until it is done.
 * Load is open-loop (requests sent on a fixed schedule, latency counted from the scheduled time),
 * so a stalled server cannot hide its stall by slowing the client down.
 * `--compare` runs the same measurement on another build (e.g. `main` built in another worktree)
 * in the same run, after this one. `--image-at-snapshot both` measures this build with the memory
 * image written at the snapshot (store.imageAtSnapshot, copied while requests wait) and without.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { addRevisions, benchObject, BENCH_PIECE } from './fixtures.js';
import { fmt, LoadClient, machine, percentile, SERVER_NODE_FLAGS } from './harness.js';

const PORT = 18600;
const BASE_URL = `http://127.0.0.1:${PORT}`;
const BATCH = 200;
const THIS_DIST = fileURLToPath(new URL('../../', import.meta.url));

interface Served {
  url: string;
  token: string;
  object: string;
}
type ServerMessage = { snapshotMs: number } | Served;

/** Builds a journal-only data directory through the domain write path of this build (fsync off). */
async function build(dataDir: string, objectCount: number, revisions: number): Promise<void> {
  const { loadConfig } = await import('../../src/config.js');
  const { startServer } = await import('../../src/server.js');
  const { createLogger } = await import('../../src/observability/logger.js');
  const config = loadConfig(
    {},
    {
      port: PORT,
      baseUrl: BASE_URL,
      dataDir,
      journal: { fsync: false, snapshotAfterBytes: Number.MAX_SAFE_INTEGER },
      logLevel: 'silent',
    },
  );
  const server = await startServer(config, createLogger('silent'));
  const { objects, holder } = server.services;
  const caller = { agent: holder, internal: true };
  let first: string | undefined;
  for (let done = 0; done < objectCount; done += BATCH) {
    await Promise.all(
      Array.from({ length: Math.min(BATCH, objectCount - done) }, async () => {
        const { iri } = await objects.create(await benchObject(), caller);
        first ??= iri;
        await addRevisions(server.store, objects, iri, holder, revisions - 1);
      }),
    );
  }
  await writeFile(`${dataDir}.object`, first!);
  console.log(`built ${objectCount} objects x ${revisions} revisions: ${server.embedded!.capacity().quads} quads`);
  process.exit(0); // no close(): it would fold the journal into a snapshot
}

/**
 * Waits until a SPARQL query is answered: a server that has one copies its whole store to the query
 * worker after it starts, which is start-up work that would otherwise land in the baseline window.
 * A build without the endpoint answers 404 at once.
 */
async function replicaLoaded(url: string, token: string): Promise<void> {
  const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/sparql-query' };
  for (const deadline = Date.now() + 600_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 1000))) {
    const answer = await fetch(`${url}/sparql`, { method: 'POST', headers, body: 'ASK {}' }).catch(() => undefined);
    // Builds before the replica said its lag answered only once it had caught up.
    if (answer?.status === 404 || (answer?.ok && (answer.headers.get('SPARQL-Replica-Lag') ?? '0') === '0')) return;
  }
  throw new Error('the SPARQL replica did not catch up within 10 minutes');
}

/** Server mode: the server of the build in `dist` on `dataDir`; snapshots only when the parent asks. */
async function serve(dist: string, dataDir: string, imageAtSnapshot: boolean): Promise<void> {
  const { loadConfig } = (await import(join(dist, 'src/config.js'))) as typeof import('../../src/config.js');
  const { startServer } = (await import(join(dist, 'src/server.js'))) as typeof import('../../src/server.js');
  const { createLogger } = (await import(
    join(dist, 'src/observability/logger.js')
  )) as typeof import('../../src/observability/logger.js');
  // Set only when off: builds before it (--compare) refuse a setting they do not know.
  const store = imageAtSnapshot ? {} : { store: { imageAtSnapshot } };
  const config = loadConfig(
    {},
    {
      port: PORT,
      baseUrl: BASE_URL,
      dataDir,
      journal: { snapshotAfterBytes: Number.MAX_SAFE_INTEGER },
      logLevel: 'silent',
      ...store,
    },
  );
  const server = await startServer(config, createLogger('silent'));
  const token = await server.services.identityProvider!.issue(server.services.holder);
  await replicaLoaded(server.url, token);
  process.on('message', (message) => {
    if (message !== 'snapshot') return;
    const started = performance.now();
    void server
      .embedded!.snapshot()
      .then(() => process.send!({ snapshotMs: performance.now() - started } satisfies ServerMessage));
  });
  process.send!({
    url: server.url,
    token,
    object: (await readFile(`${dataDir}.object`, 'utf8')).trim(),
  } satisfies ServerMessage);
}

interface Latencies {
  count: number;
  failed: number;
  p50: number;
  p99: number;
  max: number;
}

/**
 * Sends requests on a fixed schedule (`rate` per second) until `stop` resolves, whatever the
 * answers; each latency runs from the time the request was due, not from when it went out.
 */
async function openLoop(send: () => Promise<number>, rate: number, stop: Promise<unknown>): Promise<Latencies> {
  const latencies: number[] = [];
  const inFlight = new Set<Promise<void>>();
  let failed = 0;
  let sent = 0;
  let stopped = false;
  void stop.then(() => (stopped = true));
  const started = performance.now();
  while (!stopped) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    for (; sent < due; sent++) {
      const scheduled = started + (sent / rate) * 1000;
      const request = send().then(
        (status) => {
          if (status >= 300) failed += 1;
          latencies.push(performance.now() - scheduled);
        },
        () => {
          failed += 1;
        },
      );
      inFlight.add(request);
      void request.finally(() => inFlight.delete(request));
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  await Promise.all(inFlight);
  latencies.sort((a, b) => a - b);
  return {
    count: latencies.length,
    failed,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: latencies.at(-1) ?? 0,
  };
}

interface Run {
  label: string;
  baseline: { get: Latencies; post: Latencies };
  snapshot: { get: Latencies; post: Latencies; ms: number };
}

async function measure(
  label: string,
  dist: string,
  data: string,
  rates: { get: number; post: number },
  baselineSeconds: number,
  imageAtSnapshot = true,
): Promise<Run> {
  const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-snapshot-run-'));
  await cp(data, dataDir, { recursive: true });
  await cp(`${data}.object`, `${dataDir}.object`);
  const child = fork(
    fileURLToPath(import.meta.url),
    ['--serve', dist, '--image-at-snapshot', imageAtSnapshot ? 'on' : 'off', dataDir],
    { execArgv: SERVER_NODE_FLAGS, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  try {
    const [served] = (await once(child, 'message')) as [Served];
    const client = new LoadClient({ Authorization: `Bearer ${served.token}` });
    const body = JSON.stringify(BENCH_PIECE);
    const get = () => client.send(served.object, 'GET').then((r) => r.status);
    const post = () =>
      client
        .send(`${served.url}/logistics-objects`, 'POST', body, { 'Content-Type': 'application/ld+json' })
        .then((r) => r.status);
    const phase = (stop: Promise<unknown>) =>
      Promise.all([openLoop(get, rates.get, stop), openLoop(post, rates.post, stop)]);
    const seconds = (s: number) => new Promise((r) => setTimeout(r, s * 1000));
    await phase(seconds(3)); // warm-up
    const [baseGet, basePost] = await phase(seconds(baselineSeconds));
    const done = once(child, 'message') as Promise<[{ snapshotMs: number }]>;
    child.send('snapshot');
    const [[snapGet, snapPost], [{ snapshotMs }]] = await Promise.all([phase(done), done]);
    client.close();
    return {
      label,
      baseline: { get: baseGet, post: basePost },
      snapshot: { get: snapGet, post: snapPost, ms: snapshotMs },
    };
  } finally {
    child.kill('SIGKILL');
    await once(child, 'exit').catch(() => {});
    await rm(dataDir, { recursive: true, force: true });
    await rm(`${dataDir}.object`, { force: true });
  }
}

function report(runs: Run[], rates: { get: number; post: number }): void {
  console.log(
    `\n| build | load | p99 without snapshot ms | p99 during snapshot ms | ratio | p50 without / during ms | max during ms | snapshot s |`,
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const run of runs) {
    for (const kind of ['get', 'post'] as const) {
      const base = run.baseline[kind];
      const snap = run.snapshot[kind];
      const rate = kind === 'get' ? `GET ${rates.get}/s` : `POST ${rates.post}/s`;
      console.log(
        `| ${run.label} | ${rate} | ${fmt(base.p99, 1)} | ${fmt(snap.p99, 1)} | **${fmt(snap.p99 / base.p99, 2)}** | ${fmt(base.p50, 1)} / ${fmt(snap.p50, 1)} | ${fmt(snap.max, 0)} | ${fmt(run.snapshot.ms / 1000, 1)} |`,
      );
      if (base.failed + snap.failed > 0)
        console.log(`  (${run.label} ${kind}: ${base.failed + snap.failed} failed requests)`);
    }
  }
}

const { values } = parseArgs({
  options: {
    serve: { type: 'string' },
    build: { type: 'string' },
    objects: { type: 'string', default: '115000' },
    revisions: { type: 'string', default: '1' },
    compare: { type: 'string' },
    'get-rate': { type: 'string', default: '500' },
    'post-rate': { type: 'string', default: '50' },
    'baseline-seconds': { type: 'string', default: '20' },
    'image-at-snapshot': { type: 'string', default: 'on' },
  },
  allowPositionals: true,
});

if (values.serve) {
  await serve(values.serve, process.argv.at(-1)!, values['image-at-snapshot'] !== 'off');
} else if (values.build) {
  await build(values.build, Number(values.objects), Number(values.revisions));
} else {
  const data = await mkdtemp(join(tmpdir(), 'onerecord-snapshot-data-'));
  try {
    const builder = fork(
      fileURLToPath(import.meta.url),
      ['--build', data, '--objects', values.objects, '--revisions', values.revisions],
      { execArgv: SERVER_NODE_FLAGS },
    );
    const [code] = (await once(builder, 'exit')) as [number];
    if (code !== 0) throw new Error(`building the data failed (exit ${code})`);
    console.log(machine());
    const rates = { get: Number(values['get-rate']), post: Number(values['post-rate']) };
    const baselineSeconds = Number(values['baseline-seconds']);
    const image = values['image-at-snapshot'];
    const runs = [
      await measure(
        image === 'both' ? 'this build, image at snapshot' : 'this build',
        THIS_DIST,
        data,
        rates,
        baselineSeconds,
        image !== 'off',
      ),
    ];
    if (image === 'both')
      runs.push(await measure('this build, no image at snapshot', THIS_DIST, data, rates, baselineSeconds, false));
    if (values.compare)
      runs.push(await measure(`compared (${values.compare})`, resolve(values.compare), data, rates, baselineSeconds));
    report(runs, rates);
  } finally {
    await rm(data, { recursive: true, force: true });
    await rm(`${data}.object`, { force: true });
  }
}
