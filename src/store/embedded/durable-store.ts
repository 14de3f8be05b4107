import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Journal, recoverJournal, removeSegmentsBefore } from './journal/journal.js';
import { partBytes, type CommitBytes } from '../commit-record.js';
import { Claims } from '../claims.js';
import { CommitStream } from '../commit-stream.js';
import { store as bookkeeping } from '../../rdf/vocab.js';
import type { GraphStore } from '../graph-store.js';
import { IndexCompactor } from './compaction/compaction.js';
import { loadOxigraphBindings } from './oxigraph/oxigraph-bindings.js';
import { OxigraphIndex, WASM_MEMORY_LIMIT_BYTES } from './oxigraph/oxigraph-index.js';
import type { SparqlJsonResults } from '../readers.js';
import { replayBatches } from './journal/replay-batches.js';
import { QueryReplica, type QueryReplicaOptions } from './replica/query-replica.js';
import { forViews, replicaSource } from './replica/replica-source.js';
import { recordFor } from './record-builder.js';
import { CapacityAdmission } from './admission.js';
import { graphTriplesIn } from './graph-reads.js';
import { Archive, ARCHIVE_DIR, type ArchiveParts } from './archive/archive.js';
import { ArchiveCorruptError } from './archive/archive-db.js';
import type { ActionRequestRecord } from '../schema/action-requests.js';
import { isReceivedNotificationGraph } from '../schema/received-notifications.js';
import type { ReceivedNotificationStore } from '../graph-store.js';
import { migrateRevisionGraphs } from './archive/history-migration.js';
import { canonicalLiterals, surelyCanonical } from './oxigraph/canonical-literals.js';
import { removeIndexImage, storePosition } from './image/index-image.js';
import { latestSnapshot, loadSnapshot, removeSnapshotsBefore } from './snapshot/snapshot.js';
import { Snapshots } from './snapshot/snapshots.js';
import { imageWorthWriting, takeImage, writeImage } from './image/image-lifecycle.js';
import { storedDomainEvents } from '../schema/stored-events.js';
import { readRevisions, RevisionMetadata, type RevisionRecord } from '../schema/revisions.js';
import { WriteTransaction } from '../transaction.js';
import { MOVE_DATA, type StoreCapacity } from '../capacity.js';
import { StoreFailedError, StoreTooLargeError } from '../errors.js';
import { iriToNt, type Quad, type RDF } from '../../rdf/terms.js';

export interface DurableStoreOptions {
  dataDir: string;
  fsync: boolean;
  snapshotAfterBytes: number;
  /** Journal size past snapshotAfterBytes that triggers a snapshot even when the last snapshot is larger: what a crash start replays at most, about. */
  maxReplayBytes: number;
  /** Quads the store may hold: a write that would take it past this is refused (StoreFullError). */
  capacityQuads: number;
  /** WASM memory that data may never take, kept for queries, dumps and Oxigraph's own growth. */
  memoryReserveBytes: number;
  /** Quads deleted from which the index is compacted, once they are also half the quads held (0: never; see compaction.ts). */
  compactAfterDeletedQuads: number;
  /** Write a memory image of the hot index on a clean stop, and start from it (see index-image.ts). */
  memoryImage?: boolean;
  /** With memoryImage: write one at every snapshot too, copied at its rotation point (the request thread waits for the copy). */
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

/** Revisions of the hot store whose presence in the archive a start checks (verifyArchive). */
const ARCHIVE_SAMPLE = 1000;

/** Received notifications of data written before they were archived, moved out of the hot store per commit (moveReceivedNotifications). */
const LEGACY_NOTIFICATIONS_PER_COMMIT = 500;

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
    const snapshotOf = { index: this.index, journal: () => this.journal, archive: () => this.archive, failed: () => this.admission.failed !== undefined, quads: () => this.admission.quads };
    this.snapshots = new Snapshots(snapshotOf, options);
    this.compactor = new IndexCompactor(this.index, { afterDeletedQuads: options.compactAfterDeletedQuads, memoryReserveBytes: options.memoryReserveBytes, log: options.log });
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
   * Loads the newest snapshot, or the memory image that reflects it, and replays the journal from
   * its segment on. Files older than the snapshot are leftovers of a run that stopped before it
   * could remove them.
   */
  private async recover(): Promise<void> {
    const { dataDir, log } = this.options;
    await mkdir(dataDir, { recursive: true });
    this.archive = Archive.open(join(dataDir, ARCHIVE_DIR));
    const snapshot = await latestSnapshot(dataDir);
    const from = snapshot ?? 1;
    const image = await takeImage(this.index, await storePosition(dataDir, snapshot), this.options);
    // Records the image does not reflect change the revision metadata it carries: brought up to date with each one replayed.
    const metadata = image?.ofSnapshot ? new RevisionMetadata(image.revisions) : undefined;
    let journal: { segment: number; records: number };
    let archived = 0;
    try {
      if (!image && snapshot !== undefined) {
        await loadSnapshot(this.index, dataDir, snapshot, (bytes) => this.roomToLoad(bytes));
      }
      if (snapshot !== undefined) await this.snapshots.found(snapshot);
      journal = await recoverJournal(dataDir, from, log, (records) => {
        this.replay(records);
        for (const record of records) {
          archived += this.takeToArchive(record);
          metadata?.apply(record);
        }
      });
    } catch (err) {
      // A trap inside Oxigraph while loading is its memory running out where the estimate missed it.
      if (err instanceof WebAssembly.RuntimeError) throw this.tooLarge(`Oxigraph failed while loading it (${err.message})`);
      throw err;
    }
    // The image of a snapshot stays: it reflects the newest snapshot until the next one replaces it.
    // Any other goes: a clean stop's (the journal grows from here on), one stale, damaged or turned off.
    await removeIndexImage(dataDir, image?.ofSnapshot === true);
    if (archived > 0) log(`revision archive: ${archived} revisions restored from the journal`);
    const migration = migrateRevisionGraphs(this.index, this.archive.revisions);
    const revisions = metadata?.records() ?? image?.revisions ?? readRevisions(this.index);
    this.verifyArchive(revisions);
    // The metadata of every object, read once at start: publishStored takes it unless a write came first.
    if (migration.moved === 0) this.recovered = this.unchangedRevisions = revisions;
    await removeSegmentsBefore(dataDir, from);
    await removeSnapshotsBefore(dataDir, from);
    // Records replayed over an image it already reflects change nothing: it holds the quads it held.
    const quads = (this.admission.quads = image && (!image.ofSnapshot || journal.records === 0) ? image.quads : this.index.size);
    if (snapshot !== undefined || journal.records > 0) {
      log(`store recovered: snapshot ${snapshot ?? 'none'}, ${journal.records} journal records, ${quads} quads`);
    }
    if (quads >= this.options.capacityQuads) {
      log(`the store holds ${quads} quads, at or past its capacity of ${this.options.capacityQuads} (store.capacityQuads): writes are refused with 507, reads go on. ${MOVE_DATA}`);
    }
    this.journal = await Journal.open({
      dir: dataDir,
      segment: journal.segment,
      fsync: this.options.fsync,
      snapshotAfterBytes: this.options.snapshotAfterBytes,
      onFlushed: this.options.observer && ((seconds, records) => this.options.observer?.journalFlushed(seconds, records)),
      onSizeExceeded: () => {
        // A snapshot rewrites the whole store, so wait until the journal is as large as the last
        // one: snapshot work then stays proportional to what was written, however large the store.
        // But no longer than maxReplayBytes: a start after a crash replays the whole journal, which
        // at a 1.2 GB snapshot would double its time. Called after every batch past
        // snapshotAfterBytes: a snapshot under way is not started twice (snapshot() shares one run).
        const bytes = this.journal.bytes;
        if (bytes >= this.snapshots.bytes || bytes >= this.options.maxReplayBytes) void this.snapshot();
      },
    });
    if (migration.moved > 0) {
      // The archive holds the revisions before the journal says the hot store no longer does.
      await this.archive.flushed();
      for (const { emptied, ...record } of migration.records) {
        await this.journal.append(record, (stored) => {
          this.index.apply(stored);
          this.index.dropGraphs(emptied);
        });
      }
      this.admission.quads = this.index.size;
      log(`revision archive: ${migration.moved} revisions of data written before it moved out of the hot store`);
    }
    await this.moveReceivedNotifications();
  }

  /**
   * Received notifications of data written before they were kept out of the hot store leave it,
   * once: commits that finish their graphs (WriteTransaction.finished) delete them from the hot store
   * and carry them to the archive, a few hundred at a time.
   */
  private async moveReceivedNotifications(): Promise<void> {
    const rows = this.index.select(`SELECT DISTINCT ?g WHERE { GRAPH ?g { ?g ${iriToNt(bookkeeping.receivedNotification)} ?n } }`).results.bindings;
    const graphs = rows.map((row) => row.g.value).filter(isReceivedNotificationGraph);
    for (let i = 0; i < graphs.length; i += LEGACY_NOTIFICATIONS_PER_COMMIT) {
      const tx = this.begin();
      tx.finished.push(...graphs.slice(i, i + LEGACY_NOTIFICATIONS_PER_COMMIT));
      await this.commit(tx);
    }
    if (graphs.length > 0) this.options.log(`received notifications: ${graphs.length} moved out of the hot store to the archive`);
  }

  /** Applies records in order, folded into batches where that gives the same store (replay-batches.ts): much faster. */
  private replay(records: CommitBytes[]): void {
    this.roomToLoad(records.reduce((sum, r) => sum + r.insert.length, 0));
    for (const batch of replayBatches(records)) this.index.apply(batch);
  }

  /** Stops the start, before Oxigraph runs out of memory, when `bytes` more of the data directory do not fit. */
  private roomToLoad(bytes: number): void {
    // What is stored was admitted a record at a time with the whole reserve free, but loading it
    // back in chunks of megabytes needs more room while it runs: measured, a store filled with a
    // 32 MiB reserve loaded only 75% of itself with all of it kept free. So start keeps half the
    // reserve free, and a store filled to its limit restarts. Writes after it keep all of it free.
    if (this.index.makeRoom(bytes, this.options.memoryReserveBytes / 2)) return;
    throw this.tooLarge(
      `after ${this.index.size} quads, Oxigraph's WASM memory (at most ${WASM_MEMORY_LIMIT_BYTES / 2 ** 30} GiB) cannot take the next ` +
        `${bytes} bytes and keep store.memoryReserveBytes (${this.options.memoryReserveBytes}) free`,
    );
  }

  private tooLarge(why: string): StoreTooLargeError {
    return new StoreTooLargeError(`the data directory ${this.options.dataDir} holds more than the embedded store can load: ${why}. Nothing on disk was changed. ${MOVE_DATA}`);
  }

  /** How full the store is. */
  capacity(): StoreCapacity {
    return this.admission.capacity();
  }

  /**
   * Every revision the hot store knows of (revision 1 and the latest of each object) must be in
   * the archive once the journal is replayed: if not, the archive was lost or belongs to other
   * data. A crash cannot leave it lacking one: a snapshot is written only once the archive holds
   * every revision of the journal segments it folds (snapshot()), and replaying the segments after
   * it has just archived theirs. So a sample is checked (ARCHIVE_SAMPLE, spread over the objects,
   * the first and the last included), not one LMDB lookup per object: a lost or foreign archive
   * lacks them all, or nearly.
   */
  private verifyArchive(all: readonly RevisionRecord[]): void {
    const every = Math.max(1, Math.floor(all.length / ARCHIVE_SAMPLE));
    const revisions = all.filter((_, i) => i % every === 0 || i === all.length - 1);
    for (const r of revisions) {
      if (!this.archive.revisions.has(r.object, r.number)) {
        throw new ArchiveCorruptError(
          `the revision archive (${ARCHIVE_DIR}/) lacks revision ${r.number} of ${r.object}, which the store holds; refusing to start. Restore the data directory from a backup.`,
        );
      }
    }
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

  async finishedRequest(iri: string): Promise<ActionRequestRecord | undefined> {
    return this.archive.requests.request(iri);
  }

  async finishedRequests(object?: string): Promise<ActionRequestRecord[]> {
    return this.archive.requests.list(object);
  }

  /**
   * Hands a record applied to the hot store to the archive (with its parts when its commit has
   * them); drops the names of the graphs it finished. Returns the revisions new to the archive.
   */
  private takeToArchive(record: CommitBytes, parts?: ArchiveParts): number {
    const { revisions, finished } = this.archive.applyRecord(record, parts);
    // Deleting a graph's last quad leaves its name in Oxigraph's list of graphs (a graph the record creates was never there).
    const deleted = partBytes(record.delete);
    this.index.dropGraphs(finished.filter((f) => !f.created && deleted.includes(` ${iriToNt(f.graph)} .\n`)).map((f) => f.graph));
    return revisions;
  }

  async select(sparql: string): Promise<SparqlJsonResults> {
    return this.index.select(sparql);
  }

  begin(quads?: { insert?: readonly Quad[]; delete?: readonly Quad[] }): WriteTransaction {
    return new WriteTransaction(this.claims, quads);
  }

  async commit(tx: WriteTransaction): Promise<void> {
    this.recovered = this.unchangedRevisions = undefined;
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
      this.takeToArchive(stored, parts);
    } catch (err) {
      const message = (err as Error).message;
      this.admission.failed ??= err as Error;
      this.compactor.stop(); // the index no longer matches the journal: only a restart rebuilds it
      this.options.log(`a journaled change could not be applied (${message}): writes are refused until restart`);
      throw new StoreFailedError(`the change was journaled but could not be applied (${message}); writes are refused until the server restarts`);
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
    this.replica = new QueryReplica(replicaSource(this.index, this.archive, { closing: () => this.closing, takeUnchangedRevisions: unchanged }), options);
    this.committed.subscribeData((record) => this.replica?.onCommitted(record));
    return this.replica;
  }

  /** Folds the journal into a snapshot (Snapshots.write); `withImage`: with the memory image of the index taken at its rotation. */
  snapshot(withImage = this.options.imageAtSnapshot === true && imageWorthWriting(this.options, this.admission.quads)): Promise<void> {
    return this.snapshots.write(withImage);
  }

  async close(): Promise<void> {
    this.closing = true;
    this.compactor.stop();
    await this.replica?.close();
    await this.snapshots.idle;
    await this.journal.idle();
    // The image of this snapshot would be written again at once by writeImage.
    if (this.journal.bytes > SNAPSHOT_ON_CLOSE_BYTES) await this.snapshot(false);
    await this.journal.close();
    await this.snapshots.close();
    await this.archive.flushed();
    await this.archive.close();
    // Not after a failed apply: the index no longer matches the journal.
    if (imageWorthWriting(this.options, this.admission.quads) && !this.admission.failed) await writeImage(this.index, this.snapshots.segment, this.options);
  }
}
