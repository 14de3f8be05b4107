import oxigraph from 'oxigraph';
import type { JournalRecord, StoredRecord } from './journal.js';

const NQUADS = 'application/n-quads';
const NTRIPLES = 'application/n-triples';

export interface SparqlJsonResults {
  head: { vars: string[] };
  results: { bindings: Record<string, { type: string; value: string; datatype?: string; 'xml:lang'?: string }>[] };
}

/**
 * The in-memory Oxigraph store, used as an index that is rebuilt from snapshot + journal at
 * start. Results come back as strings (N-Triples, SPARQL JSON) so no WASM-held term objects
 * pile up on hot paths.
 */
/*
 * Oxigraph's WASM memory grows a little at a time as data arrives, and every growth makes V8
 * start a full garbage collection: measured here, a steady write load spent ~40% of its CPU in
 * GC. So the index grows that memory ahead of need, in large steps, by handing Oxigraph a big
 * byte buffer that fails to parse at its first byte: the bindings copy it into WASM memory
 * (growing it once), the parse fails, and the freed space is reused by the store's data.
 */
/** WASM bytes one byte of loaded N-Quads text may take (measured ~3 for short literals; kept high). */
const WASM_BYTES_PER_TEXT_BYTE = 4;
const GROWTH_STEP_MIN = 64 * 1024 * 1024;
const GROWTH_STEP_MAX = 256 * 1024 * 1024;
/** Not valid N-Quads at its first byte, so the reservation is refused at once. */
const INVALID_FIRST_BYTE = 0x21;

export class OxigraphIndex {
  private readonly store = new oxigraph.Store();
  /** Estimated free WASM memory, and how much has been reserved in all. */
  private headroom = 0;
  private reserved = 0;

  get size(): number {
    return this.store.size;
  }

  /**
   * Applies a journal record, all or nothing. Live writes and replay take this same path, so a
   * record that was applied before a crash is applied the same way after it. Parsing is lenient
   * (no IRI syntax checks) because records are our own serialisation: a strict check that could
   * fail here, after the record is durable, would make it a record that fails at every start.
   */
  apply(record: JournalRecord | StoredRecord): void {
    // Parse the deletions first and delete last: load() is itself atomic, so a failure anywhere leaves the store as it was.
    const deletions = record.delete.length > 0 ? oxigraph.parse(record.delete, { format: NQUADS, lenient: true }) : [];
    if (record.insert.length > 0) this.loadTrusted(record.insert);
    for (const q of deletions) this.store.delete(q);
  }

  /** Loads our own N-Quads (records, snapshots), as text or UTF-8 bytes, without re-validating IRIs. */
  loadTrusted(nquads: string | Uint8Array | Uint8Array[]): void {
    const bytes = typeof nquads === 'string' || nquads instanceof Uint8Array ? nquads.length : nquads.reduce((sum, b) => sum + b.length, 0);
    this.keepHeadroom(bytes);
    this.store.load(nquads, { format: NQUADS, lenient: true });
  }

  /** Grows WASM memory in one large step when the estimated free space runs low (see above). */
  private keepHeadroom(incomingBytes: number): void {
    this.headroom -= incomingBytes * WASM_BYTES_PER_TEXT_BYTE;
    if (this.headroom > GROWTH_STEP_MIN / 4) return;
    const step = Math.min(GROWTH_STEP_MAX, Math.max(GROWTH_STEP_MIN, this.reserved / 2, -this.headroom));
    const buffer = new Uint8Array(step);
    buffer[0] = INVALID_FIRST_BYTE;
    try {
      this.store.load(buffer, { format: NQUADS });
    } catch {
      // Expected: the buffer is refused at its first byte, after it was copied into WASM memory.
    }
    this.headroom = step;
    this.reserved += step;
  }

  /** One graph as N-Triples text (empty string if the graph is empty or unknown). */
  graphNTriples(graph: string): string {
    return this.store.dump({ format: NTRIPLES, from_graph_name: oxigraph.namedNode(graph) });
  }

  /** The default graph as N-Triples text (stored data normally keeps it empty). */
  defaultGraphNTriples(): string {
    return this.store.dump({ format: NTRIPLES, from_graph_name: oxigraph.defaultGraph() });
  }

  select(sparql: string): SparqlJsonResults {
    return JSON.parse(this.store.query(sparql, { results_format: 'application/sparql-results+json' }) as string) as SparqlJsonResults;
  }

  ask(sparql: string): boolean {
    return this.store.query(sparql) as boolean;
  }

  listGraphs(): string[] {
    return this.select('SELECT ?g WHERE { GRAPH ?g { } }').results.bindings.map((b) => b.g.value);
  }
}
