// Virtuoso instances for the tests of the SPARQL engine backend, shared by the whole mocha process:
// an instance takes ~2 s to start, emptying one well under a second.
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runIsql } from '../../scripts/virtuoso/isql.js';
import { startVirtuoso, type RunningVirtuoso } from '../../scripts/virtuoso/virtuoso.js';
import { atProcessEnd } from './process-end.js';

/** How a test reaches a leased instance. */
export type EngineConnection = Omit<RunningVirtuoso, 'stop' | 'pid'>;

interface PooledEngine {
  engine: Promise<RunningVirtuoso>;
  /** Known once started: the exit handler can only act synchronously. */
  dir?: string;
  pid?: number;
}

// Process-wide on purpose: one pool for every test file a mocha process runs (with --parallel, each
// worker process has its own).
const everyEngine = new Set<PooledEngine>();
const idle: PooledEngine[] = [];
const leased = new Map<string, PooledEngine>();

/**
 * Empties the store with Virtuoso's own reset: deleting the rows of RDF_QUAD directly (10-25 ms) left
 * an instance whose later inserts a graph query sometimes did not find (seen as a revision without
 * its data in the SIGKILL test, on a reused instance only). The reset costs ~0.5 s per release.
 */
const WIPE_SQL = `RDF_GLOBAL_RESET ();
`;
async function startInto(pooled: PooledEngine): Promise<RunningVirtuoso> {
  pooled.dir = await mkdtemp(join(tmpdir(), 'onerecord-virtuoso-'));
  const engine = await startVirtuoso({ dir: pooled.dir });
  pooled.pid = engine.pid;
  return engine;
}

function startPooled(): PooledEngine {
  const pooled = {} as PooledEngine;
  pooled.engine = startInto(pooled);
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
    leased.set(key, pooled);
  }
  try {
    const { stop: _stop, pid: _pid, ...connection } = await pooled.engine;
    return connection;
  } catch (err) {
    leased.delete(key);
    everyEngine.delete(pooled);
    throw err;
  }
}

/** Empties the instance `key` holds and hands it back to the pool. */
export async function releaseEngine(key: string): Promise<void> {
  const pooled = leased.get(key);
  if (!pooled) return;
  leased.delete(key);
  await runIsql((await pooled.engine).sqlPort, WIPE_SQL);
  idle.push(pooled);
}

/** Stops every instance and removes its files (mocha's root after-all hook). */
export async function stopAllVirtuoso(): Promise<void> {
  const engines = [...everyEngine];
  everyEngine.clear();
  idle.length = 0;
  leased.clear();
  await Promise.all(
    engines.map(async (pooled) => {
      await (await pooled.engine.catch(() => undefined))?.stop();
      if (pooled.dir) await rm(pooled.dir, { recursive: true, force: true });
    }),
  );
}

/** Kills every instance and removes its files, synchronously (all an exit handler may do). */
function killAll(): void {
  for (const pooled of everyEngine) {
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

// Also when the run ends without the after-all hook.
atProcessEnd(killAll);
