import type { Quad } from '../rdf/terms.js';
import type { Claims } from './claims.js';
import type { CommitStream } from './commit-stream.js';
import type { SparqlJsonResults } from './oxigraph-index.js';
import type { RevisionRecord } from './schema/revisions.js';
import type { ActionRequestRecord } from './schema/action-requests.js';
import type { WriteTransaction } from './transaction.js';
import type { ReceivedNotificationStore } from './notification-archive.js';

/** What the query modules need: SPARQL SELECT with results as SPARQL JSON. */
export interface SparqlReader {
  select(sparql: string): SparqlJsonResults;
}

/**
 * The store as the domain sees it. `DurableStore` (journal + embedded Oxigraph) is the one
 * implementation; docs/remote-backend.md says how one on a SPARQL 1.1
 * engine would implement the same seam.
 */
export interface GraphStore extends SparqlReader {
  /** Claims of writes in flight (the one concurrency rule, see Claims). */
  readonly claims: Claims;
  /** Domain events of every committed transaction, in commit order. */
  readonly committed: CommitStream;
  /** A new transaction (empty, or holding `quads`) whose claims live in `claims`. */
  begin(quads?: { insert?: readonly Quad[]; delete?: readonly Quad[] }): WriteTransaction;
  /**
   * The one commit site: makes `tx` durable (journal, fsync), applies it, publishes its events
   * on `committed` and releases its claims, all in one tick, before the promise resolves. Rejects
   * with the store, the indexes and nothing published when it cannot be made durable (claims
   * are released then too).
   */
  commit(tx: WriteTransaction): Promise<void>;
  /**
   * The triples of one named graph (none if unknown), as the store keeps them. Every revision
   * of a Logistics Object is one, `revisionGraph(object, n)`, wherever the store keeps it.
   */
  graphTriples(graph: string): Quad[];
  /** The metadata of revision `number` of `object`, latest or historical; undefined if there is none. */
  revision(object: string, number: number): RevisionRecord | undefined;
  /** The notifications this server received (kept out of the hot store): duplicates, the list, their content. */
  readonly receivedNotifications: ReceivedNotificationStore;
  /** An action request whose graph a commit finished (`WriteTransaction.finished`); undefined for any other. */
  finishedRequest(iri: string): ActionRequestRecord | undefined;
  /** The finished action requests about `object` (all when absent), oldest first. */
  finishedRequests(object?: string): ActionRequestRecord[];
}
