import { Worker } from 'node:worker_threads';

export interface BudgetedWorkerOptions<Reply, Result> {
  /** Module the worker thread runs. */
  module: URL;
  /** Its JavaScript heap: a runaway job fails the worker, not the server. */
  heapMb: number;
  /** Time one job may take once the worker has it (see `isStarted`). */
  budgetMs: number;
  /** Jobs that may wait; past this many a job is refused with `busy`. */
  maxWaiting: number;
  /**
   * Start a worker at once and again right after a replacement (a worker that holds state), or only when a job waits.
   */
  eager: boolean;
  /** Whether a message is the worker's "ready for jobs"; anything else is the reply to the job it runs. */
  isReady(message: unknown): boolean;
  /**
   * Whether a message says the worker has begun the job it was sent. Given, the budget runs from
   * that message, for a worker that works through other messages first (a replica applying the
   * writes posted before the job); absent, from the moment the job is posted.
   */
  isStarted?(message: unknown): boolean;
  /**
   * Whether a message is a notice the owner handles (`onNotice`, with the worker that sent it), neither ready,
   * started nor a reply.
   */
  isNotice?(message: unknown): boolean;
  onNotice?(message: unknown, worker: Worker): void;
  /** The job's result, or the error it fails with. */
  settle(reply: Reply): Result | Error;
  overBudget(budgetMs: number): Error;
  /** The worker ended on its own (out of memory, crash) while running a job. */
  lost(): Error;
  /** A job refused: the server is closing, or `maxWaiting` jobs already wait. */
  busy(reason: 'closing' | 'queue full'): Error;
  /**
   * Each new worker, before any job is posted to it (e.g. to load its state); `successor`: started by
   * `startSuccessor`.
   */
  started?(worker: Worker, successor: boolean): void;
  /**
   * A successor took over from the worker before it (which is stopped), or was given up (stopped, see
   * `dropSuccessor`, or it ended).
   */
  tookOver?(worker: Worker): void;
  successorGone?(worker: Worker): void;
  log?(message: string): void;
}

interface Waiting<Job, Result> {
  job: Job;
  resolve(result: Result): void;
  reject(error: Error): void;
}

/**
 * Runs jobs that may run long or crash on one worker thread, one at a time, each within a time budget, so the
 * request thread never waits on them: a job past its budget (or a dead worker) fails alone and a new worker
 * takes the jobs after it. A worker holding state hands over to a successor between two jobs (`startSuccessor`,
 * `handOver`), without a gap.
 */
export class BudgetedWorker<Job, Reply, Result> {
  private current?: Worker;
  private ready = false;
  private running?: Waiting<Job, Result> & { timer?: NodeJS.Timeout };
  private readonly waiting: Waiting<Job, Result>[] = [];
  private closed = false;
  private successor?: Worker;
  /** The successor said it is ready for jobs; the owner has said it is to take over (`handOver`). */
  private successorReady = false;
  private handingOver = false;

  constructor(private readonly options: BudgetedWorkerOptions<Reply, Result>) {
    if (options.eager) this.spawn();
  }

  /** The worker of the moment (undefined between a lazy stop and the next job). */
  get worker(): Worker | undefined {
    return this.current;
  }

  run(job: Job): Promise<Result> {
    if (this.closed) return Promise.reject(this.options.busy('closing'));
    if (this.waiting.length >= this.options.maxWaiting) return Promise.reject(this.options.busy('queue full'));
    return new Promise<Result>((resolve, reject) => {
      this.waiting.push({ job, resolve, reject });
      this.next();
    });
  }

  /**
   * Stops the worker (the job it runs fails with `error`); a successor being started takes over at
   * once (jobs wait until it is ready), else a new one follows as `eager` says.
   */
  replace(error: Error): void {
    const worker = this.current;
    this.current = undefined;
    this.ready = false;
    this.settle(error);
    void worker?.terminate();
    if (this.closed) return;
    if (this.successor) this.takeOver();
    else if (this.options.eager) this.spawn();
    else this.next();
  }

  /** Starts a successor, unless one is being started already (or none may be): false then. */
  startSuccessor(): boolean {
    if (this.closed || this.successor || !this.options.eager) return false;
    this.successor = this.create(true);
    this.successorReady = this.handingOver = false;
    return true;
  }

  /** The successor (once ready) takes over as soon as no job runs. */
  handOver(): void {
    if (!this.successor) return;
    this.handingOver = true;
    if (this.successorReady && !this.running) this.takeOver();
  }

  /** Stops the successor being started, if any. */
  dropSuccessor(): void {
    const worker = this.successor;
    if (!worker) return;
    this.successor = undefined;
    void worker.terminate();
    this.options.successorGone?.(worker);
  }

  async close(): Promise<void> {
    this.closed = true;
    const error = this.options.busy('closing');
    for (const waiting of this.waiting.splice(0)) waiting.reject(error);
    this.settle(error);
    const workers = [this.current, this.successor];
    this.current = this.successor = undefined;
    await Promise.all(workers.map((w) => w?.terminate()));
  }

  /** The successor becomes the worker of the moment; the one before, if any, is stopped. */
  private takeOver(): void {
    const [previous, worker] = [this.current, this.successor!];
    this.current = worker;
    this.ready = this.successorReady;
    this.successor = undefined;
    this.successorReady = this.handingOver = false;
    void previous?.terminate();
    this.options.tookOver?.(worker);
    this.next();
  }

  private next(): void {
    if (this.running || this.waiting.length === 0) return;
    if (!this.current) this.spawn();
    if (!this.ready) return; // started when the worker says it is ready
    const waiting = this.waiting.shift()!;
    this.running = { ...waiting, timer: this.options.isStarted ? undefined : this.startBudget() };
    this.current!.postMessage(waiting.job);
  }

  private startBudget(): NodeJS.Timeout {
    const { budgetMs } = this.options;
    return setTimeout(() => this.replace(this.options.overBudget(budgetMs)), budgetMs);
  }

  private spawn(): void {
    this.ready = false;
    this.current = this.create(false);
  }

  private create(successor: boolean): Worker {
    const worker = new Worker(this.options.module, { resourceLimits: { maxOldGenerationSizeMb: this.options.heapMb } });
    worker.unref(); // never keeps a process alive on its own
    worker.on('message', (message: unknown) => {
      if (worker === this.successor) return this.fromSuccessor(worker, message);
      if (worker !== this.current) return;
      if (this.options.isNotice?.(message)) {
        this.options.onNotice?.(message, worker);
        return;
      }
      if (this.options.isReady(message)) {
        this.ready = true;
      } else if (this.options.isStarted?.(message)) {
        if (this.running && !this.running.timer) this.running.timer = this.startBudget();
        return;
      } else {
        const outcome = this.options.settle(message as Reply);
        if (outcome instanceof Error) this.settle(outcome);
        else this.settle(undefined, outcome);
        // Between two jobs: a successor that is ready to take over does now.
        if (this.successorReady && this.handingOver) return this.takeOver();
      }
      this.next();
    });
    const lost = (err?: unknown) => {
      const why = err instanceof Error ? err.message : 'exit';
      if (worker === this.successor) {
        this.options.log?.(`successor worker thread ended (${why}); the worker of the moment stays`);
        this.successor = undefined;
        this.options.successorGone?.(worker);
        return;
      }
      if (worker !== this.current) return;
      this.options.log?.(`worker thread ended (${why}); starting a new one`);
      this.replace(this.options.lost());
    };
    worker.on('error', lost);
    worker.on('exit', () => lost());
    this.options.started?.(worker, successor);
    return worker;
  }

  /** A successor's notices go to the owner; once it is ready and handed over to, it takes over when no job runs. */
  private fromSuccessor(worker: Worker, message: unknown): void {
    if (this.options.isNotice?.(message)) {
      this.options.onNotice?.(message, worker);
      return;
    }
    if (!this.options.isReady(message)) return;
    this.successorReady = true;
    if (this.handingOver && !this.running) this.takeOver();
  }

  private settle(error: Error | undefined, result?: Result): void {
    const running = this.running;
    if (!running) return;
    this.running = undefined;
    clearTimeout(running.timer);
    if (error) running.reject(error);
    else running.resolve(result as Result);
  }
}
