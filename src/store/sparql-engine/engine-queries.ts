import { HttpError } from '../../errors.js';
import type { QueryResult, QueryService } from '../query-service.js';
import { parseQuery, type ParsedQuery } from '../sparql-query.js';

/**
 * `/sparql` with the engine backend. Not built yet: the views (latest, events, revisions, audit)
 * and the access scoping have to become datasets of the engine's own graphs first
 * (docs/sparql-engine.md, "Not yet on the engine"). Until then a query is refused with 501,
 * and analysts query the engine itself.
 */
export class EngineQueries implements QueryService {
  constructor(readonly maxRows: number) {}

  parse(text: string): ParsedQuery {
    return parseQuery(text, this.maxRows);
  }

  async run(): Promise<QueryResult> {
    throw new HttpError(501, 'sparql_not_on_engine', {
      message: 'SPARQL analytics through this server are not available with store.backend sparql yet: query the engine directly',
    });
  }
}
