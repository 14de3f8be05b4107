import { expectFoldedAsStored } from '../support/fold-property.js';

// `npm run test:long`: the fold property of test/fold.test.ts over many more stores.
describe('folding a data directory without loading it, at length', () => {
  it('gives exactly the quads the store holds, whatever the lexical forms, deletions, re-insertions and snapshots (property, 60 runs)', async function () {
    // 60 stores opened and closed, a snapshot (worker thread) in one step of five: ~3 s each on 2 shared cores.
    this.timeout(900_000);
    await expectFoldedAsStored(60);
  });
});
