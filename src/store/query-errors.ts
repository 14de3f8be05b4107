import { HttpError } from '../errors.js';

// How a SPARQL analytics query fails, the same whichever backend answers it (codes the metrics and clients tell apart).

/** The query ran past `sparql.timeBudgetMillis` and was stopped. */
export const queryTimedOut = (budgetMs: number) =>
  new HttpError(503, 'sparql_timeout', { message: `the query ran longer than its time budget of ${budgetMs} ms and was stopped; narrow it down (filters, LIMIT) or ask the operator for a larger budget` }, 'Service unavailable');

/** The query parsed but could not be evaluated (the evaluator's message). */
export const queryFailed = (why: string) =>
  new HttpError(400, 'sparql_query_failed', { message: `the query could not be evaluated: ${why}`, property: 'query' }, 'Invalid query parameter request');

/** Nothing can answer the query now; a later one may be. */
export const queryUnavailable = (why: string) => new HttpError(503, 'sparql_unavailable', { message: `${why}; try again shortly` }, 'Service unavailable');
