import oxigraph from 'oxigraph';
import type { JournalRecord } from './journal.js';

const NQUADS = 'application/n-quads';

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

  apply(record: JournalRecord): void {
    if (record.kind === 'load') this.store.load(record.text, { format: NQUADS });
    else this.store.update(record.text);
  }

  /** Loads our own trusted N-Quads (snapshot, journal replay) without re-validating IRIs. */
  loadTrusted(nquads: string): void {
    this.store.load(nquads, { format: NQUADS, lenient: true });
  }

  /** One graph as N-Triples text (empty string if the graph is empty or unknown). */
  graphNTriples(graph: string): string {
    return this.store.dump({ format: 'application/n-triples', from_graph_name: oxigraph.namedNode(graph) });
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
