import type { Worker } from 'node:worker_threads';
import { BudgetedWorker } from '../budgeted-worker.js';
import { HttpError } from '../errors.js';
import type { StoredRecord } from './journal.js';
import type { OxigraphIndex } from './oxigraph-index.js';
import { parseQuery, type ParsedQuery, type QueryForm, type ResultFormat } from './sparql-query.js';

/**
 * What a query sees (see the worker): the latest revision of every object (with the Logistics
 * Events: `events`), every revision (one named graph each, metadata in the default graph), the
 * action requests.
 */
export type View = 'latest' | 'revisions' | 'events' | 'audit';
export const VIEWS: readonly View[] = ['latest', 'revisions', 'events', 'audit'];

/** The graphs a query may use: its default graph is their union; it sees `named` as named graphs. */
export interface Dataset {
  default: string[];
  named: string[];
}

export interface QueryJob {
  kind: 'query';
  view: View;
  form: QueryForm;
  text: string;
  format: ResultFormat;
  maxRows: number;
  /** Absent: the view's own dataset, whole. */
  dataset?: Dataset;
}

/** Messages to the worker, in the order the replica must apply them. */
export type ReplicaMessage =
  | { kind: 'graph'; graph: string; ntriples: string }
  | { kind: 'loaded' }
  | { kind: 'record'; delete: Uint8Array; insert: Uint8Array }
  | QueryJob;

export type QueryReply = { body: string; truncated: boolean } | { error: string };

/** Messages from the worker: its replica is loaded, it has begun the query it was sent, the query's reply. */
export type WorkerMessage = { kind: 'loaded' } | { kind: 'started' } | QueryReply;

export interface QueryRequest {
  query: ParsedQuery;
  view: View;
  format: ResultFormat;
  dataset?: Dataset;
}

export interface QueryResult {
  body: string;
  /** More rows (or triples) matched than the row cap; the answer holds the first `maxRows`. */
  truncated: boolean;
}

/** The SPARQL service as the domain sees it: check a query, run it off the request thread. */
export interface QueryService {
  readonly maxRows: number;
  parse(text: string): ParsedQuery;
  run(request: QueryRequest): Promise<QueryResult>;
}

export interface QueryReplicaOptions {
  /** Time a query may run before the worker is stopped and replaced. */
  timeBudgetMs: number;
  maxRows: number;
  log: (message: string) => void;
}

/** Queries waiting for the worker; past this many, a query is refused with 503 rather than queued. */
const MAX_WAITING = 32;
/** JavaScript heap of the worker (answers being serialised; Oxigraph's WASM memory is apart): a runaway answer fails the worker, not the server. */
const WORKER_HEAP_MB = 2048;
/** Graphs posted to a loading worker between two turns of the event loop (keeps the API responsive while it loads). */
const GRAPHS_PER_TURN = 200;

/**
 * Analytics queries on a worker thread that holds its own replica of the store. Oxigraph queries
 * cannot be interrupted, so they must never run on the thread that serves requests; a query past
 * its time budget stops the worker, which is replaced by a new one that loads the store again.
 * The replica is fed in commit order: at start (and after a replacement) the store's graphs, then
 * every committed record as it is applied to the store; both only insert or delete given quads,
 * so records that arrive while the graphs are being copied converge to the same state.
 */
export class QueryReplica implements QueryService {
  private readonly queries: BudgetedWorker<QueryJob, QueryReply, QueryResult>;

  constructor(
    private readonly source: OxigraphIndex,
    private readonly options: QueryReplicaOptions,
  ) {
    this.queries = new BudgetedWorker<QueryJob, QueryReply, QueryResult>({
      module: new URL('./query-replica-worker.js', import.meta.url),
      heapMb: WORKER_HEAP_MB,
      budgetMs: options.timeBudgetMs,
      maxWaiting: MAX_WAITING,
      // The worker holds the replica: a new one starts loading at once, not when a query comes.
      eager: true,
      isReady: (message) => (message as { kind?: string }).kind === 'loaded',
      // The worker applies the writes posted before a query first; the budget is the query's own time.
      isStarted: (message) => (message as { kind?: string }).kind === 'started',
      settle: (reply) =>
        'error' in reply
          ? new HttpError(400, 'sparql_query_failed', { message: `the query could not be evaluated: ${reply.error}`, property: 'query' }, 'Invalid query parameter request')
          : { body: reply.body, truncated: reply.truncated },
      overBudget: (budget) =>
        new HttpError(503, 'sparql_timeout', { message: `the query ran longer than its time budget of ${budget} ms and was stopped; narrow it down (filters, LIMIT) or ask the operator for a larger budget` }, 'Service unavailable'),
      lost: () => unavailable('the query could not be evaluated within the server\'s memory limits'),
      busy: (reason) => unavailable(reason === 'closing' ? 'the server is shutting down' : 'too many SPARQL queries are waiting'),
      started: (worker) => void this.load(worker),
      log: (message) => options.log(`SPARQL ${message}`),
    });
  }

  get maxRows(): number {
    return this.options.maxRows;
  }

  parse(text: string): ParsedQuery {
    return parseQuery(text, this.options.maxRows);
  }

  /** Called by the store with each record it has applied, in commit order. */
  apply(record: StoredRecord): void {
    const worker = this.queries.worker;
    if (!worker) return;
    // Copies of just these bytes (records are views into larger buffers), handed over without another copy.
    const del = new Uint8Array(record.delete);
    const ins = new Uint8Array(record.insert);
    try {
      worker.postMessage({ kind: 'record', delete: del, insert: ins } satisfies ReplicaMessage, [del.buffer, ins.buffer]);
    } catch (err) {
      // The write is durable whatever happens here; a replica that missed a record is rebuilt.
      this.options.log(`SPARQL replica could not take a record (${(err as Error).message}); reloading it`);
      this.queries.replace(unavailable('the query replica is being reloaded'));
    }
  }

  run(request: QueryRequest): Promise<QueryResult> {
    return this.queries.run({
      kind: 'query',
      view: request.view,
      form: request.query.form,
      text: request.query.text,
      format: request.format,
      maxRows: this.options.maxRows,
      dataset: request.dataset,
    });
  }

  close(): Promise<void> {
    return this.queries.close();
  }

  /** Posts every graph of the store to a new worker, a few at a time, then tells it the copy is complete. */
  private async load(worker: Worker): Promise<void> {
    await Promise.resolve(); // the first worker starts while this replica is being constructed
    const started = Date.now();
    const graphs = this.source.listGraphs();
    for (let i = 0; i < graphs.length; i++) {
      if (worker !== this.queries.worker) return;
      worker.postMessage({ kind: 'graph', graph: graphs[i], ntriples: this.source.graphNTriples(graphs[i]) } satisfies ReplicaMessage);
      if (i % GRAPHS_PER_TURN === GRAPHS_PER_TURN - 1) await new Promise((resolve) => setImmediate(resolve));
    }
    if (worker !== this.queries.worker) return;
    worker.postMessage({ kind: 'loaded' } satisfies ReplicaMessage);
    if (graphs.length > 0) this.options.log(`SPARQL replica: ${graphs.length} graphs sent to the query worker in ${Date.now() - started} ms`);
  }
}

const unavailable = (why: string) => new HttpError(503, 'sparql_unavailable', { message: `${why}; try again shortly` }, 'Service unavailable');
