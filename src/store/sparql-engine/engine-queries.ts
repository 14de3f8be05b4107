import { StoreFailedError, StoreUnavailableError } from '../errors.js';
import { QueryError, queryFailed, queryTimedOut, queryUnavailable } from '../query-errors.js';
import type { Dataset, QueryRequest, QueryResult, QueryService, View } from '../query-service.js';
import { parseQuery, type ParsedQuery } from '../sparql-query.js';
import { writeBoolean, writeSolutions, writeTriples } from '../sparql-results.js';
import { checkEngineQuery, MAX_DATASET_GRAPHS, withDataset } from './engine-dataset.js';
import { engineViews, inGraphSet, type ViewGraphs } from './engine-views.js';
import { normalisedResults, readEngineNTriples } from './engine-literals.js';
import { EngineTimeoutError, type SparqlClient } from './sparql-client.js';
import { overWholeView } from './whole-view-query.js';

export interface EngineQueriesOptions {
  maxRows: number;
  /**
   * `sparql.timeBudgetMillis`: the client's time for one query (and the engine's, see
   * SparqlClientOptions.engineTimeout).
   */
  timeBudgetMs: number;
  /** The server's base URL: the graphs of each view are named after it (engine-views.ts). */
  baseUrl: string;
  /** The client's connections: queries beyond wait for one. */
  parallel: number;
}

/** The engine is the store: an answer shows every write acknowledged before the query. */
const NO_LAG = { commits: 0, millis: 0 };

/**
 * `/sparql` with the engine backend: each query goes to the engine itself, over the dataset the
 * domain chose for its caller, kept to the graphs of its view (engine-dataset.ts), or, without
 * one, over the whole view (whole-view-query.ts); the time budget is the client's timeout, and
 * the answer is written as the embedded replica writes one (literals in Oxigraph's forms, the row
 * cap, the same formats), so both backends answer alike.
 */
export class EngineQueries implements QueryService {
  private readonly views: Record<View, ViewGraphs>;

  /**
   * `engine`: a client for analytics alone, its timeout the time budget (queries never hold the store's connections).
   */
  constructor(
    private readonly engine: SparqlClient,
    private readonly options: EngineQueriesOptions,
  ) {
    this.views = engineViews(options.baseUrl);
  }

  get maxRows(): number {
    return this.options.maxRows;
  }

  get parallel(): number {
    return this.options.parallel;
  }

  parse(text: string): ParsedQuery {
    const parsed = parseQuery(text, this.options.maxRows);
    checkEngineQuery(parsed.text);
    return parsed;
  }

  async run(request: QueryRequest): Promise<QueryResult> {
    const view = this.views[request.view];
    const text = request.dataset
      ? withDataset(request.query.text, checkedSize(inView(request.dataset, view)))
      : overWholeView(request.query.text, view);
    const { body, truncated } = await this.engineCall(() => this.answer(request, text));
    return { body, truncated, lag: NO_LAG };
  }

  private async answer({ query, format }: QueryRequest, text: string): Promise<{ body: string; truncated: boolean }> {
    const maxRows = this.options.maxRows;
    if (query.form === 'ASK')
      return { body: writeBoolean(await this.engine.ask(text), format as 'json'), truncated: false };
    if (query.form === 'SELECT') {
      const answer = normalisedResults(await this.engine.select(text));
      // Only what the SPARQL 1.1 JSON format holds (Virtuoso adds head.link, results.distinct and ordered).
      const bindings = answer.results.bindings;
      const truncated = bindings.length > maxRows;
      if (truncated) bindings.length = maxRows;
      return {
        body: writeSolutions({ head: { vars: answer.head.vars }, results: { bindings } }, format as 'json'),
        truncated,
      };
    }
    const triples = readEngineNTriples(await this.engine.construct(text));
    const truncated = triples.length > maxRows;
    if (truncated) triples.length = maxRows;
    return { body: await writeTriples(triples, format as 'turtle'), truncated };
  }

  /**
   * Runs a call to the engine, its errors as the embedded replica's: past the budget 503, a query the engine refused
   * 400, else 503.
   */
  private async engineCall<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (err instanceof EngineTimeoutError) throw queryTimedOut(this.options.timeBudgetMs);
      if (err instanceof StoreFailedError) throw queryFailed(err.message);
      if (err instanceof StoreUnavailableError) throw queryUnavailable(err.message);
      throw err;
    }
  }
}

/**
 * The graphs of a dataset that are in the view (in either role: a revision as the default graph, say); the others are
 * empty graphs.
 */
function inView(dataset: Dataset, view: ViewGraphs): Dataset {
  const graphOfView = (graph: string) => inGraphSet(view.named, graph) || inGraphSet(view.default, graph);
  return { default: dataset.default.filter(graphOfView), named: dataset.named.filter(graphOfView) };
}

/** A dataset past what the engine compiles is refused before it is sent (measured, see MAX_DATASET_GRAPHS). */
function checkedSize(dataset: Dataset): Dataset {
  const graphs = Math.max(dataset.default.length, dataset.named.length);
  if (graphs <= MAX_DATASET_GRAPHS) return dataset;
  throw new QueryError(
    'unavailable',
    'sparql_dataset_too_large',
    `the query would see ${graphs} graphs, more than the ${MAX_DATASET_GRAPHS} the SPARQL engine takes in one ` +
      `query's dataset; name fewer graphs (default-graph-uri, named-graph-uri, FROM, FROM NAMED), or query the ` +
      `engine directly (docs/sparql-engine.md, "SPARQL analytics")`,
  );
}
