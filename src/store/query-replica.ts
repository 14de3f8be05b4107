import { Worker } from 'node:worker_threads';
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
  id: number;
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

export type QueryReply = { id: number; body: string; truncated: boolean } | { id: number; error: string };

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

interface Pending {
  job: QueryJob;
  resolve(result: QueryResult): void;
  reject(error: HttpError): void;
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
  private worker?: Worker;
  private loaded = false;
  private running?: Pending & { timer: NodeJS.Timeout };
  private readonly waiting: Pending[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly source: OxigraphIndex,
    private readonly options: QueryReplicaOptions,
  ) {
    this.spawn();
  }

  get maxRows(): number {
    return this.options.maxRows;
  }

  parse(text: string): ParsedQuery {
    return parseQuery(text, this.options.maxRows);
  }

  /** Called by the store with each record it has applied, in commit order. */
  apply(record: StoredRecord): void {
    if (!this.worker) return;
    // Copies of just these bytes (records are views into larger buffers), handed over without another copy.
    const del = new Uint8Array(record.delete);
    const ins = new Uint8Array(record.insert);
    try {
      this.worker.postMessage({ kind: 'record', delete: del, insert: ins } satisfies ReplicaMessage, [del.buffer, ins.buffer]);
    } catch (err) {
      // The write is durable whatever happens here; a replica that missed a record is rebuilt.
      this.options.log(`SPARQL replica could not take a record (${(err as Error).message}); reloading it`);
      this.replaceWorker(unavailable('the query replica is being reloaded'));
    }
  }

  run(request: QueryRequest): Promise<QueryResult> {
    if (this.closed) return Promise.reject(unavailable('the server is shutting down'));
    if (this.waiting.length >= MAX_WAITING) return Promise.reject(unavailable('too many SPARQL queries are waiting'));
    const job: QueryJob = {
      kind: 'query',
      id: this.nextId++,
      view: request.view,
      form: request.query.form,
      text: request.query.text,
      format: request.format,
      maxRows: this.options.maxRows,
      dataset: request.dataset,
    };
    return new Promise<QueryResult>((resolve, reject) => {
      this.waiting.push({ job, resolve, reject });
      this.next();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.waiting.splice(0)) pending.reject(unavailable('the server is shutting down'));
    this.settle(unavailable('the server is shutting down'));
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private next(): void {
    if (this.running || !this.loaded || !this.worker || this.waiting.length === 0) return;
    const pending = this.waiting.shift()!;
    const budget = this.options.timeBudgetMs;
    const timer = setTimeout(() => this.replaceWorker(new HttpError(503, 'sparql_timeout', { message: `the query ran longer than its time budget of ${budget} ms and was stopped; narrow it down (filters, LIMIT) or ask the operator for a larger budget` }, 'Service unavailable')), budget);
    this.running = { ...pending, timer };
    this.worker.postMessage(pending.job satisfies ReplicaMessage);
  }

  private spawn(): void {
    const worker = new Worker(new URL('./query-replica-worker.js', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    worker.unref(); // never keeps a process alive on its own
    this.worker = worker;
    this.loaded = false;
    worker.on('message', (reply: QueryReply | { kind: 'loaded' }) => {
      if (worker !== this.worker) return;
      if ('kind' in reply) {
        this.loaded = true;
      } else if ('error' in reply) {
        this.settle(new HttpError(400, 'sparql_query_failed', { message: `the query could not be evaluated: ${reply.error}`, property: 'query' }, 'Invalid query parameter request'));
      } else {
        this.settle(undefined, { body: reply.body, truncated: reply.truncated });
      }
      this.next();
    });
    const lost = (err?: unknown) => {
      if (worker !== this.worker) return;
      this.options.log(`SPARQL worker stopped (${err instanceof Error ? err.message : 'exit'}); starting a new one`);
      this.replaceWorker(unavailable('the query could not be evaluated within the server\'s memory limits'));
    };
    worker.on('error', lost);
    worker.on('exit', () => lost());
    void this.load(worker);
  }

  /** Posts every graph of the store to a new worker, a few at a time, then tells it the copy is complete. */
  private async load(worker: Worker): Promise<void> {
    const started = Date.now();
    const graphs = this.source.listGraphs();
    for (let i = 0; i < graphs.length; i++) {
      if (worker !== this.worker) return;
      worker.postMessage({ kind: 'graph', graph: graphs[i], ntriples: this.source.graphNTriples(graphs[i]) } satisfies ReplicaMessage);
      if (i % GRAPHS_PER_TURN === GRAPHS_PER_TURN - 1) await new Promise((resolve) => setImmediate(resolve));
    }
    if (worker !== this.worker) return;
    worker.postMessage({ kind: 'loaded' } satisfies ReplicaMessage);
    if (graphs.length > 0) this.options.log(`SPARQL replica: ${graphs.length} graphs sent to the query worker in ${Date.now() - started} ms`);
  }

  /** Stops the worker (the query it runs fails with `error`) and starts a new one unless closing. */
  private replaceWorker(error: HttpError): void {
    const worker = this.worker;
    this.worker = undefined;
    this.settle(error);
    void worker?.terminate();
    if (!this.closed) this.spawn();
  }

  private settle(error: HttpError | undefined, result?: QueryResult): void {
    const running = this.running;
    if (!running) return;
    this.running = undefined;
    clearTimeout(running.timer);
    if (error) running.reject(error);
    else running.resolve(result!);
  }
}

const unavailable = (why: string) => new HttpError(503, 'sparql_unavailable', { message: `${why}; try again shortly` }, 'Service unavailable');
