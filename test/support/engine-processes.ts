// Server processes over one Virtuoso, for the long tests of several processes (test/long/).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shareIdentityProvider } from '../../src/auth/identity-provider.js';
import type { ConfigOverrides } from '../../src/config.js';
import { ServerProcess } from './server-process.js';
import { freePort } from './server.js';
import { type EngineConnection, engineRestarts, leaseEngine, releaseEngine, withEngineDeaths } from './virtuoso.js';

/**
 * Runs `scenario` with a new data directory and the engine leased under its name, both released after. Virtuoso
 * 7.2 aborts now and then under many writing clients (docs/sparql-engine.md, "Known limits") and answers 503 until
 * it is started again: a run that failed with the engine dead meanwhile tells nothing of the servers, so it runs
 * once more (on a new engine: releaseEngine). A failure with the engine up throughout, or a second one, fails.
 */
export async function runWithEngineUp(
  scenario: (dataDir: string, engine: EngineConnection) => Promise<void>,
): Promise<void> {
  for (let run = 1; ; run++) {
    const dataDir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
    try {
      await scenario(dataDir, await leaseEngine(dataDir));
      return;
    } catch (err) {
      const deaths = engineRestarts(dataDir);
      if (deaths === 0 || run === 2) throw withEngineDeaths(dataDir, err);
      console.log(`\nthe engine died ${deaths} time(s) in run ${run}, run again: ${(err as Error).message}\n`);
    } finally {
      await releaseEngine(dataDir);
      await rm(dataDir, { recursive: true, force: true });
    }
  }
}

/**
 * Server processes, one per configuration, each in a directory of its own under `dataDir`, started in turn and
 * issuing tokens with the first one's key; pushed onto `started` as they start (the caller stops them). Their ports,
 * and a token of the data holder.
 */
export async function startProcesses(
  dataDir: string,
  configs: readonly ConfigOverrides[],
  started: ServerProcess[],
): Promise<{ ports: number[]; token: string }> {
  const first = join(dataDir, 'process-1');
  const ports: number[] = [];
  let token = '';
  for (const [i, config] of configs.entries()) {
    const dir = join(dataDir, `process-${i + 1}`);
    if (i === 0) await mkdir(dir, { recursive: true });
    else await shareIdentityProvider(first, dir);
    const port = await freePort();
    const process = new ServerProcess({ dataDir: dir, port, config });
    started.push(process);
    const listening = await process.ready;
    if (i === 0) token = listening.token;
    ports.push(port);
  }
  return { ports, token };
}
