import { Journal } from './journal/journal.js';
import type { CommitBytes } from '../commit-record.js';
import { Claims } from '../claims.js';
import { CommitStream } from '../commit-stream.js';
import type { GraphStore, ReceivedNotificationStore, StoredEvents } from '../graph-store.js';
import { IndexCompactor } from './compaction/compaction.js';
import { loadOxigraphBindings } from './oxigraph/oxigraph-bindings.js';
import { OxigraphIndex } from './oxigraph/oxigraph-index.js';
import type { SparqlJsonResults } from '../readers.js';
import { QueryReplica, type QueryReplicaOptions } from './replica/query-replica.js';
import { forViews, replicaSource } from './replica/replica-source.js';
import { recordFor } from './record-builder.js';
import { CapacityAdmission } from './admission.js';
import { graphTriplesIn } from './graph-reads.js';
import { takeToArchive } from './archive-handover.js';
import { appendRevisionMigration, moveEvents, moveReceivedNotifications, recoverDataDir } from './recovery.js';
import { finishAppendedEvents, moveEventsOut } from './archive/event-archive.js';
import type { Archive, ArchiveParts } from './archive/archive.js';
import type { ActionRequestRecord } from '../schema/action-requests.js';
import { canonicalLiterals, surelyCanonical } from './oxigraph/canonical-literals.js';
import { Snapshots } from './snapshot/snapshots.js';
import { imageWorthWriting, writeImage } from './image/image-lifecycle.js';
import { storedDomainEvents } from '../schema/stored-events.js';
import { readRevisions, type RevisionRecord } from '../schema/revisions.js';
import { WriteTransaction } from '../transaction.js';
import type { StoreCapacity } from '../capacity.js';
import { StoreFailedError } from '../errors.js';
import type { Quad, RDF } from '../../rdf/terms.js';

export interface DurableStoreOptions {
  dataDir: string;
  fsync: boolean;
  snapshotAfterBytes: number;
  /**
   * Journal size past snapshotAfterBytes that triggers a snapshot even when the last snapshot is larger: what a crash
   * start replays at most, about.
   */
  maxReplayBytes: number;
  /** Quads the store may hold: a write that would take it past this is refused (StoreFullError). */
  capacityQuads: number;
  /** WASM memory that data may never take, kept for queries, dumps and Oxigraph's own growth. */
  memoryReserveBytes: number;
  /**
   * Quads deleted from which the index is compacted, once they are also half the quads held (0: never; see
   * compaction.ts).
   */
  compactAfterDeletedQuads: number;
  /** Write a memory image of the hot index on a clean stop, and start from it (see index-image.ts). */
  memoryImage?: boolean;
  /**
   * With memoryImage: write one at every snapshot too, copied at its rotation point (the request thread waits for the
   * copy).
   */
  imageAtSnapshot?: boolean;
  /** With memoryImage: the fewest quads held for an image to be written (default 0: at any size). */
  memoryImageMinQuads?: number;
  log: (message: string) => void;
  /** Told about group commits, snapshots and the quad count (for metrics). */
  observer?: StoreObserver;
}

export interface StoreObserver {
  journalFlushed(seconds: number, records: number): void;
  snapshotWritten(seconds: number): void;
}

/** On shutdown a journal larger than this is folded into a snapshot, so the next start is quick. */
const SNAPSHOT_ON_CLOSE_BYTES = 1024 * 1024;

/**
 * The write path of the whole server: journal first (group-committed, fsync'ed), then the
 * Oxigraph index, then the after-commit stream, all before the returned promise resolves.
 * Reads go straight to the index.
 */
export class DurableStore implements GraphStore {
  readonly index: OxigraphIndex;
  readonly claims = new Claims();
  readonly committed = new CommitStream();
  private journal!: Journal;
  private replica?: QueryReplica;
  private readonly snapshots: Snapshots;
  private archive!: Archive;
  private closing = false;
  private readonly admission: CapacityAdmission;
  /** The revisions the hot store held when recovered, until a write or publishStored. */
  private recovered: RevisionRecord[] | undefined;
  /** The same, until a write or the first copy of the SPARQL replica. */
  private unchangedRevisions: RevisionRecord[] | undefined;

  private readonly compactor: IndexCompactor;

  private constructor(private readonly options: DurableStoreOptions) {
    // A WASM instance of its own: once compacted, the memory of the old one can be released (see compaction.ts).
    this.index = new OxigraphIndex(options.memoryReserveBytes, loadOxigraphBindings());
    const snapshotOf = {
      index: this.index,
      journal: () => this.journal,
      archive: () => this.archive,
      failed: () => this.admission.failed !== undefined,
      quads: () => this.admission.quads,
    };
    this.snapshots = new Snapshots(snapshotOf, options);
    this.compactor = new IndexCompactor(this.index, {
      afterDeletedQuads: options.compactAfterDeletedQuads,
      memoryReserveBytes: options.memoryReserveBytes,
      log: options.log,
    });
    this.admission = new CapacityAdmission(this.index, this.compactor, options);
  }

  static async open(options: DurableStoreOptions): Promise<DurableStore> {
    const store = new DurableStore(options);
    try {
      await store.recover();
    } catch (err) {
      await store.snapshots.close();
      throw err;
    }
    return store;
  }

  /**
   * Recovers the data directory (recovery.ts), opens the journal on it and carries data written
   * in an older layout to the archive.
   */
  private async recover(): Promise<void> {
    const { dataDir, log } = this.options;
    const { archive, journal, revisions, migration, quads } = await recoverDataDir(
      this.index,
      this.options,
      (snapshot) => this.snapshots.found(snapshot),
    );
    this.archive = archive;
    // The metadata of every object, read once at start: publishStored takes it unless a write came first.
    if (migration.moved === 0) this.recovered = this.unchangedRevisions = revisions;
    this.admission.quads = quads;
    this.journal = await Journal.open({
      dir: dataDir,
      segment: journal.segment,
      fsync: this.options.fsync,
      snapshotAfterBytes: this.options.snapshotAfterBytes,
      onFlushed:
        this.options.observer && ((seconds, records) => this.options.observer?.journalFlushed(seconds, records)),
      onSizeExceeded: () => this.snapshotIfDue(),
    });
    if (migration.moved > 0) {
      await appendRevisionMigration(this.index, archive, this.journal, migration, log);
      this.admission.quads = this.index.size;
    }
    await moveReceivedNotifications(this.index, (graphs) => this.finish(graphs), log);
    await moveEvents(
      this.index,
      (metadata, graphs) => {
        const tx = this.begin();
        moveEventsOut(tx, metadata, graphs);
        return this.commit(tx);
      },
      log,
    );
  }

  /**
   * Past `snapshotAfterBytes`, a snapshot once the journal is as large as the last one (a snapshot
   * rewrites the whole store: its work stays proportional to what was written), or as
   * `maxReplayBytes` (a start after a crash replays the whole journal). Called after every batch:
   * a snapshot under way is not started twice (snapshot() shares one run).
   */
  private snapshotIfDue(): void {
    const bytes = this.journal.bytes;
    if (bytes >= this.snapshots.bytes || bytes >= this.options.maxReplayBytes) void this.snapshot();
  }

  /** Commits a transaction that finishes `graphs`: they leave the hot store for the archive. */
  private finish(graphs: string[]): Promise<void> {
    const tx = this.begin();
    tx.finished.push(...graphs);
    return this.commit(tx);
  }

  /** How full the store is. */
  capacity(): StoreCapacity {
    return this.admission.capacity();
  }

  /** A graph's triples wherever the graph now is, the hot store or the archive (graph-reads.ts). */
  async graphTriples(graph: string): Promise<Quad[]> {
    return this.graphTriplesNow(graph);
  }

  /** graphTriples, read at once: the embedded store's reads are in memory. */
  graphTriplesNow(graph: string): Quad[] {
    return graphTriplesIn(this.index, this.archive, graph);
  }

  async revision(object: string, number: number): Promise<RevisionRecord | undefined> {
    return this.archive.revisions.revision(object, number);
  }

  async canonicalLiterals(literals: readonly RDF.Literal[]): Promise<RDF.Literal[]> {
    return canonicalLiterals(this.index, literals);
  }

  keepsAsWritten(literal: RDF.Literal): boolean {
    return surelyCanonical(literal);
  }

  get receivedNotifications(): ReceivedNotificationStore {
    return this.archive.notifications;
  }

  get logisticsEvents(): StoredEvents {
    return this.archive.events;
  }

  async finishedRequest(iri: string): Promise<ActionRequestRecord | undefined> {
    return this.archive.requests.request(iri);
  }

  async finishedRequests(object?: string): Promise<ActionRequestRecord[]> {
    return this.archive.requests.list(object);
  }

  async select(sparql: string): Promise<SparqlJsonResults> {
    return this.index.select(sparql);
  }

  begin(quads?: { insert?: readonly Quad[]; delete?: readonly Quad[] }): WriteTransaction {
    return new WriteTransaction(this.claims, quads);
  }

  async commit(tx: WriteTransaction): Promise<void> {
    this.recovered = this.unchangedRevisions = undefined;
    finishAppendedEvents(tx);
    try {
      const record = recordFor(
        tx,
        (literals) => canonicalLiterals(this.index, literals),
        (graph) => this.index.graphNTriples(graph),
      );
      const growth = this.admission.admit(record);
      const settle = this.admission.pending(growth);
      try {
        await this.journal.append(record, (stored) => {
          settle();
          this.applyDurable(stored, record.archive);
          this.admission.quads += growth;
          this.compactor.written(record.deleted, this.admission.quads);
          this.committed.publish(tx.events, forViews(tx) ? stored : undefined);
          tx.release();
        });
      } finally {
        settle();
      }
    } finally {
      tx.release();
    }
  }

  /**
   * Applies a record that is already durable. If Oxigraph fails, the write is not acknowledged,
   * and as an Oxigraph that failed mid-way is in an unknown state, no further write is taken;
   * the record is applied again at the next start.
   */
  private applyDurable(stored: CommitBytes, parts: ArchiveParts | undefined): void {
    try {
      this.index.apply(stored);
      takeToArchive(this.index, this.archive, stored, parts);
    } catch (err) {
      const message = (err as Error).message;
      this.admission.failed ??= err as Error;
      this.compactor.stop(); // the index no longer matches the journal: only a restart rebuilds it
      this.options.log(`a journaled change could not be applied (${message}): writes are refused until restart`);
      throw new StoreFailedError(
        `the change was journaled but could not be applied (${message}); writes are refused until the server restarts`,
      );
    }
  }

  /**
   * Publishes, on `committed`, the domain events that rebuild what consumers keep from the data
   * the store holds (snapshot and journal replayed): called once at start, after they subscribe.
   */
  async publishStored(): Promise<void> {
    this.committed.publish(await storedDomainEvents(this, this.recovered ?? readRevisions(this.index)));
    this.recovered = undefined;
  }

  /** Starts the SPARQL query worker with its replica of this store, fed from the after-commit stream from now on. */
  startQueryReplica(options: QueryReplicaOptions): QueryReplica {
    const unchanged = () => {
      const revisions = this.unchangedRevisions;
      this.unchangedRevisions = undefined;
      return revisions;
    };
    this.replica = new QueryReplica(
      replicaSource(this.index, this.archive, { closing: () => this.closing, takeUnchangedRevisions: unchanged }),
      options,
    );
    this.committed.subscribeData((record) => this.replica?.onCommitted(record));
    return this.replica;
  }

  /**
   * Folds the journal into a snapshot (Snapshots.write); `withImage`: with the memory image of the index taken at its
   * rotation.
   */
  snapshot(
    withImage = this.options.imageAtSnapshot === true && imageWorthWriting(this.options, this.admission.quads),
  ): Promise<void> {
    return this.snapshots.write(withImage);
  }

  async close(): Promise<void> {
    this.closing = true;
    this.compactor.stop();
    await this.replica?.close();
    await this.snapshots.underWay;
    await this.journal.idle();
    // The image of this snapshot would be written again at once by writeImage.
    if (this.journal.bytes > SNAPSHOT_ON_CLOSE_BYTES) await this.snapshot(false);
    await this.journal.close();
    await this.snapshots.close();
    await this.archive.flushed();
    await this.archive.close();
    // Not after a failed apply: the index no longer matches the journal.
    if (imageWorthWriting(this.options, this.admission.quads) && !this.admission.failed)
      await writeImage(this.index, this.snapshots.segment, this.options);
  }
}
