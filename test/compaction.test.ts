import { expect } from 'chai';
import fc from 'fast-check';
import { IndexCompactor, IndexCopy } from '../src/store/embedded/compaction/compaction.js';
import { OxigraphIndex } from '../src/store/embedded/oxigraph/oxigraph-index.js';
import { allQuads, EX, graphQuads, openStore, tempDir } from './support/store-data.js';
import { quadToNq } from '../src/rdf/terms.js';

const graphIri = (g: number) => `${EX}graph/${g}`;
/** A line of graph `g` whose literal holds what could confuse a line-based reader: ` .`, escaped line ends, `<`, `>`. */
const line = (g: number, value: string) =>
  `<${EX}s/${g}> <${EX}p> "${value} .\\n <${graphIri(g)}> . \\"x\\"" <${graphIri(g)}> .\n`;

type Operation =
  | { kind: 'insert'; graphs: number[]; value: number }
  | { kind: 'delete'; graphs: number[] }
  | { kind: 'drop'; graphs: number[] }
  | { kind: 'step' };

const graphs = fc.array(fc.integer({ min: 0, max: 24 }), { minLength: 1, maxLength: 3 });
const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), graphs, value: fc.nat(5) }),
  fc.record({ kind: fc.constant('delete' as const), graphs }),
  fc.record({ kind: fc.constant('drop' as const), graphs }),
  fc.constant({ kind: 'step' as const }),
);

/** The first line of each of `graphs` that `index` holds, as N-Quads. */
const firstLines = (index: OxigraphIndex, of: number[]) =>
  [...new Set(of)]
    .map((g) => ({ g, triple: index.graphNTriples(graphIri(g)).split('\n')[0] }))
    .filter(({ triple }) => triple !== '')
    .map(({ g, triple }) => `${triple.slice(0, -2)} <${graphIri(g)}> .\n`)
    .join('');

describe('store compaction: the index copied into a new WASM memory while it is written to', function () {
  this.timeout(120_000);

  it('ends with exactly the quads of an index that was never compacted, whatever writes, deletions and graph drops come between its steps (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 20 }),
        fc.array(operation, { maxLength: 40 }),
        (initialGraphs, operations) => {
          const compacted = new OxigraphIndex();
          const reference = new OxigraphIndex();
          const both = (change: (index: OxigraphIndex) => void) => [compacted, reference].forEach(change);
          let initial = '';
          for (let g = 0; g < initialGraphs; g++) for (let k = 0; k < 3; k++) initial += line(g, `initial ${k}`);
          both((index) => index.loadTrusted(initial));
          const copy = new IndexCopy(compacted);
          let done = false;
          for (const op of operations) {
            if (op.kind === 'step') {
              done ||= copy.step(0);
            } else if (op.kind === 'insert') {
              const insert = op.graphs.map((g) => line(g, `value ${op.value}`)).join('');
              both((index) => index.apply({ insert, delete: '' }));
            } else if (op.kind === 'delete') {
              const deleted = firstLines(reference, op.graphs);
              both((index) => index.apply({ insert: '', delete: deleted }));
            } else {
              both((index) => index.dropGraphs(op.graphs.map(graphIri)));
            }
          }
          while (!done) done = copy.step(0);
          expect(allQuads(compacted)).to.deep.equal(allQuads(reference));
          // The index goes on from its new store.
          const after = line(3, 'after') + line(30, 'after');
          both((index) => index.apply({ insert: after, delete: firstLines(reference, [0, 1]) }));
          expect(allQuads(compacted)).to.deep.equal(allQuads(reference));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('gives back the memory of deleted quads: the copy holds the same quads in far less WASM memory', () => {
    const index = new OxigraphIndex();
    let kept = '';
    for (let g = 0; g < 100; g++) for (let k = 0; k < 100; k++) kept += line(g, `kept ${k}`);
    index.loadTrusted(kept);
    // Quads inserted and deleted again, each with a value of its own: Oxigraph keeps their memory.
    for (let round = 0; round < 5; round++) {
      let churn = '';
      for (let g = 0; g < 100; g++) for (let k = 0; k < 400; k++) churn += line(g, `round ${round} value ${k}`);
      index.makeRoom(churn.length);
      index.apply({ insert: churn, delete: '' });
      index.apply({ insert: '', delete: churn });
    }
    const before = index.wasmMemoryBytes;
    const quads = allQuads(index);
    const copy = new IndexCopy(index);
    while (!copy.step()) {
      // steps of 10 ms until every graph is copied
    }
    expect(allQuads(index)).to.deep.equal(quads);
    expect(index.wasmMemoryBytes).to.be.below(before / 2);
  });

  it("does not carry the names of graphs emptied by deletions (Oxigraph keeps those in the index's list of graphs)", () => {
    const index = new OxigraphIndex();
    index.loadTrusted(line(0, 'kept') + line(1, 'deleted'));
    index.apply({ insert: '', delete: line(1, 'deleted') });
    expect(index.listGraphs().sort()).to.deep.equal([graphIri(0), graphIri(1)]);
    const copy = new IndexCopy(index);
    while (!copy.step()) {
      // steps of 10 ms until every graph is copied
    }
    expect(index.listGraphs()).to.deep.equal([graphIri(0)]);
  });

  it('starts once the deleted quads reach the threshold and half the quads held, after a write refused for lack of memory from a tenth, never when off', () => {
    const compactor = (afterDeletedQuads: number) =>
      new IndexCompactor(new OxigraphIndex(), { afterDeletedQuads, memoryReserveBytes: 0, log: () => undefined });
    const byCount = compactor(1000);
    byCount.written(999, 100);
    expect(byCount.compacting).to.equal(false);
    byCount.written(1, 100);
    expect(byCount.compacting).to.equal(true);
    byCount.stop();
    const byShare = compactor(10);
    byShare.written(499, 1000);
    expect(byShare.compacting).to.equal(false);
    byShare.written(1, 1000);
    expect(byShare.compacting).to.equal(true);
    byShare.stop();
    const whenFull = compactor(1_000_000);
    whenFull.written(99, 1000);
    whenFull.memoryFull(1000);
    expect(whenFull.compacting).to.equal(false);
    whenFull.written(1, 1000);
    whenFull.memoryFull(1000);
    expect(whenFull.compacting).to.equal(true);
    whenFull.stop();
    const off = compactor(0);
    off.written(10_000, 1);
    off.memoryFull(1);
    expect(off.compacting).to.equal(false);
  });

  it('a store compacts itself while it takes writes, and holds after a restart exactly what it held when compacted', async () => {
    const { dir, remove } = await tempDir();
    try {
      // Compaction as soon as deleted quads are half of those held, however small the store.
      const { store, log } = await openStore(dir, { compactAfterDeletedQuads: 1 });
      for (let g = 0; g < 400; g += 20) {
        await store.commit(
          store.begin({ insert: Array.from({ length: 20 }, (_, k) => graphQuads(`g${g + k}`, 6)).flat() }),
        );
      }
      const churn = async (round: number) => {
        const g = `g${(round * 7) % 400}`;
        await store.commit(store.begin({ insert: graphQuads(g, 6, `round ${round} `) }));
        await store.commit(store.begin({ delete: graphQuads(g, 6) }));
        await store.commit(store.begin({ insert: graphQuads(g, 6) }));
        await store.commit(store.begin({ delete: graphQuads(g, 6, `round ${round} `) }));
      };
      await Promise.all(Array.from({ length: 400 }, (_, round) => churn(round)));
      while (!log.some((l) => l.startsWith('store compacted')))
        await Promise.all(Array.from({ length: 20 }, (_, round) => churn(400 + round)));
      expect(log.filter((l) => l.startsWith('compacting the store')).length).to.be.greaterThan(0);
      const held = allQuads(store.index);
      const expected = new OxigraphIndex();
      expected.loadTrusted(
        Array.from({ length: 400 }, (_, g) => graphQuads(`g${g}`, 6))
          .flat()
          .map(quadToNq)
          .join(''),
      );
      expect(held).to.deep.equal(allQuads(expected));
      await store.close();
      const reopened = await openStore(dir);
      try {
        expect(allQuads(reopened.store.index)).to.deep.equal(held);
      } finally {
        await reopened.store.close();
      }
    } finally {
      await remove();
    }
  });
});
