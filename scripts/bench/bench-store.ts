import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConfigOverrides } from '../../src/config.js';
import { startVirtuoso } from '../virtuoso/virtuoso.js';
import { processCpuSeconds } from './harness.js';

/** The store a benchmark server runs on: BENCH_STORE=sparql puts it on a Virtuoso of its own, started here. */
export interface BenchStore {
  name: 'embedded' | 'sparql';
  /** The `store` configuration of the server. */
  config: ConfigOverrides['store'];
  /** CPU seconds the engine's process has used (0 for the embedded store, whose CPU is the server's). */
  engineCpuSeconds(): number;
  stop(): Promise<void>;
}

export async function benchStore(): Promise<BenchStore> {
  if (process.env.BENCH_STORE !== 'sparql')
    return { name: 'embedded', config: undefined, engineCpuSeconds: () => 0, stop: async () => {} };
  const dir = await mkdtemp(join(tmpdir(), 'onerecord-bench-virtuoso-'));
  // As much page cache as a tuned engine would give a dataset of this size, on a machine shared with the server.
  const engine = await startVirtuoso({ dir, bufferMemoryMb: Number(process.env.BENCH_ENGINE_MEMORY_MB ?? 2048) });
  return {
    name: 'sparql',
    config: {
      backend: 'sparql',
      sparql: {
        queryUrl: engine.authUrl,
        updateUrl: engine.authUrl,
        user: engine.user,
        password: engine.password,
        authScheme: 'digest',
      },
    },
    engineCpuSeconds: () => processCpuSeconds(engine.pid),
    async stop() {
      await engine.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
