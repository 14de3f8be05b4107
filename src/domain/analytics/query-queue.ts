import { HttpError } from '../../errors.js';
import { queryUnavailable } from '../../store/query-errors.js';

export interface QueryQueueOptions {
  /** Queries handed to the query service at once (what it runs at once: more would only wait there, out of turn). */
  parallel: number;
  /** Queries that may wait, all callers together; past it 503. */
  maxWaiting: number;
  /** Queries one caller may have waiting; past it 429. */
  maxWaitingPerCaller: number;
}

/**
 * A query refused because its caller already has `maxWaitingPerCaller` waiting: the caller's own doing, hence 429, not
 * 503.
 */
const callerQueueFull = (waiting: number) =>
  new HttpError(429, 'sparql_caller_busy', {
    message:
      `you already have ${waiting} SPARQL queries waiting, the most one caller may ` +
      '(sparql.maxWaitingPerCaller); wait for their answers',
  });

/** One caller's queries: those that wait, how many run, and when its last one started (0: never). */
interface Turn {
  waiting: (() => void)[];
  running: number;
  served: number;
}

/**
 * The SPARQL queries waiting for the query service, in a queue per caller (agent), served in turns:
 * a free place goes to the caller with queries waiting whose last query started longest ago (one
 * that had none yet first), so a caller who sends many queries waits for its own, not everyone
 * else. The queue is bounded overall and per caller; a query past either bound is refused at once
 * rather than held.
 */
export class QueryQueue {
  private running = 0;
  private waiting = 0;
  /** Queries started so far: a caller's `served` is the number of its last. */
  private started = 0;
  /** The callers with queries waiting or running (a handful: a scan of them is cheaper than keeping them sorted). */
  private readonly turns = new Map<string, Turn>();

  constructor(private readonly options: QueryQueueOptions) {}

  /** Runs `query` for `caller` once it is the caller's turn and a place is free. */
  run<T>(caller: string, query: () => Promise<T>): Promise<T> {
    const turn = this.turns.get(caller) ?? { waiting: [], running: 0, served: 0 };
    this.turns.set(caller, turn);
    if (this.running < this.options.parallel && this.waiting === 0) return this.start(caller, turn, query);
    if (this.waiting >= this.options.maxWaiting)
      return this.refuse(caller, turn, queryUnavailable('too many SPARQL queries are waiting'));
    if (turn.waiting.length >= this.options.maxWaitingPerCaller)
      return this.refuse(caller, turn, callerQueueFull(turn.waiting.length));
    this.waiting++;
    return new Promise<T>((resolve, reject) =>
      turn.waiting.push(() => void this.start(caller, turn, query).then(resolve, reject)),
    );
  }

  private refuse(caller: string, turn: Turn, error: Error): Promise<never> {
    this.forgetIfIdle(caller, turn);
    return Promise.reject(error);
  }

  private async start<T>(caller: string, turn: Turn, query: () => Promise<T>): Promise<T> {
    this.running++;
    turn.running++;
    turn.served = ++this.started;
    try {
      return await query();
    } finally {
      this.running--;
      turn.running--;
      this.forgetIfIdle(caller, turn);
      this.next();
    }
  }

  private forgetIfIdle(caller: string, turn: Turn): void {
    if (turn.running === 0 && turn.waiting.length === 0) this.turns.delete(caller);
  }

  /** Starts the first waiting query of the caller served longest ago. */
  private next(): void {
    if (this.running >= this.options.parallel) return;
    let chosen: Turn | undefined;
    for (const turn of this.turns.values())
      if (turn.waiting.length > 0 && (!chosen || turn.served < chosen.served)) chosen = turn;
    if (!chosen) return;
    this.waiting--;
    chosen.waiting.shift()!();
  }
}
