import { requestStatus } from '../../rdf/vocab.js';
import { byRequestTime, type ActionRequestRecord, type StatusEntry } from '../../store/schema/action-requests.js';
import type { DomainEvent } from '../../store/transaction.js';

export { byRequestTime, type ActionRequestRecord, type StatusEntry };

export function currentStatus(record: ActionRequestRecord): string {
  return record.statuses[record.statuses.length - 1].status;
}

export function lastModified(record: ActionRequestRecord): Date {
  return record.statuses[record.statuses.length - 1].since;
}

/**
 * In-memory index of the action requests the hot store holds (pending ones, and accepted ones that can
 * still be revoked), by IRI and by Logistics Object, kept by the after-commit stream (and so rebuilt at
 * start from the request graphs), so deciding and finding what an accept rejects never scan the store.
 * Requests with a final status leave it (`finished`): the store lists them.
 */
export class ActionRequestIndex {
  private readonly byIri = new Map<string, ActionRequestRecord>();
  private readonly byObject = new Map<string, ActionRequestRecord[]>();
  /** Pending requests by object, so an accept finds the ones to reject without a scan. */
  private readonly pendingByObject = new Map<string, Set<ActionRequestRecord>>();

  /** Consumer of the after-commit stream. */
  onCommitted(events: readonly DomainEvent[]): void {
    for (const e of events) {
      // By IRI: the events of another process's commit (the commit feed) carry copies of the record.
      // A commit's events may come twice (a process starting while others write): taken once.
      if (e.kind === 'action-request-created') {
        if (this.byIri.has(e.request.iri)) continue;
        this.add(e.request);
        this.addStatus(e.request, e.status);
      } else if (e.kind === 'action-request-decided' || e.kind === 'action-request-revoked') {
        const record = this.byIri.get(e.request.iri) ?? e.request;
        this.addStatus(record, e.status);
        if (e.finished) this.remove(record);
      } else if (e.kind === 'action-request-finished') this.remove(this.byIri.get(e.request.iri) ?? e.request);
    }
  }

  get size(): number {
    return this.byIri.size;
  }

  private add(record: ActionRequestRecord): void {
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

  /** A request whose graph is finished: the store answers for it from now on. */
  private remove(record: ActionRequestRecord): void {
    if (this.byIri.get(record.iri) !== record) return;
    this.byIri.delete(record.iri);
    for (const object of record.objects) {
      const list = this.byObject.get(object);
      const at = list?.indexOf(record) ?? -1;
      if (at >= 0) list!.splice(at, 1);
      if (list?.length === 0) this.byObject.delete(object);
      const pending = this.pendingByObject.get(object);
      if (pending?.delete(record) && pending.size === 0) this.pendingByObject.delete(object);
    }
  }

  /** Appends a status entry to an indexed request (one whose creation failed is left alone). */
  private addStatus(record: ActionRequestRecord, entry: StatusEntry): void {
    // A request stored and rejected by one commit has a rejection numbered as its pending entry: both are kept.
    if (record.statuses.some((s) => s.number === entry.number && s.status === entry.status)) return;
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
