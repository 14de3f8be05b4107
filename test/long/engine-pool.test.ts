import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { SparqlClient } from '../../src/store/sparql-engine/sparql-client.js';
import { type EngineConnection, leaseEngine, releaseEngine } from '../support/virtuoso.js';

// The tests' pool of Virtuoso instances (test/support/virtuoso.ts) when Virtuoso dies as it starts.

describe("the tests' pool of Virtuoso instances", () => {
  it('makes a first start that dies before it answers once more, in a new directory', async () => {
    const shim = await mkdtemp(join(tmpdir(), 'onerecord-virtuoso-shim-'));
    const crashed = join(shim, 'crashed');
    const virtuoso = execFileSync('sh', ['-c', 'command -v virtuoso-t'], { encoding: 'utf8' }).trim();
    // A virtuoso-t first in PATH whose first start dies by SIGSEGV before it answers, as Virtuoso 7.2 once did.
    await writeFile(
      join(shim, 'virtuoso-t'),
      `#!/bin/sh\nif [ ! -e '${crashed}' ]; then touch '${crashed}'; kill -SEGV $$; fi\nexec '${virtuoso}' "$@"\n`,
      { mode: 0o755 },
    );
    const path = process.env.PATH;
    process.env.PATH = `${shim}:${path}`;
    const keys: string[] = [];
    try {
      // Idle instances are leased first: lease until one is started anew.
      let engine: EngineConnection | undefined;
      while (!existsSync(crashed) && keys.length < 10) {
        keys.push(`pool-${process.pid}-${keys.length}`);
        engine = await leaseEngine(keys.at(-1)!);
      }
      expect(existsSync(crashed), 'a start died').to.equal(true);
      const client = new SparqlClient({ queryUrl: engine!.queryUrl, updateUrl: engine!.updateUrl, timeoutMs: 10_000 });
      expect(await client.ask('ASK { GRAPH ?g { ?s ?p ?o } }')).to.equal(true);
    } finally {
      process.env.PATH = path;
      for (const key of keys) await releaseEngine(key);
      await rm(shim, { recursive: true, force: true });
    }
  });
});
