// Virtuoso instances for the tests of the SPARQL engine backend, shared by the whole mocha process
// (each worker of --parallel has its own) and killed when it ends: an instance takes 2-4 s to start,
// emptying one well under a second.
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitedBeforeAnswering } from '../../scripts/processes.js';
import { runIsql } from '../../scripts/virtuoso/isql.js';
import { startVirtuoso, type RunningVirtuoso } from '../../scripts/virtuoso/virtuoso.js';
import { atProcessEnd } from './process-end.js';
import type { SparqlClientOptions } from '../../src/store/sparql-engine/sparql-client.js';

/** How a test reaches a leased instance. */
export type EngineConnection = Omit<RunningVirtuoso, 'stop' | 'pid' | 'exited' | 'exitReport'>;

/** The `store.sparql` settings that reach `engine` (Digest authentication at its /sparql-auth). */
export const engineSettings = (engine: EngineConnection) => ({
  queryUrl: engine.authUrl,
  updateUrl: engine.authUrl,
  user: engine.user,
  password: engine.password,
  authScheme: 'digest' as const,
});

/** Options of a SparqlClient reaching `engine` as the server does (Digest authentication at its /sparql-auth). */
export const engineClientOptions = (engine: EngineConnection, timeoutMs = 20_000): SparqlClientOptions => ({
  queryUrl: engine.authUrl,
  updateUrl: engine.authUrl,
  auth: { user: engine.user, password: engine.password, scheme: 'digest' },
  timeoutMs,
});

interface PooledEngine {
  engine: Promise<RunningVirtuoso>;
  /** Known once started: the exit handler can only act synchronously. */
  dir?: string;
  pid?: number;
  /** Set before a stop: an exit then is no news. */
  stopping?: boolean;
  /** Set by killEngine: the exit is the test's own doing, not news either. */
  killed?: boolean;
  /** How often it died and was started again. */
  restarts: number;
}

// Process-wide on purpose: one pool for every test file a mocha process runs (with --parallel, each
// worker process has its own).
const everyEngine = new Set<PooledEngine>();
const idle: PooledEngine[] = [];
const leased = new Map<string, PooledEngine>();

/**
 * Empties the store by a SPARQL DELETE of every quad outside Virtuoso's own graph (its quad storage
 * description, `virtrdf#`, which its reset keeps too): 25-40 ms, where `RDF_GLOBAL_RESET` took
 * 0.7-0.9 s per release. Deleting the rows of RDF_QUAD directly in SQL (10-25 ms) had left an
 * instance whose later inserts a graph query sometimes did not find (seen as a revision without its
 * data in the SIGKILL test, on a reused instance only); through SPARQL, Virtuoso keeps its indexes and
 * caches as for any delete. Should that fail, the reset empties it.
 */
const WIPE_SQL = `SPARQL DELETE { GRAPH ?g { ?s ?p ?o } } WHERE { GRAPH ?g { ?s ?p ?o } FILTER (?g != <http://www.openlinksw.com/schemas/virtrdf#>) };
`;
const RESET_SQL = `RDF_GLOBAL_RESET ();
`;
async function startInto(
  pooled: PooledEngine,
  ports: { httpPort?: number; sqlPort?: number } = {},
): Promise<RunningVirtuoso> {
  pooled.dir ??= await mkdtemp(join(tmpdir(), 'onerecord-virtuoso-'));
  const engine = await startVirtuoso({ dir: pooled.dir, ...ports });
  pooled.pid = engine.pid;
  // Started again on its data and ports when it dies, as a service manager would: the servers on it
  // answer 503 meanwhile and go on after it is back. What Virtuoso logged says why it died.
  void engine.exited.then(() => {
    if (pooled.stopping) return;
    pooled.restarts += 1;
    const report = pooled.killed ? Promise.resolve('') : engine.exitReport();
    pooled.killed = false;
    pooled.engine = report.then((text) => {
      if (text) console.error(`\n${text}\nstarted again on the same data and ports\n`);
      return startInto(pooled, { httpPort: engine.httpPort, sqlPort: engine.sqlPort });
    });
    // A start that fails is the next lease's error (leaseEngine), not an unhandled rejection now.
    pooled.engine.catch(() => undefined);
  });
  return engine;
}

/**
 * A new instance in a new directory. Virtuoso 7.2 once died while creating its database (SIGSEGV,
 * "GPF: Dkernel.c:1330 internal error", before it answered; test:long, 2026-11-27): a first start
 * that dies so is made once more in another new directory, as an operator would, and says so.
 */
async function startNew(pooled: PooledEngine): Promise<RunningVirtuoso> {
  try {
    return await startInto(pooled);
  } catch (err) {
    if (!(err instanceof ExitedBeforeAnswering)) throw err;
    console.error(`\n${err.message}\nstarted again in a new directory\n`);
    rmSync(pooled.dir!, { recursive: true, force: true });
    pooled.dir = undefined;
    return startInto(pooled);
  }
}

function startPooled(): PooledEngine {
  const pooled = { restarts: 0 } as PooledEngine;
  pooled.engine = startNew(pooled);
  everyEngine.add(pooled);
  return pooled;
}

/**
 * An instance for `key`: the same one as long as `key` holds it (a server restarted on the same
 * data finds it there), another one for each other key.
 */
export async function leaseEngine(key: string): Promise<EngineConnection> {
  let pooled = leased.get(key);
  if (!pooled) {
    pooled = idle.pop() ?? startPooled();
    pooled.restarts = 0;
    leased.set(key, pooled);
  }
  try {
    const { stop: _stop, pid: _pid, exited: _exited, exitReport: _exitReport, ...connection } = await pooled.engine;
    return connection;
  } catch (err) {
    leased.delete(key);
    everyEngine.delete(pooled);
    throw err;
  }
}

/** SIGKILLs the instance `key` holds, which is then started again on its data and ports; resolves once it is gone. */
export async function killEngine(key: string): Promise<void> {
  const pooled = leased.get(key);
  if (!pooled) throw new Error(`no engine leased for ${key}`);
  const engine = await pooled.engine;
  pooled.killed = true;
  process.kill(engine.pid, 'SIGKILL');
  await engine.exited;
}

/** How often the instance `key` holds died (or was killed) and was started again. */
export function engineRestarts(key: string): number {
  return leased.get(key)?.restarts ?? 0;
}

/** `err`, its message saying first how often the instance `key` holds died meanwhile, if it did (a test's failure). */
export function withEngineDeaths(key: string, err: unknown): unknown {
  const restarts = engineRestarts(key);
  if (restarts > 0 && err instanceof Error) err.message = `the engine died ${restarts} time(s): ${err.message}`;
  return err;
}

/**
 * Empties the instance `key` holds and hands it back to the pool. One that died meanwhile is stopped and removed
 * instead, so the next lease gets a new one: Virtuoso 7.2 started again on its data has aborted again seconds later.
 */
export async function releaseEngine(key: string): Promise<void> {
  const pooled = leased.get(key);
  if (!pooled) return;
  leased.delete(key);
  if (pooled.restarts > 0) {
    everyEngine.delete(pooled);
    pooled.stopping = true;
    await (await pooled.engine.catch(() => undefined))?.stop();
    if (pooled.dir) await rm(pooled.dir, { recursive: true, force: true });
    return;
  }
  const { sqlPort } = await pooled.engine;
  await runIsql(sqlPort, WIPE_SQL).catch(() => runIsql(sqlPort, RESET_SQL));
  idle.push(pooled);
}

/** Kills every instance and removes its files, synchronously (all an exit handler may do). */
function killAll(): void {
  for (const pooled of everyEngine) {
    pooled.stopping = true;
    if (pooled.pid !== undefined) {
      try {
        process.kill(pooled.pid, 'SIGKILL');
      } catch {
        // Gone already (stopped, or it died).
      }
    }
    if (pooled.dir) rmSync(pooled.dir, { recursive: true, force: true });
  }
}

// Only when the process ends: every test file the process runs leases from the same pool (a start
// takes 2-4 s, ~3 s of each engine file when each stopped its own), so no file stops it.
atProcessEnd(killAll);
