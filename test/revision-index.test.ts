// RevisionIndex as a bounded cache over an ObjectCatalog (the engine backend), and as the whole index (embedded).
// The catalog here is a table whose answers the test releases, to put commits in the middle of a read.
import { expect } from 'chai';
import { RevisionIndex } from '../src/domain/objects/revision-index.js';
import { listObjects } from '../src/domain/objects/object-list.js';
import type {
  CatalogObject,
  ObjectCatalog,
  ObjectCounts,
  ObjectListFilter,
} from '../src/store/schema/object-catalog.js';
import { literal, namedNode, quad, type Quad } from '../src/rdf/terms.js';
import { revisionGraph, type RevisionRecord } from '../src/store/schema/revisions.js';

const BASE = 'https://example.com/logistics-objects/';
const AGENT = `${BASE}holder`;
const PIECE = 'https://onerecord.iata.org/ns/cargo#Piece';

function revision(id: string, number: number, at = number): RevisionRecord {
  const object = `${BASE}${id}`;
  return {
    object,
    number,
    graph: revisionGraph(object, number),
    createdAt: new Date(Date.UTC(2026, 10, 27, 10, 0, at)),
    createdBy: AGENT,
    mostSpecificType: PIECE,
  };
}

/** A catalog over `objects`; with `held`, each answer waits until the test calls `release`. */
class TableCatalog implements ObjectCatalog {
  reads = 0;
  private waiting: (() => void)[] = [];
  constructor(
    readonly objects: Map<string, CatalogObject>,
    private readonly held = false,
  ) {}

  async object(iri: string): Promise<CatalogObject | undefined> {
    this.reads += 1;
    const found = this.objects.get(iri);
    const copy = found && { ...found };
    if (this.held) await new Promise<void>((resolve) => this.waiting.push(resolve));
    return copy;
  }

  /** With the triples `latestTriples` names for the object, when it does. */
  latestTriples = new Map<string, Quad[]>();
  async objectWithLatest(iri: string): Promise<{ object: CatalogObject; triples?: Quad[] } | undefined> {
    const object = await this.object(iri);
    return object && { object, triples: this.latestTriples.get(iri) };
  }

  release(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }

  async createdBy(agent: string): Promise<string[]> {
    return [...this.objects.values()].filter((o) => o.creator === agent).map((o) => o.iri);
  }

  async page(filter: ObjectListFilter, skip: number, limit: number): Promise<CatalogObject[]> {
    return listObjects(this.objects.values(), filter, skip, limit).page;
  }

  counted = 0;
  async counts(filter: ObjectListFilter): Promise<ObjectCounts> {
    this.counted += 1;
    const { total, types } = listObjects(this.objects.values(), filter, 0, 0);
    if (this.held) await new Promise<void>((resolve) => this.waiting.push(resolve));
    return { total, types };
  }
}

const stored = (...latest: RevisionRecord[]) =>
  new Map(latest.map((r) => [r.object, { iri: r.object, creator: AGENT, latest: r }]));
const noHistory = async () => undefined;
const written = (r: RevisionRecord) =>
  r.number === 1
    ? { kind: 'object-created' as const, revision: r }
    : { kind: 'revision-written' as const, revision: r };

describe('RevisionIndex', () => {
  describe('as a bounded cache over the catalog', () => {
    it('reads a miss from the catalog once, however many ask at once, and holds it then', async () => {
      const catalog = new TableCatalog(stored(revision('a', 3)));
      const index = RevisionIndex.cached(noHistory, catalog, 1 << 20);
      expect(index.get(`${BASE}a`)).to.equal(undefined);
      const [first, second] = await Promise.all([index.find(`${BASE}a`), index.find(`${BASE}a`)]);
      expect(first).to.equal(second);
      expect(first?.latest.number).to.equal(3);
      expect(catalog.reads).to.equal(1);
      expect(index.find(`${BASE}a`)).to.equal(first);
      expect(await index.find(`${BASE}unknown`)).to.equal(undefined);
    });

    it('hands over the latest triples the catalog read with a miss; a read under way is shared, without them', async () => {
      const catalog = new TableCatalog(stored(revision('a', 2)), true);
      const triple = quad(namedNode(`${BASE}a`), namedNode(`${BASE}p`), literal('v'));
      catalog.latestTriples.set(`${BASE}a`, [triple]);
      const index = RevisionIndex.cached(noHistory, catalog, 1 << 20);
      const reads = [index.findWithLatest(`${BASE}a`), index.findWithLatest(`${BASE}a`)];
      catalog.release();
      const [first, second] = await Promise.all(reads);
      expect(first.latest).to.deep.equal({ graph: revision('a', 2).graph, triples: [triple] });
      expect(second.latest).to.equal(undefined);
      expect([first.entry, second.entry].map((e) => e?.latest.number)).to.deep.equal([2, 2]);
      expect(catalog.reads).to.equal(1);
      // Held now: no read, no triples.
      expect(await index.findWithLatest(`${BASE}a`)).to.deep.equal({ entry: index.get(`${BASE}a`) });
    });

    it('holds at most its byte budget, and a let-go entry is no longer current (a write must not build on it)', async () => {
      const catalog = new TableCatalog(stored(revision('a', 1), revision('b', 1), revision('c', 1)));
      const index = RevisionIndex.cached(noHistory, catalog, 700);
      const a = (await index.find(`${BASE}a`))!;
      expect(index.isCurrent(a)).to.equal(true);
      await index.findAll([`${BASE}b`, `${BASE}c`]);
      expect(index.size).to.equal(2);
      expect(index.get(`${BASE}a`)).to.equal(undefined);
      expect(index.isCurrent(a)).to.equal(false);
      expect((await index.find(`${BASE}a`))?.latest.number).to.equal(1);
    });

    it('keeps a revision committed while the object is being read from the catalog', async () => {
      const catalog = new TableCatalog(stored(revision('a', 2)), true);
      const index = RevisionIndex.cached(noHistory, catalog, 1 << 20);
      const reading = index.find(`${BASE}a`);
      // Committed after the catalog answered with revision 2, published before that answer arrives.
      index.onCommitted([written(revision('a', 3))]);
      catalog.release();
      expect((await reading)?.latest.number).to.equal(3);
      expect(index.get(`${BASE}a`)?.latest.number).to.equal(3);
    });

    it('knows an object created while the catalog was being asked for it, and holds new objects at once', async () => {
      const catalog = new TableCatalog(new Map(), true);
      const index = RevisionIndex.cached(noHistory, catalog, 1 << 20);
      const reading = index.find(`${BASE}a`);
      index.onCommitted([written(revision('a', 1))]);
      catalog.release();
      expect((await reading)?.creator).to.equal(AGENT);
      index.onCommitted([written(revision('b', 1))]);
      expect(index.get(`${BASE}b`)?.latest.number).to.equal(1);
      // Another object's later revision is not taken for the object: it is read when asked for.
      index.onCommitted([written(revision('c', 4))]);
      expect(index.get(`${BASE}c`)).to.equal(undefined);
    });

    it('lists and finds an agent’s objects through the catalog, and never claims to hold them all', async () => {
      const catalog = new TableCatalog(stored(revision('a', 1), revision('b', 2)));
      const index = RevisionIndex.cached(noHistory, catalog, 1 << 20);
      expect(index.all()).to.equal(undefined);
      expect((await index.createdBy(AGENT)).map((e) => e.iri).sort()).to.deep.equal([`${BASE}a`, `${BASE}b`]);
      expect((await index.list({}, 0, 10)).total).to.equal(2);
    });

    it('counts a listing once until an object is created or changed, and never keeps a count read before a change', async () => {
      const catalog = new TableCatalog(stored(revision('a', 1), revision('b', 2)));
      const index = RevisionIndex.cached(noHistory, catalog, 1 << 20);
      const pages = [await index.list({}, 0, 1), await index.list({}, 1, 1)];
      expect(pages.map((l) => [l.total, l.page.map((o) => o.iri)])).to.deep.equal([
        [2, [`${BASE}b`]],
        [2, [`${BASE}a`]],
      ]);
      expect(catalog.counted).to.equal(1);
      // Another filter is counted apart.
      expect((await index.list({ idContains: '/B' }, 0, 1)).total).to.equal(1);
      expect(catalog.counted).to.equal(2);
      catalog.objects.set(`${BASE}c`, { iri: `${BASE}c`, creator: AGENT, latest: revision('c', 1, 9) });
      index.onCommitted([written(revision('c', 1, 9))]);
      const after = await index.list({}, 0, 10);
      expect([after.total, after.types[PIECE]]).to.deep.equal([3, 3]);
      expect(catalog.counted).to.equal(3);
    });

    it('shares a count under way with listings asked before a change, and counts again for those asked after', async () => {
      const catalog = new TableCatalog(stored(revision('a', 1)), true);
      const index = RevisionIndex.cached(noHistory, catalog, 1 << 20);
      const first = [index.list({}, 0, 10), index.list({}, 0, 10)];
      await Promise.resolve();
      catalog.objects.set(`${BASE}b`, { iri: `${BASE}b`, creator: AGENT, latest: revision('b', 1) });
      index.onCommitted([written(revision('b', 1))]);
      const second = index.list({}, 0, 10);
      await new Promise((resolve) => setImmediate(resolve));
      catalog.release();
      expect((await Promise.all(first)).map((l) => l.total)).to.deep.equal([1, 1]);
      expect((await second).total).to.equal(2);
      expect(catalog.counted).to.equal(2);
    });
  });

  describe('as the whole index (the store publishes every object at start)', () => {
    it('answers a miss at once, without a catalog, and lists from memory', async () => {
      const index = RevisionIndex.complete(noHistory);
      index.onCommitted([written(revision('a', 1)), written(revision('a', 2, 5)), written(revision('b', 1, 3))]);
      expect(index.find(`${BASE}unknown`)).to.equal(undefined);
      expect((index.find(`${BASE}a`) as { latest: RevisionRecord }).latest.number).to.equal(2);
      expect([...index.all()!].length).to.equal(2);
      const listed = await index.list({}, 0, 10);
      expect(listed.page.map((e) => e.iri)).to.deep.equal([`${BASE}a`, `${BASE}b`]);
    });
  });
});
