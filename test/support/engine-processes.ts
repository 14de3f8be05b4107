// Server processes over one Virtuoso, for the long tests of several processes (test/long/).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shareIdentityProvider } from '../../src/auth/identity-provider.js';
import type { ConfigOverrides } from '../../src/config.js';
import { ServerProcess } from './server-process.js';
import { freePort } from './server.js';
import { releaseEngine } from './virtuoso.js';

/**
 * A data directory for the server processes of the describe block this is called in, made before its tests and
 * removed after them, with the engine leased under its name.
 */
export function processesDataDir(): () => string {
  let dataDir = '';
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'onerecord-test-'));
  });
  after(async () => {
    await releaseEngine(dataDir);
    await rm(dataDir, { recursive: true, force: true });
  });
  return () => dataDir;
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
