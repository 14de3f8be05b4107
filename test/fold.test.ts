import { expect } from 'chai';
import { foldDataDirectory } from '../src/store/embedded/export/fold.js';
import { expectFoldedAsStored, toQuad } from './support/fold-property.js';
import { EX, openStore, tempDir } from './support/store-data.js';

describe('folding a data directory without loading it (export, snapshots)', () => {
  it('gives exactly the quads the store holds, whatever the lexical forms, deletions, re-insertions and snapshots (property, 10 runs; 60 in test:long)', async function () {
    this.timeout(120_000);
    await expectFoldedAsStored(10);
  });

  it('a range of closed segments with a torn tail is refused; an export leaves the torn record out', async () => {
    const { dir, remove } = await tempDir();
    try {
      const { store } = await openStore(dir);
      await store.commit(store.begin({ insert: [toQuad({ s: 0, p: 0, v: 10, g: 0 })] }));
      await store.close();
      const { appendFile } = await import('node:fs/promises');
      await appendFile(`${dir}/journal-00000001.log`, Buffer.from([1, 2, 3]));
      const out: Buffer[] = [];
      const folded = await foldDataDirectory(
        dir,
        { from: 1 },
        async (data) => void out.push(Buffer.from(data)),
        'drop',
      );
      expect(folded.droppedTail).to.match(/cut short/);
      expect(Buffer.concat(out).toString()).to.equal(`<${EX}s0> <${EX}p0> "plain" <${EX}g0> .\n`);
      let error: Error | undefined;
      await foldDataDirectory(dir, { from: 1, to: 2 }, async () => {}, 'refuse').catch((err: Error) => (error = err));
      expect(error?.message).to.match(/journal-00000001\.log ends in a record header cut short/);
    } finally {
      await remove();
    }
  });
});
