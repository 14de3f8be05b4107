import { quadToNq, triplesInGraphToNq, type Quad } from '../rdf/terms.js';
import type { DomainEvent, GraphInsert } from './transaction.js';

export type CommitListener = (events: readonly DomainEvent[]) => void;

/** What a committed transaction wrote: the quads it deleted and inserted and the new graphs it added whole. */
export interface CommittedData {
  readonly insert: readonly Quad[];
  readonly delete: readonly Quad[];
  readonly graphs: readonly GraphInsert[];
}

/** A consumer of the data of each commit (the SPARQL replica), beside its domain events. */
export type CommitDataListener = (data: CommittedData, events: readonly DomainEvent[]) => void;

/**
 * The N-Quads lines of committed data: lines to insert and lines to delete. A quad both deleted
 * and inserted ends up present (as with SPARQL DELETE/INSERT), so it is left out of the
 * deletions: the two sets are disjoint and the order in which they are applied does not matter.
 */
export function nQuadLines(data: CommittedData): { insert: string[]; delete: string[] } {
  const insert = data.insert.map(quadToNq);
  for (const { graph, triples } of data.graphs) for (const line of triplesInGraphToNq(triples, graph)) insert.push(line);
  if (data.delete.length === 0) return { insert, delete: [] };
  const inserted = new Set(insert);
  return { insert, delete: data.delete.map(quadToNq).filter((line) => !inserted.has(line)) };
}

/**
 * The after-commit stream: the domain events of each committed transaction, in commit order,
 * published synchronously once the write is durable and applied to the store (so a reader
 * answered after the commit sees every consumer up to date). Consumers: the revision, event
 * and action-request indexes and the parsed-revision cache, the access-control caches; the
 * SPARQL replica takes each commit's data too (`subscribeData`).
 */
export class CommitStream {
  private readonly listeners: CommitListener[] = [];
  private readonly dataListeners: CommitDataListener[] = [];

  subscribe(listener: CommitListener): void {
    this.listeners.push(listener);
  }

  /** Called with every commit from now on, with what it wrote (not for the events republished at start, which carry no data). */
  subscribeData(listener: CommitDataListener): void {
    this.dataListeners.push(listener);
  }

  publish(events: readonly DomainEvent[], data?: CommittedData): void {
    if (events.length > 0) for (const listener of this.listeners) listener(events);
    if (data) for (const listener of this.dataListeners) listener(data, events);
  }
}
