import type { ParsedQuery, ResultFormat } from './sparql-query.js';

// The SPARQL analytics service as the domain sees it, whatever answers the queries.

/**
 * What a query sees (the embedded store's replica worker builds them): the latest revision of every object (with the
 * Logistics Events: `events`), the revisions of the history window (one named graph each, metadata in the default
 * graph), the action requests and grants.
 */
export type View = 'latest' | 'revisions' | 'events' | 'audit';
export const VIEWS: readonly View[] = ['latest', 'revisions', 'events', 'audit'];

/** The graphs a query may use: its default graph is their union; it sees `named` as named graphs. */
export interface Dataset {
  default: string[];
  named: string[];
}

export interface QueryRequest {
  query: ParsedQuery;
  view: View;
  format: ResultFormat;
  dataset?: Dataset;
}

/** How far behind the store the answer is: the writes acknowledged before the query that it does not show. */
export interface ReplicaLag {
  commits: number;
  /** Age, when the answer was ready, of the oldest of those writes (0 when none). */
  millis: number;
}

export interface QueryResult {
  body: string;
  /** More rows (or triples) matched than the row cap; the answer holds the first `maxRows`. */
  truncated: boolean;
  lag: ReplicaLag;
}

/** The SPARQL service as the domain sees it: check a query, run it off the request thread. */
export interface QueryService {
  readonly maxRows: number;
  /**
   * Queries it runs at once; others handed to it wait in its own queue, so the domain hands it no more
   * (analytics/query-queue.ts).
   */
  readonly parallel: number;
  parse(text: string): ParsedQuery;
  run(request: QueryRequest): Promise<QueryResult>;
}
