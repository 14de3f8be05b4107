import { Worker } from 'node:worker_threads';
import { HttpError, type ErrorDetail } from '../errors.js';
import { fromRawQuads, type JsonLdQuad, type ReadOptions } from './jsonld-reference.js';
import type { Quad } from './terms.js';

export interface FallbackRequest {
  text: string;
  options: ReadOptions;
}
export type FallbackReply = { quads: JsonLdQuad[] } | { error: { status: number; code: string; details: ErrorDetail[] } };

interface Job {
  request: FallbackRequest;
  resolve(quads: Quad[]): void;
  reject(error: HttpError): void;
}

/** Documents waiting for the worker; past this many, a request is refused with 503 rather than queued. */
const MAX_WAITING = 16;
/** jsonld.js's heap in the worker: a body within the size limit needs far less; a hostile one fails the worker, not the server. */
const WORKER_HEAP_MB = 512;

/**
 * jsonld.js, for the documents the fast path leaves to it, on a worker thread with a time budget
 * per document. jsonld.js can spend time superlinear in a body's size (scoped contexts applied
 * per node, large contexts cloned per scope): here that only ever costs the worker, which is
 * stopped when a document takes longer than the budget, while the request thread keeps serving.
 * One worker, started on first use and again after a stop; documents wait their turn.
 */
export class JsonLdFallback {
  private worker?: Worker;
  private ready = false;
  private running?: { job: Job; timer: NodeJS.Timeout };
  private readonly waiting: Job[] = [];
  private closed = false;

  constructor(private readonly budgetMs: number) {}

  toQuads(text: string, options: ReadOptions): Promise<Quad[]> {
    if (this.closed) return Promise.reject(busy('the server is shutting down'));
    if (this.waiting.length >= MAX_WAITING) return Promise.reject(busy('too many JSON-LD documents are waiting to be processed'));
    return new Promise<Quad[]>((resolve, reject) => {
      this.waiting.push({ request: { text, options }, resolve, reject });
      this.next();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.waiting.splice(0)) job.reject(busy('the server is shutting down'));
    if (this.running) this.settle(busy('the server is shutting down'));
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private next(): void {
    if (this.running || this.waiting.length === 0) return;
    if (!this.worker) this.worker = this.spawn();
    if (!this.ready) return; // started when the worker says it is ready
    const job = this.waiting.shift()!;
    const timer = setTimeout(() => this.stopWorker(tooCostly(this.budgetMs)), this.budgetMs);
    this.running = { job, timer };
    this.worker.postMessage(job.request);
  }

  private spawn(): Worker {
    const worker = new Worker(new URL('./jsonld-fallback-worker.js', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    worker.unref(); // never keeps a process alive on its own
    worker.on('message', (reply: FallbackReply | 'ready') => {
      if (worker !== this.worker) return;
      if (reply === 'ready') {
        this.ready = true;
      } else if ('quads' in reply) {
        this.settle(undefined, fromRawQuads(reply.quads));
      } else {
        this.settle(new HttpError(reply.error.status, reply.error.code, reply.error.details));
      }
      this.next();
    });
    // Out of memory, or any other end of the thread: the document at hand fails, the next one gets a new worker.
    const lost = () => {
      if (worker === this.worker) this.stopWorker(new HttpError(400, 'jsonld_too_costly', { message: 'the JSON-LD body could not be processed within the server\'s limits; simplify its @context' }));
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    return worker;
  }

  private stopWorker(error: HttpError): void {
    const worker = this.worker;
    this.worker = undefined;
    this.ready = false;
    this.settle(error);
    void worker?.terminate();
    if (!this.closed) this.next();
  }

  private settle(error: HttpError | undefined, quads?: Quad[]): void {
    const running = this.running;
    if (!running) return;
    this.running = undefined;
    clearTimeout(running.timer);
    if (error) running.job.reject(error);
    else running.job.resolve(quads!);
  }
}

const tooCostly = (budgetMs: number) =>
  new HttpError(400, 'jsonld_too_costly', {
    message: `processing this JSON-LD body took longer than ${budgetMs} ms and was stopped; simplify its @context (fewer terms, fewer scoped contexts) or send Turtle`,
  });

const busy = (why: string) => new HttpError(503, 'jsonld_busy', { message: `${why}; try again shortly` });
