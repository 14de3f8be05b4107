import type { Quad } from '../rdf/terms.js';
import type { SparqlJsonResults } from './oxigraph-index.js';

/** Triples to add to one named graph, given without a quad built for each. */
export interface GraphInsert {
  graph: string;
  triples: readonly Quad[];
}

/** A set of quads to remove and to add, applied as one atomic step. */
export interface QuadChange {
  insert: Quad[];
  /** More to add, graph by graph (a revision's copy of its object). */
  graphs?: GraphInsert[];
  delete?: Quad[];
}

/** What the query modules need: SPARQL SELECT with results as SPARQL JSON. */
export interface SparqlReader {
  select(sparql: string): SparqlJsonResults;
}

/**
 * The store as the domain sees it. `DurableStore` (journal + embedded Oxigraph) is the one
 * implementation; a remote SPARQL 1.1 store would implement the same seam, fed from the journal
 * (the source of truth) and keeping the synchronous reads answered from a local replica.
 */
export interface GraphStore extends SparqlReader {
  /**
   * Makes `change` durable and applies it, then runs `onApplied` in the same tick; rejects with
   * the store unchanged when it cannot be made durable.
   */
  commit(change: QuadChange, onApplied?: () => void): Promise<void>;
  /** One named graph as N-Triples text (empty if unknown). */
  graphNTriples(graph: string): string;
}
