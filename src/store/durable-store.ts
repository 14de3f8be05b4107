import { mkdir } from 'node:fs/promises';
import { Journal, listSegments, readSegment, removeSegmentsBefore, type JournalRecord } from './journal.js';
import { OxigraphIndex } from './oxigraph-index.js';
import { latestSnapshot, loadSnapshot, removeSnapshotsBefore, writeSnapshot } from './snapshot.js';
import { iriToNt, quadToNq, termToNt, type Quad } from '../rdf/terms.js';

/** A set of quads to remove and to add, applied as one atomic step. */
export interface QuadChange {
  insert: Quad[];
  delete?: Quad[];
}

export interface DurableStoreOptions {
  dataDir: string;
  fsync: boolean;
  snapshotAfterBytes: number;
  log: (message: string) => void;
}

const REPLAY_BATCH_BYTES = 4 * 1024 * 1024;
/** On shutdown a journal larger than this is folded into a snapshot, so the next start is quick. */
const SNAPSHOT_ON_CLOSE_BYTES = 1024 * 1024;

function graphBlocks(quads: Quad[]): string {
  const byGraph = new Map<string, string>();
  for (const q of quads) {
    const g = q.graph.termType === 'DefaultGraph' ? '' : q.graph.value;
    const triple = `${termToNt(q.subject)} ${termToNt(q.predicate)} ${termToNt(q.object)} .\n`;
    byGraph.set(g, (byGraph.get(g) ?? '') + triple);
  }
  let out = '';
  for (const [g, triples] of byGraph) out += g ? `GRAPH ${iriToNt(g)} {\n${triples}}\n` : triples;
  return out;
}

/** The journal record for a change: plain N-Quads when it only inserts, else a DATA-only SPARQL Update. */
export function recordFor(change: QuadChange): JournalRecord {
  if (!change.delete || change.delete.length === 0) return { kind: 'load', text: change.insert.map(quadToNq).join('') };
  const parts = [`DELETE DATA {\n${graphBlocks(change.delete)}}`];
  if (change.insert.length > 0) parts.push(`INSERT DATA {\n${graphBlocks(change.insert)}}`);
  return { kind: 'update', text: parts.join(' ;\n') };
}

/**
 * The write path of the whole server: journal first (group-committed, fsync'ed), then the
 * Oxigraph index, then the caller's `onApplied`, all before the returned promise resolves.
 * Reads go straight to the index.
 */
export class DurableStore {
  readonly index = new OxigraphIndex();
  private journal!: Journal;
  private snapshotting: Promise<void> | undefined;

  private constructor(private readonly options: DurableStoreOptions) {}

  static async open(options: DurableStoreOptions): Promise<DurableStore> {
    const store = new DurableStore(options);
    await store.recover();
    return store;
  }

  private async recover(): Promise<void> {
    const { dataDir, log } = this.options;
    await mkdir(dataDir, { recursive: true });
    const snapshot = await latestSnapshot(dataDir);
    if (snapshot !== undefined) await loadSnapshot(this.index, dataDir, snapshot);
    const segments = (await listSegments(dataDir)).filter((n) => snapshot === undefined || n >= snapshot);
    let replayed = 0;
    for (const n of segments) {
      const records = await readSegment(dataDir, n, log);
      this.replay(records);
      replayed += records.length;
    }
    if (snapshot !== undefined || replayed > 0) log(`store recovered: snapshot ${snapshot ?? 'none'}, ${replayed} journal records, ${this.index.size} quads`);
    this.journal = await Journal.open({
      dir: dataDir,
      segment: segments.at(-1) ?? snapshot ?? 1,
      fsync: this.options.fsync,
      snapshotAfterBytes: this.options.snapshotAfterBytes,
      onSizeExceeded: () => void this.snapshot(),
    });
  }

  /** Applies records in order; runs of inserts are loaded together, which is much faster. */
  private replay(records: JournalRecord[]): void {
    let pending = '';
    for (const record of records) {
      if (record.kind === 'load') {
        pending += record.text;
        if (pending.length < REPLAY_BATCH_BYTES) continue;
      }
      if (pending) this.index.loadTrusted(pending);
      pending = '';
      if (record.kind === 'update') this.index.apply(record);
    }
    if (pending) this.index.loadTrusted(pending);
  }

  /**
   * Makes `change` durable, applies it, then runs `onApplied` synchronously in the same tick,
   * so state derived from the store (domain indexes) changes together with it. Rejects, with
   * the store unchanged, when the journal cannot write.
   */
  commit(change: QuadChange, onApplied?: () => void): Promise<void> {
    const record = recordFor(change);
    return this.journal.append(record, () => {
      this.index.apply(record);
      onApplied?.();
    });
  }

  /** Folds the journal into a snapshot. Concurrent calls share one run. */
  snapshot(): Promise<void> {
    this.snapshotting ??= (async () => {
      const { dataDir, log } = this.options;
      try {
        const started = Date.now();
        const segment = await this.journal.rotate();
        await writeSnapshot(this.index, dataDir, segment);
        await removeSegmentsBefore(dataDir, segment);
        await removeSnapshotsBefore(dataDir, segment);
        log(`snapshot ${segment} written in ${Date.now() - started} ms (${this.index.size} quads)`);
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
