// ListHead, the object list's newest objects kept by the after-commit stream (engine backend), against the list made
// from every object (listObjects, what the embedded store answers): same pages wherever the head answers at all.
import { expect } from 'chai';
import fc from 'fast-check';
import { ListHead } from '../src/domain/objects/list-head.js';
import { listObjects } from '../src/domain/objects/object-list.js';
import type { CatalogObject, ObjectCatalog, ObjectListFilter } from '../src/store/schema/object-catalog.js';
import { revisionGraph, type RevisionRecord } from '../src/store/schema/revisions.js';

const BASE = 'https://example.com/logistics-objects/';
const TYPES = ['https://onerecord.iata.org/ns/cargo#Piece', 'https://onerecord.iata.org/ns/cargo#Shipment'];

const revision = (id: number, number: number, second: number, type = 0): RevisionRecord => ({
  object: `${BASE}o${id}`,
  number,
  graph: revisionGraph(`${BASE}o${id}`, number),
  createdAt: new Date(Date.UTC(2026, 10, 27, 10, 0, second)),
  createdBy: `${BASE}agent${id % 3}`,
  mostSpecificType: TYPES[type],
});

/** Every object as the store holds it, answering as the engine's catalog does; counts what it was asked. */
class Table implements ObjectCatalog {
  readonly objects = new Map<string, CatalogObject>();
  pages = 0;
  lookups = 0;
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;

  commit(r: RevisionRecord): void {
    const held = this.objects.get(r.object);
    this.objects.set(r.object, { iri: r.object, creator: held?.creator ?? r.createdBy, latest: r });
  }

  /** Holds the next page's answer until `release`. */
  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }

  release(): void {
    this.open?.();
    this.gate = undefined;
  }

  async object(iri: string) {
    this.lookups += 1;
    const found = this.objects.get(iri);
    return found && { ...found };
  }

  async objectWithLatest(iri: string) {
    const object = await this.object(iri);
    return object && { object };
  }

  async createdBy(): Promise<string[]> {
    return [];
  }

  async page(filter: ObjectListFilter, skip: number, limit: number): Promise<CatalogObject[]> {
    this.pages += 1;
    const answer = listObjects(this.objects.values(), filter, skip, limit).page.map((o) => ({ ...o }));
    await this.gate;
    return answer;
  }

  async counts() {
    return { total: this.objects.size, types: {} };
  }
}

const iris = (page: CatalogObject[] | undefined) => page?.map((o) => `${o.iri} ${o.latest.number} ${o.creator}`);

describe('ListHead', () => {
  it('reads the newest objects once, then answers the pages within them from the stream alone', async () => {
    const table = new Table();
    for (let i = 0; i < 10; i++) table.commit(revision(i, 1, i));
    const head = new ListHead(table, 4);
    expect(iris(await head.page({}, 0, 2))).to.deep.equal([`${BASE}o9 1 ${BASE}agent0`, `${BASE}o8 1 ${BASE}agent2`]);
    // Past the head: the catalog's page.
    expect(await head.page({}, 3, 2)).to.equal(undefined);
    // An older object changed moves to the front; the one at the end is let go.
    const changed = revision(2, 2, 20);
    table.commit(changed);
    head.onRevision(changed, undefined);
    const created = revision(10, 1, 21, 1);
    table.commit(created);
    head.onRevision(created, undefined);
    expect(iris(await head.page({}, 0, 4))).to.deep.equal(iris(listObjects(table.objects.values(), {}, 0, 4).page));
    expect(table.pages).to.equal(1);
    // A filter the head holds enough of; one it does not.
    expect(iris(await head.page({ type: TYPES[1] }, 0, 1))).to.deep.equal([`${BASE}o10 1 ${BASE}agent1`]);
    expect(await head.page({ type: TYPES[1] }, 0, 2)).to.equal(undefined);
    // The creator of an object that came in by a later revision is asked of the catalog.
    expect(table.lookups).to.equal(1);
  });

  it('holds every object while there are fewer than its size: any page is its own', async () => {
    const table = new Table();
    for (let i = 0; i < 3; i++) table.commit(revision(i, 1, i));
    const head = new ListHead(table, 4);
    expect(iris(await head.page({}, 2, 5))).to.deep.equal([`${BASE}o0 1 ${BASE}agent0`]);
    expect(await head.page({ type: TYPES[1] }, 0, 5)).to.deep.equal([]);
    for (const id of [3, 4]) {
      table.commit(revision(id, 1, 10 + id));
      head.onRevision(revision(id, 1, 10 + id), undefined);
    }
    expect(await head.page({}, 4, 5)).to.equal(undefined);
  });

  it('keeps the revisions committed while it was being read', async () => {
    const table = new Table();
    for (let i = 0; i < 6; i++) table.commit(revision(i, 1, i));
    table.hold();
    const head = new ListHead(table, 3);
    const first = head.page({}, 0, 3);
    await Promise.resolve();
    const changed = revision(0, 2, 30);
    table.commit(changed);
    head.onRevision(changed, `${BASE}agent0`);
    table.release();
    expect(iris(await first)).to.deep.equal(iris(listObjects(table.objects.values(), {}, 0, 3).page));
  });

  it('answers as the list of every object wherever it answers (random commits, filters and pages)', async () => {
    const commit = fc.record({ id: fc.integer({ min: 0, max: 30 }), type: fc.integer({ min: 0, max: 1 }) });
    const filter = fc.record(
      {
        type: fc.constantFrom(...TYPES),
        idContains: fc.constantFrom('o1', 'O2', '7'),
        changedAfter: fc.integer({ min: 0, max: 60 }).map((s) => new Date(Date.UTC(2026, 10, 27, 10, 0, s))),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(commit, { maxLength: 40 }),
        fc.array(commit, { maxLength: 40 }),
        fc.array(fc.tuple(filter, fc.nat(12), fc.integer({ min: 1, max: 8 })), { minLength: 1, maxLength: 5 }),
        async (before, after, pages) => {
          const table = new Table();
          let second = 0;
          const apply = (c: { id: number; type: number }) => {
            const number = (table.objects.get(`${BASE}o${c.id}`)?.latest.number ?? 0) + 1;
            const r = revision(c.id, number, second++, c.type);
            table.commit(r);
            return r;
          };
          before.forEach(apply);
          const head = new ListHead(table, 8);
          await head.page({}, 0, 1);
          for (const c of after) head.onRevision(apply(c), undefined);
          for (const [f, skip, limit] of pages) {
            const held = await head.page(f, skip, limit);
            if (held) expect(iris(held)).to.deep.equal(iris(listObjects(table.objects.values(), f, skip, limit).page));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
