import { requestStatus } from '../rdf/vocab.js';
import type { ActionRequestRow, StatusRow } from '../store/action-request-queries.js';

/** One status an action request had, from `since` until the next entry. */
export interface StatusEntry {
  /** `internal:` id of the api:RequestStatusEntry node. */
  iri: string;
  /** Position in the history, starting at 1 (REQUEST_PENDING at creation). */
  number: number;
  status: string;
  since: Date;
  changedBy: string;
}

/** What the server keeps in memory about an action request; its full content stays in the store. */
export interface ActionRequestRecord {
  iri: string;
  type: string;
  requestedBy: string;
  requestedAt: Date;
  /** The Logistics Objects the request concerns. */
  objects: string[];
  /** Ordered by number; the last one is the current status. */
  statuses: StatusEntry[];
  /** Writes in flight that create or change this request; another status change must wait for them. */
  writes: number;
}

export function currentStatus(record: ActionRequestRecord): string {
  return record.statuses[record.statuses.length - 1].status;
}

export function lastModified(record: ActionRequestRecord): Date {
  return record.statuses[record.statuses.length - 1].since;
}

/** Oldest first; ties (same millisecond) by IRI, so the order survives a restart. */
export function byRequestTime(a: ActionRequestRecord, b: ActionRequestRecord): number {
  return a.requestedAt.getTime() - b.requestedAt.getTime() || (a.iri < b.iri ? -1 : a.iri > b.iri ? 1 : 0);
}

/**
 * In-memory index of action requests by IRI and by Logistics Object, rebuilt at start from the
 * request graphs, so deciding, listing and the audit trail never scan the store.
 */
export class ActionRequestIndex {
  private readonly byIri = new Map<string, ActionRequestRecord>();
  private readonly byObject = new Map<string, ActionRequestRecord[]>();
  /** Pending requests by object, so an accept finds the ones to reject without a scan. */
  private readonly pendingByObject = new Map<string, Set<ActionRequestRecord>>();

  static fromRows(requests: ActionRequestRow[], concerns: { request: string; object: string }[], statuses: StatusRow[]): ActionRequestIndex {
    const records = new Map<string, ActionRequestRecord>();
    for (const r of requests) {
      records.set(r.request, {
        iri: r.request,
        type: r.type,
        requestedBy: r.requestedBy,
        requestedAt: new Date(r.requestedAt),
        objects: [],
        statuses: [],
        writes: 0,
      });
    }
    for (const c of concerns) records.get(c.request)?.objects.push(c.object);
    // Entries of a request whose creation never reached the journal (a failed write) are skipped.
    for (const s of statuses.sort((a, b) => a.number - b.number)) {
      records.get(s.request)?.statuses.push({ iri: s.entry, number: s.number, status: s.status, since: new Date(s.since), changedBy: s.changedBy });
    }
    const index = new ActionRequestIndex();
    for (const record of [...records.values()].sort(byRequestTime)) if (record.statuses.length > 0) index.add(record);
    return index;
  }

  get size(): number {
    return this.byIri.size;
  }

  add(record: ActionRequestRecord): void {
    this.byIri.set(record.iri, record);
    for (const object of record.objects) {
      const list = this.byObject.get(object) ?? [];
      this.byObject.set(object, list);
      // Requests arrive nearly in order: the insertion point is at or next to the end.
      let i = list.length;
      while (i > 0 && byRequestTime(list[i - 1], record) > 0) i -= 1;
      list.splice(i, 0, record);
    }
    if (record.statuses.length > 0) this.trackPending(record);
  }

  /** Appends a status entry to an indexed request (one whose creation failed is left alone). */
  addStatus(record: ActionRequestRecord, entry: StatusEntry): void {
    record.statuses.push(entry);
    if (this.byIri.get(record.iri) === record) this.trackPending(record);
  }

  private trackPending(record: ActionRequestRecord): void {
    const pending = currentStatus(record) === requestStatus.PENDING;
    for (const object of record.objects) {
      const set = this.pendingByObject.get(object);
      if (pending) this.pendingByObject.set(object, (set ?? new Set()).add(record));
      else if (set?.delete(record) && set.size === 0) this.pendingByObject.delete(object);
    }
  }

  /** The pending requests about one Logistics Object. */
  pendingFor(object: string): ReadonlySet<ActionRequestRecord> {
    return this.pendingByObject.get(object) ?? new Set();
  }

  get(iri: string): ActionRequestRecord | undefined {
    return this.byIri.get(iri);
  }

  /** The requests about one Logistics Object, in `byRequestTime` order. */
  forObject(object: string): readonly ActionRequestRecord[] {
    return this.byObject.get(object) ?? [];
  }

  all(): IterableIterator<ActionRequestRecord> {
    return this.byIri.values();
  }
}
