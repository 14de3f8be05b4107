import { BudgetedWorker } from '../budgeted-worker.js';
import { HttpError, type ErrorDetail } from '../errors.js';
import { fromRawQuads, type JsonLdQuad, type ReadOptions } from './jsonld-reference.js';
import type { Quad } from './terms.js';

export interface FallbackRequest {
  text: string;
  options: ReadOptions;
}
export type FallbackReply =
  | { quads: JsonLdQuad[] }
  | { error: { status: number; code: string; details: ErrorDetail[] } };

/** Documents waiting for the worker; past this many, a request is refused with 503 rather than queued. */
const MAX_WAITING = 16;
/**
 * jsonld.js's heap in the worker: a body within the size limit needs far less; a hostile one fails the worker, not
 * the server.
 */
const WORKER_HEAP_MB = 512;

/**
 * jsonld.js, for the documents the fast path leaves to it, on a worker thread with a time budget
 * per document. jsonld.js can spend time superlinear in a body's size (scoped contexts applied
 * per node, large contexts cloned per scope): here that only ever costs the worker, which is
 * stopped when a document takes longer than the budget, while the request thread keeps serving.
 * One worker, started on first use and again after a stop; documents wait their turn.
 */
export class JsonLdFallback {
  private readonly worker: BudgetedWorker<FallbackRequest, FallbackReply, Quad[]>;

  constructor(budgetMs: number) {
    this.worker = new BudgetedWorker<FallbackRequest, FallbackReply, Quad[]>({
      module: new URL('./jsonld-fallback-worker.js', import.meta.url),
      heapMb: WORKER_HEAP_MB,
      budgetMs,
      maxWaiting: MAX_WAITING,
      eager: false,
      isReady: (message) => message === 'ready',
      settle: (reply) =>
        'quads' in reply
          ? fromRawQuads(reply.quads)
          : new HttpError(reply.error.status, reply.error.code, reply.error.details),
      overBudget: tooCostly,
      // Out of memory, or any other end of the thread: the document at hand fails, the next one gets a new worker.
      lost: () =>
        new HttpError(400, 'jsonld_too_costly', {
          message: "the JSON-LD body could not be processed within the server's limits; simplify its @context",
        }),
      busy: (reason) => {
        const why =
          reason === 'closing'
            ? 'the server is shutting down'
            : 'too many JSON-LD documents are waiting to be processed';
        return new HttpError(503, 'jsonld_busy', { message: `${why}; try again shortly` });
      },
    });
  }

  toQuads(text: string, options: ReadOptions): Promise<Quad[]> {
    return this.worker.run({ text, options });
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}

const tooCostly = (budgetMs: number) =>
  new HttpError(400, 'jsonld_too_costly', {
    message:
      `processing this JSON-LD body took longer than ${budgetMs} ms and was stopped; ` +
      'simplify its @context (fewer terms, fewer scoped contexts) or send Turtle',
  });
