import type { CatalogObject, ObjectCatalog, ObjectListFilter } from '../../store/schema/object-catalog.js';
import type { RevisionRecord } from '../../store/schema/revisions.js';
import { matcher, newestFirst } from './object-list.js';

/**
 * The head of the object list: the `size` objects changed last, newest first, read from the catalog once and then
 * kept by the after-commit stream (each new object or revision, of any process, moves its object to the front), so
 * the pages an operator reads, the first ones, need no query. A page reaching past the head is the catalog's.
 */
export class ListHead {
  /** Newest first; undefined until read. */
  private entries: CatalogObject[] | undefined;
  private readonly byIri = new Map<string, CatalogObject>();
  /** True while the head holds every object (the catalog had fewer than `size`, and none was let go since). */
  private whole = false;
  private reading: Promise<void> | undefined;
  /** Revisions committed while the head is being read: applied once it is. */
  private arrived: RevisionRecord[] = [];

  constructor(
    private readonly catalog: ObjectCatalog,
    private readonly size: number,
  ) {}

  /** The page when the head holds it (every match up to its end is in the head); undefined when it does not. */
  async page(filter: ObjectListFilter, skip: number, limit: number): Promise<CatalogObject[] | undefined> {
    const entries = this.entries ?? (await this.read());
    const matching = matcher(filter);
    const page: CatalogObject[] = [];
    let matched = 0;
    for (const entry of entries) {
      if (!matching(entry)) continue;
      if (matched >= skip && page.length < limit) page.push(entry);
      matched += 1;
      if (page.length === limit) break;
    }
    if (page.length < limit && !this.whole) return undefined;
    // An object that came in by a later revision: its creator is the catalog's.
    const unknown = page.filter((entry) => entry.creator === '');
    const found = await Promise.all(unknown.map((entry) => this.catalog.object(entry.iri)));
    found.forEach((object, i) => {
      if (object) unknown[i].creator = object.creator;
    });
    return page.map((entry) => ({ ...entry }));
  }

  /** Consumer of the after-commit stream's new objects and revisions; `creator`: the object's, when known. */
  onRevision(revision: RevisionRecord, creator: string | undefined): void {
    if (!this.entries) {
      if (this.reading !== undefined) this.arrived.push(revision);
      return;
    }
    this.place(revision, revision.number === 1 ? revision.createdBy : creator);
  }

  private read(): Promise<CatalogObject[]> {
    this.reading ??= this.catalog.page({}, 0, this.size).then(
      (newest) => {
        this.entries = newest.map((entry) => ({ ...entry }));
        for (const entry of this.entries) this.byIri.set(entry.iri, entry);
        this.whole = newest.length < this.size;
        for (const revision of this.arrived.splice(0)) this.place(revision, undefined);
      },
      (err: unknown) => {
        this.reading = undefined;
        this.arrived = [];
        throw err;
      },
    );
    return this.reading.then(() => this.entries!);
  }

  private place(revision: RevisionRecord, creator: string | undefined): void {
    const entries = this.entries!;
    const held = this.byIri.get(revision.object);
    if (held && held.latest.number >= revision.number) return;
    if (held) entries.splice(entries.indexOf(held), 1);
    const entry = {
      iri: revision.object,
      creator: held?.creator || (creator ?? (revision.number === 1 ? revision.createdBy : '')),
      latest: revision,
    };
    // Commits arrive about in time order: the place is at or near the front.
    let at = 0;
    while (at < entries.length && newestFirst(entries[at], entry) < 0) at += 1;
    entries.splice(at, 0, entry);
    this.byIri.set(entry.iri, entry);
    if (entries.length > this.size) {
      this.byIri.delete(entries.pop()!.iri);
      this.whole = false;
    }
  }
}
