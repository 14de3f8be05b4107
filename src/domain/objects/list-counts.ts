import type { ObjectCounts, ObjectListFilter } from '../../store/schema/object-catalog.js';

/** Listings whose counts are kept; the object list's filters come from an operator's page, so few at a time. */
const FILTERS_KEPT = 100;

const keyOf = (filter: ObjectListFilter) =>
  JSON.stringify([filter.type, filter.idContains, filter.changedAfter?.getTime()]);

interface Held {
  counts: Promise<ObjectCounts>;
  /** Once read. */
  value?: ObjectCounts;
  /** The `changes` count when the read was sent: the answer stands until an object is created or changed after it. */
  since: number;
}

/**
 * The object list's counts (matches, objects by type), which a store counts over every object: read once and kept
 * until an object is created or changed (any process's: the after-commit stream brings both), so paging through an
 * unchanging list does not count again, and a count is never older than the last change seen. Reads sent before a
 * change are shared by the listings that asked before it.
 */
export class ListCounts {
  private readonly held = new Map<string, Held>();
  private changes = 0;

  constructor(private readonly read: (filter: ObjectListFilter) => Promise<ObjectCounts>) {}

  of(filter: ObjectListFilter): Promise<ObjectCounts> {
    const key = keyOf(filter);
    const held = this.held.get(key);
    if (held?.since === this.changes) return held.counts;
    const counts = this.read(filter);
    const entry: Held = { counts, since: this.changes };
    this.held.delete(key);
    this.held.set(key, entry);
    if (this.held.size > FILTERS_KEPT) this.held.delete(this.held.keys().next().value!);
    counts.then(
      (value) => (entry.value = value),
      () => {
        if (this.held.get(key) === entry) this.held.delete(key);
      },
    );
    return counts;
  }

  /** The counts of `filter` when read and still standing. */
  known(filter: ObjectListFilter): ObjectCounts | undefined {
    const held = this.held.get(keyOf(filter));
    return held?.since === this.changes ? held.value : undefined;
  }

  /** An object was created or changed: every count kept is read again when next asked for. */
  changed(): void {
    this.changes += 1;
  }
}
