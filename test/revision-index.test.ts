// RevisionIndex as a bounded cache over an ObjectCatalog (the engine backend), and as the whole index (embedded).
// The catalog here is a table whose answers the test releases, to put commits in the middle of a read.
import { expect } from 'chai';
import { RevisionIndex } from '../src/domain/objects/revision-index.js';
import { listObjects } from '../src/domain/objects/object-list.js';
import type { CatalogObject, ObjectCatalog } from '../src/store/schema/object-catalog.js';
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

  release(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }

  async createdBy(agent: string): Promise<string[]> {
    return [...this.objects.values()].filter((o) => o.creator === agent).map((o) => o.iri);
  }

  async list() {
    return listObjects(this.objects.values(), {}, 0, 100);
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
