// How a SPARQL analytics query fails, the same whichever backend answers it (codes the metrics and
// clients tell apart). The HTTP layer maps each kind to its status in one place (error-responses.ts).

/** What went wrong: the query itself (`invalid`, `failed`), or the server's means to answer it now. */
export type QueryFailure = 'invalid' | 'failed' | 'timed_out' | 'unavailable';

export class QueryError extends Error {
  constructor(
    readonly failure: QueryFailure,
    /** Stable, for logs, metrics and tests. */
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The query is not one this endpoint runs: a syntax error, an update, a feature the backend refuses. */
export const invalidQuery = (message: string) => new QueryError('invalid', 'invalid_sparql_query', message);

/** The query ran past `sparql.timeBudgetMillis` and was stopped. */
export const queryTimedOut = (budgetMs: number) =>
  new QueryError(
    'timed_out',
    'sparql_timeout',
    `the query ran longer than its time budget of ${budgetMs} ms and was stopped; narrow it down (filters, LIMIT) or ` +
      `ask the operator for a larger budget`,
  );

/** The query parsed but could not be evaluated (the evaluator's message). */
export const queryFailed = (why: string) =>
  new QueryError('failed', 'sparql_query_failed', `the query could not be evaluated: ${why}`);

/** Nothing can answer the query now; a later one may be. */
export const queryUnavailable = (why: string) =>
  new QueryError('unavailable', 'sparql_unavailable', `${why}; try again shortly`);
