import type { Worker } from 'node:worker_threads';
import { BudgetedWorker } from '../../../budgeted-worker.js';
import type { CommitBytes } from '../../commit-record.js';
import { CommitTimes } from './commit-times.js';
import { ReplicaFeed } from './replica-feed.js';
import type { QueryRequest, QueryResult, QueryService } from '../../query-service.js';
import type { QueryAnswer, QueryJob, QueryReply, WorkerMessage } from './messages.js';
import { type ReplicaSource, sendCopy } from './replica-copy.js';
import { parseQuery, type ParsedQuery } from '../../sparql-query.js';
import { QueryError, queryFailed, queryTimedOut, queryUnavailable } from '../../query-errors.js';

export interface QueryReplicaOptions {
  /** Time a query may run before the worker is stopped and replaced. */
  timeBudgetMs: number;
  maxRows: number;
  /**
   * Longest a query waits for the replica to apply the writes acknowledged before it; then it runs on what the replica
   * holds.
   */
  freshnessWaitMs: number;
  /**
   * Longest a query waits for a new replica to finish its copy of the store; then it is answered 503.
   */
  copyWaitMs?: number;
  /**
   * Bytes of journal records waiting for the worker past which it is replaced by one that copies the store (memory
   * stays bounded).
   */
  maxBacklogBytes?: number;
  /** Quads of history (whole revisions, finished action requests) the replica holds at most, newest first. */
  historyMaxQuads: number;
  /**
   * WASM memory the replica keeps free for queries; data that would take it makes the replica full: it
   * stops, and queries are refused.
   */
  queryReserveBytes?: number;
  /**
   * The size its WASM memory may grow to, data and that reserve (default: the 4 GiB WASM32 can address); past it the
   * replica is full as above.
   */
  memoryLimitBytes?: number;
  /**
   * Growth points of Oxigraph's tables a replica is handed over before (see table-growth.ts; default: those from 1.5
   * million quads, tests make it small).
   */
  longGrowthFrom?: number;
  /**
   * Time without a query after which the replica's workers are stopped and the writes no longer
   * fed to them; the next query starts a new one, which copies the store (and waits for it, as after
   * a start). 0 or absent: the replica starts at once and is never stopped for want of queries.
   */
  idleMs?: number;
  /**
   * Told, for each commit, how long after it was published on the after-commit stream the replica had applied it (a
   * query sees it from then on).
   */
  observeVisible?: (seconds: number) => void;
  /**
   * Told the number of worker threads fed with the writes whenever it changes: 0 while the replica is stopped, 1, 2
   * while a successor copies the store.
   */
  observeWorkers?: (workers: number) => void;
  log: (message: string) => void;
}

/** Queries waiting for the worker; past this many, a query is refused with 503 rather than queued. */
const MAX_WAITING = 32;
/**
 * JavaScript heap of the worker (answers being serialised; Oxigraph's WASM memory is apart): a runaway answer fails the
 * worker, not the server.
 */
const WORKER_HEAP_MB = 2048;
/** Default of `copyWaitMs`: a new worker copies a small store in well under a second, a large one in seconds. */
const COPY_WAIT_MS = 10_000;
/** Default of `maxBacklogBytes`. */
const MAX_BACKLOG_BYTES = 128 * 1024 * 1024;
/** After a successor was given up (or ended), the next is started no sooner than this. */
const HANDOVER_RETRY_MS = 10_000;

/**
 * Analytics queries on a worker thread that holds its own replica of the store, fed each commit's
 * journal record from the after-commit stream: Oxigraph queries cannot be interrupted, so they never
 * run on the thread that serves requests, and a query past its time budget stops the worker. A
 * replica near a growth point of Oxigraph's tables is handed over to a successor that copies the
 * store meanwhile; with `idleMs` it runs only while queries come. How: docs/sparql-replica.md.
 */
export class QueryReplica implements QueryService {
  /** The workers, while the replica runs (undefined while it is stopped, see `idleMs`). */
  private queries?: BudgetedWorker<QueryJob, QueryReply, QueryAnswer>;
  /** Commits published so far: a commit's position is its number. */
  private committed = 0;
  /** The last commit a replica that served queries had applied (its writes were visible from then on). */
  private visibleThrough = 0;
  private readonly commitTimes = new CommitTimes();
  /** The worker that answers queries, and the one that is copying the store to take over from it. */
  private serving?: ReplicaFeed;
  private successor?: ReplicaFeed;
  /**
   * When the last successor was started, and for which growth point; when the earliest next one may be, after one was
   * given up.
   */
  private successorStarted = 0;
  private successorFor = 0;
  private nextHandoverAt = 0;
  private readonly waiting = new Set<{ target: number; wake(): void }>();
  /** Why the replica takes no more commits (its memory is full), until the server restarts: queries are refused. */
  private full: string | undefined;
  private prioritySaid = false;
  /** Queries in `run`, and when the last one ended (or the replica was started): the idle time counts from then. */
  private running = 0;
  private lastQueryAt = 0;
  private idleTimer?: NodeJS.Timeout;
  /**
   * The replica was started by a query (it had not run yet, or had been stopped), and its copy is not done: a query
   * refused meanwhile is told so.
   */
  private warming = false;
  private closed = false;
  private workersSaid = 0;

  constructor(
    private readonly source: ReplicaSource,
    private readonly options: QueryReplicaOptions,
  ) {
    if (!options.idleMs) this.queries = this.startWorkers();
  }

  /**
   * Starts the worker that holds the replica: it copies the store from the next turn on, and the
   * commits from then on are fed to it. The commits before were never fed to any replica: none
   * waits to be visible (`observeVisible`).
   */
  private startWorkers(): BudgetedWorker<QueryJob, QueryReply, QueryAnswer> {
    const options = this.options;
    this.visibleThrough = this.committed;
    this.nextHandoverAt = 0;
    return new BudgetedWorker<QueryJob, QueryReply, QueryAnswer>({
      module: new URL('./query-replica-worker.js', import.meta.url),
      heapMb: WORKER_HEAP_MB,
      budgetMs: options.timeBudgetMs,
      maxWaiting: MAX_WAITING,
      // The worker holds the replica: a new one starts loading at once, not when a query comes.
      eager: true,
      isReady: (message) => (message as { kind?: string }).kind === 'loaded',
      // The worker may apply a batch of writes first; the budget is the query's own time.
      isStarted: (message) => (message as { kind?: string }).kind === 'started',
      isNotice: (message) =>
        ['applied', 'full', 'priority', 'growing', 'tables'].includes((message as { kind?: string }).kind ?? ''),
      onNotice: (message, worker) => this.onNotice(message as Notice, worker),
      settle: (reply: QueryReply) => ('error' in reply ? queryFailed(reply.error) : reply),
      overBudget: queryTimedOut,
      lost: () => queryUnavailable("the query could not be evaluated within the server's memory limits"),
      busy: (reason) =>
        queryUnavailable(reason === 'closing' ? 'the server is shutting down' : 'too many SPARQL queries are waiting'),
      started: (worker, successor) => this.started(worker, successor),
      tookOver: (worker) => this.tookOver(worker),
      successorGone: (worker) => {
        if (this.successor?.worker !== worker) return;
        this.successor = undefined;
        this.nextHandoverAt = performance.now() + HANDOVER_RETRY_MS;
        this.sayWorkers();
      },
      log: (message) => options.log(`SPARQL ${message}`),
    });
  }

  /** The workers, started if the replica was stopped (by the query that needs it). */
  private workers(): BudgetedWorker<QueryJob, QueryReply, QueryAnswer> {
    if (this.queries) return this.queries;
    this.warming = true;
    this.options.log(
      this.lastQueryAt === 0
        ? 'SPARQL replica: started by the first query; it copies the store'
        : `SPARQL replica: started again by a query; it copies the store`,
    );
    this.queries = this.startWorkers();
    return this.queries;
  }

  /**
   * Stops the workers once no query has come for `idleMs` (none running or waiting): the writes are
   * no longer fed to them, and their memory is released. The next query starts a new one.
   */
  private armIdle(): void {
    const idleMs = this.options.idleMs;
    if (!idleMs || this.idleTimer || !this.queries || this.closed) return;
    const check = () => {
      this.idleTimer = undefined;
      // A query running re-arms the timer when it ends.
      if (!this.queries || this.running > 0) return;
      const left = this.lastQueryAt + idleMs - performance.now();
      if (left > 0) {
        this.idleTimer = setTimeout(check, left);
        this.idleTimer.unref();
        return;
      }
      const queries = this.queries;
      this.queries = this.serving = this.successor = undefined;
      this.sayWorkers();
      this.options.log(
        `SPARQL replica: stopped after ${Math.round(idleMs / 1000)} s without a query; writes no longer feed it, and ` +
          `the next query starts it again`,
      );
      void queries.close();
    };
    this.idleTimer = setTimeout(check, Math.max(0, this.lastQueryAt + idleMs - performance.now()));
    this.idleTimer.unref();
  }

  /** Tells `observeWorkers` how many workers the writes feed, when that changed. */
  private sayWorkers(): void {
    const workers = (this.serving ? 1 : 0) + (this.successor ? 1 : 0);
    if (workers === this.workersSaid) return;
    this.workersSaid = workers;
    this.options.observeWorkers?.(workers);
  }

  get maxRows(): number {
    return this.options.maxRows;
  }

  /** One worker answers, one query at a time. */
  readonly parallel = 1;

  parse(text: string): ParsedQuery {
    return parseQuery(text, this.options.maxRows);
  }

  /**
   * A consumer of the after-commit stream: queues a copy of the commit's journal record for the workers (its bytes are
   * the journal's).
   */
  onCommitted(record: CommitBytes): void {
    this.committed++;
    if (this.full) return;
    this.commitTimes.record(this.committed);
    // A stopped replica costs a write this much: no worker holds it.
    if (!this.serving && !this.successor) return;
    // Views of the record's journal buffer, which nothing writes again: they are copied into the buffer that goes to
    // the worker.
    const commit = { insert: record.insert, delete: record.delete };
    const maxBacklog = this.options.maxBacklogBytes ?? MAX_BACKLOG_BYTES;
    const successor = this.successor;
    if (successor && successor.add(commit, this.committed) > maxBacklog)
      this.giveUpSuccessor(`more than ${maxBacklog} bytes of commits wait for it`);
    const serving = this.serving;
    if (serving && serving.add(commit, this.committed) > maxBacklog) {
      // Copying the store is bounded by its size; a backlog is not.
      this.options.log(
        `SPARQL replica is ${serving.waitingCommits} commits behind; a new one copies the store instead`,
      );
      this.queries?.replace(queryUnavailable('the query replica fell too far behind and is being reloaded'));
    }
  }

  async run(request: QueryRequest): Promise<QueryResult> {
    this.refuseIfFull();
    this.running++;
    try {
      return await this.answer(request);
    } finally {
      this.running--;
      this.lastQueryAt = performance.now();
      this.armIdle();
    }
  }

  private async answer(request: QueryRequest): Promise<QueryResult> {
    const queries = this.workers();
    const target = this.committed;
    // A copy takes seconds on a large store: a query is not held for all of it.
    if (!this.serving?.copied) await this.caughtUp(target, this.options.copyWaitMs ?? COPY_WAIT_MS);
    this.refuseIfFull();
    if (!this.serving?.copied) {
      throw queryUnavailable(
        this.warming
          ? 'the query replica is warming up: it runs only while /sparql is queried (sparql.replicaIdleMillis), and ' +
              'it is copying the store for the first query since it last ran'
          : 'the query replica is copying the store (after a start or a reload)',
      );
    }
    if (this.serving.applied < target && !this.serving.flushed())
      await this.caughtUp(target, this.options.freshnessWaitMs);
    this.refuseIfFull();
    const reply = await queries.run({
      kind: 'query',
      view: request.view,
      form: request.query.form,
      text: request.query.text,
      format: request.format,
      maxRows: this.options.maxRows,
      dataset: request.dataset,
    });
    return {
      body: reply.body,
      truncated: reply.truncated,
      lag: this.commitTimes.lag(reply.position, target, this.committed),
    };
  }

  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    for (const waiter of this.waiting) waiter.wake();
    return this.queries?.close() ?? Promise.resolve();
  }

  /** Resolves when the serving worker has applied commit `target`, or after `waitMs`, whichever comes first. */
  private caughtUp(target: number, waitMs: number): Promise<void> {
    if (this.waiting.size >= MAX_WAITING)
      return Promise.reject(queryUnavailable('too many SPARQL queries are waiting'));
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

  private feedOf(worker: Worker): ReplicaFeed | undefined {
    return [this.serving, this.successor].find((feed) => feed?.worker === worker);
  }

  private onNotice(notice: Notice, worker: Worker): void {
    const feed = this.feedOf(worker);
    if (!feed) return;
    if (notice.kind === 'priority') this.onPriorityStuck(notice.message);
    else if (notice.kind === 'tables') this.options.log(`SPARQL replica: ${tablesGrown(notice)}`);
    else if (notice.kind === 'growing') this.onGrowing(feed, notice);
    else if (notice.kind === 'applied') this.onApplied(feed, notice.position);
    else if (feed === this.successor) this.giveUpSuccessor(notice.message);
    else this.onFull(notice.message, notice.reclaimable);
  }

  private refuseIfFull(): void {
    if (!this.full) return;
    const message =
      `${this.full}, so it takes no more writes: SPARQL queries are refused until the server restarts ` +
      `with a smaller sparql.historyMaxQuads, a larger sparql.memoryLimitBytes or less data`;
    throw new QueryError('unavailable', 'sparql_unavailable', message);
  }

  /**
   * The replica can take no more. When deleted quads (whose memory Oxigraph keeps) are a good part
   * of it and it had been fed since its copy, a new worker copies the store into fresh memory;
   * otherwise the data itself does not fit: it is not fed any longer, nor copied again (it would
   * fill up again), and queries are refused.
   */
  private onFull(message: string, reclaimable: boolean): void {
    if (reclaimable && this.serving?.copied) {
      this.options.log(
        `${message}, much of it taken by deleted quads: a new query replica copies the store into fresh memory`,
      );
      this.queries?.replace(queryUnavailable('the query replica is being copied into fresh memory'));
      return;
    }
    this.full = message;
    this.queries?.dropSuccessor();
    this.serving = undefined;
    this.sayWorkers();
    this.options.log(
      `${message}; SPARQL queries are refused until the server restarts (with a smaller sparql.historyMaxQuads, a ` +
        `larger sparql.memoryLimitBytes, or less data)`,
    );
    for (const waiter of this.waiting) waiter.wake();
  }

  /** Told once per server: every new worker would say the same. */
  private onPriorityStuck(message: string): void {
    if (this.prioritySaid) return;
    this.prioritySaid = true;
    this.options.log(
      `SPARQL replica: ${message}, so under a busy CPU it may fall behind the writes (answers say so in ` +
        `SPARQL-Replica-Lag)`,
    );
  }

  private onApplied(feed: ReplicaFeed, position: number): void {
    feed.onApplied(position);
    if (feed === this.serving) {
      this.warming = false;
      this.visible(position);
    }
    // A successor takes over once it holds all the serving replica does: queries never wait for it to catch up.
    else if (feed === this.successor && position >= (this.serving?.applied ?? 0)) this.queries?.handOver();
  }

  /** The serving replica holds every commit up to `position`: queries waiting for them go. */
  private visible(position: number): void {
    const observe = this.options.observeVisible;
    if (observe) this.commitTimes.observeSince(this.visibleThrough + 1, position, this.committed, observe);
    this.visibleThrough = Math.max(this.visibleThrough, position);
    for (const waiter of this.waiting) if (waiter.target <= position) waiter.wake();
  }

  /**
   * The serving replica is near a long growth point of its tables: a successor copies the store, unless one does
   * already.
   */
  private onGrowing(feed: ReplicaFeed, notice: { loadedQuads: number; point: number }): void {
    feed.nearGrowth = notice;
    if (feed !== this.serving || this.successor || this.full || performance.now() < this.nextHandoverAt) return;
    // Known to the successor's copy, which starts in a later turn.
    this.successorFor = notice.point;
    if (!this.queries?.startSuccessor()) return;
    this.successorStarted = performance.now();
    this.options.log(
      `SPARQL replica: ${notice.loadedQuads} quads loaded, near ${notice.point}, where its tables grow; a successor ` +
        `copies the store and takes over`,
    );
  }

  private giveUpSuccessor(why: string): void {
    this.options.log(`SPARQL replica: the successor is given up (${why}); the replica serving goes on`);
    this.successor = undefined;
    this.nextHandoverAt = performance.now() + HANDOVER_RETRY_MS;
    this.queries?.dropSuccessor();
    this.sayWorkers();
  }

  private started(worker: Worker, successor: boolean): void {
    const feed = new ReplicaFeed(worker, successor, (failed, why) => {
      this.options.log(`SPARQL replica: ${why}; reloading it`);
      if (failed === this.successor) this.giveUpSuccessor(why);
      else if (failed === this.serving) this.queries?.replace(queryUnavailable('the query replica is being reloaded'));
    });
    if (successor) this.successor = feed;
    else this.serving = feed;
    this.sayWorkers();
    void this.load(feed);
  }

  /** A successor holds its copy and now answers queries (the worker before it is stopped). */
  private tookOver(worker: Worker): void {
    const feed = this.successor;
    if (feed?.worker !== worker) return;
    this.successor = undefined;
    this.serving = feed;
    this.sayWorkers();
    const copyMs = performance.now() - this.successorStarted;
    this.options.log(`SPARQL replica: a successor took over after a copy of ${Math.round(copyMs)} ms`);
    if (feed.copied) this.visible(feed.applied);
    // It may have passed 60% of its next growth point while it caught up, and no write may come for a while.
    if (feed.nearGrowth) this.onGrowing(feed, feed.nearGrowth);
  }

  private isFed(feed: ReplicaFeed): boolean {
    return feed === this.serving || feed === this.successor;
  }

  /** Gives a new worker its copy of the store (sendCopy); the commits made meanwhile go to it as they come. */
  private async load(feed: ReplicaFeed): Promise<void> {
    if (this.full) return;
    // The copy begins in a later turn: a server that starts serves first (queries wait for the
    // copy, see run). Commits made meanwhile are not sent to it: the copy holds them.
    await new Promise((resolve) => setImmediate(resolve));
    if (!this.isFed(feed)) return;
    feed.attach();
    const started = Date.now();
    const { historyMaxQuads, queryReserveBytes, memoryLimitBytes, longGrowthFrom } = this.options;
    const start = {
      kind: 'start' as const,
      historyMaxQuads,
      queryReserveBytes,
      memoryLimitBytes,
      longGrowthFrom,
      standby: feed.successor,
      handedOverFor: feed.successor ? this.successorFor : 0,
    };
    const sent = await sendCopy(feed.worker, this.source, start, () => this.isFed(feed));
    if (!sent) return;
    feed.loaded(this.committed);
    if (sent.graphs > 0)
      this.options.log(
        `SPARQL replica: ${sent.graphs} graphs and ${sent.entries} entries of history (${sent.quads} quads) ` +
          `sent to the query worker in ${Date.now() - started} ms`,
      );
  }
}

type Notice = Extract<WorkerMessage, { kind: 'applied' | 'full' | 'priority' | 'growing' | 'tables' }>;

/** What a copy did to grow its tables past their next growth point (replica-growth.ts). */
const tablesGrown = ({ point, quads, grown }: Extract<Notice, { kind: 'tables' }>) =>
  grown
    ? `a copy grew its tables past ${point} quads with ${quads} quads dropped at once`
    : `a copy could not grow its tables past ${point} quads: its memory could not take ${quads} more; it pauses there`;
