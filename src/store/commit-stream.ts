import type { CommitBytes } from './commit-record.js';
import type { DomainEvent } from './transaction.js';

export type CommitListener = (events: readonly DomainEvent[]) => void;

/**
 * A consumer of what each commit wrote (the SPARQL replica): the commit's journal record, exactly
 * what the hot store applied (its deletes and inserts, as N-Quads bytes), beside its domain events.
 * The bytes are a view of the journal's buffer, valid during the call only: copy what is kept.
 */
export type CommitDataListener = (record: CommitBytes, events: readonly DomainEvent[]) => void;

/**
 * The after-commit stream: the domain events of each committed transaction, in commit order,
 * published synchronously once the write is durable and applied to the store (so a reader
 * answered after the commit sees every consumer up to date). Consumers: the revision, event
 * and action-request indexes and the parsed-revision cache, the access-control caches; the
 * SPARQL replica takes each commit's data too (`subscribeData`).
 */
export class CommitStream {
  private readonly listeners: { listener: CommitListener; othersToo: boolean }[] = [];
  private readonly dataListeners: CommitDataListener[] = [];

  /**
   * `othersToo`: also called with the commits of other server processes on the same engine (the
   * commit feed, store.sparql.sharedWriters), in the feed's order; false for what acts on this
   * process's own commits only (delivering their notifications, counting them).
   */
  subscribe(listener: CommitListener, othersToo = true): void {
    this.listeners.push({ listener, othersToo });
  }

  /**
   * Called with every commit from now on that writes a graph a SPARQL view may show
   * (`viewsMayShow`: not the store's own bookkeeping alone, such as a received notification or a
   * delivery queue's progress), with its journal record; not for the events republished at start,
   * which carry no record.
   */
  subscribeData(listener: CommitDataListener): void {
    this.dataListeners.push(listener);
  }

  publish(events: readonly DomainEvent[], record?: CommitBytes): void {
    if (events.length > 0) for (const { listener } of this.listeners) listener(events);
    if (record) for (const listener of this.dataListeners) listener(record, events);
  }

  /** The events of a commit another process made. */
  publishOthers(events: readonly DomainEvent[]): void {
    for (const { listener, othersToo } of this.listeners) if (othersToo) listener(events);
  }
}
