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
export class OxigraphIndex {
  private readonly store = new oxigraph.Store();

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
    this.store.load(nquads, { format: NQUADS, lenient: true });
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
