import type { DomainEvent } from '../store/transaction.js';
import type { RevisionRecord } from '../store/schema/revisions.js';

export type RevisionInfo = RevisionRecord;

export interface LogisticsObjectEntry {
  iri: string;
  /** Agent that created the object (revision 1). */
  creator: string;
  /** Ordered by number, starting at 1. */
  revisions: RevisionInfo[];
}

/**
 * In-memory index of Logistics Objects and their revisions, derived from the metadata graph.
 * Latest lookups are O(1) and `at` lookups a binary search, whatever the number of revisions.
 * It changes only through the after-commit stream (`onCommitted`), live and at start alike.
 */
export class RevisionIndex {
  private readonly entries = new Map<string, LogisticsObjectEntry>();

  get size(): number {
    return this.entries.size;
  }

  get(iri: string): LogisticsObjectEntry | undefined {
    return this.entries.get(iri);
  }

  all(): IterableIterator<LogisticsObjectEntry> {
    return this.entries.values();
  }

  latest(entry: LogisticsObjectEntry): RevisionInfo {
    return entry.revisions[entry.revisions.length - 1];
  }

  /** Consumer of the after-commit stream. */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) if (e.kind === 'object-created' || e.kind === 'revision-written') this.addRevision(e.revision);
  }

  private addRevision(info: RevisionInfo): void {
    let entry = this.entries.get(info.object);
    if (!entry) {
      entry = { iri: info.object, creator: info.createdBy, revisions: [] };
      this.entries.set(info.object, entry);
    }
    entry.revisions.push(info);
  }

  /** The revision valid at `instant`, or undefined if the object did not exist yet. */
  revisionAt(entry: LogisticsObjectEntry, instant: Date): RevisionInfo | undefined {
    const t = instant.getTime();
    let lo = 0;
    let hi = entry.revisions.length - 1;
    let found: RevisionInfo | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (entry.revisions[mid].createdAt.getTime() <= t) {
        found = entry.revisions[mid];
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found;
  }
}
