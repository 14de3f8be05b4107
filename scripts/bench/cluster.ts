/**
 * What the benchmarks of several server processes share (processes.ts, processes-notifications.ts): server
 * processes over one Virtuoso behind nginx (round robin), or one process alone on it, and the objects they change.
 * Run directly with `serve`, this file is one of those server processes.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { shareIdentityProvider } from '../../src/auth/identity-provider.js';
import { loadConfig, type ConfigOverrides } from '../../src/config.js';
import { createLogger } from '../../src/observability/logger.js';
import { startServer } from '../../src/server.js';
import { startNginx } from '../cluster/nginx.js';
import type { RunningVirtuoso } from '../virtuoso/virtuoso.js';
import { engineStore } from './engine-objects.js';
import { CAPACITY_PIECE, createdPiece, nextChange, type ChangedPiece } from './fixtures.js';
import {
  benchServerSample,
  forkBenchServer,
  freePort,
  processCpuSeconds,
  type BenchServerReady,
  type ForkedBenchServer,
  type LoadClient,
} from './harness.js';

export const METRICS_TOKEN = 'bench-processes-metrics';
const SCRIPT = fileURLToPath(import.meta.url);

/** The server side: a server with the settings in BENCH_CONFIG, at BENCH_PORT, named BENCH_BASE_URL. */
async function serve(): Promise<void> {
  const port = Number(process.env.BENCH_PORT);
  const settings = JSON.parse(process.env.BENCH_CONFIG!) as ConfigOverrides;
  const config = loadConfig(
    {},
    {
      ...settings,
      port,
      host: '127.0.0.1',
      baseUrl: process.env.BENCH_BASE_URL!,
      dataDir: process.env.BENCH_DATA_DIR!,
      metrics: { token: METRICS_TOKEN },
    },
  );
  const server = await startServer(config, createLogger('silent'));
  const token = await server.services.identityProvider!.issue(server.services.holder);
  process.on('message', (message) => {
    if (message === 'memory') process.send!(benchServerSample(0));
    else if (message === 'stop') void server.close().then(() => process.exit(0));
  });
  process.send!({ url: server.url, token } satisfies BenchServerReady);
}

/** CPU seconds of `pid` and of its children (nginx's workers). */
export async function treeCpuSeconds(pid: number): Promise<number> {
  let total = processCpuSeconds(pid);
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (Number(stat.split(') ')[1]?.split(' ')[1]) === pid) total += processCpuSeconds(Number(entry));
  }
  return total;
}

export interface Cluster {
  servers: ForkedBenchServer[];
  /** Where clients send requests: the balancer, or the lone process. */
  url: string;
  nginxPid?: number;
  stop(): Promise<void>;
}

/** How the processes run: alone on the engine (no feed, no balancer), or sharing it, with or without waiting for earlier commits before a request. */
export type Mode = 'alone' | 'shared' | 'shared, readYourWrites off';

/**
 * `processes` server processes on `engine`, each with a data directory of its own under `dir` (the identity provider
 * of the first), with `settings` besides the store's; the engine's settings in `settings.store.sparql` are added to
 * those the mode sets.
 */
export async function startCluster(
  engine: RunningVirtuoso,
  processes: number,
  mode: Mode,
  dir: string,
  settings: ConfigOverrides = {},
): Promise<Cluster> {
  const port = await freePort();
  const balanced = mode !== 'alone';
  const baseUrl = `http://127.0.0.1:${port}`;
  const base = engineStore(engine, balanced);
  const sparql = { ...base?.sparql, readYourWrites: mode === 'shared', ...settings.store?.sparql };
  const config = JSON.stringify({ decisionPolicy: 'auto', ...settings, store: { ...base, sparql } });
  const servers: ForkedBenchServer[] = [];
  for (let i = 0; i < processes; i++) {
    const dataDir = join(dir, `server-${i}`);
    if (i > 0) await shareIdentityProvider(join(dir, 'server-0'), dataDir);
    else await mkdir(dataDir, { recursive: true });
    const own = balanced ? await freePort() : port;
    servers.push(
      await forkBenchServer(SCRIPT, ['serve'], {
        BENCH_CONFIG: config,
        BENCH_DATA_DIR: dataDir,
        BENCH_PORT: String(own),
        BENCH_BASE_URL: baseUrl,
      }),
    );
  }
  const nginx = balanced
    ? await startNginx({ dir: join(dir, 'nginx'), port, upstreams: servers.map((s) => new URL(s.ready.url).host) })
    : undefined;
  return {
    servers,
    url: baseUrl,
    nginxPid: nginx?.pid,
    async stop() {
      await nginx?.stop();
      for (const server of servers) await server.stop();
    },
  };
}

/** `count` new Pieces at `url` (the capacity benchmarks' object), each ready to be changed by `nextChange`. */
export async function createPieces(client: LoadClient, url: string, count: number): Promise<ChangedPiece[]> {
  const pieces: ChangedPiece[] = [];
  for (let i = 0; i < count; i++) {
    const res = await client.send(`${url}/logistics-objects`, 'POST', JSON.stringify(CAPACITY_PIECE), {
      'Content-Type': 'application/ld+json',
    });
    if (res.status !== 201) throw new Error(`object not created: ${res.status}`);
    pieces.push(createdPiece(String(res.headers.location)));
  }
  return pieces;
}

/** The next change of `piece`; one not accepted is counted by status in `refusals`, and the piece keeps the values it had. */
export async function sendChange(
  client: LoadClient,
  piece: ChangedPiece,
  refusals: Map<number, number>,
): Promise<{ status: number }> {
  const unchanged = { ...piece };
  const res = await client.send(piece.iri, 'PATCH', nextChange(piece, false), {
    'Content-Type': 'application/ld+json',
  });
  if (res.status === 201) piece.revision += 1;
  else {
    Object.assign(piece, unchanged);
    refusals.set(res.status, (refusals.get(res.status) ?? 0) + 1);
  }
  return res;
}

if (process.argv[1] === SCRIPT && process.argv[2] === 'serve') await serve();
