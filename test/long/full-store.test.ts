import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { snapshotName } from '../../src/store/embedded/snapshot/snapshot.js';
import { tempDir } from '../support/store-data.js';

const MEMORY_LIMIT_STORE = fileURLToPath(new URL('../support/memory-limit-store.js', import.meta.url));

// Here rather than in test/capacity.test.ts: three processes each filling or loading 128 MiB of WASM memory take
// 5 s alone and 20-35 s beside the rest of `npm test` on 2 cores.
describe('capacity: a store filled to its memory limit', function () {
  this.timeout(180_000);

  it('restarts, from its journal and from its snapshot', async () => {
    const { dir, remove } = await tempDir();
    // A WASM memory of 128 MiB (V8's page limit; the real one is 4 GiB) fills in seconds.
    type Outcome = { quads?: number; error?: string };
    const run = async (mode: 'fill' | 'open', then = ''): Promise<Outcome> => {
      const args = ['--wasm-max-mem-pages=2048', MEMORY_LIMIT_STORE, mode, dir, String(32 * 1024 * 1024), then];
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await once(child, 'exit');
      return JSON.parse(output) as Outcome;
    };
    try {
      const filled = await run('fill');
      expect(filled.quads).to.be.greaterThan(100_000);
      expect(await run('open', 'snapshot')).to.deep.equal({ quads: filled.quads }); // from the journal
      expect(await readdir(dir)).to.include(snapshotName(2));
      expect(await run('open')).to.deep.equal({ quads: filled.quads }); // from the snapshot
    } finally {
      await remove();
    }
  });
});
