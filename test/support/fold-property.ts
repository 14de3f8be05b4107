import { expect } from 'chai';
import fc from 'fast-check';
import { foldDataDirectory } from '../../src/store/embedded/export/fold.js';
import { latestSnapshot } from '../../src/store/embedded/snapshot/snapshot.js';
import type { DurableStore } from '../../src/store/embedded/durable-store.js';
import { defaultGraph, literal, namedNode, quad, type Quad } from '../../src/rdf/terms.js';
import { allQuads, EX, openStore, tempDir } from './store-data.js';

const XSD = 'http://www.w3.org/2001/XMLSchema#';
/** Values where several lexical forms are one stored value, so lines differ while quads do not. */
const VALUES = [
  literal('01', namedNode(`${XSD}integer`)),
  literal('1', namedNode(`${XSD}integer`)),
  literal('+1', namedNode(`${XSD}integer`)),
  literal('1.50', namedNode(`${XSD}decimal`)),
  literal('1.5', namedNode(`${XSD}decimal`)),
  literal('1', namedNode(`${XSD}boolean`)),
  literal('true', namedNode(`${XSD}boolean`)),
  literal('2024-01-01T00:00:00.000Z', namedNode(`${XSD}dateTime`)),
  literal('2024-01-01T00:00:00Z', namedNode(`${XSD}dateTime`)),
  literal('a "quoted" \\ line\nbreak é 🚚'),
  literal('plain'),
  literal('hello', 'en'),
  namedNode(`${EX}node`),
];

interface QuadPick {
  s: number;
  p: number;
  v: number;
  g: number;
}
interface Step {
  insert: QuadPick[];
  delete: QuadPick[];
  snapshot: boolean;
}

const pick = fc.record({ s: fc.nat(1), p: fc.nat(1), v: fc.nat(VALUES.length - 1), g: fc.nat(2) });
// A snapshot starts a worker thread: one step in five takes one.
const step: fc.Arbitrary<Step> = fc.record({
  insert: fc.array(pick, { maxLength: 6 }),
  delete: fc.array(pick, { maxLength: 4 }),
  snapshot: fc.nat(4).map((n) => n === 0),
});

export const toQuad = ({ s, p, v, g }: QuadPick): Quad =>
  quad(namedNode(`${EX}s${s}`), namedNode(`${EX}p${p}`), VALUES[v], g === 2 ? defaultGraph() : namedNode(`${EX}g${g}`));

/** Folds the whole data directory (newest snapshot + journal) into a set of lines. */
async function foldedLines(dir: string): Promise<string[]> {
  const chunks: Buffer[] = [];
  const snapshot = await latestSnapshot(dir);
  await foldDataDirectory(
    dir,
    { snapshot, from: snapshot ?? 1 },
    async (data) => void chunks.push(Buffer.from(data)),
    'refuse',
  );
  return [...new Set(Buffer.concat(chunks).toString('utf8').split('\n').filter(Boolean))].sort();
}

async function run(store: DurableStore, steps: Step[]): Promise<void> {
  for (const s of steps) {
    await store.commit(store.begin({ insert: s.insert.map(toQuad), delete: s.delete.map(toQuad) }));
    if (s.snapshot) await store.snapshot();
  }
}

/**
 * The property: a data directory folded without loading it (newest snapshot + journal) gives exactly
 * the quads the store holds, whatever the lexical forms, deletions, re-insertions and snapshots, over
 * `numRuns` stores opened and closed (~2.7 s each on 2 shared cores: test/fold.test.ts runs a few,
 * test/long/fold.test.ts many).
 */
export async function expectFoldedAsStored(numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
      const { dir, remove } = await tempDir();
      try {
        const { store } = await openStore(dir);
        await run(store, steps);
        expect(await foldedLines(dir)).to.deep.equal([...new Set(allQuads(store.index))].sort());
        await store.close();
      } finally {
        await remove();
      }
    }),
    {
      numRuns,
      // One record inserting "01" and deleting "1" (one stored quad): it ends absent, as apply() deletes last.
      examples: [
        [[{ insert: [{ s: 0, p: 0, v: 0, g: 0 }], delete: [{ s: 0, p: 0, v: 1, g: 0 }], snapshot: false }]],
        // Inserted by a record that only inserts, deleted (in another form) by a later record.
        [
          [
            { insert: [{ s: 0, p: 0, v: 3, g: 1 }], delete: [], snapshot: false },
            { insert: [{ s: 1, p: 0, v: 10, g: 0 }], delete: [{ s: 0, p: 0, v: 4, g: 1 }], snapshot: false },
          ],
        ],
      ],
    },
  );
}
