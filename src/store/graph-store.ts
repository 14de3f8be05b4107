import type { Quad, RDF } from '../rdf/terms.js';
import type { Claims } from './claims.js';
import type { CommitStream } from './commit-stream.js';
import type { GraphReader, SparqlReader } from './readers.js';
import type { RevisionRecord } from './schema/revisions.js';
import type { ActionRequestRecord } from './schema/action-requests.js';
import type { ReceivedNotificationRecord } from './schema/received-notifications.js';
import type { StoredEvents } from './schema/events.js';
import type { ObjectCatalog } from './schema/object-catalog.js';
import type { WriteTransaction } from './transaction.js';

export type { StoredEvents };

/** What the internal list filters on (every one given must match). */
export interface NotificationFilter {
  sender?: string;
  eventType?: string;
  object?: string;
  receivedAfter?: Date;
  receivedBefore?: Date;
}

/** Received notifications as the domain sees them: out of the hot store (StoreReader.receivedNotifications). */
export interface ReceivedNotificationStore {
  /** The one stored with this @id. */
  withId(iri: string): Promise<ReceivedNotificationRecord | undefined>;
  /** The one `sender` sent with this Idempotency-Key. */
  withKey(sender: string, key: string): Promise<ReceivedNotificationRecord | undefined>;
  /**
   * A number at or above every stored arrival number (0 when none): the highest stored, or, where reading it would grow
   * with them (the engine), the clock in microseconds.
   */
  lastSequence(): Promise<number>;
  /** Those matching `filter`, in arrival order: how many, and the page from `skip` of `limit` at most. */
  list(
    filter: NotificationFilter,
    skip: number,
    limit: number,
  ): Promise<{ total: number; page: ReceivedNotificationRecord[] }>;
  /** The notification as received (without the receipt). */
  triples(record: ReceivedNotificationRecord): Promise<Quad[]>;
  /** Removes up to `max` of those received before `cutoff` (retention); returns how many. */
  removeReceivedBefore(cutoff: Date, max: number): Promise<number>;
}

/**
 * The writing side of the store: claims, transactions, the one commit site and the after-commit
 * stream. Kept apart from the reads so a wrapper around commits (the outbox's numbering,
 * `notifyingWriter`) wraps only this.
 */
export interface StoreWriter {
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
}

/** The reading side of the store. Reads return promises: an engine answers over the network. */
export interface StoreReader extends SparqlReader, GraphReader {
  /** Every revision of a Logistics Object is a named graph, `revisionGraph(object, n)`, wherever the store keeps it. */
  graphTriples(graph: string): Promise<Quad[]>;
  /** The metadata of revision `number` of `object`, latest or historical; undefined if there is none. */
  revision(object: string, number: number): Promise<RevisionRecord | undefined>;
  /**
   * `literals` in the form the store keeps them (equal values, equal strings: how a Change's values are compared with
   * stored ones).
   */
  canonicalLiterals(literals: readonly RDF.Literal[]): Promise<RDF.Literal[]>;
  /**
   * Whether the store surely keeps `literal` exactly as written, known without asking it (false: ask
   * `canonicalLiterals`).
   */
  keepsAsWritten(literal: RDF.Literal): boolean;
  /** The notifications this server received (kept out of the hot store): duplicates, the list, their content. */
  readonly receivedNotifications: ReceivedNotificationStore;
  /** The Logistics Events' metadata: an object's list, single events, the next arrival number. */
  readonly logisticsEvents: StoredEvents;
  /**
   * The Logistics Objects, asked of the store, when its start does not publish every object (object-created and the
   * latest revision-written of each): the domain then keeps a bounded cache of them. Absent: the start publishes all.
   */
  readonly objectCatalog?: ObjectCatalog;
  /**
   * Completes the write of `graph` when it was cut off in the store (listed, no data: docs/sparql-engine.md, "Known
   * limits"); rejects with StoreUnavailableError while another process completes it. Absent where a commit cannot
   * be cut.
   */
  completeWriteOf?(graph: string): Promise<void>;
  /** An action request whose graph a commit finished (`WriteTransaction.finished`); undefined for any other. */
  finishedRequest(iri: string): Promise<ActionRequestRecord | undefined>;
  /** The finished action requests about `object` (all when absent), oldest first. */
  finishedRequests(object?: string): Promise<ActionRequestRecord[]>;
}

/**
 * The store as a backend implements it, both sides: `DurableStore` (journal + embedded Oxigraph)
 * or `SparqlEngineStore` (a SPARQL 1.1 engine). The domain takes the side it uses.
 */
export interface GraphStore extends StoreWriter, StoreReader {}
