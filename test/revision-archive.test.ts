import { expect } from 'chai';
import { readFile, rm } from 'node:fs/promises';
import { Parser } from 'n3';
import { join } from 'node:path';
import { literal, namedNode, quad, termToNt, type Quad } from '../src/rdf/terms.js';
import { api, CARGO, rdf, requestStatus, store as meta, xsd } from '../src/rdf/vocab.js';
import type { DurableStore } from '../src/store/embedded/durable-store.js';
import { recordFor } from '../src/store/embedded/record-builder.js';
import {
  readRevisions,
  revisionGraph,
  revisionQuads,
  revisionWritesIn,
  type RevisionRecord,
} from '../src/store/schema/revisions.js';
import { finishedGraphsIn } from '../src/store/schema/finished-graphs.js';
import { actionRequestFromTriples, requestQuads, statusEntryQuads } from '../src/store/schema/action-requests.js';
import { readStoreNTriples } from '../src/rdf/ntriples.js';
import { Claims } from '../src/store/claims.js';
import { WriteTransaction } from '../src/store/transaction.js';
import { exportDataDirectory } from '../src/store/embedded/export/export.js';
import { EX, openStore, tempDir } from './support/store-data.js';

const AGENT = `${EX}holder`;
const OBJECT = `${EX}logistics-objects/big`;

/** An object of `size` triples; `changed` replaces the remark of triple k by version `changed[k]`. */
function objectTriples(size: number, changed: ReadonlyMap<number, number> = new Map()): Quad[] {
  const s = namedNode(OBJECT);
  const out = [quad(s, namedNode(rdf.type), namedNode(`${CARGO}Piece`))];
  for (let k = 1; k < size; k++)
    out.push(quad(s, namedNode(`${CARGO}remarks`), literal(`remark ${k} v${changed.get(k) ?? 0} "quoted" é 🚚`)));
  return out;
}

const record = (number: number, ms: number): RevisionRecord => ({
  object: OBJECT,
  number,
  graph: revisionGraph(OBJECT, number),
  createdAt: new Date(ms),
  createdBy: AGENT,
  mostSpecificType: `${CARGO}Piece`,
});

const lines = (triples: readonly Quad[]) =>
  triples.map((t) => `${t.subject.value} ${t.predicate.value} ${t.object.value}`).sort();

/**
 * Writes revision 1 of an object of `size` triples and `changes` revisions after it, each
 * changing one triple (the k-th change replaces remark k mod size), as the domain does. Returns
 * the triples of every revision, in order.
 */
async function writeRevisions(store: DurableStore, size: number, changes: number): Promise<Quad[][]> {
  const versions = new Map<number, number>();
  const revisions = [objectTriples(size)];
  const first = store.begin();
  first.revisions.push({ revision: record(1, 1_700_000_000_000), triples: revisions[0] });
  await store.commit(first);
  for (let n = 2; n <= changes + 1; n++) {
    const k = 1 + ((n - 2) % (size - 1));
    versions.set(k, n);
    const triples = objectTriples(size, versions);
    const tx = store.begin();
    tx.revisions.push({
      revision: record(n, 1_700_000_000_000 + n),
      triples,
      replaces: { revision: record(n - 1, 1_700_000_000_000 + n - 1), triples: revisions[n - 2] },
    });
    await store.commit(tx);
    revisions.push(triples);
  }
  return revisions;
}

async function expectHistory(store: DurableStore, revisions: Quad[][]): Promise<void> {
  for (const [i, triples] of revisions.entries()) {
    expect(lines(await store.graphTriples(revisionGraph(OBJECT, i + 1))), `revision ${i + 1}`).to.deep.equal(
      lines(triples),
    );
    expect(await store.revision(OBJECT, i + 1)).to.deep.equal(record(i + 1, 1_700_000_000_000 + (i === 0 ? 0 : i + 1)));
  }
}

describe('revision archive: history on disk, the latest revision in the hot store', () => {
  let dir: string;
  let remove: () => Promise<void>;
  beforeEach(async () => ({ dir, remove } = await tempDir()));
  afterEach(() => remove());

  it('every revision reads back exactly; Oxigraph holds only the latest graph and the metadata of revisions 1 and latest', async () => {
    const { store } = await openStore(dir);
    // 100 changes: chains of changes past 32 revisions make whole copies in between.
    const revisions = await writeRevisions(store, 40, 100);
    await expectHistory(store, revisions);
    expect(store.index.listGraphs().sort()).to.deep.equal([meta.metaGraph, OBJECT].sort());
    expect(lines(await store.graphTriples(OBJECT))).to.deep.equal(lines(revisions[100]));
    expect(readRevisions(store.index).map((r) => r.number)).to.deep.equal([1, 101]);
    expect(await store.revision(OBJECT, 102)).to.equal(undefined);
    expect(await store.graphTriples(revisionGraph(OBJECT, 102))).to.deep.equal([]);
    await store.close();
  });

  it('a revision read from the archive is, to the lexical form, what the hot store returned for it while it was the latest', async () => {
    const { store } = await openStore(dir);
    const s = namedNode(OBJECT);
    const p = (local: string) => namedNode(`${CARGO}${local}`);
    const typed = (value: string, datatype: string) => literal(value, namedNode(datatype));
    const first = [
      quad(s, namedNode(rdf.type), namedNode(`${CARGO}Piece`)),
      quad(s, p('a'), typed('1.50', xsd.double)),
      quad(s, p('b'), typed('007', xsd.integer)),
      quad(s, p('c'), typed('12.50', xsd.decimal)),
      quad(s, p('d'), typed('1', xsd.boolean)),
      quad(s, p('e'), typed('2026-01-02T03:04:05.500+02:00', xsd.dateTime)),
      quad(s, p('f'), literal('Crate', 'en-US')),
      quad(s, p('g'), typed('opaque', 'https://example.org/ns#unknownType')),
      quad(s, p('h'), literal('line\nbreak "quoted" \\ é 🚚')),
    ];
    const created = store.begin();
    created.revisions.push({ revision: record(1, 1_700_000_000_000), triples: first });
    await store.commit(created);
    const exact = (triples: readonly Quad[]) =>
      triples.map((t) => `${termToNt(t.subject)} ${termToNt(t.predicate)} ${termToNt(t.object)}`).sort();
    const whileLatest = await store.graphTriples(revisionGraph(OBJECT, 1));
    const next = [...whileLatest.filter((t) => !t.predicate.equals(p('h'))), quad(s, p('h'), literal('changed'))];
    const changed = store.begin();
    changed.revisions.push({
      revision: record(2, 1_700_000_000_002),
      triples: next,
      replaces: { revision: record(1, 1_700_000_000_000), triples: whileLatest },
    });
    await store.commit(changed);
    expect(exact(await store.graphTriples(revisionGraph(OBJECT, 1)))).to.deep.equal(exact(whileLatest));
    expect(exact(await store.graphTriples(revisionGraph(OBJECT, 2)))).to.deep.equal(exact(next));
    await store.close();
  });

  it('a commit hands the archive the parts it would read back from its record (revisions, finished graphs), or none where it could differ', () => {
    const o = namedNode(OBJECT);
    const other = `${EX}logistics-objects/other`;
    const created = `${EX}action-requests/created`;
    const held = `${EX}action-requests/held`;
    const hot: Record<string, string> = {
      [held]: `<${held}> <${EX}p> "held ☃" .\n<internal:x> <${EX}q> <${OBJECT}> .\n`,
      [`${EX}outbox/1`]: `<urn:x> <${EX}p> "gone" .\n`,
    };
    const before = objectTriples(6);
    const after = objectTriples(
      6,
      new Map([
        [2, 1],
        [4, 1],
      ]),
    );
    const build = (fill: (tx: WriteTransaction) => void) => {
      const tx = new WriteTransaction(new Claims());
      fill(tx);
      const r = recordFor(
        tx,
        (l) => l.map((x) => (x.value === '1.50' ? literal('1.5', x.datatype) : x)),
        (g) => hot[g] ?? '',
      );
      return r;
    };
    const fromRecord = (r: ReturnType<typeof recordFor>) => ({
      revisions: revisionWritesIn(r).map((w) => ({
        ...w.record,
        createdAt: w.record.createdAt.getTime(),
        whole: w.whole,
        del: w.del,
        ins: w.ins,
      })),
      finished: finishedGraphsIn(r),
    });
    const handed = (r: ReturnType<typeof recordFor>) => ({
      revisions: r.archive!.revisions.map((w) => ({
        ...w.record,
        createdAt: w.record.createdAt.getTime(),
        whole: w.whole,
        del: w.del,
        ins: w.ins,
      })),
      finished: r.archive!.finished.map(({ graph, ntriples }) => ({ graph, ntriples })),
    });
    const cases = [
      // A PATCH: the writer's added and removed lines, its request created and finished, another request finished, an outbox entry removed.
      build((tx) => {
        tx.revisions.push({
          revision: record(2, 1_700_000_000_120),
          triples: after,
          replaces: {
            revision: record(1, 1_700_000_000_000),
            triples: before,
            added: after.filter((t, i) => !before[i].equals(t)),
            removed: before.filter((t, i) => !after[i].equals(t)),
          },
        });
        const request = {
          iri: created,
          type: api.ChangeRequest,
          requestedBy: AGENT,
          requestedAt: new Date(1_700_000_000_100),
          objects: [OBJECT],
          statuses: [],
        };
        tx.insert.push(
          ...requestQuads(request, [
            quad(namedNode('internal:s'), namedNode(`${EX}q`), literal('a "request" 🚚\n'), namedNode(created)),
          ]),
        );
        for (const [number, status] of [
          [1, requestStatus.PENDING],
          [2, requestStatus.ACCEPTED],
        ] as const) {
          tx.insert.push(
            ...statusEntryQuads(created, {
              iri: `internal:e${number}`,
              number,
              status,
              since: new Date(1_700_000_000_100 + number),
              changedBy: AGENT,
            }),
          );
        }
        tx.created.add(created);
        tx.finished.push(created, held);
        tx.removedGraphs.push(`${EX}outbox/1`);
        tx.delete.push(quad(namedNode('urn:x'), namedNode(`${EX}n`), literal('1'), namedNode(`${EX}counters`)));
      }),
      // Revision 3 compared with revision 2 line by line, and a change undone in the same step.
      build((tx) =>
        tx.revisions.push({
          revision: record(3, 1_700_000_000_300),
          triples: before,
          replaces: { revision: record(2, 1_700_000_000_120), triples: after },
        }),
      ),
      // Two new objects, one literal made canonical.
      build((tx) => {
        tx.revisions.push({
          revision: record(1, 1_700_000_000_000),
          triples: [...before, quad(o, namedNode(`${EX}w`), literal('1.50', namedNode(xsd.decimal)))],
        });
        tx.revisions.push({
          revision: { ...record(1, 1_700_000_000_001), object: other, graph: revisionGraph(other, 1) },
          triples: [quad(namedNode(other), namedNode(rdf.type), namedNode(`${CARGO}Piece`))],
        });
      }),
    ];
    for (const r of cases) expect(handed(r)).to.deep.equal(fromRecord(r));
    expect(cases[0].archive!.finished.map((f) => [f.graph, f.created === true])).to.deep.equal([
      [created, true],
      [held, false],
    ]);
    expect(cases[0].archive!.revisions[0].del).to.include('v0');
    // The request's record, read from the quads the commit wrote, is the one its text gives.
    const [{ triples, ntriples }] = cases[0].archive!.finished;
    const fromQuads = actionRequestFromTriples(created, triples!);
    expect(fromQuads?.statuses.map((e) => e.status)).to.deep.equal([requestStatus.PENDING, requestStatus.ACCEPTED]);
    expect(fromQuads).to.deep.equal(actionRequestFromTriples(created, readStoreNTriples(ntriples)));
    // Written to the object's graph beside its revision: the archive reads the record.
    expect(
      build((tx) => {
        tx.revisions.push({
          revision: record(2, 1_700_000_000_120),
          triples: after,
          replaces: { revision: record(1, 1_700_000_000_000), triples: before },
        });
        tx.insert.push(quad(o, namedNode(`${EX}extra`), literal('x'), o));
      }).archive,
    ).to.equal(undefined);
  });

  it('a change is journalled as what it changes: the record of a one-triple change is as small on 2,000 triples as on 40', () => {
    const journalled = (size: number) => {
      const before = objectTriples(size);
      const after = objectTriples(size, new Map([[1, 1]]));
      const tx = {
        insert: [],
        delete: [],
        finished: [],
        removedGraphs: [],
        emptiedGraphs: [],
        revisions: [{ revision: record(2, 2), triples: after, replaces: { revision: record(1, 1), triples: before } }],
      };
      const r = recordFor(tx as unknown as Parameters<typeof recordFor>[0], (l) => l);
      return r.delete.length + r.insert.length;
    };
    expect(journalled(2_000)).to.equal(journalled(40));
  });

  it('an archive that lost entries the journal still holds is completed from it at start', async () => {
    const { store } = await openStore(dir);
    const revisions = await writeRevisions(store, 10, 40);
    await store.close(); // a small journal: no snapshot, every record stays in it
    await rm(join(dir, 'archive'), { recursive: true });
    const { store: reopened, log } = await openStore(dir);
    expect(log).to.include('revision archive: 41 revisions restored from the journal');
    await expectHistory(reopened, revisions);
    await reopened.close();
    const { store: again, log: quiet } = await openStore(dir);
    expect(quiet.some((line) => line.startsWith('revision archive:'))).to.equal(false);
    await expectHistory(again, revisions);
    await again.close();
  });

  it('history survives snapshots (the journal segments it came from are gone); a lost archive then stops the start', async () => {
    const { store } = await openStore(dir, { snapshotAfterBytes: 2048 });
    const revisions = await writeRevisions(store, 20, 60);
    await store.snapshot();
    await store.close();
    const { store: reopened } = await openStore(dir);
    await expectHistory(reopened, revisions);
    await reopened.close();
    await rm(join(dir, 'archive'), { recursive: true });
    const error = await openStore(dir).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(error?.message).to.match(
      /revision archive .*lacks revision \d+ of .*Restore the data directory from a backup/i,
    );
  });

  it('data written before the archive (every revision a graph in the hot store) is moved to it once, at start', async () => {
    const { store } = await openStore(dir);
    const revisions: Quad[][] = [];
    const versions = new Map<number, number>();
    for (let n = 1; n <= 12; n++) {
      if (n > 1) versions.set((n % 5) + 1, n);
      const triples = objectTriples(8, versions);
      revisions.push(triples);
      const r = record(n, 1_700_000_000_000 + (n === 1 ? 0 : n));
      // What a commit wrote then: the revision's metadata and a whole copy in the revision's own graph.
      await store.commit(
        store.begin({
          insert: [
            ...revisionQuads(r),
            ...triples.map((t) => quad(t.subject, t.predicate, t.object, namedNode(r.graph))),
          ],
        }),
      );
      if (n === 6) await store.snapshot();
    }
    await store.close();
    const { store: migrated, log } = await openStore(dir);
    expect(log).to.include('revision archive: 12 revisions of data written before it moved out of the hot store');
    await expectHistory(migrated, revisions);
    expect(migrated.index.listGraphs().sort()).to.deep.equal([meta.metaGraph, OBJECT].sort());
    expect(readRevisions(migrated.index).map((r) => r.number)).to.deep.equal([1, 12]);
    const next = objectTriples(8, new Map([...versions, [1, 13]]));
    const tx = migrated.begin();
    tx.revisions.push({
      revision: record(13, 1_700_000_000_013),
      triples: next,
      replaces: { revision: record(12, 1_700_000_000_012), triples: revisions[11] },
    });
    await migrated.commit(tx);
    await migrated.close();
    const { store: again, log: quiet } = await openStore(dir);
    expect(quiet.some((line) => line.startsWith('revision archive:'))).to.equal(false);
    await expectHistory(again, [...revisions, next]);
    await again.close();
  });

  it('onerecord export writes every revision in its own graph with its metadata', async () => {
    const { store } = await openStore(dir, { snapshotAfterBytes: 2048 });
    const revisions = await writeRevisions(store, 12, 45);
    await store.close();
    const out = join(dir, 'export.nq');
    await exportDataDirectory(dir, out);
    const quads = new Parser({ format: 'application/n-quads' }).parse(await readFile(out, 'utf8'));
    revisions.forEach((triples, i) => {
      const graph = revisionGraph(OBJECT, i + 1);
      expect(lines(quads.filter((q) => q.graph.value === graph)), graph).to.deep.equal(lines(triples));
      const metadata = quads.filter((q) => q.graph.value === meta.metaGraph && q.subject.value === graph);
      expect(metadata.find((q) => q.predicate.value === meta.revisionNumber)?.object.value).to.equal(String(i + 1));
    });
    expect(lines(quads.filter((q) => q.graph.value === OBJECT))).to.deep.equal(lines(revisions[45]));
  });
});
