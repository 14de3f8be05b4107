import type { Quad } from '../rdf/terms.js';

/** SPARQL SELECT results in the SPARQL 1.1 Query Results JSON Format. */
export interface SparqlJsonResults {
  head: { vars: string[] };
  results: { bindings: Record<string, { type: string; value: string; datatype?: string; 'xml:lang'?: string }>[] };
}

/** What the query modules need: SPARQL SELECT with results as SPARQL JSON. */
export interface SparqlReader {
  select(sparql: string): Promise<SparqlJsonResults>;
}

/** What the store schema modules need to read one named graph back. */
export interface GraphReader {
  /** The triples of one named graph (none if unknown), as the store keeps them. */
  graphTriples(graph: string): Promise<Quad[]>;
}
