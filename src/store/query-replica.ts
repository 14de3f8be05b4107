import type { Worker } from 'node:worker_threads';
import { BudgetedWorker } from '../budgeted-worker.js';
import { HttpError } from '../errors.js';
import type { StoredRecord } from './journal.js';
import { packCommits, type PackedCommits, type ReplicaCommit } from './replica-commits.js';
import type { View } from './replica-layout.js';
import { parseQuery, type ParsedQuery, type QueryForm, type ResultFormat } from './sparql-query.js';

export { VIEWS, type View } from './replica-layout.js';

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

/**
 * What feeds the replica, in the order it must apply it: for a new worker, `start`, a copy of the
 * hot store's metadata graph (`meta`) and other graphs (`hot`) and of the newest history from the
 * archive (`history`, newest first, one revision or finished request per entry), with each commit
 * made meanwhile in between, in commit order, as it comes (`commits`, one each); `loaded` with the
 * position of the last commit sent; then batches of commits, each with the position of its last
 * commit. Positions count commits since start. They travel on the same port as queries, so a
 * query sent after a batch runs after it.
 */
export type FeedMessage =
  | { kind: 'start'; historyMaxQuads: number; queryReserveBytes?: number; memoryLimitBytes?: number }
  | { kind: 'meta'; nquads: string }
  | { kind: 'hot'; nquads: string }
  | { kind: 'history'; entries: string[] }
  | { kind: 'loaded'; position: number }
  | { kind: 'commits'; commits: PackedCommits; position: number };

/** Messages to the worker, in order. */
export type WorkerRequest = FeedMessage | QueryJob;

/** A query's answer; `position`: the last commit the replica had applied when it ran the query. */
export interface QueryAnswer {
  body: string;
  truncated: boolean;
  position: number;
}

export type QueryReply = QueryAnswer | { error: string };

/**
 * Messages from the worker: its replica is loaded, it has applied every commit up to `position`,
 * its memory can take no more (it applies nothing from then on), its thread may not raise its CPU
 * priority back after a query, it has begun the query it was sent, the query's reply.
 */
export type WorkerMessage =
  | { kind: 'loaded' }
  | { kind: 'applied'; position: number }
  | { kind: 'full'; message: string; reclaimable: boolean }
  | { kind: 'priority'; message: string }
  | { kind: 'started' }
  | QueryReply;

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
  parse(text: string): ParsedQuery;
  run(request: QueryRequest): Promise<QueryResult>;
}

/** What a new replica copies, as the store holds it at the moment it is asked (the graphs' and history's content is read later, as it is copied). */
export interface ReplicaCopy {
  /** The revision metadata graph as N-Quads: it tells which graphs are objects, and their latest revisions. */
  meta: string;
  /** The hot store's other graphs that a view shows. */
  hotGraphs: string[];
  /** The history in the archive before each object's latest revision, newest first: the N-Quads of one revision (its graph and its metadata) or of one finished action request each. */
  history: Iterator<string>;
}

/** Where a new replica copies the store from. */
export interface ReplicaSource {
  copy(): ReplicaCopy;
  /** A graph of the hot store as N-Triples. */
  graphNTriples(graph: string): string;
}

export interface QueryReplicaOptions {
  /** Time a query may run before the worker is stopped and replaced. */
  timeBudgetMs: number;
  maxRows: number;
  /** Longest a query waits for the replica to apply the writes acknowledged before it; then it runs on what the replica holds. */
  freshnessWaitMs: number;
  /** Longest a query waits for a new replica to finish its copy of the store; then it is answered 503 (default 10 s). */
  copyWaitMs?: number;
  /** Bytes of journal records waiting for the worker past which it is replaced by one that copies the store (memory stays bounded). */
  maxBacklogBytes?: number;
  /** Quads of history (whole revisions, finished action requests) the replica holds at most, newest first. */
  historyMaxQuads: number;
  /** WASM memory the replica keeps free for queries (default 256 MB); data that would take it makes the replica full: it stops, and queries are refused. */
  queryReserveBytes?: number;
  /** The size its WASM memory may grow to, data and that reserve (default: the 4 GiB WASM32 can address); past it the replica is full as above. */
  memoryLimitBytes?: number;
  /** Told, for each commit, how long after it was published on the after-commit stream the replica had applied it (a query sees it from then on). */
  observeVisible?: (seconds: number) => void;
  log: (message: string) => void;
}

/** Queries waiting for the worker; past this many, a query is refused with 503 rather than queued. */
const MAX_WAITING = 32;
/** JavaScript heap of the worker (answers being serialised; Oxigraph's WASM memory is apart): a runaway answer fails the worker, not the server. */
const WORKER_HEAP_MB = 2048;
/** Graphs copied to a loading worker between two turns of the event loop (keeps the API responsive while it loads). */
const GRAPHS_PER_TURN = 200;
/** Characters of history copied to a loading worker between two turns of the event loop. */
const HISTORY_CHARS_PER_TURN = 512 * 1024;
/** One batch of commits at most (a query the worker gets meanwhile waits for this batch only, a fraction of a second). */
const BATCH_COMMITS = 250;
const BATCH_BYTES = 2 * 1024 * 1024;
/** Default of `copyWaitMs`: a new worker copies a small store in well under a second, a large one in seconds. */
const COPY_WAIT_MS = 10_000;
/** Default of `maxBacklogBytes`. */
const MAX_BACKLOG_BYTES = 128 * 1024 * 1024;
/** When each of the last this many commits was acknowledged (for the lag of an answer). */
const COMMIT_TIMES = 1 << 17;

/**
 * Analytics queries on a worker thread that holds its own replica of the store. Oxigraph queries
 * cannot be interrupted, so they must never run on the thread that serves requests; a query past
 * its time budget stops the worker, which is replaced by a new one that copies the store again.
 *
 * The replica is fed from the after-commit stream: each commit's journal record, the bytes the
 * hot store applied (a change's deletes and inserts, whatever the object's size), is queued here
 * as it is, in commit order, and whatever queued while the worker was busy goes to it as one
 * batch when it is done with the last; the worker decodes and applies them (see ReplicaStore).
 * A new worker first gets a copy of the hot store's graphs and of the newest history, then the
 * commits from the moment the copy began; both only insert or delete given quads, so the commits
 * the copy already holds change nothing when applied again.
 *
 * A query waits (at most `freshnessWaitMs`) for the replica to hold every write acknowledged
 * before it, then runs on what the replica holds; its answer says how far behind that was.
 */
export class QueryReplica implements QueryService {
  private readonly queries: BudgetedWorker<QueryJob, QueryReply, QueryAnswer>;
  /** Commits fed so far (a commit's position is its number) and the last one the worker has applied. */
  private committed = 0;
  private applied = 0;
  /** Commits not yet sent to the worker, in order; positions `committed - unsent.length + 1` to `committed`. */
  private unsent: ReplicaCommit[] = [];
  private unsentBytes = 0;
  private readonly commitTimes = new Float64Array(COMMIT_TIMES);
  /** The current worker; a batch is with it (`sending`); it is getting a copy of the store (`loading`). */
  private worker?: Worker;
  /** The newest worker started: it gets the copy (from a later turn on, see load). */
  private starting?: Worker;
  private sending = false;
  private loading = true;
  /** The worker has applied its whole copy (it said so with its first `applied`); queries wait for it `freshnessWaitMs` at most. */
  private copied = false;
  private readonly waiting = new Set<{ target: number; wake(): void }>();
  /** Why the replica takes no more commits (its memory is full), until the server restarts: queries are refused. */
  private full: string | undefined;
  private prioritySaid = false;

  constructor(
    private readonly source: ReplicaSource,
    private readonly options: QueryReplicaOptions,
  ) {
    this.queries = new BudgetedWorker({
      module: new URL('./query-replica-worker.js', import.meta.url),
      heapMb: WORKER_HEAP_MB,
      budgetMs: options.timeBudgetMs,
      maxWaiting: MAX_WAITING,
      // The worker holds the replica: a new one starts loading at once, not when a query comes.
      eager: true,
      isReady: (message) => (message as { kind?: string }).kind === 'loaded',
      // The worker may apply a batch of writes first; the budget is the query's own time.
      isStarted: (message) => (message as { kind?: string }).kind === 'started',
      isNotice: (message) => ['applied', 'full', 'priority'].includes((message as { kind?: string }).kind ?? ''),
      onNotice: (message) => {
        const notice = message as Extract<WorkerMessage, { kind: 'applied' | 'full' | 'priority' }>;
        if (notice.kind === 'applied') this.onApplied(notice.position);
        else if (notice.kind === 'full') this.onFull(notice.message, notice.reclaimable);
        else this.onPriorityStuck(notice.message);
      },
      settle: (reply: QueryReply) =>
        'error' in reply
          ? new HttpError(400, 'sparql_query_failed', { message: `the query could not be evaluated: ${reply.error}`, property: 'query' }, 'Invalid query parameter request')
          : reply,
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

  /** A consumer of the after-commit stream: queues a copy of the commit's journal record for the worker (its bytes are the journal's). */
  onCommitted(record: StoredRecord): void {
    this.committed++;
    if (this.full) return;
    this.commitTimes[this.committed % COMMIT_TIMES] = performance.now();
    // Views of the record's journal buffer, which nothing writes again: they are copied into the buffer that goes to the worker (post).
    const commit = { insert: record.insert, delete: record.delete };
    this.unsentBytes += commit.insert.byteLength + commit.delete.byteLength;
    if (this.loading && this.worker) {
      // Between the parts of the copy, as it comes: a part read after this commit holds it too (see ReplicaStore).
      this.post([commit], this.committed);
    } else {
      this.unsent.push(commit);
    }
    if (this.unsentBytes > (this.options.maxBacklogBytes ?? MAX_BACKLOG_BYTES)) {
      // Copying the store is bounded by its size; a backlog is not.
      this.options.log(`SPARQL replica is ${this.unsent.length} commits behind; a new one copies the store instead`);
      this.queries.replace(unavailable('the query replica fell too far behind and is being reloaded'));
      return;
    }
    this.send();
  }

  async run(request: QueryRequest): Promise<QueryResult> {
    this.refuseIfFull();
    const target = this.committed;
    // A copy takes seconds on a large store: a query is not held for all of it.
    if (!this.copied) await this.caughtUp(target, this.options.copyWaitMs ?? COPY_WAIT_MS);
    this.refuseIfFull();
    if (!this.copied) throw unavailable('the query replica is copying the store (after a start or a reload)');
    if (this.applied < target && !this.flushed()) await this.caughtUp(target, this.options.freshnessWaitMs);
    this.refuseIfFull();
    const reply = await this.queries.run({
      kind: 'query',
      view: request.view,
      form: request.query.form,
      text: request.query.text,
      format: request.format,
      maxRows: this.options.maxRows,
      dataset: request.dataset,
    });
    return { body: reply.body, truncated: reply.truncated, lag: this.lag(reply.position, target) };
  }

  close(): Promise<void> {
    for (const waiter of this.waiting) waiter.wake();
    return this.queries.close();
  }

  /** Resolves when the worker has applied commit `target`, or after `waitMs`, whichever comes first. */
  private caughtUp(target: number, waitMs: number): Promise<void> {
    if (this.waiting.size >= MAX_WAITING) return Promise.reject(unavailable('too many SPARQL queries are waiting'));
    return new Promise((resolve) => {
      const waiter = {
        target,
        wake: () => {
          clearTimeout(timer);
          this.waiting.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(waiter.wake, waitMs);
      this.waiting.add(waiter);
    });
  }

  private lag(position: number, target: number): ReplicaLag {
    const commits = Math.max(0, target - position);
    if (commits === 0) return { commits, millis: 0 };
    // The oldest write not shown, or the oldest whose time is still kept.
    const oldest = Math.max(position + 1, this.committed - COMMIT_TIMES + 1);
    return { commits, millis: Math.round(performance.now() - this.commitTimes[oldest % COMMIT_TIMES]) };
  }

  /**
   * Whether every commit so far is with the worker, so that a query sent now runs after them (the
   * worker takes its messages in order): what waits for it is sent at once, as one more batch, if
   * it is no more than one batch; a longer backlog is not, and the query waits for it
   * `freshnessWaitMs` at most (run).
   */
  private flushed(): boolean {
    if (!this.worker || this.loading) return false;
    if (this.unsent.length === 0) return true;
    if (this.unsent.length > BATCH_COMMITS || this.unsentBytes > BATCH_BYTES) return false;
    this.send(true);
    return this.unsent.length === 0;
  }

  /** Sends the worker what queued while it was busy, as one batch, unless it is busy still (or `now`). */
  private send(now = false): void {
    const worker = this.worker;
    if (!worker || this.loading || (this.sending && !now) || this.unsent.length === 0) return;
    let count = 0;
    let bytes = 0;
    while (count < this.unsent.length && count < BATCH_COMMITS && bytes < BATCH_BYTES) {
      bytes += this.unsent[count].insert.byteLength + this.unsent[count].delete.byteLength;
      count++;
    }
    const position = this.committed - this.unsent.length + count;
    const commits = this.unsent.splice(0, count);
    this.unsentBytes -= bytes;
    this.sending = this.post(commits, position);
  }

  /** Hands commits to the worker (packed into one buffer, which is moved, not copied again); false if it could not take them, and a new one copies the store. */
  private post(commits: ReplicaCommit[], position: number): boolean {
    try {
      const packed = packCommits(commits);
      this.worker!.postMessage({ kind: 'commits', commits: packed, position } satisfies WorkerRequest, [packed.bytes.buffer as ArrayBuffer]);
      return true;
    } catch (err) {
      // The write is durable whatever happens here; a replica that missed commits is copied again.
      this.options.log(`SPARQL replica could not take ${commits.length} commits (${(err as Error).message}); reloading it`);
      this.queries.replace(unavailable('the query replica is being reloaded'));
      return false;
    }
  }

  private refuseIfFull(): void {
    if (!this.full) return;
    const message = `${this.full}, so it takes no more writes: SPARQL queries are refused until the server restarts with a smaller sparql.historyMaxQuads, a larger sparql.memoryLimitBytes or less data`;
    throw new HttpError(503, 'sparql_unavailable', { message }, 'Service unavailable');
  }

  /**
   * The replica can take no more. When deleted quads (whose memory Oxigraph keeps) are a good part
   * of it and it had been fed since its copy, a new worker copies the store into fresh memory;
   * otherwise the data itself does not fit: it is not fed any longer, nor copied again (it would
   * fill up again), and queries are refused.
   */
  private onFull(message: string, reclaimable: boolean): void {
    if (reclaimable && this.copied) {
      this.options.log(`${message}, much of it taken by deleted quads: a new query replica copies the store into fresh memory`);
      this.queries.replace(unavailable('the query replica is being copied into fresh memory'));
      return;
    }
    this.full = message;
    this.unsent = [];
    this.unsentBytes = 0;
    this.options.log(`${message}; SPARQL queries are refused until the server restarts (with a smaller sparql.historyMaxQuads, a larger sparql.memoryLimitBytes, or less data)`);
    for (const waiter of this.waiting) waiter.wake();
  }

  /** Told once per server: every new worker would say the same. */
  private onPriorityStuck(message: string): void {
    if (this.prioritySaid) return;
    this.prioritySaid = true;
    this.options.log(`SPARQL replica: ${message}, so under a busy CPU it may fall behind the writes (answers say so in SPARQL-Replica-Lag)`);
  }

  private onApplied(position: number): void {
    const observe = this.options.observeVisible;
    if (observe) {
      const now = performance.now();
      // The commits whose times are no longer kept (more than COMMIT_TIMES behind) are not counted.
      for (let n = Math.max(this.applied + 1, this.committed - COMMIT_TIMES + 1); n <= position; n++) observe((now - this.commitTimes[n % COMMIT_TIMES]) / 1000);
    }
    this.applied = position;
    this.copied = true;
    this.sending = false;
    for (const waiter of this.waiting) if (waiter.target <= this.applied) waiter.wake();
    this.send();
  }

  /**
   * Gives a new worker a copy of the hot store's graphs and of the newest history (up to
   * `historyMaxQuads` quads), a few at a time; the commits made meanwhile go to it in between, as
   * they come (onCommitted).
   */
  private async load(worker: Worker): Promise<void> {
    this.starting = worker;
    this.worker = undefined;
    if (this.full) return;
    this.loading = true;
    this.copied = false;
    this.sending = false;
    const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
    // The copy begins in a later turn: a server that starts serves first (queries wait for the
    // copy, see run). Commits made meanwhile queue (worker unset), and the copy holds them.
    await nextTurn();
    if (worker !== this.starting) return;
    this.worker = worker;
    this.unsent = [];
    this.unsentBytes = 0;
    const started = Date.now();
    // The metadata goes first, in this turn: the commits after it reach the worker after it.
    const { meta, hotGraphs, history } = this.source.copy();
    const { historyMaxQuads, queryReserveBytes, memoryLimitBytes } = this.options;
    worker.postMessage({ kind: 'start', historyMaxQuads, queryReserveBytes, memoryLimitBytes } satisfies WorkerRequest);
    worker.postMessage({ kind: 'meta', nquads: meta } satisfies WorkerRequest);
    for (let i = 0; i < hotGraphs.length; i += GRAPHS_PER_TURN) {
      await nextTurn();
      if (worker !== this.worker) return;
      const chunk = hotGraphs.slice(i, i + GRAPHS_PER_TURN).map((graph) => this.source.graphNTriples(graph).replaceAll(' .\n', ` <${graph}> .\n`));
      worker.postMessage({ kind: 'hot', nquads: chunk.join('') } satisfies WorkerRequest);
    }
    let quads = 0;
    let entries = 0;
    while (quads < historyMaxQuads) {
      await nextTurn();
      if (worker !== this.worker) return;
      const chunk: string[] = [];
      let chars = 0;
      for (let next = history.next(); !next.done; next = history.next()) {
        chunk.push(next.value);
        chars += next.value.length;
        quads += countLines(next.value);
        if (chars >= HISTORY_CHARS_PER_TURN || quads >= historyMaxQuads) break;
      }
      if (chunk.length === 0) break;
      entries += chunk.length;
      worker.postMessage({ kind: 'history', entries: chunk } satisfies WorkerRequest);
    }
    if (worker !== this.worker) return;
    worker.postMessage({ kind: 'loaded', position: this.committed } satisfies WorkerRequest);
    this.loading = false;
    this.unsentBytes = 0;
    this.send();
    if (hotGraphs.length > 0) this.options.log(`SPARQL replica: ${hotGraphs.length} graphs and ${entries} entries of history (${quads} quads) sent to the query worker in ${Date.now() - started} ms`);
  }
}

const countLines = (text: string) => {
  let lines = 0;
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) lines++;
  return lines;
};

const unavailable = (why: string) => new HttpError(503, 'sparql_unavailable', { message: `${why}; try again shortly` }, 'Service unavailable');
