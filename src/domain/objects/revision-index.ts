import { BoundedCache } from '../../bounded-cache.js';
import type { Quad } from '../../rdf/terms.js';
import type { CatalogObject, ObjectCatalog, ObjectList, ObjectListFilter } from '../../store/schema/object-catalog.js';
import type { RevisionRecord } from '../../store/schema/revisions.js';
import type { DomainEvent } from '../../store/transaction.js';
import { ListCounts } from './list-counts.js';
import { ListHead } from './list-head.js';
import { listObjects } from './object-list.js';

export type RevisionInfo = RevisionRecord;
export type { ObjectList, ObjectListFilter };

/** Where earlier revisions' metadata comes from (the store: `StoreReader.revision`). */
export type RevisionHistory = (object: string, number: number) => Promise<RevisionInfo | undefined>;

/** An object the index holds: who created it and its latest revision (changed in place by each new one). */
export type LogisticsObjectEntry = CatalogObject;

/** A revision's triples as the store keeps them. */
export interface RevisionTriples {
  graph: string;
  triples: readonly Quad[];
}

/** A read of an object from the catalog under way, with the revisions committed for it meanwhile. */
interface Fill {
  arrived: RevisionInfo[];
  done: Promise<LogisticsObjectEntry | undefined>;
  /** The triples of the revision the catalog answered with, when it read them in the same request. */
  latest?: RevisionTriples;
}

/** Objects in the head of the object list (ListHead), about 300 bytes each: the first pages an operator reads. */
const LIST_HEAD_OBJECTS = 5_000;

/**
 * What an entry costs the heap, about: the entry, its latest revision and its date, and the object's IRI twice (its
 * own and the revision graph's name); creators and types are strings shared by many entries (the engine's catalog
 * makes them so).
 */
const entryBytes = (entry: LogisticsObjectEntry) => 256 + 2 * entry.iri.length;

/**
 * Logistics Objects: who created each and its latest revision, kept from the after-commit stream (`onCommitted`).
 * Over a store whose start publishes every object (the embedded store) it holds them all, so a miss means no such
 * object; over a store that offers an ObjectCatalog instead (the SPARQL engine) it is a cache bounded by bytes,
 * filled from the catalog on a miss (`find`), so a process's memory and start do not grow with the objects.
 * Earlier revisions are never held (memory would grow with history): their metadata is read from the store when a
 * reader asks for one. Latest lookups are a map lookup; `at` lookups a binary search over the revision numbers.
 */
export class RevisionIndex {
  private readonly entries: BoundedCache<string, LogisticsObjectEntry>;
  private readonly filling = new Map<string, Fill>();
  private readonly counts: ListCounts | undefined;
  private readonly head: ListHead | undefined;

  private constructor(
    private readonly history: RevisionHistory,
    private readonly catalog: ObjectCatalog | undefined,
    maxBytes: number,
  ) {
    this.entries = new BoundedCache(maxBytes, entryBytes);
    this.counts = catalog && new ListCounts((filter) => catalog.counts(filter));
    this.head = catalog && new ListHead(catalog, LIST_HEAD_OBJECTS);
  }

  /** Every object held: the store publishes each at start. */
  static complete(history: RevisionHistory): RevisionIndex {
    return new RevisionIndex(history, undefined, Number.POSITIVE_INFINITY);
  }

  /** A cache of at most about `maxBytes` over `catalog`, which answers what it does not hold. */
  static cached(history: RevisionHistory, catalog: ObjectCatalog, maxBytes: number): RevisionIndex {
    return new RevisionIndex(history, catalog, maxBytes);
  }

  /** True when every object is held (a miss means no such object). */
  get holdsAll(): boolean {
    return !this.catalog;
  }

  /** Objects held in memory. */
  get size(): number {
    return this.entries.size;
  }

  /** The entry held for `iri`; a miss is no answer when the index is a cache: ask `find`. */
  get(iri: string): LogisticsObjectEntry | undefined {
    return this.entries.get(iri);
  }

  /** The object `iri`: at once when held (or when every object is), else read from the catalog. */
  find(iri: string): LogisticsObjectEntry | undefined | Promise<LogisticsObjectEntry | undefined> {
    const held = this.entries.get(iri);
    if (held || !this.catalog) return held;
    return this.filling.get(iri)?.done ?? this.fill(this.catalog, iri, false).done;
  }

  /**
   * As `find`, and when the object is read from the catalog, its latest revision's triples read with it (one request
   * for a cold GET); a read already under way for it is shared, without them.
   */
  async findWithLatest(iri: string): Promise<{ entry: LogisticsObjectEntry | undefined; latest?: RevisionTriples }> {
    const held = this.entries.get(iri);
    if (held || !this.catalog) return { entry: held };
    const under = this.filling.get(iri);
    if (under) return { entry: await under.done };
    const fill = this.fill(this.catalog, iri, true);
    return { entry: await fill.done, latest: fill.latest };
  }

  /** The objects among `iris` (the ones that exist), by IRI. */
  async findAll(iris: Iterable<string>): Promise<Map<string, LogisticsObjectEntry>> {
    const found = new Map<string, LogisticsObjectEntry>();
    const unique = [...new Set(iris)];
    const entries = await Promise.all(unique.map((iri) => this.find(iri)));
    entries.forEach((entry, i) => {
      if (entry) found.set(unique[i], entry);
    });
    return found;
  }

  /**
   * True while `entry` is the one the index holds for its object, so its latest revision is kept up to date: a cache
   * may have let it go since it was found (then a write must not build on it).
   */
  isCurrent(entry: LogisticsObjectEntry): boolean {
    return !this.catalog || this.entries.get(entry.iri) === entry;
  }

  /** `entry` while it is current, else the object as the index holds it now, or reads it from the catalog. */
  current(entry: LogisticsObjectEntry): LogisticsObjectEntry | undefined | Promise<LogisticsObjectEntry | undefined> {
    return this.isCurrent(entry) ? entry : this.find(entry.iri);
  }

  private fill(catalog: ObjectCatalog, iri: string, withLatest: boolean): Fill {
    const arrived: RevisionInfo[] = [];
    const read = withLatest
      ? catalog.objectWithLatest(iri).then((answer) => {
          if (answer?.triples) fill.latest = { graph: answer.object.latest.graph, triples: answer.triples };
          return answer?.object;
        })
      : catalog.object(iri);
    const done = read.then(
      (found) => {
        this.filling.delete(iri);
        // Created by a commit meanwhile (object-created is kept whenever it comes).
        const held = this.entries.get(iri);
        if (held) return held;
        let entry = found && { iri, creator: found.creator, latest: found.latest };
        for (const revision of arrived) {
          if (revision.number === 1 && !entry) entry = { iri, creator: revision.createdBy, latest: revision };
          else if (entry && revision.number > entry.latest.number) entry.latest = revision;
        }
        if (entry) this.entries.set(iri, entry);
        return entry;
      },
      (err: unknown) => {
        this.filling.delete(iri);
        throw err;
      },
    );
    const fill: Fill = { arrived, done };
    this.filling.set(iri, fill);
    return fill;
  }

  latest(entry: LogisticsObjectEntry): RevisionInfo {
    return entry.latest;
  }

  /** Revision `number` of the object, undefined if it has none such. */
  async revision(entry: LogisticsObjectEntry, number: number): Promise<RevisionInfo | undefined> {
    if (!Number.isInteger(number) || number < 1 || number > entry.latest.number) return undefined;
    return number === entry.latest.number ? entry.latest : this.history(entry.iri, number);
  }

  /** Consumer of the after-commit stream. */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events)
      if (e.kind === 'object-created' || e.kind === 'revision-written') {
        this.addRevision(e.revision);
        this.counts?.changed();
        this.head?.onRevision(e.revision, this.entries.get(e.revision.object)?.creator);
      }
  }

  private addRevision(info: RevisionInfo): void {
    const entry = this.entries.get(info.object);
    if (entry) {
      if (info.number > entry.latest.number) entry.latest = info;
      return;
    }
    const fill = this.filling.get(info.object);
    if (fill) fill.arrived.push(info);
    // A new object is held (it is read soon after, as a rule); another's revision is read from the catalog when asked.
    else if (info.number === 1 || !this.catalog)
      this.entries.set(info.object, { iri: info.object, creator: info.createdBy, latest: info });
  }

  /** The revision valid at `instant`, or undefined if the object did not exist yet. */
  async revisionAt(entry: LogisticsObjectEntry, instant: Date): Promise<RevisionInfo | undefined> {
    const t = instant.getTime();
    if (entry.latest.createdAt.getTime() <= t) return entry.latest;
    let lo = 1;
    let hi = entry.latest.number - 1;
    let found: RevisionInfo | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const revision = (await this.revision(entry, mid))!;
      if (revision.createdAt.getTime() <= t) {
        found = revision;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }

  /** The objects matching `filter`, most recently changed first: from memory when it holds all, else the catalog. */
  async list(filter: ObjectListFilter, skip: number, limit: number): Promise<ObjectList> {
    const { catalog, counts, head } = this;
    if (!catalog || !counts || !head) return listObjects(this.entries.values(), filter, skip, limit);
    const matches = counts.known(filter)?.total;
    const [page, counted] = await Promise.all([
      head.page(filter, skip, limit).then((held) => held ?? catalog.page(filter, skip, limit, matches)),
      counts.of(filter),
    ]);
    return { ...counted, page };
  }

  /** The objects `agent` created, as entries. */
  async createdBy(agent: string): Promise<LogisticsObjectEntry[]> {
    if (!this.catalog) return [...this.entries.values()].filter((e) => e.creator === agent);
    return [...(await this.findAll(await this.catalog.createdBy(agent))).values()];
  }

  /** Every object, when the index holds them all; undefined when it is a cache. */
  all(): Iterable<LogisticsObjectEntry> | undefined {
    return this.catalog ? undefined : this.entries.values();
  }
}
