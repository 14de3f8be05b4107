import type { DomainEvent } from './transaction.js';

export type CommitListener = (events: readonly DomainEvent[]) => void;

/**
 * The after-commit stream: the domain events of each committed transaction, in commit order,
 * published synchronously once the write is durable and applied to the store (so a reader
 * answered after the commit sees every consumer up to date). Consumers: the revision, event
 * and action-request indexes and the parsed-revision cache; next, the notification outbox,
 * the SPARQL replica and access-control caches.
 */
export class CommitStream {
  private readonly listeners: CommitListener[] = [];

  subscribe(listener: CommitListener): void {
    this.listeners.push(listener);
  }

  publish(events: readonly DomainEvent[]): void {
    if (events.length === 0) return;
    for (const listener of this.listeners) listener(events);
  }
}
