import sparqljs from 'sparqljs';
import { invalidQuery } from './query-errors.js';

/** The four query forms; updates are refused before they get here. */
export type QueryForm = 'SELECT' | 'ASK' | 'CONSTRUCT' | 'DESCRIBE';

/** How a result is written: SPARQL results for SELECT/ASK, RDF for CONSTRUCT/DESCRIBE. */
export type ResultFormat = 'json' | 'xml' | 'csv' | 'tsv' | 'turtle' | 'ntriples' | 'jsonld';

export const RESULT_MEDIA_TYPES: Readonly<Record<ResultFormat, string>> = {
  json: 'application/sparql-results+json',
  xml: 'application/sparql-results+xml',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  turtle: 'text/turtle',
  ntriples: 'application/n-triples',
  jsonld: 'application/ld+json',
};

/** The formats each query form can be answered in, the default first. */
export const FORMATS_OF: Readonly<Record<QueryForm, readonly ResultFormat[]>> = {
  SELECT: ['json', 'xml', 'csv', 'tsv'],
  ASK: ['json', 'xml', 'csv', 'tsv'],
  CONSTRUCT: ['turtle', 'ntriples', 'jsonld'],
  DESCRIBE: ['turtle', 'ntriples', 'jsonld'],
};

/** A read-only query, checked and ready to run on the replica. */
export interface ParsedQuery {
  form: QueryForm;
  /** The query as the replica runs it: the caller's, with the row cap as its LIMIT. */
  text: string;
  /** Graphs named by the query's own FROM / FROM NAMED (the protocol's parameters override them). */
  from: { default: string[]; named: string[] };
}

/**
 * Parses a SPARQL request with sparqljs: anything that is not a query (an update) is refused,
 * a syntax error is refused with the parser's message and position. The query gets
 * `LIMIT maxRows + 1` (or keeps its own, smaller one), so the replica never builds more than one
 * row past the cap and the answer can say whether rows were cut off.
 */
export function parseQuery(text: string, maxRows: number): ParsedQuery {
  let parsed: sparqljs.SparqlQuery;
  try {
    parsed = new sparqljs.Parser().parse(text);
  } catch (err) {
    const { message, hash } = err as { message: string; hash?: { loc?: { first_line: number; first_column: number } } };
    const at = hash?.loc ? ` (line ${hash.loc.first_line}, column ${hash.loc.first_column + 1})` : '';
    throw invalidQuery(`SPARQL syntax error${at}: ${message}`);
  }
  if (parsed.type !== 'query')
    throw invalidQuery(
      'this endpoint is read-only: SPARQL updates are not accepted, only SELECT, ASK, CONSTRUCT and DESCRIBE queries',
    );
  const modifiable = parsed as { limit?: number };
  if (parsed.queryType !== 'ASK') modifiable.limit = Math.min(modifiable.limit ?? Infinity, maxRows + 1);
  const from = {
    default: (parsed.from?.default ?? []).map((g) => g.value),
    named: (parsed.from?.named ?? []).map((g) => g.value),
  };
  return { form: parsed.queryType, text: new sparqljs.Generator().stringify(parsed), from };
}
