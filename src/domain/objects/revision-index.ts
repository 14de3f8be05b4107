import type { DomainEvent } from '../../store/transaction.js';
import type { RevisionRecord } from '../../store/schema/revisions.js';

export type RevisionInfo = RevisionRecord;

/** Where earlier revisions' metadata comes from (the store: `StoreReader.revision`). */
export type RevisionHistory = (object: string, number: number) => Promise<RevisionInfo | undefined>;

export interface LogisticsObjectEntry {
  iri: string;
  /** Agent that created the object (revision 1). */
  creator: string;
  /** The latest revision. */
  latest: RevisionInfo;
}

/**
 * In-memory index of Logistics Objects: who created each and its latest revision, kept from the
 * after-commit stream (`onCommitted`), live and at start alike. Earlier revisions are not held
 * here (memory and start time would grow with history): their metadata is read from the store
 * when a reader asks for one. Latest lookups are O(1); `at` lookups a binary search over the
 * revision numbers, so reads do not depend on the number of revisions.
 */
export class RevisionIndex {
  private readonly entries = new Map<string, LogisticsObjectEntry>();

  constructor(private readonly history: RevisionHistory) {}

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
      if (e.kind === 'object-created' || e.kind === 'revision-written') this.addRevision(e.revision);
  }

  private addRevision(info: RevisionInfo): void {
    const entry = this.entries.get(info.object);
    if (!entry) {
      this.entries.set(info.object, { iri: info.object, creator: info.createdBy, latest: info });
    } else if (info.number > entry.latest.number) {
      entry.latest = info;
    }
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
}
