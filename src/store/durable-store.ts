import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Journal, recoverJournal, removeSegmentsBefore, type JournalRecord, type StoredRecord } from './journal.js';
import { Claims } from './claims.js';
import { CommitStream } from './commit-stream.js';
import type { GraphStore } from './graph-store.js';
import { OxigraphIndex, type SparqlJsonResults } from './oxigraph-index.js';
import { latestSnapshot, loadSnapshot, removeSnapshotsBefore, snapshotName, writeSnapshot } from './snapshot.js';
import { Parser } from 'n3';
import { storedDomainEvents } from './schema/stored-events.js';
import { WriteTransaction } from './transaction.js';
import { quadToNq, triplesInGraphToNq, type Quad } from '../rdf/terms.js';

export interface DurableStoreOptions {
  dataDir: string;
  fsync: boolean;
  snapshotAfterBytes: number;
  log: (message: string) => void;
  /** Told about group commits, snapshots and the quad count (for metrics). */
  observer?: StoreObserver;
}

export interface StoreObserver {
  quadsCounted(quads: number): void;
  journalFlushed(seconds: number, records: number): void;
  snapshotWritten(seconds: number): void;
}

/** On shutdown a journal larger than this is folded into a snapshot, so the next start is quick. */
const SNAPSHOT_ON_CLOSE_BYTES = 1024 * 1024;

/**
 * The journal record for a change. A quad both deleted and inserted ends up present (as with
 * SPARQL DELETE/INSERT), so it is left out of the deletions: the record's two sets stay disjoint
 * and the order in which they are applied does not matter.
 */
export function recordFor(change: WriteTransaction): JournalRecord {
  const insert = change.insert.map(quadToNq);
  for (const { graph, triples } of change.graphs) insert.push(...triplesInGraphToNq(triples, graph));
  if (change.delete.length === 0) return { delete: '', insert: insert.join('') };
  const inserted = new Set(insert);
  return { delete: change.delete.map(quadToNq).filter((line) => !inserted.has(line)).join(''), insert: insert.join('') };
}

/**
 * The write path of the whole server: journal first (group-committed, fsync'ed), then the
 * Oxigraph index, then the after-commit stream, all before the returned promise resolves.
 * Reads go straight to the index.
 */
export class DurableStore implements GraphStore {
  readonly index = new OxigraphIndex();
  readonly claims = new Claims();
  readonly committed = new CommitStream();
  private journal!: Journal;
  private snapshotting: Promise<void> | undefined;
  /** Size of the newest snapshot file. */
  private snapshotBytes = 0;

  private constructor(private readonly options: DurableStoreOptions) {}

  static async open(options: DurableStoreOptions): Promise<DurableStore> {
    const store = new DurableStore(options);
    await store.recover();
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
    if (snapshot !== undefined) {
      await loadSnapshot(this.index, dataDir, snapshot);
      this.snapshotBytes = (await stat(join(dataDir, snapshotName(snapshot)))).size;
    }
    const journal = await recoverJournal(dataDir, from, log, (records) => this.replay(records));
    await removeSegmentsBefore(dataDir, from);
    await removeSnapshotsBefore(dataDir, from);
    const quads = this.index.size;
    this.options.observer?.quadsCounted(quads);
    if (snapshot !== undefined || journal.records > 0) {
      log(`store recovered: snapshot ${snapshot ?? 'none'}, ${journal.records} journal records, ${quads} quads`);
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
      await this.journal.append(recordFor(tx), (stored) => {
        this.index.apply(stored);
        this.committed.publish(tx.events);
        tx.release();
      });
    } finally {
      tx.release();
    }
  }

  /**
   * Publishes, on `committed`, the domain events that rebuild what consumers keep from the data
   * the store holds (snapshot and journal replayed): called once at start, after they subscribe.
   */
  publishStored(): void {
    this.committed.publish(storedDomainEvents(this));
  }

  /** Folds the journal into a snapshot. Concurrent calls share one run. */
  snapshot(): Promise<void> {
    this.snapshotting ??= (async () => {
      const { dataDir, log } = this.options;
      try {
        const started = Date.now();
        const segment = await this.journal.rotate();
        await writeSnapshot(this.index, dataDir, segment);
        this.snapshotBytes = (await stat(join(dataDir, snapshotName(segment)))).size;
        await removeSegmentsBefore(dataDir, segment);
        await removeSnapshotsBefore(dataDir, segment);
        const quads = this.index.size;
        this.options.observer?.snapshotWritten((Date.now() - started) / 1000);
        this.options.observer?.quadsCounted(quads);
        log(`snapshot ${segment} written in ${Date.now() - started} ms (${quads} quads)`);
      } catch (err) {
        log(`snapshot failed (journal kept, nothing lost): ${(err as Error).message}`);
      } finally {
        this.snapshotting = undefined;
      }
    })();
    return this.snapshotting;
  }

  async close(): Promise<void> {
    await this.snapshotting;
    await this.journal.idle();
    if (this.journal.bytes > SNAPSHOT_ON_CLOSE_BYTES) await this.snapshot();
    await this.journal.close();
  }
}
