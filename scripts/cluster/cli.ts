// Starts or stops a small cluster on one machine: one Virtuoso, several server processes over it
// (store.sparql.sharedWriters) sharing one identity-provider key, and nginx in front of them (USAGE).
// Everything runs on after `start` returns; what it started is recorded in D/cluster.json, each
// process's log is in D.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnLogged, stopChild, stopPid, untilAnswers } from '../processes.js';
import { runScript, ScriptUsageError, subcommand } from '../script-cli.js';
import { acceptsConnections, freePorts } from '../virtuoso/free-port.js';
import { serverEnv, startVirtuoso, stopVirtuosoIn, type RunningVirtuoso } from '../virtuoso/virtuoso.js';
import { startNginx } from './nginx.js';
import { shareIdentityProvider } from '../../src/auth/identity-provider.js';

const SELF = 'node dist/scripts/cluster/cli.js';
const USAGE = `usage: ${SELF} start --dir D [--processes 3] [--port 8080]
       ${SELF} stop --dir D
       (or npm run cluster -- start|stop ..., which builds first)

start  Virtuoso, the server processes and nginx on --port in front of them, every file in D;
       they run on after the command, which prints their URLs and how to get a token
stop   stops what start started in D`;
const OPTIONS = {
  dir: { type: 'string' },
  processes: { type: 'string', default: '3' },
  port: { type: 'string', default: '8080' },
} as const;
const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));
/** A server against an engine rebuilds its indexes from what the engine holds before it is ready. */
const SERVER_READY_TIMEOUT_MS = 120_000;
/** SIGTERM: a server finishes what is in flight first. */
const SERVER_STOP_TIMEOUT_MS = 30_000;
const NGINX_STOP_TIMEOUT_MS = 10_000;

/** What `start` started, for `stop`: D/cluster.json, written after each step. */
interface ClusterState {
  virtuoso?: { pid: number; dir: string };
  servers: { pid: number; url: string; dataDir: string; log: string }[];
  balancer?: { pid: number; url: string };
}

const stateFile = (dir: string) => join(dir, 'cluster.json');
const serverDataDir = (dir: string, index: number) => join(dir, `server-${index}`);

async function readState(dir: string): Promise<ClusterState | undefined> {
  const text = await readFile(stateFile(dir), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : (JSON.parse(text) as ClusterState);
}

const writeState = (dir: string, state: ClusterState) =>
  writeFile(stateFile(dir), `${JSON.stringify(state, null, 2)}\n`);

function positiveInteger(text: string, what: string, max = Number.MAX_SAFE_INTEGER): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > max) throw new ScriptUsageError(`not a ${what}: ${text}`);
  return value;
}

async function healthReady(url: string): Promise<boolean> {
  try {
    const answer = await fetch(`${url}/health/ready`, { signal: AbortSignal.timeout(2_000) });
    await answer.arrayBuffer();
    return answer.status === 200;
  } catch {
    return false;
  }
}

/** Starts server process `index` (from 1) on `port`, data in D/server-`index`, and waits until /health/ready answers 200. */
async function startServer(
  dir: string,
  index: number,
  port: number,
  env: NodeJS.ProcessEnv,
  state: ClusterState,
): Promise<void> {
  const dataDir = serverDataDir(dir, index);
  const log = join(dir, `server-${index}.log`);
  const url = `http://127.0.0.1:${port}`;
  // As `npm start` runs it.
  const spawned = spawnLogged(process.execPath, ['--max-semi-space-size=64', MAIN], {
    logFile: log,
    env: { ...env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir },
    detached: true,
  });
  state.servers.push({ pid: spawned.child.pid!, url, dataDir, log });
  try {
    await untilAnswers(spawned, () => healthReady(url), SERVER_READY_TIMEOUT_MS, `server ${index} (${url})`, log);
  } catch (err) {
    await stopChild(spawned, 'SIGTERM', SERVER_STOP_TIMEOUT_MS);
    throw err;
  }
  spawned.child.unref();
}

async function start(dir: string, processes: number, port: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  if (await readState(dir))
    throw new Error(`a cluster was started in ${dir}: stop it first (cli.js stop --dir ${dir})`);
  if (await acceptsConnections(port)) throw new Error(`port ${port} is taken`);
  const state: ClusterState = { servers: [] };
  try {
    const engine = await startVirtuoso({ dir: join(dir, 'virtuoso'), detached: true });
    state.virtuoso = { pid: engine.pid, dir: engine.dir };
    await writeState(dir, state);
    const balancerUrl = `http://127.0.0.1:${port}`;
    await startServers(dir, processes, port, serverProcessEnv(engine, balancerUrl), state);
    const upstreams = state.servers.map((server) => new URL(server.url).host);
    const nginx = await startNginx({ dir: join(dir, 'nginx'), port, upstreams, workers: 'auto', detached: true });
    state.balancer = { pid: nginx.pid, url: nginx.url };
    await writeState(dir, state);
    report(dir, state, engine);
  } catch (err) {
    await writeState(dir, state);
    await stop(dir);
    throw err;
  }
}

/** Every process is the same server to clients: one base URL (the balancer's), one engine, writers that expect each other. */
function serverProcessEnv(engine: RunningVirtuoso, baseUrl: string): NodeJS.ProcessEnv {
  return { ...process.env, ...serverEnv(engine), STORE_SPARQL_SHARED_WRITERS: 'true', BASE_URL: baseUrl };
}

/**
 * The first process creates the identity provider's key; the others start with a copy of it, so
 * that a token from any of them is good at all. One after the other: each rebuilds its indexes
 * from the engine, work two cores do no faster side by side.
 */
async function startServers(
  dir: string,
  processes: number,
  balancerPort: number,
  env: NodeJS.ProcessEnv,
  state: ClusterState,
): Promise<void> {
  const ports = (await freePorts(processes + 1)).filter((port) => port !== balancerPort).slice(0, processes);
  for (const [i, port] of ports.entries()) {
    const dataDir = serverDataDir(dir, i + 1);
    if (i > 0) await shareIdentityProvider(state.servers[0].dataDir, dataDir);
    else await mkdir(dataDir, { recursive: true });
    await startServer(dir, i + 1, port, env, state);
    await writeState(dir, state);
  }
}

function report(dir: string, state: ClusterState, engine: RunningVirtuoso): void {
  const servers = state.servers.map(
    (server, i) => `  server ${i + 1}: ${server.url}, pid ${server.pid}, data in ${server.dataDir}, log ${server.log}`,
  );
  console.log(`ONE Record cluster in ${dir}:
  load balancer (nginx): ${state.balancer!.url} (base URL), pid ${state.balancer!.pid}, round robin over ${state.servers.length} server processes, logs in ${join(dir, 'nginx')}
${servers.join('\n')}
  Virtuoso: ${engine.queryUrl}, pid ${engine.pid}, data and log in ${engine.dir}
The processes share one engine and one identity-provider key (what they share and guarantee: docs/sparql-engine.md).
get a token for the data holder: DATA_DIR=${state.servers[0].dataDir} npx onerecord token
Stop it: ${SELF} stop --dir ${dir}`);
}

/** Stops what D/cluster.json lists: the balancer first, then the servers, then the engine. */
async function stop(dir: string): Promise<boolean> {
  const state = await readState(dir);
  if (!state) return false;
  if (state.balancer) await stopPid(state.balancer.pid, 'SIGQUIT', NGINX_STOP_TIMEOUT_MS);
  await Promise.all(state.servers.map((server) => stopPid(server.pid, 'SIGTERM', SERVER_STOP_TIMEOUT_MS)));
  if (state.virtuoso) await stopVirtuosoIn(state.virtuoso.dir);
  await rm(stateFile(dir));
  return true;
}

runScript(USAGE, OPTIONS, async ({ positionals, values }) => {
  const command = subcommand(positionals, ['start', 'stop']);
  if (!values.dir) throw new ScriptUsageError(`${command} takes --dir`);
  const dir = resolve(values.dir);
  if (command === 'stop') {
    console.log((await stop(dir)) ? `cluster in ${dir} stopped` : `no cluster was started in ${dir}`);
    return;
  }
  await start(
    dir,
    positiveInteger(values.processes, 'number of processes'),
    positiveInteger(values.port, 'port', 65_535),
  );
});
