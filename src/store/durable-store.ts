import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Journal, recoverJournal, removeSegmentsBefore, type JournalRecord, type StoredRecord } from './journal.js';
import { Claims } from './claims.js';
import { CommitStream, nQuadLines } from './commit-stream.js';
import type { GraphStore } from './graph-store.js';
import { OxigraphIndex, WASM_MEMORY_LIMIT_BYTES, type SparqlJsonResults } from './oxigraph-index.js';
import { QueryReplica, type QueryReplicaOptions } from './query-replica.js';
import { latestSnapshot, loadSnapshot, removeSnapshotsBefore, snapshotName } from './snapshot.js';
import { SnapshotThread } from './snapshot-thread.js';
import { Parser } from 'n3';
import { storedDomainEvents } from './schema/stored-events.js';
import { WriteTransaction } from './transaction.js';
import { MOVE_DATA, StoreFailedError, StoreFullError, StoreTooLargeError, type StoreCapacity } from './capacity.js';
import type { Quad } from '../rdf/terms.js';

export interface DurableStoreOptions {
  dataDir: string;
  fsync: boolean;
  snapshotAfterBytes: number;
  /** Quads the store may hold: a write that would take it past this is refused (StoreFullError). */
  capacityQuads: number;
  /** WASM memory that data may never take, kept for queries, dumps and Oxigraph's own growth. */
  memoryReserveBytes: number;
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

/** The journal record for a change (see `nQuadLines`). */
export function recordFor(change: WriteTransaction): JournalRecord & { inserted: number; deleted: number } {
  const lines = nQuadLines(change);
  return { delete: lines.delete.join(''), insert: lines.insert.join(''), inserted: lines.insert.length, deleted: lines.delete.length };
}

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
  private readonly snapshotThread = new SnapshotThread();
  private snapshotting: Promise<void> | undefined;
  /** The newest snapshot (it holds segments before this number), and its size. */
  private snapshotSegment: number | undefined;
  private snapshotBytes = 0;
  /** Quads held (see StoreCapacity), and the net quads of records admitted but not yet applied. */
  private quads = 0;
  private pendingQuads = 0;
  /** Set when a durable record could not be applied: every later write is refused. */
  private failed: Error | undefined;
  /** Why the last write was refused for lack of room, until one is admitted again. */
  private full: string | undefined;

  private constructor(private readonly options: DurableStoreOptions) {
    this.index = new OxigraphIndex(options.memoryReserveBytes);
  }

  static async open(options: DurableStoreOptions): Promise<DurableStore> {
    const store = new DurableStore(options);
    try {
      await store.recover();
    } catch (err) {
      await store.snapshotThread.close();
      throw err;
    }
    return store;
  }

  /**
   * Loads the newest snapshot and replays the journal from its segment on. Files older than the
   * snapshot are leftovers of a run that stopped before it could remove them.
   */
  private async recover(): Promise<void> {
    const { dataDir, log } = this.options;
    await mkdir(dataDir, { recursive: true });
    const snapshot = await latestSnapshot(dataDir);
    const from = snapshot ?? 1;
    let journal: { segment: number; records: number };
    try {
      if (snapshot !== undefined) {
        await loadSnapshot(this.index, dataDir, snapshot, (bytes) => this.roomToLoad(bytes));
        this.snapshotSegment = snapshot;
        this.snapshotBytes = (await stat(join(dataDir, snapshotName(snapshot)))).size;
      }
      journal = await recoverJournal(dataDir, from, log, (records) => this.replay(records));
    } catch (err) {
      // A trap inside Oxigraph while loading is its memory running out where the estimate missed it.
      if (err instanceof WebAssembly.RuntimeError) throw this.tooLarge(`Oxigraph failed while loading it (${err.message})`);
      throw err;
    }
    await removeSegmentsBefore(dataDir, from);
    await removeSnapshotsBefore(dataDir, from);
    const quads = (this.quads = this.index.size);
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
        if (this.journal.bytes >= this.snapshotBytes) void this.snapshot();
      },
    });
  }

  /** Applies records in order; runs of pure inserts are loaded together, which is much faster. */
  private replay(records: StoredRecord[]): void {
    this.roomToLoad(records.reduce((sum, r) => sum + r.insert.length, 0));
    let inserts: Uint8Array[] = [];
    for (const record of records) {
      if (record.delete.length === 0) {
        inserts.push(record.insert);
        continue;
      }
      if (inserts.length > 0) this.index.loadTrusted(inserts);
      inserts = [];
      this.index.apply(record);
    }
    if (inserts.length > 0) this.index.loadTrusted(inserts);
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
    const { capacityQuads, memoryReserveBytes } = this.options;
    return {
      quads: this.quads,
      capacityQuads,
      headroomQuads: Math.max(0, capacityQuads - this.quads - this.pendingQuads),
      wasmMemoryBytes: this.index.wasmMemoryBytes,
      wasmMemoryLimitBytes: WASM_MEMORY_LIMIT_BYTES,
      memoryReserveBytes,
      ...((this.failed || this.full) && { writesRefused: this.failed ? `a change could not be applied (${this.failed.message}); restart the server` : this.full }),
    };
  }

  /**
   * Refuses, before anything is journaled, a record that would take the store past its capacity
   * in quads or WASM memory. A record that frees more than it adds is always let through.
   */
  private admit(record: ReturnType<typeof recordFor>): void {
    if (this.failed) throw new StoreFailedError(`writes are refused until the server restarts: a change could not be applied (${this.failed.message})`);
    const growth = record.inserted - record.deleted;
    if (growth <= 0) {
      this.full = undefined;
      return;
    }
    const { capacityQuads } = this.options;
    const after = this.quads + this.pendingQuads + growth;
    if (after > capacityQuads) {
      this.full = `the store is full: it holds ${this.quads} quads (${this.pendingQuads} more being written) of its capacity of ${capacityQuads} (store.capacityQuads), and this change adds ${growth}`;
    } else if (!this.index.makeRoom(record.insert.length)) {
      this.full = `the store's memory is full: Oxigraph's WASM memory (at most ${WASM_MEMORY_LIMIT_BYTES / 2 ** 30} GiB) cannot take this change and keep store.memoryReserveBytes (${this.options.memoryReserveBytes}) free for reads`;
    } else {
      this.full = undefined;
      return;
    }
    throw new StoreFullError(`${this.full}. Nothing was stored; reads go on. ${MOVE_DATA}`);
  }

  graphTriples(graph: string): Quad[] {
    const text = this.index.graphNTriples(graph);
    return text ? new Parser({ format: 'application/n-triples' }).parse(text) : [];
  }

  select(sparql: string): SparqlJsonResults {
    return this.index.select(sparql);
  }

  begin(quads?: { insert?: readonly Quad[]; delete?: readonly Quad[] }): WriteTransaction {
    return new WriteTransaction(this.claims, quads);
  }

  async commit(tx: WriteTransaction): Promise<void> {
    try {
      const record = recordFor(tx);
      this.admit(record);
      const growth = record.inserted - record.deleted;
      let pending = true;
      this.pendingQuads += growth;
      try {
        await this.journal.append(record, (stored) => {
          this.pendingQuads -= growth;
          pending = false;
          this.applyDurable(stored);
          this.quads += growth;
          this.committed.publish(tx.events, tx);
          tx.release();
        });
      } finally {
        if (pending) this.pendingQuads -= growth;
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
  private applyDurable(stored: StoredRecord): void {
    try {
      this.index.apply(stored);
    } catch (err) {
      const message = (err as Error).message;
      this.failed ??= err as Error;
      this.options.log(`a journaled change could not be applied (${message}): writes are refused until restart`);
      throw new StoreFailedError(`the change was journaled but could not be applied (${message}); writes are refused until the server restarts`);
    }
  }

  /**
   * Publishes, on `committed`, the domain events that rebuild what consumers keep from the data
   * the store holds (snapshot and journal replayed): called once at start, after they subscribe.
   */
  publishStored(): void {
    this.committed.publish(storedDomainEvents(this));
  }

  /** Starts the SPARQL query worker with its replica of this store, fed from the after-commit stream from now on. */
  startQueryReplica(options: QueryReplicaOptions): QueryReplica {
    this.replica = new QueryReplica(this.index, options);
    this.committed.subscribeData((data) => this.replica?.onCommitted(data));
    return this.replica;
  }

  /**
   * Folds the journal into a snapshot. Concurrent calls share one run. The journal moves to a new
   * segment; the new snapshot is the previous one plus the segments before it, folded on a worker
   * thread from the files (see fold.ts), never read from the store in memory, so requests are not
   * held up meanwhile. It holds exactly what those segments wrote; startup replays the rest.
   */
  snapshot(): Promise<void> {
    // After a failed apply the index no longer matches the journal: only a restart (replay) rebuilds it.
    if (this.failed) return Promise.resolve();
    this.snapshotting ??= (async () => {
      const { dataDir, log } = this.options;
      try {
        const started = Date.now();
        const segment = await this.journal.rotate();
        const base = this.snapshotSegment;
        const folded = await this.snapshotThread.write(dataDir, { snapshot: base, from: base ?? 1, to: segment });
        this.snapshotSegment = segment;
        this.snapshotBytes = (await stat(join(dataDir, snapshotName(segment)))).size;
        await removeSegmentsBefore(dataDir, segment);
        await removeSnapshotsBefore(dataDir, segment);
        this.options.observer?.snapshotWritten((Date.now() - started) / 1000);
        log(`snapshot ${segment} written in ${Date.now() - started} ms (${folded.lines} lines from ${folded.records} journal records; store holds ${this.quads} quads)`);
      } catch (err) {
        log(`snapshot failed (journal kept, nothing lost): ${(err as Error).message}`);
      } finally {
        this.snapshotting = undefined;
      }
    })();
    return this.snapshotting;
  }

  async close(): Promise<void> {
    await this.replica?.close();
    await this.snapshotting;
    await this.journal.idle();
    if (this.journal.bytes > SNAPSHOT_ON_CLOSE_BYTES) await this.snapshot();
    await this.journal.close();
    await this.snapshotThread.close();
  }
}
